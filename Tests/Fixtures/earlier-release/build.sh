#!/usr/bin/env bash
# Builds worker.c against the C core of an earlier release, taken from git history.
#   build.sh COMMIT OUT      (OUT: the executable to write)
# Needs git (with the repository's history), a C compiler and the LMDB, zlib and OpenSSL
# development packages (tools/install-dependencies).
set -euo pipefail
commit=$1 out=$2
here="$(cd "$(dirname "$0")" && pwd)"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
git -C "$here/../../.." archive "$commit" CSupport/core | tar -x -C "$src"
cc -std=gnu11 -O1 -D_GNU_SOURCE -I"$src/CSupport/core/include" -I"$src/CSupport/core" \
  -o "$out" "$here/worker.c" "$src"/CSupport/core/*.c -llmdb -lz -lcrypto -lpthread
