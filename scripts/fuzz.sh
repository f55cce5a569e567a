#!/usr/bin/env bash
# RELIABILITY T12: builds the libFuzzer targets of Fuzz/ and runs each for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]      targets: FuzzCacheControl FuzzHTTPDate FuzzVary
#                                                     FuzzRecordDecode FuzzBodyFile
# Swift is built with -sanitize=fuzzer,address; the C core (a dependency, compiled in the same
# build) with -fsanitize=fuzzer-no-link,address so its branches guide the fuzzer too. The working
# corpus lives in Fuzz/.corpus/<target> (not committed; seeded from Fuzz/Seeds). A crash, leak or
# timeout (> 1 s) is written to Fuzz/FailCases/<check>/ — commit it: CI replays that directory.
# Prints one line per target: executions, exec/s, corpus size, result.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
seconds=${1:-60}; shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(FuzzCacheControl FuzzHTTPDate FuzzVary FuzzRecordDecode FuzzBodyFile)
scratch=${SCRATCH:-.build-rel}
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
swift build -c release --scratch-path "$scratch" \
  -Xswiftc -sanitize="$sanitizers" -Xswiftc -parse-as-library \
  -Xcc -fsanitize="${sanitizers/fuzzer/fuzzer-no-link}" >"$scratch.log" 2>&1 || { tail -30 "$scratch.log"; exit 1; }
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
check_of() {
  case "$1" in
    FuzzCacheControl) echo cache-control ;; FuzzHTTPDate) echo http-date ;; FuzzVary) echo vary ;;
    FuzzRecordDecode) echo record ;; FuzzBodyFile) echo body-file ;;
  esac
}
status=0
for target in "${targets[@]}"; do
  check=$(check_of "$target")
  corpus=.corpus/$check
  mkdir -p "$corpus" "FailCases/$check"
  cp -n Seeds/"$check"/* "$corpus"/ 2>/dev/null || true
  log=.corpus/$check.log
  if "$bin/$target" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="FailCases/$check/" "$corpus" >"$log" 2>&1; then result=ok; else result=FAILED; status=1; fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "$target: executions=${execs:-?} exec/s=${rate:-?} corpus=$(ls "$corpus" | wc -l) seconds=$seconds result=$result"
  [ "$result" = ok ] || grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
done
exit $status
