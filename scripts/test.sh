#!/usr/bin/env bash
# Gregor's whole test run: `make test` (CI runs it through .ci/run).
#
#   1. installs what the tests need when missing (kcat; chromium for the
#      web console's browser tests; python3 for the conformance runner;
#      python3-confluent-kafka for the confluent-kafka-python transactions
#      test) with apt-get, as root or with password-less sudo; without
#      either it says so and those tests skip themselves (outside CI);
#      kafkajs (pinned, KAFKAJS_VERSION) with npm into
#      ~/.cache/gregor-tools/kafkajs-VERSION (GREGOR_KAFKAJS_DIR); when npm
#      cannot reach its registry it says so in GREGOR_KAFKAJS_UNAVAILABLE
#      and the kafkajs test skips (under CI too);
#      staticcheck (pinned, STATICCHECK_VERSION) with `go install`;
#   2. builds everything and the gregor binary;
#   3. static checks, each a pass or a fail: `go vet ./...`, `gofmt -l`
#      (any file listed fails), `staticcheck ./...` (staticcheck.conf says
#      which checks are off and why), `go mod tidy -diff`;
#   4. runs `go test ./...` (unit and end-to-end tests); the packages with
#      concurrency (RACE_PKGS) run under -race instead of the plain run;
#   5. runs franz-go's conformance suite against a 3-node cluster of the
#      built binary (scripts/conformance.sh: gregor dev --nodes 3,
#      KGO_TEST_RF=3), then TestTxnEtl again with transaction.version=1
#      (transactions without KIP-890 part 2);
#   6. prints each part's summary and exits non-zero if anything failed.
#
# Environment:
#   GOTEST_FLAGS       go test flags (default: -count=1 -timeout=10m)
#   SKIP_CONFORMANCE   set to skip step 5
#   GREGOR_TEST_SUMMARY  file to write the closing summary lines to (.ci/run)
#   GREGOR_TEST_ARTIFACTS  where tests leave artifacts such as the console
#                      screenshot (default: $TMPDIR/gregor-test-artifacts; kept)
# Everything is bounded in time: go test by -timeout (plus a hard limit),
# the conformance suite by its own limits (see scripts/conformance.sh).
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1
start=$(date +%s)

command -v go >/dev/null 2>&1 || { echo "go is not installed (Go $(awk '/^go /{print $2}' go.mod) is needed)"; echo "0 passed, 1 failed"; exit 1; }

log "tools"
if ensure_pkg kcat kcat; then
  log "kcat: $(command -v kcat)"
else
  log "kcat is not available: the kcat end-to-end tests will be skipped"
fi
if ensure_pkg chromium chromium; then
  log "chromium: $(command -v chromium)"
else
  log "chromium is not available: the web console browser tests will be skipped"
fi
# Debian's package is for Debian's python3 (a pyenv python3 on PATH lacks
# it); TestPythonTransactions tries /usr/bin/python3 first.
has_confluent_kafka() {
  local py
  for py in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
    [ -x "$py" ] && "$py" -c 'import confluent_kafka' 2>/dev/null && return 0
  done
  return 1
}
if has_confluent_kafka || { apt_install python3-confluent-kafka && has_confluent_kafka; }; then
  log "confluent-kafka-python: $(/usr/bin/python3 -c 'import confluent_kafka as c; print(c.version()[0], "librdkafka", c.libversion()[0])' 2>/dev/null)"
else
  log "confluent-kafka-python is not available: TestPythonTransactions will be skipped"
