#!/usr/bin/env python3
"""Stores in the default (`.standard`) durability mode from 1, 2 and 4 processes at once, for one
build or two interleaved (Benchmarks/README.md).

Each repetition runs `urlcache bench DIR --procs 1,2,4 --lookup-percent 0` (stores only, each
process storing one entry at a time, a commit and its fdatasync per store unless commits are
shared) on a fresh directory, for every build given, one after the other. Prints the aggregate
stores/s of every run, then the medians of the within-run ratios 2 ÷ 1 and 4 ÷ 1 processes and,
with two builds, of the second ÷ the first at the same process count.

    Benchmarks/diskcache/store-scaling.py [--urlcache PATH[,PATH]] [--sizes 1024,16384]
                                          [--seconds 4] [--repetitions 3]
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import tempfile


def run(urlcache, directory, size, seconds, seed):
    """Aggregate stores/s by process count for one `urlcache bench` run."""
    shutil.rmtree(directory, ignore_errors=True)
    out = subprocess.check_output(
        [urlcache, "bench", directory, "--procs", "1,2,4", "--lookup-percent", "0", "--implementations",
         "shared-url-cache", "--sizes", str(size), "--seconds", str(seconds), "--seed", str(seed)],
        text=True)
    rates = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 6 and fields[0] == "shared-url-cache" and fields[1] == "store":
            rates[int(fields[4])] = float(fields[6])
    shutil.rmtree(directory, ignore_errors=True)
    return rates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--urlcache", default=".build-demo/release/urlcache",
                        help="one build, or two separated by a comma (before,after)")
    parser.add_argument("--sizes", default="1024,16384")
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--directory", default=None)
    args = parser.parse_args()
    builds = args.urlcache.split(",")
    scratch = args.directory or tempfile.mkdtemp(prefix="store-scaling-")
    runs = collections.defaultdict(list)  # (build, size) -> [ {procs: rate} ]
    for rep in range(args.repetitions):
        for size in [int(s) for s in args.sizes.split(",")]:
            for b, build in enumerate(builds):
                rates = run(build, os.path.join(scratch, "dir"), size, args.seconds, 7 + rep)
                runs[(b, size)].append(rates)
                print("rep %d  %6d B  %-40s  1: %6.0f  2: %6.0f  4: %6.0f stores/s" %
                      (rep, size, build, rates[1], rates[2], rates[4]), flush=True)
    print("\nmedians of within-run ratios")
    for (b, size), reps in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        two = statistics.median(r[2] / r[1] for r in reps)
        four = statistics.median(r[4] / r[1] for r in reps)
        print("  %6d B  %-40s  2÷1 %.2f×  4÷1 %.2f×" % (size, builds[b], two, four))
    if len(builds) == 2:
        for size in sorted({s for _, s in runs}):
            for procs in (1, 2, 4):
                ratio = statistics.median(a[procs] / b[procs] for a, b in zip(runs[(1, size)], runs[(0, size)]))
                print("  %6d B  %d process(es): %s ÷ %s %.2f×" % (size, procs, builds[1], builds[0], ratio))
    if not args.directory:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
