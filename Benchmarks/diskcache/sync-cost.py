#!/usr/bin/env python3
"""What one durable commit costs on this disk, by how many 4 KiB pages it flushes and where.

A `.standard` store ends in one `fdatasync` of the index after LMDB has written the commit's dirty
pages (copy-on-write from root to leaf in each table it changes, plus the free list); a SQLite WAL
commit (python-diskcache with a sync per set) appends a few pages at the end of one file. This
times `fdatasync` after writing K pages scattered over a 64 MiB file against K pages written in one
run, so the cost of a commit's page count can be read off for the machine at hand. With
`--urlcache`, it also counts the index page writes and syncs of 1,000 replacing stores through
`SharedCache` with strace (`urlcache bench-ops --phases store`).

    Benchmarks/diskcache/sync-cost.py [--directory DIR] [--pages 1,2,3,5,9,12] [--rounds 200]
                                      [--urlcache .build/release/urlcache]
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time

PAGE = 4096
FILE_BYTES = 64 << 20


def sync_costs(path, pages, rounds):
    """Median fdatasync time (µs) after writing `pages` scattered pages, and `pages` in one run."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for offset in range(0, FILE_BYTES, 1 << 20):  # allocated, so no write extends the file
            os.pwrite(fd, b"\0" * (1 << 20), offset)
        os.fsync(fd)
        slots = FILE_BYTES // PAGE
        page = b"x" * PAGE
        scattered, sequential = [], []
        start = random.randrange(slots)
        for i in range(rounds):
            for _ in range(pages):
                os.pwrite(fd, page, random.randrange(slots) * PAGE)
            began = time.perf_counter()
            os.fdatasync(fd)
            scattered.append(time.perf_counter() - began)
            os.pwrite(fd, page * pages, ((start + i * pages) % (slots - pages)) * PAGE)
            began = time.perf_counter()
            os.fdatasync(fd)
            sequential.append(time.perf_counter() - began)
        return statistics.median(scattered) * 1e6, statistics.median(sequential) * 1e6
    finally:
        os.close(fd)
        os.unlink(path)


def store_writes(urlcache, directory, stores):
    """pwrite/writev calls and fdatasyncs per replacing store through SharedCache (strace -c)."""
    counts = {}
    for operations in (0, stores):  # the difference leaves out the entries stored beforehand
        work = tempfile.mkdtemp(dir=directory)
        trace = os.path.join(work, "strace.txt")
        subprocess.run(["strace", "-f", "-c", "-o", trace, urlcache, "bench-ops", os.path.join(work, "cache"),
                        "--implementation", "shared-cache", "--size", "1024", "--entries", "2000",
                        "--operations", str(operations), "--phases", "store"],
                       check=True, stdout=subprocess.DEVNULL)
        calls = {}
        for line in open(trace):
            fields = line.split()
            if len(fields) >= 5 and re.fullmatch(r"\d+", fields[3]):
                calls[fields[-1]] = int(fields[3])
        counts[operations] = calls
        shutil.rmtree(work)
    per_store = lambda name: (counts[stores].get(name, 0) - counts[0].get(name, 0)) / stores
    return per_store("pwrite64"), per_store("writev"), per_store("fdatasync")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--directory", default=tempfile.gettempdir(),
                        help="a directory on the file system to measure (default: the temporary one)")
    parser.add_argument("--pages", default="1,2,3,5,9,12")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--urlcache", help="also count the page writes of stores through this urlcache binary")
    args = parser.parse_args()
    print("pages per sync   scattered: median µs   one run: median µs")
    for pages in (int(p) for p in args.pages.split(",")):
        scattered, sequential = sync_costs(os.path.join(args.directory, "sync-cost.bin"), pages, args.rounds)
        print(f"{pages:14d} {scattered:23.0f} {sequential:21.0f}")
    if args.urlcache:
        pwrites, writevs, syncs = store_writes(args.urlcache, args.directory, 1000)
        print(f"a replacing 1 KiB store through SharedCache (.standard): {pwrites:.1f} pwrite + {writevs:.1f} writev "
              f"of index pages, {syncs:.2f} fdatasync")


if __name__ == "__main__":
    main()
