#!/usr/bin/env python3
"""Index pages written per commit, table by table, under each eviction policy.

`run.py` reports the bytes a replay writes; this says which of the index's tables they come
from. It builds a copy of LMDB with one counter per table in `mdb_page_alloc` (every page a
write transaction dirties is allocated there once: a page copied on write, a new page of a
split, an overflow page) and a count of write commits, printed when the process exits, then
replays each trace through `urlcache bench-trace` with that library in front of the system's
(LD_LIBRARY_PATH). The cache is unchanged: only the library it loads counts. With --stores it
runs store-scaling.py's `.standard` stores from 1, 2 and 4 processes instead and says what a
store and a commit write (every process appends its counts; the prefill's are taken off).

LMDB's source is not in this repository: pass a checkout of the release the system ships
(`dpkg -l liblmdb0`), e.g. `git clone https://github.com/LMDB/lmdb && git -C lmdb checkout
LMDB_0.9.24`, as --lmdb-source lmdb.

    table-pages.py --urlcache .build-rel/release/urlcache --lmdb-source lmdb \\
        --trace zipf=zipf.csv --trace cloudphysics=cp4k.csv --limit 30000
    table-pages.py --urlcache .build-rel/release/urlcache --lmdb-source lmdb --stores
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import tempfile

COUNTERS = r'''
#include <stdio.h>
static unsigned long suc_pages[64], suc_commits;
static char suc_names[64][24];
static void __attribute__((destructor)) suc_pages_dump(void) {
    const char *f = getenv("SUC_TABLE_PAGES");
    FILE *o = f ? fopen(f, "a") : NULL;
    if (!o) return;
    fprintf(o, "commits %lu\n", suc_commits);
    for (int i = 0; i < 64; i++)
        if (suc_pages[i]) fprintf(o, "%s %lu\n", suc_names[i][0] ? suc_names[i] : i ? "(main db)" : "(free list)", suc_pages[i]);
    fclose(o);
}
'''


def patch(source):
    """mdb.c with the counters: pages by the allocating cursor's table, names from mdb_dbi_open."""
    s = source.replace("static int\nmdb_page_alloc(MDB_cursor *mc, int num, MDB_page **mp)\n{",
                       COUNTERS + "static int\nmdb_page_alloc(MDB_cursor *mc, int num, MDB_page **mp)\n{\n"
                       "\tsuc_pages[mc && mc->mc_dbi < 64 ? mc->mc_dbi : 63] += num;", 1)
    s = s.replace("int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)\n{",
                  "static int dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);\n"
                  "int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)\n{\n"
                  "\tint rc = dbi_open(txn, name, flags, dbi);\n"
                  "\tif (!rc && name && *dbi < 64) snprintf(suc_names[*dbi], sizeof suc_names[0], \"%s\", name);\n"
                  "\treturn rc;\n}\n"
                  "static int dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)\n{", 1)
    s = s.replace("mdb_txn_commit(MDB_txn *txn)\n{",
                  "mdb_txn_commit(MDB_txn *txn)\n{\n"
                  "\tif (!(txn->mt_flags & MDB_TXN_RDONLY) && txn->mt_dirty_room < MDB_IDL_UM_MAX) suc_commits++;", 1)
    if s.count("suc_pages[") < 3 or "dbi_open(txn, name" not in s or "suc_commits++" not in s:
        raise SystemExit("mdb.c does not have the shape this script patches (LMDB 0.9.x expected)")
    return s


def build(lmdb_source, out):
    lib = os.path.join(lmdb_source, "libraries", "liblmdb")
    with open(os.path.join(lib, "mdb.c")) as f:
        patched = patch(f.read())
    with open(os.path.join(out, "mdb.c"), "w") as f:
        f.write(patched)
    for name in ("midl.c", "midl.h", "lmdb.h"):
        shutil.copy(os.path.join(lib, name), out)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", os.path.join(out, "liblmdb.so.0"),
                    os.path.join(out, "mdb.c"), os.path.join(out, "midl.c")], check=True)


