#!/usr/bin/env bash
# Paired throughput/latency/CPU comparison of Gregor against franz-go's kfake
# (with a DataDir) on loopback, alternating them in one run.
#
#   scripts/bench-vs-kfake.sh [rounds]      (default 2 rounds)
#
# For each workload it starts a fresh server, produces with `gregor bench
# produce` (kgo, acks=all, default batching), consumes everything back with
# `gregor bench consume`, and reads the server's CPU seconds (utime+stime) and
# peak RSS (VmHWM) from /proc. Output: one JSON line per run in $OUT
# (default /tmp/gregor-bench.jsonl) and a table on stdout.
#
# Servers ($SERVERS, default all four, in this order every round):
#   gregor          Gregor's defaults: acks are sent after fsync (gregor.ack.fsync=true)
#   kfake           kfake with a DataDir: written to the page cache, never fsynced
#   gregor-nofsync  Gregor with gregor.ack.fsync=false: Kafka's (and kfake's) durability
#   kfake-sync      kfake with a DataDir and SyncWrites: fsync per batch, Gregor's durability
# The ratios printed are gregor/kfake, and the two equal-durability pairs
# gregor-nofsync/kfake and gregor/kfake-sync.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-2}"
SERVERS="${SERVERS:-gregor kfake gregor-nofsync kfake-sync}"
OUT="${OUT:-/tmp/gregor-bench.jsonl}"
BIN="$(mktemp -d)"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/gregor" ./cmd/gregor
go build -o "$BIN/kfake" ./test/peers/kfake
: >"$OUT"
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{printf "%.3f", ($14+$15)/hz}' "/proc/$1/stat"; }
rss() { awk '/VmHWM/{print $2}' "/proc/$1/status"; }

start_server() { # name datadir -> prints pid; sets ADDR
  local name=$1 dir=$2
  case "$name" in
  gregor|gregor-nofsync)
    local fsync=true
    [ "$name" = gregor-nofsync ] && fsync=false
    "$BIN/gregor" serve --data-dir "$dir" --listen 127.0.0.1:39092 --admin-listen 127.0.0.1:39644 \
      --set gregor.ack.fsync=$fsync --log-format json --log-level warn >"$dir.log" 2>&1 &
    ;;
  kfake) "$BIN/kfake" -port 39092 -data "$dir" >"$dir.log" 2>&1 & ;;
  kfake-sync) "$BIN/kfake" -port 39092 -data "$dir" -sync >"$dir.log" 2>&1 & ;;
  *) echo "unknown server $name" >&2; exit 2 ;;
  esac
  SERVER_PID=$!
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/39092) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server $name did not start" >&2; cat "$dir.log" >&2; exit 1
}

run() { # name label size partitions records rate
  local name=$1 label=$2 size=$3 parts=$4 n=$5 rate=$6
  local dir; dir=$(mktemp -d /tmp/bench-$name-XXXX)
  start_server "$name" "$dir"
  local c0; c0=$(cpu "$SERVER_PID")
  local p; p=$("$BIN/gregor" bench produce -b 127.0.0.1:39092 -t bench -p "$parts" --record-size "$size" \
      -n "$n" --rate "$rate" -o json 2>/dev/null)
  local c1; c1=$(cpu "$SERVER_PID")
  local c; c=$("$BIN/gregor" bench consume -b 127.0.0.1:39092 -t bench -o json 2>/dev/null)
  local c2; c2=$(cpu "$SERVER_PID")
  local r; r=$(rss "$SERVER_PID")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$dir" "$dir.log"
  python3 - "$name" "$label" "$p" "$c" "$c0" "$c1" "$c2" "$r" >>"$OUT" <<'PY'
import json,sys
name,label,p,c,c0,c1,c2,r=sys.argv[1:]
p=json.loads(p); c=json.loads(c)
pc=float(c1)-float(c0); cc=float(c2)-float(c1)
print(json.dumps(dict(server=name,workload=label,produce_mib_s=p["mib_per_sec"],produce_records=p["records"],
  produce_errors=p["errors"],p50_ms=p["latency_p50_ms"],p99_ms=p["latency_p99_ms"],
  produce_cpu_s=round(pc,3),mib_per_cpu_s=round(p["bytes"]/(1<<20)/pc,1) if pc>0 else None,
  consume_mib_s=c["mib_per_sec"],consume_cpu_s=round(cc,3),peak_rss_mib=round(int(r)/1024,1))))
PY
}

for round in $(seq "$ROUNDS"); do
  for server in $SERVERS; do
    run "$server" "1KiB-1p"        1024 1 300000 0
    run "$server" "1KiB-8p"        1024 8 300000 0
    run "$server" "100B-1p"         100 1 1000000 0
    run "$server" "100B-8p"         100 8 1000000 0
    run "$server" "1KiB-5000rps"   1024 1 50000 5000
  done
done
python3 - "$OUT" <<'PY'
import json,sys,collections
rows=[json.loads(l) for l in open(sys.argv[1])]
agg=collections.defaultdict(list)
for r in rows: agg[(r["workload"],r["server"])].append(r)
def med(xs):
    xs=sorted(x for x in xs if x is not None); return xs[len(xs)//2] if xs else float('nan')
print(f'{"workload":14} {"server":14} {"prod MiB/s":>10} {"MiB/CPU-s":>9} {"p50 ms":>7} {"p99 ms":>7} {"cons MiB/s":>10} {"RSS MiB":>8}')
for (w,s),rs in sorted(agg.items()):
    print(f'{w:14} {s:14} {med([r["produce_mib_s"] for r in rs]):10.1f} {med([r["mib_per_cpu_s"] for r in rs]):9.1f} '
          f'{med([r["p50_ms"] for r in rs]):7.2f} {med([r["p99_ms"] for r in rs]):7.2f} {med([r["consume_mib_s"] for r in rs]):10.1f} '
          f'{med([r["peak_rss_mib"] for r in rs]):8.1f}')
print()
for a,b in (("gregor","kfake"),("gregor-nofsync","kfake"),("gregor","kfake-sync")):
    for w in sorted({k[0] for k in agg}):
        g,k=agg.get((w,a)),agg.get((w,b))
        if g and k:
            print(f'{w:14} {a+"/"+b:26} produce {med([r["produce_mib_s"] for r in g])/med([r["produce_mib_s"] for r in k]):.2f}x'
                  f'  consume {med([r["consume_mib_s"] for r in g])/med([r["consume_mib_s"] for r in k]):.2f}x')
PY
