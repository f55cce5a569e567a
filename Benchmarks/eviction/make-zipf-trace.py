#!/usr/bin/env python3
"""Writes a synthetic request trace (key,size per line) for Benchmarks/eviction/run.py.

Zipf-distributed requests over a catalogue of objects, with a periodic scan (a run of objects
requested once in order, like a crawler or a backup) and one-hit wonders (keys never requested
again) mixed in. Seeded: the same arguments write the same file.

    make-zipf-trace.py OUT [--requests 60000] [--objects 20000] [--alpha 0.9] [--seed 1]
"""
import argparse
import bisect
import itertools
import random


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--requests", type=int, default=60000)
    parser.add_argument("--objects", type=int, default=20000)
    parser.add_argument("--alpha", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scan-every", type=int, default=10000, help="requests between scans")
    parser.add_argument("--scan-length", type=int, default=2000, help="objects one scan requests once each")
    parser.add_argument("--one-hit-share", type=float, default=0.1, help="share of requests for a key never seen again")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # Object sizes: mostly small API responses, a tail of larger ones (bytes).
    sizes = [min(int(rng.lognormvariate(7.0, 1.0)) + 64, 256 * 1024) for _ in range(args.objects)]
    weights = [1.0 / (rank + 1) ** args.alpha for rank in range(args.objects)]
    cumulative = list(itertools.accumulate(weights))
    popularity = list(range(args.objects))
    rng.shuffle(popularity)  # rank → object: the popular ones are not the first keys
    scans = one_hits = 0
    with open(args.out, "w") as out:
        written = 0
        while written < args.requests:
            if written and written % args.scan_every == 0:
                for i in range(min(args.scan_length, args.requests - written)):
                    out.write(f"scan{scans}-{i},{int(rng.lognormvariate(7.0, 1.0)) + 64}\n")
                    written += 1
                scans += 1
                continue
            if rng.random() < args.one_hit_share:
                out.write(f"once{one_hits},{int(rng.lognormvariate(7.0, 1.0)) + 64}\n")
                one_hits += 1
            else:
                rank = bisect.bisect_left(cumulative, rng.random() * cumulative[-1])
                key = popularity[rank]
                out.write(f"obj{key},{sizes[key]}\n")
            written += 1


if __name__ == "__main__":
    main()
