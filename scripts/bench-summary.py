#!/usr/bin/env python3
"""Summarise scripts/bench-vs-kfake.sh's JSON lines: medians per workload and
server over the rounds, and paired ratios (the ratio of two servers within
each round, then the median of those ratios).

    python3 scripts/bench-summary.py /tmp/gregor-bench.jsonl
"""
import collections
import json
import sys


def med(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def fmt(x, width, prec=1):
    return f'{"-":>{width}}' if x is None else f"{x:{width}.{prec}f}"


# Columns: JSON field, heading, width, precision.
COLS = [
    ("mib_per_sec", "MiB/s", 8, 1),
    ("mib_per_server_cpu_s", "MiB/CPU-s", 9, 0),
    ("latency_p50_ms", "p50 ms", 8, 2),
    ("latency_p99_ms", "p99 ms", 8, 2),
    ("send_lag_p99_ms", "lag p99", 8, 2),
    ("fdatasync_p99_ms", "sync p99", 8, 2),
    ("fdatasync_max_ms", "sync max", 8, 2),
    ("disk_bytes_per_byte", "disk B/B", 8, 2),
    ("inflight_requests_avg", "inflight", 8, 2),
    ("peak_rss_mib", "RSS MiB", 7, 0),
    ("client_cpu_s_per_gib", "cl CPU/GiB", 10, 2),
    ("machine_busy_cores", "busy cores", 10, 2),
    ("device_write_mib_per_sec", "dev MiB/s", 9, 1),
]
# rawlog names some figures differently.
RAW = {"mib_per_server_cpu_s": "mib_per_cpu_s", "latency_p50_ms": "latency_p50_ms",
       "latency_p99_ms": "latency_p99_ms"}
PAIRS = [("gregor", "kfake"), ("gregor", "kfake-sync"), ("gregor-nofsync", "kfake"), ("gregor", "raw"),
         ("gregor", "gregor-nofsync"), ("raw", "raw-nosync")]


def field(r, k):
    if k == "client_cpu_s_per_gib":
        c, mib = r.get("client_cpu_s"), r.get("mib_per_sec", 0) * r.get("seconds", 0)
        return c / mib * 1024 if c and mib else None
    if r["server"].startswith("raw"):
        k = RAW.get(k, k)
    return r.get(k)


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    agg = collections.defaultdict(list)
    for r in rows:
        agg[(r["workload"], r["server"])].append(r)
    rounds = len({r["round"] for r in rows})
    print(f"medians over {rounds} rounds")
    print(f'{"workload":14} {"server":15} ' + " ".join(f"{h:>{w}}" for _, h, w, _ in COLS))
    for (w, s), rs in sorted(agg.items()):
        print(f"{w:14} {s:15} " + " ".join(fmt(med([field(r, k) for r in rs]), wd, p) for k, _, wd, p in COLS))
    print()
    print("paired ratios (median over rounds of each round's a/b): MiB/s, MiB per CPU-s, p99")
    for a, b in PAIRS:
        for w in sorted({k[0] for k in agg}):
            ra = {r["round"]: r for r in agg.get((w, a), [])}
            rb = {r["round"]: r for r in agg.get((w, b), [])}
            both = sorted(set(ra) & set(rb))
            if not both:
                continue
            out = []
            for k in ("mib_per_sec", "mib_per_server_cpu_s", "latency_p99_ms"):
                xs = [field(ra[i], k) / field(rb[i], k) for i in both if field(ra[i], k) and field(rb[i], k)]
                out.append(fmt(med(xs), 6, 2) + "x")
            print(f'{w:14} {a + "/" + b:22} ' + "  ".join(out) + f"   ({len(both)} rounds)")
    stages(agg)


def stages(agg):
    """Where Gregor's produce time went (gregor bench's produce_stages: Kafka's
    request stages and the fsyncs waited for), medians over the rounds."""
    lines = []
    for (w, s), rs in sorted(agg.items()):
        per = collections.defaultdict(list)
        for r in rs:
            for st in r.get("produce_stages") or []:
                per[st["stage"]].append(st)
        if not per:
            continue
        cells = []
        for name in ("request_queue", "local", "response_queue", "remote", "response_send", "total", "fsync"):
            if name in per:
                mean = med([st["mean_ms"] for st in per[name]])
                p99 = med([st["p99_le_ms"] for st in per[name]])
                top = med([st.get("max_le_ms") for st in per[name]])
                cells.append(f"{name} {mean:.3f}/{p99:g}" + ("" if top is None else f"/{top:g}"))
        lines.append(f"{w:14} {s:15} " + "  ".join(cells))
    if lines:
        print()
        print("Gregor's produce stages, ms: mean/p99 bucket bound/max bucket bound (the stages add up to total; fsync: the flushes acks waited for)")
        print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
