#!/usr/bin/env python3
"""In-memory models of the eviction policies, to tell a trace's own behaviour from the directory's.

Replays a trace (`key,size` per line, as run.py takes) through textbook LRU and S3-FIFO (a small
FIFO of a tenth of the capacity, a main FIFO with reinsertion and a counter of 0..3, a ghost of as
many keys as main holds), with the capacity in bytes at 1%, 10% and 30% of the working
set, and prints each policy's misses and its ratio to LRU's. No index, no disk, no touch interval:
where a model misses more than LRU too, the directory cannot be expected to do better.

    model.py cp4k.csv --limit 30000
"""
import argparse
from collections import OrderedDict


def load(path, limit):
    requests = []
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) != 2 or not fields[1].isdigit():
                continue
            requests.append((fields[0], int(fields[1])))
            if limit and len(requests) == limit:
                break
    return requests


def lru(requests, capacity):
    cache, used, misses = OrderedDict(), 0, 0
    for key, size in requests:
        if key in cache:
            cache.move_to_end(key)
            continue
        misses += 1
        cache[key] = size
        used += size
        while used > capacity:
            used -= cache.popitem(last=False)[1]
    return misses


def s3fifo(requests, capacity, small_share=0.1, counter_max=3):
    small, main, ghost, counter = OrderedDict(), OrderedDict(), OrderedDict(), {}
    small_bytes = main_bytes = misses = 0
    for key, size in requests:
        if key in small or key in main:
            counter[key] = min(counter_max, counter[key] + 1)
            continue
        misses += 1
        counter[key] = 0
        if ghost.pop(key, None) is not None:
            main[key] = size
            main_bytes += size
        else:
            small[key] = size
            small_bytes += size
        while small_bytes + main_bytes > capacity:
            if small and (small_bytes > capacity * small_share or not main):
                victim, vsize = small.popitem(last=False)
                small_bytes -= vsize
                if counter[victim] > 0:
                    counter[victim] = 0
                    main[victim] = vsize
                    main_bytes += vsize
                else:
                    del counter[victim]
                    ghost[victim] = True
                    while len(ghost) > max(1, len(main)):
                        ghost.popitem(last=False)
            else:
                victim, vsize = main.popitem(last=False)
                if counter[victim] > 0:
                    counter[victim] -= 1
                    main[victim] = vsize
                else:
                    main_bytes -= vsize
                    del counter[victim]
    return misses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--limit", type=int, default=0, help="requests replayed (0: all)")
    parser.add_argument("--sizes", default="1,10,30", help="cache sizes, percent of the working set")
    args = parser.parse_args()
    requests = load(args.trace, args.limit)
    first = {}
    for key, size in requests:
        first.setdefault(key, size)
    working_set = sum(first.values())
    print("| cache size | misses LRU | misses S3-FIFO | S3-FIFO ÷ LRU |")
    print("|---|---|---|---|")
    for percent in [float(s) for s in args.sizes.split(",")]:
        capacity = working_set * percent / 100
        base, s3 = lru(requests, capacity), s3fifo(requests, capacity)
        print(f"| {percent:g}% | {base} | {s3} | {s3 / base:.4f} |")


if __name__ == "__main__":
    main()
