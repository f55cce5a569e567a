#!/usr/bin/env bash
# Purge by tag against the tag's size, as an operator runs it: fills a directory once per size with
# `urlcache bench-ops --phases tag` (every entry tagged "hot", 128 KiB JSON-like bodies, ~11 KiB
# stored, past the 8 KiB inline limit, so each entry has a body file of its own), then for each
# run copies it and times
# `urlcache purge COPY --tag hot --json` (the whole command: process start, open, the purge's
# write transactions of 1,000 entries, the unlink of each body file). Prints one row per run and
# the median; a linear purge takes ~10x as long at 10x the entries.
#
#   Benchmarks/purge/purge-scaling.sh [DIR] [RUNS]     (defaults: /tmp/suc-purge-bench, 3)
#
# SUC_PURGE_ENTRIES="10000 100000" sets the entry counts, SUC_PURGE_SIZE the body size (65536:
# bodies inline in the index, no files); URLCACHE=path uses that urlcache binary instead of
# building one. The filled directories are kept in DIR and reused by later runs (100,000 entries
# of 128 KiB take ~1.3 GB). Measure on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
URLCACHE="${URLCACHE:-$(Benchmarks/Scripts/release-urlcache.sh)}"
dir="${1:-/tmp/suc-purge-bench}"
runs="${2:-3}"
size="${SUC_PURGE_SIZE:-131072}"
mkdir -p "$dir"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for entries in ${SUC_PURGE_ENTRIES:-10000 100000}; do
  src="$dir/tagged-$size-$entries"
  if [ ! -d "$src" ]; then
    rm -rf "$src.filling"
    "$URLCACHE" bench-ops "$src.filling" --implementation shared-cache-relaxed --entries "$entries" \
      --hot-entries "$entries" --size "$size" --operations 0 --phases tag >/dev/null
    mv "$src.filling" "$src"
  fi
  rows=()
  for run in $(seq 1 "$runs"); do
    work="$dir/work-$entries"
    rm -rf "$work"
    cp -a "$src" "$work"
    sync
    files=$(find "$work/bodies" -type f | wc -l)  # each removed entry's file is unlinked once
    row=$(python3 -c '
import json, resource, subprocess, sys, time
urlcache, work, entries, files = sys.argv[1:5]
start = time.perf_counter()
out = subprocess.run([urlcache, "purge", work, "--tag", "hot", "--json"], check=True, capture_output=True, text=True).stdout
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
r = json.loads(out)
print("entries=%s body_files=%s removed=%d records_read=%d seconds=%.3f removed_per_s=%.0f max_rss_kib=%d" % (
    entries, files, r["removed_entries"], r.get("records_read", 0), seconds, r["removed_entries"] / seconds, rss))' \
      "$URLCACHE" "$work" "$entries" "$files")
    left=$(find "$work/bodies" -type f | wc -l)
    echo "$row body_files_left=$left"
    rows+=("$row")
  done
  rm -rf "$dir/work-$entries"
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [dict(kv.split("=") for kv in line.split()) for line in sys.stdin if line.strip()]
med = lambda k: statistics.median(float(r[k]) for r in rows)
print("median of %d: entries=%s removed=%.0f seconds %.3f removed/s %.0f max RSS %.0f KiB"
      % (len(rows), rows[0]["entries"], med("removed"), med("seconds"), med("removed_per_s"), med("max_rss_kib")))'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
