#!/usr/bin/env bash
# The physical floor of the replication benchmark on this machine:
# `rawlog replicate -rf 1` against `-rf 3` (test/peers/rawlog), paired in
# each round, alternating which goes first.
#
#   scripts/bench-repl-floor.sh [rounds]      (default 6 rounds)
#
# The workload is test/cluster's TestLongReplicationThroughput with only the
# system calls left: 3 partitions, 1 MiB requests of 1 KiB records, 5 in
# flight per connection, acks=all; RF 3 is three node processes each leading
# one partition and following the other two (fetches served with sendfile,
# fdatasync before the next fetch), RF 1 is one node leading all three.
# Each run starts after a `sync`. Prints one JSON line per run to $OUT
# (default /tmp/gregor-repl-floor.jsonl), then the medians and the paired
# ratio RF3/RF1 (each round's, then their median). On a VM the memory state
# moves every figure (page_cache_ms_per_mib: about 3 ms/MiB while guest
# memory is fresh, 0.3 once the page cache is full and recycled;
# mem_free_mib at the window's start and end), and each run frees the
# gigabytes it wrote: set WARM to a file larger than the free memory (a
# sparse one will do: truncate -s 20G FILE) and it is read before every
# run, so every run recycles the page cache. The machine is usually
# shared: compare figures within one run only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-6}"
OUT="${OUT:-/tmp/gregor-repl-floor.jsonl}"
DIR="${DIR:-/tmp}"
WARMUP="${WARMUP:-1s}"
WARM="${WARM:-}"
ARGS="${ARGS:-}" # more rawlog replicate flags, e.g. -client-cpu-per-mib 1.2ms
DURATION="${DURATION:-5s}"
BIN="$(mktemp -d)"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/rawlog" ./test/peers/rawlog
: >"$OUT"
for ((r = 0; r < ROUNDS; r++)); do
  order="1 3"
  if ((r % 2)); then order="3 1"; fi
  echo "round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for rf in $order; do
    sync
    if [[ -n "$WARM" ]]; then cat "$WARM" >/dev/null; fi
    line=$("$BIN/rawlog" replicate -rf "$rf" -dir "$DIR" -warmup "$WARMUP" -duration "$DURATION" $ARGS)
    echo "$line" >&2
    echo "{\"round\":$r,${line#\{}" >>"$OUT"
  done
done
python3 - "$OUT" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["round"], r["rf"]): r for r in runs}
rounds = sorted({r["round"] for r in runs})
med = lambda rf, k: statistics.median(by[(n, rf)][k] for n in rounds)
keys = [("mib_per_sec", "MiB/s"), ("mib_per_cluster_cpu_s", "MiB per cluster CPU-s"),
        ("cluster_ms_per_mib", "cluster ms/MiB"), ("client_ms_per_mib", "client ms/MiB"),
        ("machine_busy_cores", "busy cores"), ("others_busy_cores", "of which not the run"),
        ("machine_ms_per_mib", "machine ms/MiB"), ("disk_busy", "busiest disk busy (0-1)"),
        ("page_cache_ms_per_mib", "page cache ms/MiB")]
print(f"medians over {len(rounds)} rounds")
print(f"{'':24}{'RF 1':>10}{'RF 3':>10}")
for k, name in keys:
    print(f"{name:24}{med(1, k):10.2f}{med(3, k):10.2f}")
ratios = [by[(n, 3)]["mib_per_sec"] / by[(n, 1)]["mib_per_sec"] for n in rounds]
print("RF3/RF1 throughput per round: " + " ".join(f"{x:.2f}" for x in ratios))
print(f"RF3/RF1 median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
# The ratio if both were bound by CPU alone: RF 1's CPU per MiB (nodes
# and client) over RF 3's. RF 1 is often bound by its acknowledgement
# latency instead (five requests in flight on one connection) and then
# leaves cores idle, which RF 3 never does here.
cost = lambda n, rf: by[(n, rf)]["cluster_ms_per_mib"] + by[(n, rf)]["client_ms_per_mib"]
cpu = [cost(n, 1) / cost(n, 3) for n in rounds]
print("CPU per MiB (nodes+client), RF1/RF3 per round: " + " ".join(f"{x:.2f}" for x in cpu))
print(f"CPU per MiB RF1/RF3 median {statistics.median(cpu):.2f} (min {min(cpu):.2f}, max {max(cpu):.2f})")
EOF
