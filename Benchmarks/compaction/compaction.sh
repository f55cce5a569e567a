#!/usr/bin/env bash
# Compaction as an operator runs it, beside a service that stores: fills a directory once with
# `urlcache bench` (1 KiB JSON-like bodies, inline in the index), then for each run copies it and
# runs `urlcache compact COPY --max-size <10% of its du>` while `urlcache bench-pause` stores
# into COPY (one .standard store per millisecond, each timed). Prints du before and after
# (allocated blocks, as `du -s --block-size=1`), evicted entries per second, the index rewrite's
# duration, the longest time compaction held the write lock (its own report), and the longest
# store the writer saw, then the medians over the runs.
#
#   Benchmarks/compaction/compaction.sh [DIR] [RUNS]     (defaults: /tmp/suc-compaction-bench, 3)
#
# SUC_COMPACTION_ENTRIES sets the sizes (default "100000 1000000"). URLCACHE_BEFORE names a
# second urlcache whose `compact` runs in the same repetitions, interleaved (the writer is this
# build's either way): before and after in one run. SUC_COMPACTION_CONTROL=1 adds, after each
# compaction, the control: the same writer alone on a fresh copy for as long as that compaction
# took, so the pauses the disk makes by itself are counted beside those compaction adds.
# SUC_COMPACTION_COLD=1 drops the copy's pages from the page cache before each compaction (and
# control): a directory whose index is larger than the memory the host gives it. Filling 1M
# entries takes about 5 minutes here; the filled directories are kept in DIR and reused by later runs. Measure on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${URLCACHE:-$(Benchmarks/Scripts/release-urlcache.sh)}"
dir="${1:-/tmp/suc-compaction-bench}"
runs="${2:-3}"
mkdir -p "$dir"
# With SUC_COMPACTION_COLD=1: every file of the directory out of the page cache (written back
# first by the caller's sync; POSIX_FADV_DONTNEED drops clean pages no process maps).
cold() {
  [ "${SUC_COMPACTION_COLD:-0}" = 1 ] || return 0
  python3 -c '
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        fd = os.open(os.path.join(root, name), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)' "$1"
}
# A fresh copy of the filled directory to compact (or to store into alone), written back to disk.
fresh_copy() {
  rm -rf "$work" "$work.stop"
  cp -a "$src" "$work"
  sync
  cold "$work"
}
sides=("after=$bin")
if [ -n "${URLCACHE_BEFORE:-}" ]; then sides=("before=$URLCACHE_BEFORE" "after=$bin"); fi
for entries in ${SUC_COMPACTION_ENTRIES:-100000 1000000}; do
  src="$dir/shared-url-cache-$entries"
  if [ ! -d "$src" ]; then
    "$bin" bench "$dir" --entries "$entries" --procs 1 --seconds 1 --implementations shared-url-cache \
      --sizes 1024 --lookup-percent 100 >/dev/null
  fi
  rows=()
  for run in $(seq 1 "$runs"); do
    for side in "${sides[@]}"; do
      name="${side%%=*}" compactor="${side#*=}"
      work="$dir/work-$entries"
      fresh_copy
      before=$(du -s --block-size=1 "$work" | cut -f1)
      max=$((before / 10))
      "$bin" bench-pause "$work" --stop-file "$work.stop" --seconds 7200 >"$work.pause" &
      writer=$!
      sleep 1
      json=$("$compactor" compact "$work" --max-size "$max" --json)
      touch "$work.stop"
      wait "$writer"
      after=$(du -s --block-size=1 "$work" | cut -f1)
      row=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1]); r = s["result"]; w = json.loads(open(sys.argv[6]).read())
fields = dict(side=sys.argv[7], entries=sys.argv[2], du_before=sys.argv[3], du_after=sys.argv[4], max_size=sys.argv[5],
              evicted=r["evicted_entries"], seconds="%.3f" % s["seconds"], evicted_per_s="%.0f" % s["evicted_per_second"],
              rewrites=r["index_rewrites"], rewrite_ms=r["longest_rewrite_milliseconds"],
              lock_ms=r.get("longest_store_pause_milliseconds", "n/a"), carried=r.get("carried_stores", "n/a"),
              writer_stores=w["stores"],
              writer_max_ms="%.1f" % w["max_ms"], writer_p999_ms="%.1f" % w["p999_ms"], writer_over_50ms=w["over_50ms"],
              index_before=r["index_bytes_before"], index_after=r["index_bytes_after"])
print(" ".join("%s=%s" % kv for kv in fields.items()))' "$json" "$entries" "$before" "$after" "$max" "$work.pause" "$name")
      if [ "${SUC_COMPACTION_CONTROL:-0}" = 1 ]; then
        seconds=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["seconds"])' "$json")
        fresh_copy
        "$bin" bench-pause "$work" --seconds "$seconds" >"$work.alone"
        row="$row $(python3 -c '
import json, sys
w = json.loads(open(sys.argv[1]).read())
print("alone_stores=%d alone_max_ms=%.1f alone_p999_ms=%.1f alone_over_50ms=%d"
      % (w["stores"], w["max_ms"], w["p999_ms"], w["over_50ms"]))' "$work.alone")"
      fi
      echo "$row"
      rows+=("$row")
    done
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [dict(kv.split("=") for kv in line.split()) for line in sys.stdin if line.strip()]
for side in dict.fromkeys(r["side"] for r in rows):
    mine = [r for r in rows if r["side"] == side]
    med = lambda k: statistics.median(float(r[k]) for r in mine)
    lock = "%.0f ms" % med("lock_ms") if mine[0]["lock_ms"] != "n/a" else "n/a"
    print("median of %d (%s): entries=%s du %.0f -> %.0f (max-size %.0f) evicted/s %.0f seconds %.3f rewrite %.0f ms; "
          "write lock held up to %s; the writer: longest store %.1f ms, 99.9th %.1f ms, %.0f stores over 50 ms"
          % (len(mine), side, mine[0]["entries"], med("du_before"), med("du_after"), med("max_size"),
             med("evicted_per_s"), med("seconds"), med("rewrite_ms"), lock, med("writer_max_ms"),
             med("writer_p999_ms"), med("writer_over_50ms")))
    if "alone_max_ms" in mine[0]:
        print("  the writer alone for as long (control): longest store %.1f ms, 99.9th %.1f ms, %.0f stores over 50 ms of %.0f"
              % (med("alone_max_ms"), med("alone_p999_ms"), med("alone_over_50ms"), med("alone_stores")))'
done
