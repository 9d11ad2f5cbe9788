#!/usr/bin/env bash
# Paired throughput/latency/CPU comparison of Gregor against franz-go's kfake
# (with a DataDir) on loopback, alternating them in one run.
#
#   scripts/bench-vs-kfake.sh [rounds]      (default 3 rounds)
#
# Every round runs every workload on every server, in the same order, each on
# a fresh server and data dir:
#   1KiB-1p, 1KiB-8p, 100B-1p, 100B-8p  kgo defaults (idempotent, acks=all,
#                    linger 0, 1 MiB batches), one client, as fast as it goes
#   1KiB-8p-8cl      the same with 8 producer clients on 8 partitions
#   1KiB-5000rps     5,000 records/s of 1 KiB to 1 partition, linger 0: ack
#                    latency from each record's scheduled send time
#   consume-1cl, consume-4cl  catch-up consume of 1 GiB (1,000,000 records of
#                    1 KiB on 1 partition, written first, not measured) by 1 and
#                    by 4 clients, each reading all of it
# A produce run produces for 2 s and then measures 8 s (--warmup, --duration).
# `gregor bench` reads the server's CPU seconds (utime+stime) and the bytes it
# wrote to storage (/proc/<pid>/io write_bytes) at the start and the end of
# the measured window, and for Gregor its gregor_network_inflight_requests
# histogram (requests in flight per connection, on average); the script reads
# the peak RSS (VmHWM) at the end of each run. It also reads the machine over
# the window: its own CPU time, how many cores were busy (every process), and
# what reached the block devices (/proc/diskstats), so a run bounded by the
# machine shows it.
#
# Servers ($SERVERS, default all, in this order every round):
#   gregor          Gregor's defaults: acks are sent after fsync (gregor.ack.fsync=true)
#   kfake           kfake with a DataDir: written to the page cache, never fsynced
#   gregor-nofsync  Gregor with gregor.ack.fsync=false: Kafka's (and kfake's) durability
#   kfake-sync      kfake with a DataDir and SyncWrites: fsync per batch, Gregor's durability
#   raw             test/peers/rawlog: the same shapes as raw system calls, no broker
#                   (pipelined pwrite + group-committed fdatasync for 1KiB-1p,
#                   100B-1p and 1KiB-5000rps; 8 files written at once for 1KiB-8p-8cl,
#                   five requests per file outstanding;
#                   sendfile of a file to one reader for consume-1cl, to four
#                   reader processes at once for consume-4cl, 1 MiB each time a
#                   reader asks, as kgo's fetches do)
#   raw-nosync      the same appends answered once written, never fdatasynced: with
#                   raw, what durability itself costs on this machine
#
# Output: one JSON line per run in $OUT (default /tmp/gregor-bench.jsonl),
# then per workload and server the medians over the rounds, and the paired
# ratios (each round's ratio of the two servers, then their median) of
# gregor/kfake, gregor/kfake-sync, gregor-nofsync/kfake and gregor/raw.
# The machine's load average is printed before each round: the figures are
# only comparable within a run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
SERVERS="${SERVERS:-gregor kfake gregor-nofsync kfake-sync raw}"
WORKLOADS="${WORKLOADS:-1KiB-1p 1KiB-8p 100B-1p 100B-8p 1KiB-8p-8cl 1KiB-5000rps consume}"
OUT="${OUT:-/tmp/gregor-bench.jsonl}"
# Fixed ports below the kernel's ephemeral range (32768-60999 on Linux), so
# no outgoing connection of another process can hold them.
PORT="${PORT:-29392}"
ADMIN_PORT="${ADMIN_PORT:-29944}"
WARMUP="${WARMUP:-2s}"
DURATION="${DURATION:-8s}"
BIN="$(mktemp -d)"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/gregor" ./cmd/gregor
go build -o "$BIN/kfake" ./test/peers/kfake
go build -o "$BIN/rawlog" ./test/peers/rawlog
: >"$OUT"
rss() { awk '/VmHWM/{print $2}' "/proc/$1/status"; }

# settle: every run starts with no dirty page cache left by the one before
# (kfake never fsyncs: without this its gigabytes are written back while the
# next server's fsyncs wait behind them, and a fixed-rate run's p99 measures
# the previous run, 2-20 ms here).
settle() { sync; }

