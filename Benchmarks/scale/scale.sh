#!/usr/bin/env bash
# Hit, miss and store rates against the directory's size, through SharedCache as a service calls
# it: for each entry count, `urlcache bench-ops` fills a fresh directory with that many 1 KiB
# entries (`.relaxed` durability, so the fill is not a run of fdatasyncs) and times 100,000 hits,
# 100,000 misses and 20,000 stores replacing random entries. The sizes are interleaved within a
# repetition (10k, 1M, 10k, 1M, ...) and each rate is given as a ratio to the 10k run of the same
# repetition; the median of those ratios is printed last.
#
#   Benchmarks/scale/scale.sh [DIR] [REPETITIONS]     (defaults: /tmp/suc-scale-bench, 3)
#
# SUC_SCALE_ENTRIES="10000 1000000" sets the entry counts (the first is the base of the
# ratios; 10,000,000 takes about 12 GB to fill); URLCACHE=path uses that urlcache binary instead
# of building one. Each directory is removed after its run, unless SUC_SCALE_KEEP=1: then the
# directories stay in DIR and later runs reuse them (`bench-ops --reuse`; the store phase only
# replaces entries, so the count holds). Measure on an idle machine: the load before and after
# each run is printed beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."
URLCACHE="${URLCACHE:-$(Benchmarks/Scripts/release-urlcache.sh)}"
dir="${1:-/tmp/suc-scale-bench}"
repetitions="${2:-3}"
mkdir -p "$dir"
results="$dir/results.jsonl"
: > "$results"
for rep in $(seq 1 "$repetitions"); do
  for entries in ${SUC_SCALE_ENTRIES:-10000 1000000}; do
    run="$dir/run-$entries"
    keep=()
    if [ "${SUC_SCALE_KEEP:-0}" = 1 ]; then keep=(--reuse); else rm -rf "$run"; fi
    before="$(cut -d' ' -f1 /proc/loadavg)"
    line="$("$URLCACHE" bench-ops "$run" --implementation shared-cache-relaxed --entries "$entries" \
      --operations 20000 --lookups 100000 --phases hit,miss,store "${keep[@]}")"
    after="$(cut -d' ' -f1 /proc/loadavg)"
    echo "rep $rep  load $before → $after  $line"
    echo "{\"rep\":$rep,\"run\":$line}" >> "$results"
    [ "${SUC_SCALE_KEEP:-0}" = 1 ] || rm -rf "$run"
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
base = min(r["run"]["entries"] for r in rows)
for entries in sorted({r["run"]["entries"] for r in rows}):
    for rate in ("hit_per_second", "miss_per_second", "store_per_second"):
        ratios, values = [], []
        for rep in sorted({r["rep"] for r in rows}):
            here = [r["run"] for r in rows if r["rep"] == rep and r["run"]["entries"] == entries]
            there = [r["run"] for r in rows if r["rep"] == rep and r["run"]["entries"] == base]
            if here and there:
                values.append(here[0][rate])
                ratios.append(here[0][rate] / there[0][rate])
        print(f"{entries:>10} entries  {rate:<17} median {statistics.median(values):>10.0f}/s"
              f"  ÷ {base} entries: median {statistics.median(ratios):.3f} (range {min(ratios):.3f}–{max(ratios):.3f})")
PY