fi
# kafkajs, pinned (the version TestKafkajsTransactions names).
KAFKAJS_VERSION=2.2.4
export GREGOR_KAFKAJS_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/gregor-tools/kafkajs-$KAFKAJS_VERSION"
ensure_kafkajs() {
  [ -f "$GREGOR_KAFKAJS_DIR/node_modules/kafkajs/package.json" ] && return 0
  ensure_pkg node nodejs || return 1
  ensure_pkg npm npm || return 1
  log "installing kafkajs $KAFKAJS_VERSION (npm) into $GREGOR_KAFKAJS_DIR"
  local tmp="$GREGOR_KAFKAJS_DIR.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp" || return 1
  if timeout 300 npm install --no-audit --no-fund --no-save --prefix "$tmp" "kafkajs@$KAFKAJS_VERSION" >/dev/null 2>&1 &&
    [ -f "$tmp/node_modules/kafkajs/package.json" ]; then
    rm -rf "$GREGOR_KAFKAJS_DIR" && mv "$tmp" "$GREGOR_KAFKAJS_DIR"
    return 0
  fi
  rm -rf "$tmp"
  if ! timeout 60 npm ping >/dev/null 2>&1; then
    GREGOR_KAFKAJS_UNAVAILABLE="npm could not reach its registry $(npm config get registry 2>/dev/null)"
    export GREGOR_KAFKAJS_UNAVAILABLE
  fi
  return 1
}
if ensure_kafkajs; then
  log "kafkajs: $GREGOR_KAFKAJS_DIR"
else
  log "kafkajs $KAFKAJS_VERSION is not available${GREGOR_KAFKAJS_UNAVAILABLE:+ ($GREGOR_KAFKAJS_UNAVAILABLE)}: TestKafkajsTransactions will be skipped (under CI it fails unless npm could not reach its registry)"
fi
export GREGOR_TEST_ARTIFACTS="${GREGOR_TEST_ARTIFACTS:-${TMPDIR:-/tmp}/gregor-test-artifacts}"
mkdir -p "$GREGOR_TEST_ARTIFACTS"
if [ -z "${SKIP_CONFORMANCE:-}" ]; then
  ensure_pkg python3 python3 || log "python3 is not available: the conformance runner may fail"
fi

# staticcheck, pinned: a different version finds different things. It is
# installed by its module version: the Go module proxy may refuse a query
# by the release name.
STATICCHECK_VERSION=2026.2.2
STATICCHECK_MODULE_VERSION=v0.8.2
staticcheck_bin() {
  local c
  for c in "$(command -v staticcheck 2>/dev/null)" "$(go env GOPATH)/bin/staticcheck"; do
    if [ -x "$c" ] && "$c" -version 2>/dev/null | grep -q "staticcheck $STATICCHECK_VERSION "; then
      echo "$c"
      return 0
    fi
  done
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/gregor-tools/staticcheck-$STATICCHECK_VERSION"
  if [ ! -x "$dir/staticcheck" ]; then
    log "installing staticcheck $STATICCHECK_VERSION (go install)" >&2
    GOBIN="$dir" timeout 10m go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_MODULE_VERSION" >&2 || return 1
  fi
  echo "$dir/staticcheck"
}
if STATICCHECK="$(staticcheck_bin)"; then
  log "staticcheck: $STATICCHECK"
else
  STATICCHECK=
  log "staticcheck $STATICCHECK_VERSION could not be installed: the staticcheck check fails"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gregor-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log "build"
build_rc=0
timeout 15m go build ./... || build_rc=1
build_gregor "$WORK" || build_rc=1
timeout 5m go build -o "$WORK/gotest-summary" scripts/gotest-summary.go || build_rc=1
if [ "$build_rc" -ne 0 ]; then
  log "build FAILED"
  echo "0 passed, 1 failed"
  exit 1
fi
export GREGOR_BIN="$WORK/gregor"

