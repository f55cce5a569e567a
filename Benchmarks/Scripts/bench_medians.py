#!/usr/bin/env python3
"""Medians over several `urlcache bench --json` runs (one file per run, one JSON row per line).

For every row (implementation, op, size, entries, procs, threads): the median of ops/s, p50,
p99, peak and anonymous resident memory. Then the ratios the targets of Benchmarks/RESULTS.md
("Targets") are stated in, each taken within one run and then the median over the runs (lookup
and store rows):
  ours ÷ raw limit      same op, size, entries, procs (our threads may differ: group commit)
  P procs ÷ 1 proc      same implementation, op, size, entries (aggregate ops/s)
  N entries ÷ smallest  same implementation, op, size, procs

    for i in 1 2 3 4 5; do urlcache bench DIR --json ... > bench$i.jsonl; done
    python3 Scripts/bench_medians.py bench*.jsonl
"""
import json
import statistics
import sys

OURS, RAW = "shared-url-cache", "raw-limit"


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def key(r):
    return (r["bench"], r["op"], r["size"], r["n"], r["procs"], r.get("threads", 1))


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratios(rows):
    """{label: ratio} for one run."""
    out = {}
    for r in rows:
        if r["op"] == "mix":  # the lookup and store rows carry the targets
            continue
        if r["bench"] == OURS:
            for o in rows:
                if (o["bench"] == RAW and o["op"] == r["op"] and o["size"] == r["size"] and o["n"] == r["n"]
                        and o["procs"] == r["procs"] and o["ops_s"] > 0):
                    label = (f"{OURS} ÷ {RAW}, {r['op']} ops/s, {r['size']} B, {r['n']} entries, "
                             f"{r['procs']} proc × {r.get('threads', 1)} thr vs × {o.get('threads', 1)} thr")
                    out[label] = r["ops_s"] / o["ops_s"]
        if r["procs"] > 1:
            for o in rows:
                if (o["bench"] == r["bench"] and o["op"] == r["op"] and o["size"] == r["size"] and o["n"] == r["n"]
                        and o["procs"] == 1 and o.get("threads", 1) == r.get("threads", 1) and o["ops_s"] > 0):
                    out[f"{r['bench']} {r['op']}, {r['size']} B, {r['n']} entries: {r['procs']} procs ÷ 1 proc"] = \
                        r["ops_s"] / o["ops_s"]
        same = [o for o in rows if o["bench"] == r["bench"] and o["op"] == r["op"] and o["size"] == r["size"]
                and o["procs"] == r["procs"] and o.get("threads", 1) == r.get("threads", 1)]
        small = min(same, key=lambda o: o["n"])
        if small["n"] < r["n"] and small["ops_s"] > 0:
            out[f"{r['bench']} {r['op']}, {r['size']} B × {r['procs']} proc: {r['n']} entries ÷ {small['n']}"] = \
                r["ops_s"] / small["ops_s"]
    return out


def main():
    runs = [load(p) for p in sys.argv[1:]]
    if not runs:
        sys.exit("usage: bench_medians.py RUN.jsonl ...")
    print(f"medians of {len(runs)} run(s)\n")
    print("| implementation | op | size | entries | procs | thr | ops/s | p50 µs | p99 µs | rss MiB | anon MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    keys = []
    for rows in runs:
        keys += [key(r) for r in rows if key(r) not in keys]
    for k in keys:
        rs = [r for rows in runs for r in rows if key(r) == k]
        m = {f: median([r.get(f) for r in rs]) for f in ("ops_s", "p50_us", "p99_us", "rss_mib", "anon_mib")}
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {k[5]} | {m['ops_s']:,.0f} | {m['p50_us']:.0f} | "
              f"{m['p99_us']:.0f} | {m['rss_mib'] or 0:.1f} | {m['anon_mib'] or 0:.1f} |")
    per_run = [ratios(rows) for rows in runs]
    labels = []
    for rs in per_run:
        labels += [label for label in rs if label not in labels]
    if labels:
        print("\n| ratio (within each run) | median | runs (min–max) |")
        print("|---|---:|---|")
        for label in labels:
            values = [rs[label] for rs in per_run if label in rs]
            print(f"| {label} | {median(values):.2f}× | {len(values)} ({min(values):.2f}–{max(values):.2f}) |")


if __name__ == "__main__":
    main()
