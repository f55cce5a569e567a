#!/usr/bin/env bash
# Builds worker.c against the C core of an earlier release.
#   build.sh COMMIT OUT      (OUT: the executable to write)
# The core comes from core-COMMIT.tar.gz beside this script (a clone may be shallow, so tests
# must not need the history), made once with:
#   git archive --format=tar.gz -o Tests/Fixtures/earlier-release/core-COMMIT.tar.gz COMMIT CSupport/core
# Needs a C compiler and the LMDB, zlib and OpenSSL development packages (tools/install-dependencies).
set -euo pipefail
commit=$1 out=$2
here="$(cd "$(dirname "$0")" && pwd)"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
tar -xzf "$here/core-$commit.tar.gz" -C "$src"
cc -std=gnu11 -O1 -D_GNU_SOURCE -I"$src/CSupport/core/include" -I"$src/CSupport/core" \
  -o "$out" "$here/worker.c" "$src"/CSupport/core/*.c -llmdb -lz -lcrypto -lpthread
