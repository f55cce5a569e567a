#!/usr/bin/env bash
# Prints the path of a release `urlcache` built without the networking layer (SUC_CORE_ONLY=1, in
# .build-demo, as tools/demo builds it), installing what the build needs first. The benchmark
# scripts call it unless URLCACHE names a binary. Run from the repository's root.
set -euo pipefail
tools/install-dependencies >/dev/null
build=(swift build -c release --product urlcache --scratch-path .build-demo)
SUC_CORE_ONLY=1 "${build[@]}" >/dev/null
echo "$(SUC_CORE_ONLY=1 "${build[@]}" --show-bin-path)/urlcache"
