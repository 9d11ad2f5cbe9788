#!/usr/bin/env bash
# Run franz-go's kgo integration suite against a freshly started gregor cluster.
#
#   scripts/conformance.sh            (make conformance)
#
# Builds gregor (or uses $GREGOR_BIN), starts a 3-node cluster with
# `gregor dev --nodes 3` on a temp dir with OS-chosen loopback ports (never
# 9092, which a developer may be using), waits until every node's /readyz
# answers, runs ../shared/conformance/franz-go.sh against all three with
# KGO_TEST_RF=3 (every topic the suite creates has a replica on each node, so
# each produce with acks=all waits for both followers), and stops the
# cluster by gregor dev's PID (which stops each node by its own). The
# suite's SASL tests run against one more `gregor serve` with a
# SASL_PLAINTEXT listener (SCRAM and unsecured OAUTHBEARER). Skips
# (exit 0) with a message when franz-go.sh is absent.
#
# Environment:
#   CONFORMANCE_NODES     nodes in the cluster (default 3; 1 runs the whole
#                         suite against the single SASL-enabled `gregor serve`)
#   GREGOR_BIN            prebuilt gregor binary (default: build one)
#   GREGOR_SHARED         the shared dir (default: <repo root>/../shared)
#   KGO_TEST_RECORDS      records for the ETL tests (default 50000)
#   KGO_TEST_RF           replication factor of the suite's topics (default:
#                         the number of nodes, at most 3)
#   CONFORMANCE_TIMEOUT   go test -timeout for the suite (default 10m)
#   CONFORMANCE_SKIP      -test.skip regex to use instead of the one computed
#                         from FEATURE_TESTS and what the broker serves
#   CONFORMANCE_KEEP_LOG  set to keep the broker log and data dir
#   CONFORMANCE_SERVE_SET broker configs for gregor serve, "key=value ..."
#                         (each becomes a --set), e.g.
#                         gregor.transaction.version=1 to force transactions v1
#   RUN                   -test.run regex (passed to franz-go.sh), e.g. ^TestTxnEtl$
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Tests that need a feature Gregor may not have built yet: "test feature",
# with what the test uses (github.com/twmb/franz-go/pkg/kgo@v1.22.3). A
# feature's tests are skipped when the broker does not advertise every API
# key the feature needs (ApiVersions advertises exactly what is implemented).
FEATURE_TESTS=(
  # Consumer groups (classic protocol).
  "TestGroupETL groups"                 # group_test.go: ConsumerGroup consumers chained through committed offsets
  "TestGroupSimple groups"              # consumer_test.go: ConsumerGroup + CommitUncommittedOffsets
  "TestIssue523 groups"                 # consumer_test.go: ConsumerGroup with RoundRobin/Sticky balancers
  "TestIssue1034 groups"                # client_test.go: FindCoordinator for three group keys
  "TestConsumeRegex groups"             # consumer_test.go: its internalTopic helper needs __consumer_offsets,
                                        #   which FindCoordinator creates (waits 30s for it)
  # KIP-848 consumer groups (ConsumerGroupHeartbeat); skips itself too.
  "Test848RegexBrokerResolves kip848"   # consumer_test.go: 848 group with a regex
  # Transactions (a transactional producer and a read_committed group consumer).
  "TestTxnEtl txns"                     # txn_test.go
  # Share groups (KIP-932); these skip themselves too without ShareFetch v2.
  "TestShareGroup share"                # client_test.go
  "TestShareGroupAckOnClose share"      # share_test.go
  "TestShareGroupETL share"             # share_test.go
  "TestShareGroupOffsetsAdmin share"    # share_test.go
  "TestConsumeRegexShareSkipsInternal share" # consumer_test.go: share group with a regex
  # SASL, against the SASL_PLAINTEXT listener this script starts (they skip
  # themselves without KGO_TEST_SCRAM*/KGO_TEST_OAUTH_SEEDS).
  "TestSCRAMAuth sasl"
  "TestSCRAMAuthBadCredentials sasl"
  "TestOAuthAuth sasl"
)
# Runnable although their names suggest groups: TestPauseIssue489 and
# TestPauseIssueOct2023 (direct partition consumers), TestIssue434 and
# TestIssue810 (ConsumeRegex without a group: metadata only).