start_server() { # name datadir; sets SERVER_PID and METRICS
  local name=$1 dir=$2
  settle
  METRICS=""
  case "$name" in
  gregor|gregor-nofsync)
    local fsync=true
    [ "$name" = gregor-nofsync ] && fsync=false
    "$BIN/gregor" serve --data-dir "$dir" --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$ADMIN_PORT \
      --set gregor.ack.fsync=$fsync --log-format json --log-level warn >"$dir.log" 2>&1 &
    METRICS=http://127.0.0.1:$ADMIN_PORT/metrics
    ;;
  kfake) "$BIN/kfake" -port "$PORT" -data "$dir" >"$dir.log" 2>&1 & ;;
  kfake-sync) "$BIN/kfake" -port "$PORT" -data "$dir" -sync >"$dir.log" 2>&1 & ;;
  *) echo "unknown server $name" >&2; exit 2 ;;
  esac
  SERVER_PID=$!
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server $name did not start" >&2; cat "$dir.log" >&2; exit 1
}

stop_server() {
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
}

emit() { # server workload round json [rss_kib]
  python3 - "$@" >>"$OUT" <<'PY'
import json,sys
server,workload,rnd,res=sys.argv[1:5]
r=json.loads(res); r.update(server=server,workload=workload,round=int(rnd))
if len(sys.argv)>5 and sys.argv[5]: r["peak_rss_mib"]=round(int(sys.argv[5])/1024,1)
print(json.dumps(r))
PY
}

produce_args() { # workload -> bench produce flags
  case "$1" in
  1KiB-1p) echo "-p 1 --record-size 1024" ;;
  1KiB-8p) echo "-p 8 --record-size 1024" ;;
  100B-1p) echo "-p 1 --record-size 100" ;;
  100B-8p) echo "-p 8 --record-size 100" ;;
  1KiB-8p-8cl) echo "-p 8 --record-size 1024 --clients 8" ;;
  1KiB-5000rps) echo "-p 1 --record-size 1024 --rate 5000 --linger-ms 0" ;;
  esac
}

run_broker() { # server workload round
  local name=$1 w=$2 rnd=$3
  local dir; dir=$(mktemp -d /tmp/bench-$name-XXXX)
  start_server "$name" "$dir"
  local common=(-b 127.0.0.1:$PORT -o json --server-pid "$SERVER_PID")
  [ -n "$METRICS" ] && common+=(--server-metrics "$METRICS")
  if [ "$w" = consume ]; then
    "$BIN/gregor" bench produce -b 127.0.0.1:$PORT -t bench -p 1 --record-size 1024 -n 1000000 -o json >/dev/null 2>&1
    local c1 c4
    c1=$("$BIN/gregor" bench consume -t bench --clients 1 "${common[@]}" 2>/dev/null)
    c4=$("$BIN/gregor" bench consume -t bench --clients 4 "${common[@]}" 2>/dev/null)
    local r; r=$(rss "$SERVER_PID")
    emit "$name" consume-1cl "$rnd" "$c1" "$r"
    emit "$name" consume-4cl "$rnd" "$c4" "$r"
  else
    local p
    # shellcheck disable=SC2046
    p=$("$BIN/gregor" bench produce -t bench $(produce_args "$w") --warmup "$WARMUP" -d "$DURATION" "${common[@]}" 2>/dev/null)
    emit "$name" "$w" "$rnd" "$p" "$(rss "$SERVER_PID")"
  fi
  stop_server
  rm -rf "$dir" "$dir.log"
}

run_raw() { # server workload round: the raw system-call floor of the same shape
  local name=$1 w=$2 rnd=$3 r
  settle
  local app=("$BIN/rawlog" append -warmup "$WARMUP" -duration "$DURATION")
  [ "$name" = raw-nosync ] && app+=(-nosync)
  case "$w" in
  1KiB-1p) r=$("${app[@]}" -size 1024) ;;
  100B-1p) r=$("${app[@]}" -size 100) ;;
  1KiB-8p-8cl) r=$("${app[@]}" -size 1024 -files 8 -inflight 5) ;;
  1KiB-5000rps) r=$("${app[@]}" -size 1024 -rate 5000) ;;
  consume)
    [ "$name" = raw ] || return 0
    # Each 1 MiB sent when its reader asks (-rpc): the shape of kgo's
    # fetches (FetchMaxPartitionBytes 1 MiB, one fetch in flight).
    r=$("$BIN/rawlog" serve -mb 1024 -rounds 2 -rpc)
    emit "$name" consume-1cl "$rnd" "$r"
    r=$("$BIN/rawlog" serve -mb 1024 -rounds 1 -readers 4 -rpc); w=consume-4cl ;;
  *) return 0 ;;
  esac
  emit "$name" "$w" "$rnd" "$r"
}

for round in $(seq "$ROUNDS"); do
  echo "round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for w in $WORKLOADS; do
    for server in $SERVERS; do
      case "$server" in
      raw|raw-nosync) run_raw "$server" "$w" "$round" ;;
      *) run_broker "$server" "$w" "$round" ;;
      esac
    done
  done
done
echo "done: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 scripts/bench-summary.py "$OUT"
