#!/usr/bin/env python3
"""In-memory models of the eviction policies, to tell a trace's own behaviour from the directory's.

Replays a trace (`key,size` per line, as run.py takes) through textbook LRU and S3-FIFO (a small
FIFO of a tenth of the capacity, a main FIFO with reinsertion and a counter of 0..3, a ghost of as
many keys as main holds), with the capacity in bytes at 1%, 10% and 30% of the working
set, and prints each policy's misses and its ratio to LRU's. A third column is S3-FIFO as the
directory keeps it: main a clock whose hand goes round the order entries came in (an entry that
joins main keeps its place in that order; one that stays is passed, not moved). No index, no disk, no touch interval:
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


def s3fifo_clock(requests, capacity, small_share=0.1, counter_max=3):
    """S3-FIFO with both queues in one arrival order: the small queue's oldest is the first small
    entry from `small_from`, main's next the first main entry from the hand, round at the end."""
    order, place, ghost = [], {}, OrderedDict()  # order: keys by arrival (None once gone)
    small_bytes = main_bytes = misses = small_from = hand = main_entries = 0
    for key, size in requests:
        if key in place:
            place[key][2] = min(counter_max, place[key][2] + 1)
            continue
        misses += 1
        queue = "m" if ghost.pop(key, None) is not None else "s"
        place[key] = [queue, len(order), 0, size]
        order.append(key)
        if queue == "m":
            main_bytes += size
            main_entries += 1
        else:
            small_bytes += size
        while small_bytes + main_bytes > capacity:
            if small_bytes and (small_bytes > capacity * small_share or not main_bytes):
                while order[small_from] is None or place[order[small_from]][0] != "s":
                    small_from += 1
                victim = order[small_from]
                queue, at, counter, vsize = place[victim]
                small_bytes -= vsize
                if counter > 0:
                    place[victim] = ["m", at, 0, vsize]
                    main_bytes += vsize
                    main_entries += 1
                else:
                    del place[victim]
                    order[at] = None
                    ghost[victim] = True
                    while len(ghost) > max(1, main_entries):
                        ghost.popitem(last=False)
            else:
                while hand >= len(order) or order[hand] is None or place[order[hand]][0] != "m":
                    hand = 0 if hand >= len(order) else hand + 1
                victim = order[hand]
                entry = place[victim]
                if entry[2] > 0:
                    entry[2] -= 1
                else:
                    del place[victim]
                    order[hand] = None
                    main_bytes -= entry[3]
                    main_entries -= 1
                hand += 1
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
    print("| cache size | misses LRU | misses S3-FIFO | S3-FIFO ÷ LRU | S3-FIFO, main a clock, ÷ LRU |")
    print("|---|---|---|---|---|")
    for percent in [float(s) for s in args.sizes.split(",")]:
        capacity = working_set * percent / 100
        base, s3 = lru(requests, capacity), s3fifo(requests, capacity)
        clock = s3fifo_clock(requests, capacity)
        print(f"| {percent:g}% | {base} | {s3} | {s3 / base:.4f} | {clock / base:.4f} |")


if __name__ == "__main__":
    main()
