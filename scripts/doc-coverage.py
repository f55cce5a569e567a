#!/usr/bin/env python3
"""Public declarations per library module and those without a doc comment, from the symbol
graphs `swift package dump-symbol-graph --minimum-access-level public` writes.

    scripts/doc-coverage.py SYMBOLGRAPH_DIR [--list] [--require-all]

--require-all exits 1 when a library module has an undocumented public declaration (CI's check).
Members a compiler synthesises (memberwise Codable, Equatable...) are not counted.
"""
import glob
import json
import os
import sys

# The modules of the package's library products (CacheMaintenance is not one: its declarations
# are `package`, for urlcache and the tests).
LIBRARIES = ["SharedURLCacheStore", "HTTPCacheSemantics", "SharedURLCache", "SharedURLCacheFoundation",
             "SharedURLCacheAsyncHTTPClient", "CachingProxy"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    totals = {}
    missing = {}
    for path in glob.glob(os.path.join(args[0], "*.symbols.json")):
        graph = json.load(open(path))
        # Module@Other.symbols.json: Module's public extensions of Other's types.
        module = os.path.basename(path).split("@")[0].split(".")[0]
        if module not in LIBRARIES:
            continue
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            totals[module] = totals.get(module, 0) + 1
            if not symbol.get("docComment"):
                missing.setdefault(module, []).append(
                    ".".join(symbol["pathComponents"]) + "  (" + symbol["kind"]["identifier"] + ")")
    print(f"{'module':32} {'public':>7} {'undocumented':>13}")
    for module in LIBRARIES:
        print(f"{module:32} {totals.get(module, 0):>7} {len(missing.get(module, [])):>13}")
    if "--list" in sys.argv:
        for module, names in sorted(missing.items()):
            for name in sorted(names):
                print(f"  {module}: {name}")
    if "--require-all" in sys.argv and any(missing.values()):
        sys.exit(1)


main()