def counted(command, library, scratch):
    """Runs `command` with the counting library; (its stdout, write commits, {table: pages})."""
    counts = os.path.join(scratch, "pages")
    if os.path.exists(counts):
        os.unlink(counts)
    env = dict(os.environ, LD_LIBRARY_PATH=library, SUC_TABLE_PAGES=counts)
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    commits, pages = 0, collections.Counter()
    with open(counts) as f:  # one block per process: several processes append theirs
        for line in f.read().splitlines():
            name, n = line.rsplit(" ", 1)
            if name == "commits":
                commits += int(n)
            else:
                pages[name] += int(n)
    return out, commits, pages


def traces(args, scratch):
    print("| trace | size | policy | miss ratio | commits | pages per commit: " +
          "records (`main`), `by_use`, `meta`, other | total | MB written |")
    print("|---|---|---|---|---|---|---|---|")
    directory = os.path.join(scratch, "replay")
    for spec in args.trace:
        name, path = spec.split("=", 1)
        for percent in args.sizes.split(","):
            for policy in ("lru", "s3fifo"):
                command = [args.urlcache, "bench-trace", directory, "--trace", path, "--policy", policy,
                           "--capacity-percent", percent, "--limit", str(args.limit), "--relaxed"]
                try:
                    out, commits, pages = counted(command, scratch, scratch)
                finally:
                    shutil.rmtree(directory, ignore_errors=True)
                result = json.loads(out.strip().splitlines()[-1])
                per = {k: v / max(commits, 1) for k, v in pages.items()}
                other = sum(v for k, v in per.items() if k not in ("main", "by_use", "meta"))
                print(f"| {name} | {percent}% | {policy} | {result['missRatio']:.4f} | {commits} | "
                      f"{per.get('main', 0):.2f}, {per.get('by_use', 0):.2f}, {per.get('meta', 0):.2f}, "
                      f"{other:.2f} | {sum(per.values()):.2f} | {result['writeCalls'] / 1e6:.0f} |", flush=True)


def stores(args, scratch):
    """`.standard` stores from several processes (store-scaling.py's run), less the prefill's pages."""
    print("| body | processes | stores/s | stores per commit | pages per store | pages per commit | pages/s |")
    print("|---|---|---|---|---|---|---|")
    directory = os.path.join(scratch, "stores")
    for size in args.bodies.split(","):
        def bench(procs, seconds):
            command = [args.urlcache, "bench", directory, "--procs", procs, "--lookup-percent", "0",
                       "--implementations", "shared-url-cache", "--sizes", size, "--seconds", seconds,
                       "--seed", "1"]
            try:
                return counted(command, scratch, scratch)
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        # The prefill alone: `--seconds 0.01` stores a handful after it, counted with it.
        _, fill_commits, fill_pages = bench("1", "0.01")
        fill = sum(fill_pages.values())
        for procs in args.procs.split(","):
            out, commits, pages = bench(procs, str(args.seconds))
            rate = next(float(f[6]) for f in (line.split() for line in out.splitlines())
                        if len(f) > 6 and f[0] == "shared-url-cache" and f[1] == "store")
            n_stores = rate * args.seconds
            n_commits = commits - fill_commits
            n_pages = sum(pages.values()) - fill
            print(f"| {int(size) // 1024} KiB | {procs} | {rate:.0f} | {n_stores / n_commits:.2f} | "
                  f"{n_pages / n_stores:.2f} | {n_pages / n_commits:.2f} | {n_pages / args.seconds:.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urlcache", required=True, help="a release urlcache binary")
    parser.add_argument("--lmdb-source", required=True, help="a checkout of LMDB at the system's release")
    parser.add_argument("--trace", action="append", default=[], help="NAME=PATH, repeatable: replay traces")
    parser.add_argument("--sizes", default="1,10,30", help="cache sizes, percent of the working set")
    parser.add_argument("--limit", type=int, default=30000, help="requests per replay (0: all)")
    parser.add_argument("--stores", action="store_true", help="instead: `.standard` stores from several processes")
    parser.add_argument("--procs", default="1,2,4", help="with --stores: process counts")
    parser.add_argument("--bodies", default="1024,16384", help="with --stores: body sizes in bytes")
    parser.add_argument("--seconds", type=float, default=4, help="with --stores: seconds per run")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="table-pages-")
    try:
        build(args.lmdb_source, scratch)
        stores(args, scratch) if args.stores else traces(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