# API keys each feature needs.
declare -A FEATURE_KEYS=(
  [groups]="8 9 10 11 12 13 14"          # OffsetCommit OffsetFetch FindCoordinator JoinGroup Heartbeat LeaveGroup SyncGroup
  [kip848]="68"                          # ConsumerGroupHeartbeat
  [txns]="8 9 10 11 12 13 14 22 24 25 26 28" # groups + InitProducerId AddPartitionsToTxn AddOffsetsToTxn EndTxn TxnOffsetCommit
  [share]="76 78 79"                     # ShareGroupHeartbeat ShareFetch ShareAcknowledge
  [sasl]="17 36"                         # SaslHandshake SaslAuthenticate (and a SASL listener)
)

join() { local IFS='|'; echo "$*"; }

SHARED="${GREGOR_SHARED:-}"
if [ -z "$SHARED" ]; then
  top="$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null || echo "$ROOT")"
  SHARED="$top/../shared"
fi
FRANZ="$SHARED/conformance/franz-go.sh"
if [ ! -f "$FRANZ" ]; then
  log "conformance: SKIPPED: $FRANZ not found (set GREGOR_SHARED to the shared dir)"
  exit 0
fi
# franz-go.sh reads `go mod download -json` with python3 the first time.
if ! command -v python3 >/dev/null 2>&1; then
  ensure_pkg python3 python3-minimal || { log "conformance: FAILED: python3 is needed by franz-go.sh"; echo "0 passed, 1 failed"; exit 1; }
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gregor-conformance.XXXXXX")"
BROKER_PID= SASL_PID= SASL_ADDR= SASL_BOOTSTRAP=
cleanup() {
  if [ -n "$SASL_PID" ] && kill -0 "$SASL_PID" 2>/dev/null; then
    kill -TERM "$SASL_PID" 2>/dev/null
    for _ in $(seq 300); do kill -0 "$SASL_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SASL_PID" 2>/dev/null
    wait "$SASL_PID" 2>/dev/null
  fi
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    # gregor dev stops its nodes on SIGTERM; killed, it leaves them a SIGTERM.
    kill -TERM "$BROKER_PID" 2>/dev/null
    for _ in $(seq 450); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID" 2>/dev/null
  fi
  if [ -z "${CONFORMANCE_KEEP_LOG:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

BIN="${GREGOR_BIN:-}"
if [ -z "$BIN" ]; then
  log "building gregor"
  build_gregor "$WORK" || { log "conformance: FAILED: build failed"; echo "0 passed, 1 failed"; exit 1; }
  BIN="$WORK/gregor"
fi

NODES="${CONFORMANCE_NODES:-3}"
# A single `gregor serve` with, besides the PLAINTEXT listener the suite
# uses, a SASL_PLAINTEXT listener for franz-go's SASL tests: SCRAM-SHA-256/512
# (a user created below with gregor user scram set) and OAUTHBEARER with
# Kafka's default, unsecured, validator (the tests send {"alg":"none"}
# tokens). No authorizer: the suite's clients are ANONYMOUS. With several
# nodes the suite runs against the cluster and its SASL tests against this
# extra broker (KGO_TEST_SCRAM_SEEDS, KGO_TEST_OAUTH_SEEDS).
cat >"$WORK/server.properties" <<'PROPS'
listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0
advertised.listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
PROPS
SETS=()
for kv in ${CONFORMANCE_SERVE_SET:-}; do SETS+=(--set "$kv"); done
broker_fail() {
  log "conformance: FAILED: $1"
  for f in "$WORK"/broker.log "$WORK"/dev/node-*.log; do
    [ -s "$f" ] && tail -n 40 "$f" | sed "s|^|    $(basename "$f"): |"
  done
  echo "0 passed, 1 failed"
  exit 1
}

BOOTSTRAP=
# start_sasl_serve DIR starts that broker on DIR and waits until it is
# ready: its pid in SASL_PID, its addresses in SASL_BOOTSTRAP, SASL_ADMIN
# and SASL_ADDR (the SASL_PLAINTEXT listener).
start_sasl_serve() {
  "$BIN" serve --config "$WORK/server.properties" --data-dir "$1" --admin-listen 127.0.0.1:0 "${SETS[@]}" \
    --log-format text --log-level "${CONFORMANCE_LOG_LEVEL:-warn}" >"$WORK/banner" 2>"$WORK/broker.log" &
  SASL_PID=$!
  SASL_BOOTSTRAP= SASL_ADMIN=
  for _ in $(seq 300); do  # 30s
    SASL_BOOTSTRAP="$(awk '$1=="bootstrap:"{print $2}' "$WORK/banner")"
    SASL_ADMIN="$(awk '$1=="admin:"{print $2}' "$WORK/banner")"
    [ -n "$SASL_BOOTSTRAP" ] && [ -n "$SASL_ADMIN" ] && break
    kill -0 "$SASL_PID" 2>/dev/null || broker_fail "gregor exited at start"
    sleep 0.1
  done
  [ -n "$SASL_BOOTSTRAP" ] && [ -n "$SASL_ADMIN" ] || broker_fail "gregor printed no listen addresses within 30s"
  ready=
  for _ in $(seq 600); do  # 60s
    [ "$(http_status "$SASL_ADMIN/readyz")" = 200 ] && { ready=1; break; }
    kill -0 "$SASL_PID" 2>/dev/null || broker_fail "gregor exited before it was ready"
    sleep 0.1
  done
  [ -n "$ready" ] || broker_fail "$SASL_ADMIN/readyz did not answer 200 within 60s"
  SASL_ADDR="$(awk '$1=="listener" && $2=="SASL_PLAINTEXT:"{print $3}' "$WORK/banner")"
}

if [ "$NODES" = 1 ]; then
  log "starting $BIN serve (data in $WORK/data)"
  start_sasl_serve "$WORK/data"
  BROKER_PID=$SASL_PID SASL_PID= BOOTSTRAP=$SASL_BOOTSTRAP
else
  log "starting $BIN dev --nodes $NODES (data in $WORK/dev) ${SETS[*]}"
  "$BIN" dev --nodes "$NODES" --dir "$WORK/dev" --port-base 0 --admin-port-base 0 "${SETS[@]}" \
    --log-level "${CONFORMANCE_LOG_LEVEL:-warn}" >"$WORK/dev-banner" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1200); do  # 120s: gregor dev waits for every node's /readyz
    BOOTSTRAP="$(sed -nE 's/.*bootstrap servers: (\S+)$/\1/p' "$WORK/dev-banner")"
    [ -n "$BOOTSTRAP" ] && break
    kill -0 "$BROKER_PID" 2>/dev/null || { cat "$WORK/dev-banner"; broker_fail "gregor dev exited at start"; }
    sleep 0.1
  done
  [ -n "$BOOTSTRAP" ] || { cat "$WORK/dev-banner"; broker_fail "the $NODES nodes were not ready within 120s"; }
  log "starting $BIN serve for the SASL tests (data in $WORK/sasl)"
  start_sasl_serve "$WORK/sasl"
fi
log "gregor pid $BROKER_PID ready ($NODES node(s)): bootstrap $BOOTSTRAP"
if [ -n "$SASL_ADDR" ] && [ -z "${KGO_TEST_SCRAM_SEEDS:-}${KGO_TEST_OAUTH_SEEDS:-}" ]; then
  if GREGOR_SCRAM_PASSWORD=conformance-pw timeout 60 "$BIN" user scram set conformance -b "$SASL_BOOTSTRAP" >/dev/null; then
    export KGO_TEST_SCRAM_SEEDS="$SASL_ADDR" KGO_TEST_SCRAM="conformance:conformance-pw:256" KGO_TEST_OAUTH_SEEDS="$SASL_ADDR"
    log "SASL tests against $SASL_ADDR (SCRAM user conformance, unsecured OAUTHBEARER)"
  else
    log "creating the SCRAM user failed; the SASL tests will be skipped"
  fi
fi

# Decide what to skip from what the broker serves.
timeout 5m go build -o "$WORK/apikeys" "$ROOT/scripts/apikeys.go" || broker_fail "building scripts/apikeys.go failed"
SERVED=" $(timeout 60 "$WORK/apikeys" "${BOOTSTRAP%%,*}" | awk '{printf "%s ", $1}')"
[ "$SERVED" != " " ] || broker_fail "ApiVersions to $BOOTSTRAP failed"
missing_keys() {
  local k out=
  for k in ${FEATURE_KEYS[$1]}; do [[ "$SERVED" == *" $k "* ]] || out+=" $k"; done
  if [ "$1" = sasl ] && [ -z "${KGO_TEST_SCRAM_SEEDS:-}${KGO_TEST_OAUTH_SEEDS:-}" ]; then out+=" (no SASL listener)"; fi
  echo "${out# }"
}
SKIPPED=()
for entry in "${FEATURE_TESTS[@]}"; do
  read -r name feature <<<"$entry"
  miss="$(missing_keys "$feature")"
  if [ -n "$miss" ]; then
    SKIPPED+=("$name")
    echo "# skip $name: needs $feature; broker lacks API keys: $miss"
  fi
done
if [ -n "${CONFORMANCE_SKIP:-}" ]; then
  SKIP_RE="$CONFORMANCE_SKIP"
elif [ "${#SKIPPED[@]}" -gt 0 ]; then
  SKIP_RE="^($(join "${SKIPPED[@]}"))\$"
  # -test.skip'd tests print nothing, so say how many there are.
  echo "# skipped by regex: ${#SKIPPED[@]} tests"
else
  SKIP_RE=
fi
RF="${KGO_TEST_RF:-$(( NODES < 3 ? NODES : 3 ))}"
log "franz-go conformance (KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000}, KGO_TEST_RF=$RF); -test.skip $SKIP_RE"
KGO_TEST_RF=$RF KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-50000}" SKIP="$SKIP_RE" TEST_TIMEOUT="${CONFORMANCE_TIMEOUT:-10m}" \
  timeout --kill-after=30 40m bash "$FRANZ" "$BOOTSTRAP" 2>&1 | tee "$WORK/suite.out"
