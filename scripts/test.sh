#!/usr/bin/env bash
# Gregor's whole test run: `make test` (CI runs it through .ci/run).
#
#   1. installs what the tests need when missing (kcat; chromium for the
#      web console's browser tests; python3 for the conformance runner) with
#      apt-get, as root or with password-less sudo; without either it says
#      so and the kcat and browser tests skip themselves (outside CI);
#   2. builds everything and the gregor binary;
#   3. runs `go test ./...` (unit and end-to-end tests);
#   4. runs franz-go's conformance suite against the built binary
#      (scripts/conformance.sh);
#   5. prints each part's summary and exits non-zero if anything failed.
#
# Environment:
#   GOTEST_FLAGS       go test flags (default: -count=1 -timeout=10m)
#   SKIP_CONFORMANCE   set to skip step 4
#   GREGOR_TEST_SUMMARY  file to write the closing summary lines to (.ci/run)
#   GREGOR_TEST_ARTIFACTS  where tests leave artifacts such as the console
#                      screenshot (default: $TMPDIR/gregor-test-artifacts; kept)
# Everything is bounded in time: go test by -timeout (plus a hard limit),
# the conformance suite by its own limits (see scripts/conformance.sh).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
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
export GREGOR_TEST_ARTIFACTS="${GREGOR_TEST_ARTIFACTS:-${TMPDIR:-/tmp}/gregor-test-artifacts}"
mkdir -p "$GREGOR_TEST_ARTIFACTS"
if [ -z "${SKIP_CONFORMANCE:-}" ]; then
  ensure_pkg python3 python3 || log "python3 is not available: the conformance runner may fail"
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

log "go test ./..."
# shellcheck disable=SC2086
timeout --kill-after=30 20m go test -json ${GOTEST_FLAGS:--count=1 -timeout=10m} ./... 2>&1 |
  "$WORK/gotest-summary" | tee "$WORK/gotest.out"
ps=("${PIPESTATUS[@]}")
gotest_rc=$(( ps[0] | ps[1] ))
gotest_line="$(grep -E '^go test: ' "$WORK/gotest.out" | tail -n 1)"
[ -n "$gotest_line" ] || gotest_line="go test: no summary (exit $gotest_rc)"
read -r gt_pass gt_fail gt_skip < <(echo "$gotest_line" | sed -nE 's/^go test: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/p')
gt_pass=${gt_pass:-0} gt_fail=${gt_fail:-0} gt_skip=${gt_skip:-0}
[ "$gotest_rc" -ne 0 ] && [ "$gt_fail" -eq 0 ] && gt_fail=1

conf_rc=0 cf_pass=0 cf_fail=0 cf_skip=0 conf_line="conformance: not run (SKIP_CONFORMANCE set)"
if [ -z "${SKIP_CONFORMANCE:-}" ]; then
  log "franz-go conformance"
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
fi

summary="$gotest_line
$conf_line
artifacts: $GREGOR_TEST_ARTIFACTS
time: $(( $(date +%s) - start ))s
total: $(( gt_pass + cf_pass )) passed, $(( gt_fail + cf_fail )) failed, $(( gt_skip + cf_skip )) skipped"
echo
echo "$summary"
if [ -n "${GREGOR_TEST_SUMMARY:-}" ]; then echo "$summary" >"$GREGOR_TEST_SUMMARY"; fi
[ "$gotest_rc" -eq 0 ] && [ "$conf_rc" -eq 0 ]
