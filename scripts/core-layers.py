#!/usr/bin/env python3
"""The C core's layers call only down (docs/Architecture.md, "The core's layers").

Derives the call graph of CSupport/core/*.c from the sources (functions named suc_*, defined in
one file and called in another; comments and strings left out) and fails on any call from a file
to a file of a higher layer, and on a file that is in no layer. Calls within a layer are allowed.
Each layer has one internal header (HEADERS); a file may include its own layer's header and those
below it, never a higher one, so what a file can call is what its includes declare.
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
    ("format", ["record.c", "body_header.c", "index_key.c"]),
    ("txn", ["files.c", "txn.c", "journal.c", "generation_file.c", "unsynced.c", "ghost_file.c", "pace.c"]),
    ("index", ["index.c", "secondaries.c", "time_orders.c", "key_order.c", "tags.c", "partitions.c", "purge.c", "s3fifo.c"]),
    ("operations", ["body.c", "body_reader.c", "lookup.c", "writer.c", "refresh.c", "commit.c", "handoff.c", "eviction.c",
                    "bulk_remove.c", "lease.c", "quota.c", "generation.c", "earlier_releases.c", "usage.c", "space.c", "debug_hooks.c"]),
    ("maintenance", ["maintenance.c", "format_upgrade.c"]),
    ("handle", ["cache.c"]),
]

# The internal header of each layer; maintenance and the handle use the operations' header.
HEADERS = {"os.h": "os", "format.h": "format", "txn.h": "txn", "index.h": "index", "operations.h": "operations"}

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
rank_of_label = {label: rank for rank, (label, _) in enumerate(LAYERS)}
for name in sorted(glob.glob(os.path.join(root, "*.[ch]"))):
    base = os.path.basename(name)
    mine = layer_of[base][0] if base in layer_of else HEADERS.get(base) and rank_of_label[HEADERS[base]]
    for included in re.findall(r'^#include "([^"]+)"', open(name).read(), flags=re.M):
        if included in HEADERS and mine is not None and rank_of_label[HEADERS[included]] > mine:
            failures.append(f"upward include: {base} includes {included}")
        elif included.endswith(".h") and included not in HEADERS and not included.startswith("shared_url_cache"):
            failures.append(f"{base} includes {included}, which is no layer's header: add it to HEADERS")
if "--graph" in sys.argv:
    for caller in sorted(sources):
        print(caller, "->", " ".join(sorted({b for (a, b) in calls if a == caller})))
for line in failures:
    print(line)
print(f"core-layers: {len(sources)} files, {len(calls)} file-to-file call edges, {len(failures)} problems")
sys.exit(1 if failures else 0)
