#!/usr/bin/env bash
# Compaction as an operator runs it, at 100k and 1M entries: fills a directory once with
# `urlcache bench` (1 KiB JSON-like bodies, inline in the index), then for each run copies it and
# runs `urlcache compact COPY --max-size <10% of its du>`. Prints du before and after (allocated
# blocks, as `du -s --block-size=1`), evicted entries per second, index rewrites and the longest
# one (stores wait for a rewrite; lookups never do), and the medians over the runs.
#
#   Benchmarks/compaction/compaction.sh [DIR] [RUNS]     (defaults: /tmp/suc-compaction-bench, 3)
#
# Filling 1M entries takes about 5 minutes here; the filled directories are kept in DIR and
# reused by later runs. Measure on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="$(Benchmarks/Scripts/release-urlcache.sh)"
dir="${1:-/tmp/suc-compaction-bench}"
runs="${2:-3}"
mkdir -p "$dir"
for entries in ${SUC_COMPACTION_ENTRIES:-100000 1000000}; do
  src="$dir/shared-url-cache-$entries"
  if [ ! -d "$src" ]; then
    "$bin" bench "$dir" --entries "$entries" --procs 1 --seconds 1 --implementations shared-url-cache \
      --sizes 1024 --lookup-percent 100 >/dev/null
  fi
  rows=()
  for run in $(seq 1 "$runs"); do
    work="$dir/work-$entries"
    rm -rf "$work"
    cp -a "$src" "$work"
    sync
    before=$(du -s --block-size=1 "$work" | cut -f1)
    max=$((before / 10))
    json=$("$bin" compact "$work" --max-size "$max" --json)
    after=$(du -s --block-size=1 "$work" | cut -f1)
    row=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1]); r = s["result"]
fields = dict(entries=sys.argv[2], du_before=sys.argv[3], du_after=sys.argv[4], max_size=sys.argv[5],
              low_water=s["plan"]["low_water_bytes"], evicted=r["evicted_entries"], seconds="%.3f" % s["seconds"],
              evicted_per_s="%.0f" % s["evicted_per_second"], rewrites=r["index_rewrites"],
              longest_store_pause_ms=r["longest_rewrite_milliseconds"], index_before=r["index_bytes_before"],
              index_after=r["index_bytes_after"])
print(" ".join("%s=%s" % kv for kv in fields.items()))' "$json" "$entries" "$before" "$after" "$max")
    echo "$row"
    rows+=("$row")
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [dict(kv.split("=") for kv in line.split()) for line in sys.stdin if line.strip()]
med = lambda k: statistics.median(float(r[k]) for r in rows)
print("median of %d: entries=%s du %.0f -> %.0f (max-size %.0f) evicted/s %.0f seconds %.3f longest store pause %.0f ms"
      % (len(rows), rows[0]["entries"], med("du_before"), med("du_after"), med("max_size"),
         med("evicted_per_s"), med("seconds"), med("longest_store_pause_ms")))'
done
