#!/usr/bin/env bash
# docs/Reliability.md T13: the test suite under sanitizers.
#
#   scripts/sanitize.sh asan [swift-test filter]   AddressSanitizer over the whole suite (Swift and the
#                                                 C core: SwiftPM passes -fsanitize to the C targets
#                                                 too) + UndefinedBehaviorSanitizer over the C core;
#                                                 LSan is on with ASan
#   scripts/sanitize.sh tsan [filter]             ThreadSanitizer over the in-process concurrency tests
#                                                 (it cannot see races between processes)
# Each mode has its own build directory, so switching modes never rebuilds the other. The
# networking layer (SwiftNIO, AsyncHTTPClient, BoringSSL) is left out (SUC_CORE_ONLY=1): it is
# not our code, and instrumenting it would triple the build.
set -euo pipefail
cd "$(dirname "$0")/.."
export SUC_CORE_ONLY=1
mode=${1:-asan}
base=${SCRATCH:-.build-rel}
case "$mode" in
  asan)
    # swiftc has no UBSan on Linux: UBSan instruments the C targets (the core), ASan everything.
    flags=(--sanitize=address -Xcc -fsanitize=undefined)
    filter=${2:-}
    # The distro liblmdb is not instrumented; its one known leak (ITS#9155) would be the only
    # suppression allowed (docs/Reliability.md T13). UBSan stops at the first report so it fails the run.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
    # Toolchain leaks only (Foundation's Process, XCTest): see the file.
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ;;
  tsan)
    flags=(--sanitize=thread)
    filter=${2:-'ConcurrencyTests|concurrentTasks|hitTakesNoWriteLock|RoundTripTests|concurrentRewrite'}
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
    ;;
  *) echo "usage: $0 asan|tsan [filter]" >&2; exit 1 ;;
esac
# A crash is reported by the sanitizer itself; the Swift runtime's backtracer, attached to an
# instrumented process, can trip over ASan's shadow memory and hang instead of reporting.
export SWIFT_BACKTRACE=enable=no
# Instrumented processes start and run several times slower: stretch the crash loops' kill delays.
export SUC_TIME_SCALE=${SUC_TIME_SCALE:-4}
scratch=$base/$mode
start=$(date +%s)
swift build --build-tests --scratch-path "$scratch" "${flags[@]}"
built=$(date +%s)
args=(--skip-build --scratch-path "$scratch" "${flags[@]}")
[ -n "$filter" ] && args+=(--filter "$filter")
# Child processes (CacheWorker) are built with the same sanitizers and report on stderr, which
# the multi-process tests check: any report fails the test that spawned it.
swift test "${args[@]}"
echo "sanitize $mode: build $((built - start)) s, tests $(( $(date +%s) - built )) s"
