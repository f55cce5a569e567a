#!/usr/bin/env python3
"""SharedCache and CacheStore beside python-diskcache on the same workload (Benchmarks/README.md).

For each size and repetition, on fresh directories, interleaved: `urlcache bench-ops` with
shared-cache (memoryCapacity 0), shared-cache-memory (warm memory tier) and cache-store, then
diskcache's default `diskcache.Cache` in this process. Same corpus (the JSON-like bodies of
`urlcache bench`, entry i gets body i mod 32), same URLs as keys, one process each. Prints
per-size rates (medians), disk bytes per entry (du of the directory / entries) and the medians of
within-run ratios ours / diskcache. diskcache is installed with pip if missing; nothing here is
a CI requirement.

    Benchmarks/diskcache/compare.py [--urlcache PATH] [--sizes 1024,16384,262144]
                                    [--entries 5000] [--operations 2000] [--repetitions 5]
                                    [--lookups N]

Stores are timed over --operations; hits and misses over --lookups (default 20,000 up to 16 KiB,
2,000 above): at 2,000, a phase of misses lasted ~5 ms on our side, too short to time.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

IMPLEMENTATIONS = ["shared-cache", "shared-cache-relaxed", "shared-cache-memory", "cache-store", "diskcache-sync",
                   "diskcache"]
# The baseline every ratio is taken against; diskcache-sync (sqlite_synchronous=2, FULL: a sync
# per set) is the fair baseline for stores of `.standard` durability, which syncs every commit.
OURS = ["shared-cache", "shared-cache-relaxed", "shared-cache-memory", "cache-store"]
PHASES = ["hit", "miss", "store"]


def ensure_diskcache():
    try:
        import diskcache  # noqa: F401
    except ImportError:
        print("diskcache is missing; installing it with pip (user site)", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--user", "--quiet", "diskcache"])
        # A user site made by this install was not on sys.path when the interpreter started.
        import importlib
        import site
        if site.getusersitepackages() not in sys.path:
            sys.path.append(site.getusersitepackages())
        importlib.invalidate_caches()
    import diskcache
    return diskcache


def body(size, variant):
    """The corpus of `urlcache bench` (Sources/BenchmarkDriver/BenchWorkload.swift, body)."""
    out = bytearray()
    n = variant
    while len(out) < size:
        n = (n * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out += b'{"id":%d,"name":"item","tags":["a","b"],"price":9.99},' % (n >> 40)
    return bytes(out[:size])


def url(i):
    return "https://api.example.com/items/%d?v=1" % i


def du_bytes(path):
    out = subprocess.check_output(["du", "-s", "--block-size=1", path], text=True)
    return int(out.split()[0])


def run_diskcache(diskcache, directory, size, entries, operations, lookups, seed, synchronous=None):
    bodies = [body(size, v) for v in range(32)]
    rng = random.Random(seed)
    result = {}
    settings = {} if synchronous is None else {"sqlite_synchronous": synchronous}
    with diskcache.Cache(directory, **settings) as cache:
        for i in range(entries):
            cache.set(url(i), bodies[i % 32])
        hits = [url(rng.randrange(entries)) for _ in range(lookups)]
        misses = ["https://api.example.com/missing/%d?v=1" % i for i in range(lookups)]
        stores = [(url(j), bodies[j % 32]) for j in (rng.randrange(entries) for _ in range(operations))]
        failures = 0
        start = time.perf_counter()
        for key in hits:
            value = cache.get(key)
            if value is None or len(value) != size:
                failures += 1
        result["hit_per_second"] = lookups / (time.perf_counter() - start)
        start = time.perf_counter()
        for key in misses:
            if cache.get(key) is not None:
                failures += 1
        result["miss_per_second"] = lookups / (time.perf_counter() - start)
        start = time.perf_counter()
        for key, value in stores:
            cache.set(key, value)
        result["store_per_second"] = operations / (time.perf_counter() - start)
    result["failures"] = failures
    return result


def run_ours(urlcache, implementation, directory, size, entries, operations, lookups, seed):
    out = subprocess.check_output(
        [urlcache, "bench-ops", directory, "--implementation", implementation, "--size", str(size),
         "--entries", str(entries), "--operations", str(operations), "--lookups", str(lookups),
         "--seed", str(seed)], text=True)
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urlcache", default=".build-demo/release/urlcache",
                        help="the urlcache executable (built by tools/demo or swift build -c release)")
    parser.add_argument("--sizes", default="1024,16384,262144")
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--operations", type=int, default=2000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=None,
                        help="hits and misses timed per phase (default 20000 up to 16 KiB, 2000 above)")
    parser.add_argument("--directory", default=None, help="scratch directory (default: a temporary one)")
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS),
                        help="which to run, comma-separated (diskcache, the ratios' baseline, is always run)")
    args = parser.parse_args()
    chosen = set(args.implementations.split(",")) | {"diskcache"}
    unknown = chosen - set(IMPLEMENTATIONS)
    if unknown:
        parser.error("unknown implementations: %s" % ", ".join(sorted(unknown)))
    implementations = [name for name in IMPLEMENTATIONS if name in chosen]
    ours = [name for name in OURS if name in chosen]
    diskcache = ensure_diskcache()
    sizes = [int(s) for s in args.sizes.split(",")]
    base = args.directory or tempfile.mkdtemp(prefix="suc-vs-diskcache-")
    os.makedirs(base, exist_ok=True)
    def lookups(size):
        return args.lookups if args.lookups is not None else (20000 if size <= 16384 else 2000)
    print("SharedURLCache vs diskcache %s: %d entries, %d stores and %s lookups per phase, %d repetitions, sizes %s"
          % (diskcache.__version__, args.entries, args.operations, "/".join(str(lookups(s)) for s in sizes),
             args.repetitions, args.sizes))
    # runs[size][implementation] = list of result dicts, one per repetition
    runs = {size: {name: [] for name in implementations} for size in sizes}
    for rep in range(args.repetitions):
        for size in sizes:
            for name in implementations:
                directory = os.path.join(base, "%s-%d-%d" % (name, size, rep))
                shutil.rmtree(directory, ignore_errors=True)
                seed = 1000 * rep + 1
                if name == "diskcache":
                    result = run_diskcache(diskcache, directory, size, args.entries, args.operations, lookups(size), seed)
                elif name == "diskcache-sync":
                    result = run_diskcache(diskcache, directory, size, args.entries, args.operations, lookups(size), seed,
                                           synchronous=2)
                else:
                    result = run_ours(args.urlcache, name, directory, size, args.entries, args.operations, lookups(size),
                                      seed)
                result["bytes_per_entry"] = du_bytes(directory) / args.entries
                if result.get("failures"):
                    print("warning: %s %d B: %d failed operations" % (name, size, result["failures"]), file=sys.stderr)
                runs[size][name].append(result)
                shutil.rmtree(directory, ignore_errors=True)
            print("repetition %d/%d, %d B done" % (rep + 1, args.repetitions, size), file=sys.stderr)

    metrics = ["hit_per_second", "miss_per_second", "store_per_second", "bytes_per_entry"]
    print()
    print("%-22s %7s %12s %12s %12s %14s" % ("implementation", "size", "hits/s", "misses/s", "stores/s", "disk B/entry"))
    for size in sizes:
        for name in implementations:
            row = []
            for metric in metrics:
                values = [r[metric] for r in runs[size][name] if metric in r]
                row.append("%12.0f" % statistics.median(values) if values else "%12s" % "-")
            print("%-22s %7d %s %s %s %14s" % (name, size, row[0], row[1], row[2], row[3].strip()))
    print()
    print("Medians of within-run ratios, ours / diskcache (rates: higher is faster; disk: lower is smaller):")
    for size in sizes:
        for name in ours:
            parts = []
            for metric, label in zip(metrics, ["hit", "miss", "store", "disk bytes"]):
                ratios = [ours[metric] / theirs[metric]
                          for ours, theirs in zip(runs[size][name], runs[size]["diskcache"])
                          if metric in ours and theirs.get(metric)]
                if ratios:
                    parts.append("%s %.2f×" % (label, statistics.median(ratios)))
            print("  %7d B %-20s %s" % (size, name, ", ".join(parts)))
        for (mine, theirs, label) in [("shared-cache", "diskcache-sync", "diskcache-sync stores"),
                                      ("shared-cache", "cache-store", "cache-store stores (the core)")]:
            ratios = [a["store_per_second"] / b["store_per_second"]
                      for a, b in zip(runs[size].get(mine, []), runs[size].get(theirs, []))
                      if "store_per_second" in a and b.get("store_per_second")]
            if ratios:
                print("  %7d B shared-cache (.standard) stores / %s %.2f×" % (size, label, statistics.median(ratios)))


if __name__ == "__main__":
    main()
