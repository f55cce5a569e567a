#!/usr/bin/env bash
# docs/Reliability.md T12: builds the libFuzzer targets of Fuzz/ and runs each for SECONDS (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]      targets: FuzzCacheControl FuzzHTTPDate FuzzVary
#                                                     FuzzRecordDecode FuzzBodyFile FuzzProxyRequest
# The core targets are built core-only (SUC_CORE_ONLY=1) in release: Swift with
# -sanitize=fuzzer,address, the C core (a dependency, compiled in the same build) with
# -fsanitize=fuzzer-no-link,address so its branches guide the fuzzer too. FuzzProxyRequest (raw
# client bytes through the proxy's request path) needs SwiftNIO and AsyncHTTPClient, so it has a
# build of its own (Fuzz/.build-proxyfuzz, PROXY_SCRATCH): debug, with -sanitize=fuzzer and no
# AddressSanitizer (its code under test is Swift; the build is the slow part, see below), and it
# runs PROXY_SECONDS (default SECONDS). The working corpus lives in Fuzz/.corpus/<check> (not
# committed; seeded from Fuzz/Seeds). A crash, leak or timeout is written to
# Fuzz/FailCases/<check>/ — commit it: CI replays that directory.
# Prints one line per target: executions, exec/s, corpus size, result.
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
seconds=${1:-60}; shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(FuzzCacheControl FuzzHTTPDate FuzzVary FuzzRecordDecode FuzzBodyFile FuzzProxyRequest)
proxy_seconds=${PROXY_SECONDS:-$seconds}
core=false proxy=false
for target in "${targets[@]}"; do
  if [ "$target" = FuzzProxyRequest ]; then proxy=true; else core=true; fi
done
scratch=${SCRATCH:-.build-rel}
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
if $core; then
  # the core targets need the store and the semantics module only
  SUC_CORE_ONLY=1 swift build -c release --scratch-path "$scratch" \
    -Xswiftc -sanitize="$sanitizers" -Xswiftc -parse-as-library \
    -Xcc -fsanitize="${sanitizers/fuzzer/fuzzer-no-link}" >"$scratch.log" 2>&1 || { tail -30 "$scratch.log"; exit 1; }
  bin=$(SUC_CORE_ONLY=1 swift build -c release --scratch-path "$scratch" --show-bin-path)
fi
if $proxy; then
  # Debug: building SwiftNIO, AsyncHTTPClient and BoringSSL is most of this target's cost, and
  # optimising them would add to it; the C code (NIO's llhttp parser among it) is instrumented
  # for coverage too.
  proxy_scratch=${PROXY_SCRATCH:-.build-proxyfuzz}
  started=$(date +%s)
  swift build -c debug --scratch-path "$proxy_scratch" --product FuzzProxyRequest \
    -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library \
    -Xcc -fsanitize=fuzzer-no-link >"$proxy_scratch.log" 2>&1 || { tail -30 "$proxy_scratch.log"; exit 1; }
  proxy_bin=$(swift build -c debug --scratch-path "$proxy_scratch" --show-bin-path)
  echo "FuzzProxyRequest: built in $(( $(date +%s) - started )) s"
fi
check_of() {
  case "$1" in
    FuzzCacheControl) echo cache-control ;; FuzzHTTPDate) echo http-date ;; FuzzVary) echo vary ;;
    FuzzRecordDecode) echo record ;; FuzzBodyFile) echo body-file ;; FuzzProxyRequest) echo proxy-request ;;
  esac
}
# Swift's own crash backtracer would take a trap before libFuzzer's handler, which then writes no
# artifact.
export SWIFT_BACKTRACE=enable=no
# One target: runs it, prints its line; exit status 1 on a crash, leak or timeout.
run_target() {
  local target=$1 check corpus log result execs rate binary=${bin:-}/$1 time=$seconds timeout=1
  check=$(check_of "$target")
  # the proxy's answers run in tasks on two shared cores: a slow input is not a hang at 1 s
  [ "$target" = FuzzProxyRequest ] && { binary=$proxy_bin/$target; time=$proxy_seconds; timeout=10; }
  corpus=.corpus/$check
  mkdir -p "$corpus" "FailCases/$check"
  cp -n Seeds/"$check"/* "$corpus"/ 2>/dev/null || true
  log=.corpus/$check.log
  if "$binary" -seed="${FUZZ_SEED:-0}" -max_total_time="$time" -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="FailCases/$check/" "$corpus" >"$log" 2>&1; then result=ok; else result=FAILED; fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  echo "$target: executions=${execs:-?} exec/s=${rate:-?} corpus=$(ls "$corpus" | wc -l) seconds=$time result=$result"
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
