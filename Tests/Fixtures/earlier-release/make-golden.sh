#!/usr/bin/env bash
# Writes the golden directory of an earlier release: 60 entries (with and without a variant,
# inline and file bodies, userInfo, three partitions; see worker.c) stored by that release's
# own C core, packed as golden-COMMIT.tar.gz beside this script. Every later release must open
# it, serve every entry bit-exact, compact, verify and rebuild it (Tests/ReliabilityTests/
# UpgradeTests.swift). The next directory format gets its golden directory the same way.
#   make-golden.sh COMMIT
set -euo pipefail
commit=$1
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$here/build.sh" "$commit" "$work/worker"
"$work/worker" "$work/golden" fill 60 >/dev/null
# The lock file is per-run state (reader slots); it is made anew at open.
rm -f "$work/golden/index.lmdb-lock"
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1700000000 -czf "$here/golden-$commit.tar.gz" golden