rc=${PIPESTATUS[0]}

alive=1
kill -0 "$BROKER_PID" 2>/dev/null || alive=
log "stopping gregor (pid $BROKER_PID)"
if [ -n "$alive" ]; then
  kill -TERM "$BROKER_PID" 2>/dev/null
  for _ in $(seq 450); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$BROKER_PID" 2>/dev/null; then
    log "gregor did not stop within 45s of SIGTERM; killing it"
    kill -KILL "$BROKER_PID" 2>/dev/null
    rc=1
  fi
  wait "$BROKER_PID" 2>/dev/null
else
  wait "$BROKER_PID" 2>/dev/null
  log "gregor died during the suite (exit $?)"
  for f in "$WORK"/broker.log "$WORK"/dev/node-*.log; do
    [ -s "$f" ] && tail -n 40 "$f" | sed "s|^|    $(basename "$f"): |"
  done
  rc=1
fi
BROKER_PID=
for f in "$WORK"/broker.log "$WORK"/dev/node-*.log; do
  if [ -s "$f" ] && grep -qE 'level=(ERROR|error)|panic' "$f"; then
    log "$(basename "$f") has errors (first 20):"
    grep -E 'level=(ERROR|error)|panic' "$f" | head -n 20 | sed 's/^/    broker: /'
  fi
done
exit "$rc"