# check NAME CMD...: one static check; it fails on a non-zero exit or any
# output other than the go command's "go: downloading" progress lines (a
# fresh machine's module cache fetches test-only modules here).
ck_pass=0 ck_fail=0 ck_failed=""
check() {
  local name="$1" out rc
  shift
  out="$("$@" 2>&1)"
  rc=$?
  out="$(printf '%s\n' "$out" | grep -v '^go: downloading ' || true)"
  if [ "$rc" -eq 0 ] && [ -z "$out" ]; then
    ck_pass=$((ck_pass + 1))
    log "$name: ok"
  else
    ck_fail=$((ck_fail + 1))
    ck_failed="$ck_failed $name"
    log "$name: FAILED"
    printf '%s\n' "$out"
  fi
}
log "static checks"
t_part=$(date +%s)
check "go vet" timeout 10m go vet ./...
check "gofmt -l" gofmt -l cmd internal test scripts
if [ -n "$STATICCHECK" ]; then
  check "staticcheck" timeout 10m "$STATICCHECK" ./...
else
  # shellcheck disable=SC2016 # $0 is the inner shell's argument
  check "staticcheck" sh -c 'echo "staticcheck $0 is not installed"; exit 1' "$STATICCHECK_VERSION"
fi
check "go mod tidy -diff" timeout 5m go mod tidy -diff
checks_line="checks: $ck_pass passed, $ck_fail failed (go vet, gofmt -l, staticcheck, go mod tidy -diff)"
[ -n "$ck_failed" ] && checks_line="$checks_line; failed:$ck_failed"
checks_line="$checks_line in $(( $(date +%s) - t_part ))s"

# The packages with goroutines and locks of their own run under -race (and
# only so: a second, plain run of them would add time and find nothing new).
RACE_PKGS="./internal/server ./internal/auth ./internal/replica ./internal/log ./internal/logmgr ./internal/coord ./internal/group ./internal/txn ./internal/cleaner ./internal/api ./internal/quorum/... ./internal/cluster ./internal/kclient"
# shellcheck disable=SC2086
race_paths="$(go list $RACE_PKGS)"
plain_paths="$(go list ./... | grep -vxF "$race_paths")"

# gotest LABEL OUT FLAGS PKGS...: go test -json through gotest-summary;
# sets gt_rc and gt_line.
gotest() {
  local label="$1" out="$2" flags="$3"
  shift 3
  # shellcheck disable=SC2086
  timeout --kill-after=30 20m go test -json $flags "$@" 2>&1 |
    "$WORK/gotest-summary" -label "$label" | tee "$out"
  local ps=("${PIPESTATUS[@]}")
  gt_rc=$(( ps[0] | ps[1] ))
  gt_line="$(grep -E "^$label: " "$out" | tail -n 1)"
  [ -n "$gt_line" ] || gt_line="$label: no summary (exit $gt_rc)"
}
# counts LINE: "N passed, N failed, N skipped" of a summary line.
counts() { echo "$1" | sed -nE 's/^[^:]+: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/p'; }

log "go test ./... (without the -race packages)"
t_part=$(date +%s)
# shellcheck disable=SC2086
gotest "go test" "$WORK/gotest.out" "${GOTEST_FLAGS:--count=1 -timeout=10m}" $plain_paths
gotest_rc=$gt_rc gotest_line="$gt_line in $(( $(date +%s) - t_part ))s"
read -r gt_pass gt_fail gt_skip < <(counts "$gotest_line")
gt_pass=${gt_pass:-0} gt_fail=${gt_fail:-0} gt_skip=${gt_skip:-0}
[ "$gotest_rc" -ne 0 ] && [ "$gt_fail" -eq 0 ] && gt_fail=1

log "go test -race $RACE_PKGS"
t_part=$(date +%s)
# shellcheck disable=SC2086
gotest "go test -race" "$WORK/gotest-race.out" "-race ${GOTEST_FLAGS:--count=1 -timeout=10m}" $race_paths
race_rc=$gt_rc race_line="$gt_line in $(( $(date +%s) - t_part ))s"
read -r rc_pass rc_fail rc_skip < <(counts "$race_line")
rc_pass=${rc_pass:-0} rc_fail=${rc_fail:-0} rc_skip=${rc_skip:-0}
[ "$race_rc" -ne 0 ] && [ "$rc_fail" -eq 0 ] && rc_fail=1

