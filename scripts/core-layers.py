#!/usr/bin/env python3
"""The C core's layers call only down (docs/Architecture.md, "The core's layers").

Derives the call graph of CSupport/core/*.c from the sources (functions named suc_*, defined in
one file and called in another; comments and strings left out) and fails on any call from a file
to a file of a higher layer, and on a file that is in no layer. Calls within a layer are allowed.
A transaction reaches the eviction it may trigger on a full file system through a function
pointer set at open (suc_cache.relieve_disk_full), as SQLite's pager reaches its busy handler.

    python3 scripts/core-layers.py          # prints the upward calls, exit 1 if any
    python3 scripts/core-layers.py --graph  # also prints every file's callees
"""
import collections
import glob
import os
import re
import sys

LAYERS = [
    ("os", ["os.c", "error.c"]),
    ("format", ["record.c", "body_header.c"]),
    ("txn", ["files.c", "txn.c", "generation_file.c", "unsynced.c"]),
    ("index", ["index.c", "key_order.c", "tags.c", "partitions.c", "purge.c"]),
    ("operations", ["body.c", "body_reader.c", "lookup.c", "writer.c", "lease.c", "quota.c", "generation.c",
                    "usage.c", "space.c"]),
    ("maintenance", ["maintenance.c"]),
    ("handle", ["cache.c"]),
]

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CSupport", "core")
layer_of = {name: (rank, label) for rank, (label, names) in enumerate(LAYERS) for name in names}


def code_of(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


sources = {os.path.basename(p): code_of(p) for p in sorted(glob.glob(os.path.join(root, "*.c")))}
definitions = {}
for name, code in sources.items():
    for m in re.finditer(r"^[A-Za-z_][\w \*]*?\b(suc_\w+)\s*\([^;{]*\)\s*\{", code, flags=re.M | re.S):
        definitions[m.group(1)] = name
calls = collections.defaultdict(set)
for name, code in sources.items():
    for m in re.finditer(r"\b(suc_\w+)\s*\(", code):
        callee = definitions.get(m.group(1))
        if callee and callee != name:
            calls[(name, callee)].add(m.group(1))

failures = [f"{name} is in no layer: add it to LAYERS" for name in sources if name not in layer_of]
for (caller, callee), functions in sorted(calls.items()):
    if caller in layer_of and callee in layer_of and layer_of[callee][0] > layer_of[caller][0]:
        failures.append(f"upward call: {caller} ({layer_of[caller][1]}) -> {callee} ({layer_of[callee][1]}): "
                        + ", ".join(sorted(functions)))
if "--graph" in sys.argv:
    for caller in sorted(sources):
        print(caller, "->", " ".join(sorted({b for (a, b) in calls if a == caller})))
for line in failures:
    print(line)
print(f"core-layers: {len(sources)} files, {len(calls)} file-to-file call edges, {len(failures)} problems")
sys.exit(1 if failures else 0)
