#!/usr/bin/env python3
"""Trace-driven comparison of the eviction policies (LRU and S3-FIFO) through real directories.

Replays each trace with `urlcache bench-trace` (a fresh directory per run: a lookup per request,
a store of the object's size on a miss) at cache sizes of 1%, 10% and 30% of the trace's working
set, under each policy, and prints a Markdown table: miss ratio and bytes written side by side.
Bytes written are the replaying process's, from /proc/self/io: `wchar` (the bytes of its write
calls: LMDB writes each commit's dirty pages with pwrite, and the body files) and `write_bytes`
(the page-cache memory it dirtied; a page dirtied again before writeback counts once, so it moves
with the kernel's writeback timing and is the noisier of the two, and a kernel that caches files
in large folios counts a whole folio for a 4 KiB write into a clean one), and what reached the
device holding the directories (sectors written, from /sys/dev/block, after a sync before and
after each replay: the whole machine's, so meaningful only when nothing else writes).

Traces are text, `key,size` per line:
  - synthetic: Benchmarks/eviction/make-zipf-trace.py OUT (seeded Zipf with scans and one-hit wonders);
  - public: libCacheSim's data/cloudPhysicsIO.csv (github.com/1a1a11a/libCacheSim, a sample of
    the CloudPhysics block I/O traces, columns version,time,op,size,lbn); not copied into this
    repository (the repository is GPL-3.0 and the sample's own terms are not stated). Fetch it and
    convert it here: `run.py --convert-cloudphysics cloudPhysicsIO.csv OUT` (key = the block
    number, every object 4 KiB unless --object-size says otherwise).

    run.py --urlcache .build-rel/release/urlcache --trace zipf=zipf.csv --trace cloudphysics=cp4k.csv --limit 30000
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile


def convert_cloudphysics(source, out, object_size):
    """Key = the block number. Size = the request's own (0) or one size for every object, as
    libCacheSim's count-based runs treat block traces (the sample's requests reach 512 KiB, a
    working set of 2 GB that one replay would write many times over)."""
    with open(source, newline="") as f, open(out, "w") as o:
        for row in csv.DictReader(f):
            o.write(f"{row['lbn']},{object_size or row['size']}\n")


def device_sectors_written(path):
    """Sectors written to the device holding `path`, whole machine (/sys/dev/block/M:m/stat)."""
    dev = os.stat(path).st_dev
    with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat") as f:
        return int(f.read().split()[6])


def replay(urlcache, trace, policy, percent, limit, relaxed, scratch, touch_interval):
    directory = tempfile.mkdtemp(prefix="evict-", dir=scratch)
    parent = os.path.dirname(directory)
    shutil.rmtree(directory)
    command = [urlcache, "bench-trace", directory, "--trace", trace, "--policy", policy,
               "--capacity-percent", str(percent), "--limit", str(limit), "--touch-interval", str(touch_interval)]
    if relaxed:
        command.append("--relaxed")
    os.sync()
    sectors = device_sectors_written(parent)
    try:
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        os.sync()  # what the replay left in the page cache goes to the device too
        sectors = device_sectors_written(parent) - sectors
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    result = json.loads(out.strip().splitlines()[-1])
    result["deviceBytes"] = sectors * 512
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urlcache", help="a release urlcache binary")
    parser.add_argument("--trace", action="append", default=[], help="NAME=PATH, repeatable")
    parser.add_argument("--sizes", default="1,10,30", help="cache sizes, percent of the working set")
    parser.add_argument("--policies", default="lru,s3fifo")
    parser.add_argument("--limit", type=int, default=0, help="requests replayed per trace (0: all)")
    parser.add_argument("--relaxed", action="store_true", help="relaxed durability (no fdatasync per store)")
    parser.add_argument("--touch-interval", type=int, default=1,
                        help="milliseconds between two counted uses of an entry (the store's default is 60000)")
    parser.add_argument("--scratch", default=None, help="where the directories go (default: $TMPDIR)")
    parser.add_argument("--json", help="also write every run's result here")
    parser.add_argument("--convert-cloudphysics", nargs=2, metavar=("CSV", "OUT"))
    parser.add_argument("--object-size", type=int, default=4096,
                        help="with --convert-cloudphysics: every object's size (0: the request's)")
    args = parser.parse_args()
    if args.convert_cloudphysics:
        convert_cloudphysics(*args.convert_cloudphysics, args.object_size)
        return
    if not args.urlcache or not args.trace:
        parser.error("--urlcache and at least one --trace")
    policies = args.policies.split(",")
    results = []
    print("| trace | cache size | requests | " + " | ".join(f"miss ratio {p}" for p in policies)
          + " | " + " | ".join(f"MB wchar {p}" for p in policies)
          + " | " + " | ".join(f"MB write_bytes {p}" for p in policies)
          + " | " + " | ".join(f"MB to the device {p}" for p in policies)
          + " | s3fifo ÷ lru misses | s3fifo ÷ lru wchar | s3fifo ÷ lru write_bytes | s3fifo ÷ lru device |")
    print("|---" * (7 + 4 * len(policies)) + "|")
    for spec in args.trace:
        name, path = spec.split("=", 1)
        for percent in [float(s) for s in args.sizes.split(",")]:
            row = {p: replay(args.urlcache, path, p, percent, args.limit, args.relaxed, args.scratch,
                             args.touch_interval) for p in policies}
            for p in policies:
                row[p]["trace"] = name
                results.append(row[p])
                print(f"  {name} {percent}% {p}: {row[p]}", file=sys.stderr)
            misses = " | ".join(f"{row[p]['missRatio']:.4f}" for p in policies)
            calls = " | ".join(f"{row[p]['writeCalls'] / 1e6:.0f}" for p in policies)
            written = " | ".join(f"{row[p]['writeBytes'] / 1e6:.0f}" for p in policies)
            device = " | ".join(f"{row[p]['deviceBytes'] / 1e6:.0f}" for p in policies)
            ratios = "- | - | - | -"
            if "lru" in row and "s3fifo" in row:
                s, l = row["s3fifo"], row["lru"]
                ratios = " | ".join(f"{s[f] / max(l[f], 1):.3f}"
                                    for f in ("misses", "writeCalls", "writeBytes", "deviceBytes"))
            first = row[policies[0]]
            print(f"| {name} | {percent:g}% ({first['capacityBytes'] / 1e6:.2f} MB) | {first['requests']} | "
                  f"{misses} | {calls} | {written} | {device} | {ratios} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