conf_rc=0 cf_pass=0 cf_fail=0 cf_skip=0 conf_line="conformance: not run (SKIP_CONFORMANCE set)"
if [ -z "${SKIP_CONFORMANCE:-}" ]; then
  log "franz-go conformance (${CONFORMANCE_NODES:-3} nodes)"
  t_part=$(date +%s)
  bash scripts/conformance.sh | tee "$WORK/conformance.out"
  conf_rc=${PIPESTATUS[0]}
  suite_line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$WORK/conformance.out" | tail -n 1)"
  if [ -n "$suite_line" ]; then
    cf_pass=$(echo "$suite_line" | awk '{print $1}')
    cf_fail=$(echo "$suite_line" | awk '{print $3}')
    cf_skip=$(sed -nE 's/^# duration .* skipped ([0-9]+)$/\1/p' "$WORK/conformance.out" | tail -n 1)
    cf_skip_re=$(sed -nE 's/^# skipped by regex: ([0-9]+) tests.*/\1/p' "$WORK/conformance.out" | tail -n 1)
    cf_skip=$(( ${cf_skip:-0} + ${cf_skip_re:-0} ))
    conf_line="conformance: $cf_pass passed, $cf_fail failed, $cf_skip skipped (franz-go kgo suite)"
  elif grep -q 'conformance: SKIPPED' "$WORK/conformance.out"; then
    conf_line="conformance: skipped ($(sed -nE 's/.*conformance: SKIPPED: //p' "$WORK/conformance.out"))"
  else
    conf_line="conformance: no summary (exit $conf_rc)"
  fi
  [ "$conf_rc" -ne 0 ] && [ "$cf_fail" -eq 0 ] && cf_fail=1
  conf_line="$conf_line in $(( $(date +%s) - t_part ))s"
  # Transactional clients of the original protocol (librdkafka, kafkajs,
  # older Java and franz-go): the ETL again with transaction.version=1.
  log "franz-go conformance: TestTxnEtl with transaction.version=1"
  t_part=$(date +%s)
  CONFORMANCE_SERVE_SET=gregor.transaction.version=1 RUN='^TestTxnEtl$' bash scripts/conformance.sh | tee "$WORK/conformance-tv1.out"
  tv1_rc=${PIPESTATUS[0]}
  tv1_line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$WORK/conformance-tv1.out" | tail -n 1)"
  if [ -n "$tv1_line" ]; then
    cf_pass=$(( cf_pass + $(echo "$tv1_line" | awk '{print $1}') ))
    cf_fail=$(( cf_fail + $(echo "$tv1_line" | awk '{print $3}') ))
  fi
  if [ "$tv1_rc" -ne 0 ]; then
    conf_rc=$tv1_rc
    [ -z "$tv1_line" ] && cf_fail=$(( cf_fail + 1 ))
  fi
  conf_line="$conf_line; TestTxnEtl with transaction.version=1: ${tv1_line:-no summary} in $(( $(date +%s) - t_part ))s"
fi

summary="$checks_line
$gotest_line
$race_line
$conf_line
artifacts: $GREGOR_TEST_ARTIFACTS
time: $(( $(date +%s) - start ))s
total: $(( ck_pass + gt_pass + rc_pass + cf_pass )) passed, $(( ck_fail + gt_fail + rc_fail + cf_fail )) failed, $(( gt_skip + rc_skip + cf_skip )) skipped"
echo
echo "$summary"
if [ -n "${GREGOR_TEST_SUMMARY:-}" ]; then echo "$summary" >"$GREGOR_TEST_SUMMARY"; fi
[ "$ck_fail" -eq 0 ] && [ "$gotest_rc" -eq 0 ] && [ "$race_rc" -eq 0 ] && [ "$conf_rc" -eq 0 ]
