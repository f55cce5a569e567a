#!/usr/bin/env bash
# Bulk removals beside a storing service: how long `urlcache purge` takes, and how long a store
# of another process waits meanwhile. Fills a directory once (`urlcache bench-ops --phases tag`:
# 1 KiB JSON-like bodies, every entry stored, then stored again with its tags, "hot" on half of
# them, so the use order also holds the keys the second stores left behind), then for each
# repetition, kind and build copies it and runs one purge while `urlcache bench-pause` (the
# last build's, on both sides) stores one `.standard` 1 KiB entry a millisecond and times each:
#
#   since   purge --since 1h               every entry, through the use order (remove-since)
#   prefix  purge --prefix .../items/1     about 56% of the entries, walking the records and
#                                          removing the matches (no URL order kept)
#   tag     purge --tag hot                half of the entries, through the tag's postings
#   all     purge --all                    every entry (remove-all, then the use order drained)
#
# Prints one row per run: the purge's wall time and the writer's stores, longest store, 99.9th
# percentile and stores over 50 ms.
#
#   Benchmarks/purge/purge-beside-writer.sh [DIR] [REPETITIONS]   (defaults: /tmp/suc-purge-writer, 1)
#
# URLCACHE=path (one build) or URLCACHE=before,after (two, interleaved within each repetition);
# SUC_PURGE_ENTRIES sets the entries (200000); SUC_PURGE_KINDS the kinds ("since prefix tag all").
# Measure on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
IFS=, read -r -a builds <<<"${URLCACHE:-$(Benchmarks/Scripts/release-urlcache.sh)}"
writer="${builds[${#builds[@]}-1]}"
dir="${1:-/tmp/suc-purge-writer}"
reps="${2:-1}"
entries="${SUC_PURGE_ENTRIES:-200000}"
mkdir -p "$dir"
src="$dir/filled-$entries"
if [ ! -d "$src" ]; then
  rm -rf "$src.filling"
  "$writer" bench-ops "$src.filling" --implementation shared-cache-relaxed --entries "$entries" \
    --hot-entries $((entries / 2)) --operations 0 --phases tag >/dev/null
  mv "$src.filling" "$src"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$reps"); do
  for kind in ${SUC_PURGE_KINDS:-since prefix tag all}; do
    case "$kind" in
      since) args=(--since 1h) ;;
      prefix) args=(--prefix "https://api.example.com/items/1") ;;
      tag) args=(--tag hot) ;;
      all) args=(--all) ;;
      *) echo "unknown kind $kind" >&2; exit 2 ;;
    esac
    for bin in "${builds[@]}"; do
      work="$dir/work"
      rm -rf "$work" "$work.stop" "$work.pause"
      cp -a "$src" "$work"
      sync
      "$writer" bench-pause "$work" --stop-file "$work.stop" --seconds 3600 >"$work.pause" &
      pause_pid=$!
      sleep 2
      start=$(date +%s.%N)
      removed=$("$bin" purge "$work" "${args[@]}" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["removed_entries"])')
      end=$(date +%s.%N)
      sleep 1
      touch "$work.stop"
      wait "$pause_pid"
      python3 - "$rep" "$kind" "$bin" "$removed" "$start" "$end" "$work.pause" <<'EOF'
import json, sys
rep, kind, build, removed, start, end, pause = sys.argv[1:]
p = json.load(open(pause))
print("rep %s  %-6s  %-40s  removed %7s in %6.2f s   writer: %6d stores, longest %7.1f ms, 99.9th %6.1f ms, over 50 ms %d"
      % (rep, kind, build, removed, float(end) - float(start), p["stores"], p["max_ms"], p["p999_ms"], p["over_50ms"]))
EOF
    done
  done
done
rm -rf "$dir/work" "$dir/work.stop" "$dir/work.pause"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
