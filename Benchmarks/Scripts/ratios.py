#!/usr/bin/env python3
"""Reads the text output of `swift package benchmark` (stdin or a file) and prints one table:
per operation and size, every implementation's p50/p99 wall clock, p50 throughput and mallocs,
with the ratios ours / raw limit and ours / Foundation (throughput ratios, higher is better for
ours), all from the same run.

    swift package --disable-sandbox benchmark 2>&1 | tee run.txt
    python3 Scripts/ratios.py run.txt
    python3 Scripts/ratios.py run1.txt run2.txt run3.txt run4.txt run5.txt   # medians of 5 runs
"""
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
TIME = {"ns": 1e-3, "μs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse(text):
    results, name = {}, None
    for raw in text.replace("\r", "\n").splitlines():
        line = ANSI.sub("", raw).strip()
        if re.match(r"^[a-z-]+/[^/ ]+/\d+KiB$", line):
            name = line
            results[name] = {}
            continue
        if not name or not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if len(cells) < 9 or not re.match(r"^-?[\d.]+(e[+-]?\d+)?$", cells[3] or "x"):
            continue
        label = cells[0].rstrip(" *")
        p50, p99 = float(cells[3]), float(cells[6])
        m = re.search(r"\((ns|μs|us|ms|s)\)", label)
        if label.startswith("Time (wall clock)") and m:
            results[name]["p50_us"] = p50 * TIME[m.group(1)]
            results[name]["p99_us"] = p99 * TIME[m.group(1)]
        elif label.startswith("Throughput"):
            m = re.search(r"\(([KMG]?)\)$", label)
            results[name]["ops_s"] = p50 * SCALE[m.group(1) if m else ""]
        elif label.startswith("Malloc (total)"):
            m = re.search(r"\(([KMG])\)", label)
            results[name]["mallocs"] = p50 * SCALE[m.group(1) if m else ""]
        elif label.startswith("Syscalls (read)"):
            results[name]["syscr"] = p50
        elif label.startswith("Syscalls (write)"):
            results[name]["syscw"] = p50
    return results


def ratios(g, impl, size):
    """Throughput ratios of one of ours against the others in the same run (higher is better for ours)."""
    r = g[impl]
    if not impl.startswith("SharedURLCache") or "ops_s" not in r:
        return [None] * 4
    at = impl[len("SharedURLCache"):].split("@")
    suffix = "@" + at[1] if len(at) > 1 else ""

    def ratio(other):
        o = g.get(other)
        return r["ops_s"] / o["ops_s"] if o and o.get("ops_s") else None
    return [ratio("raw-limit" + suffix), ratio("raw-limit+inline" + suffix),
            ratio("raw-limit+inline+nosync" if size == "1KiB" else "raw-limit+nosync"),
            ratio("Foundation.URLCache@1k")]


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def main():
    """One file: that run. Several files (one run each): the median of every figure across
    runs, and the median of the ratios taken within each run."""
    texts = [open(f, encoding="utf-8").read() for f in sys.argv[1:]] or [sys.stdin.read()]
    runs = [parse(t) for t in texts]
    names = []
    for res in runs:
        names += [n for n in res if n not in names]
    per_run = []  # per run: {(op, size): {impl: result}}
    for res in runs:
        groups = {}
        for name, r in res.items():
            op, impl, size = name.split("/")
            groups.setdefault((op, size), {})[impl] = r
        per_run.append(groups)
    keys = sorted({k for g in per_run for k in g})
    sizes = {"1KiB": 0, "16KiB": 1, "256KiB": 2}
    ops = ["lookup-hit", "lookup-miss", "store", "remove", "remove-since"]
    print(f"medians of {len(runs)} run(s); ratios are throughput ratios taken within each run, then the median")
    print("| benchmark | p50 µs | p99 µs | ops/s (p50) | mallocs p50 | syscr/syscw | ours/raw-limit | ours/raw-limit+inline | ours/raw…+nosync | ours/Foundation |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (op, size) in sorted(keys, key=lambda k: (ops.index(k[0]) if k[0] in ops else 9, sizes.get(k[1], 9))):
        impls = sorted({i for g in per_run for i in g.get((op, size), {})},
                       key=lambda i: (not i.startswith("SharedURLCache"), i))
        for impl in impls:
            present = [g[(op, size)] for g in per_run if impl in g.get((op, size), {})]
            rs = [g[impl] for g in present]
            cols = [median(c) for c in zip(*[ratios(g, impl, size) for g in present])]

            def f(key, fmt):
                m = median([r.get(key) for r in rs])
                return fmt.format(m) if m is not None else ""
            ratio_cells = [f"{c:.2f}×" if c is not None else "" for c in cols]
            print(f"| {op}/{impl}/{size} | {f('p50_us', '{:.1f}')} | {f('p99_us', '{:.0f}')} | {f('ops_s', '{:,.0f}')} | "
                  f"{f('mallocs', '{:.0f}')} | {f('syscr', '{:.0f}')}/{f('syscw', '{:.0f}')} | " + " | ".join(ratio_cells) + " |")


if __name__ == "__main__":
    main()
