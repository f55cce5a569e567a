#!/usr/bin/env bash
# docs/Reliability.md T12: builds the libFuzzer targets of Fuzz/ and runs each for SECONDS (default 60).
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
export SUC_CORE_ONLY=1 # the fuzz targets need the store and the semantics module only
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
# One target: runs it, prints its line; exit status 1 on a crash, leak or timeout.
run_target() {
  local target=$1 check corpus log result execs rate
  check=$(check_of "$target")
  corpus=.corpus/$check
  mkdir -p "$corpus" "FailCases/$check"
  cp -n Seeds/"$check"/* "$corpus"/ 2>/dev/null || true
  log=.corpus/$check.log
  if "$bin/$target" -seed="${FUZZ_SEED:-0}" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="FailCases/$check/" "$corpus" >"$log" 2>&1; then result=ok; else result=FAILED; fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "$target: executions=${execs:-?} exec/s=${rate:-?} corpus=$(ls "$corpus" | wc -l) seconds=$seconds result=$result"
  [ "$result" = ok ] || { grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5; return 1; }
}
# FUZZ_SEED=N makes the mutation sequence repeatable (CI uses 1); 0, the default, lets libFuzzer
# pick a new seed each run. FUZZ_JOBS targets at a time (default 2, one per core of the CI machine).
jobs=${FUZZ_JOBS:-2}
status=0
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || status=1; running=$((running - 1)); fi
  run_target "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done
exit $status
