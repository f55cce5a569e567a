/*
 * one-tree.c — what a `.standard` store's commit would write and cost if the index kept its
 * tables in one LMDB tree instead of three, measured on LMDB itself, without the cache.
 *
 * A replacing store of the directory's format 2 changes three tables: its record in `main` (a
 * random leaf, by the key's hash), a new key at the newest end of the use order `by_use` (the
 * old one is left behind and swept later), and the counters, version and ticket in `meta`. Each
 * table is a B-tree of its own, so each commit copies each tree's path from leaf to root, plus
 * LMDB's table of tables and its free list. This program replays that pattern in three layouts:
 *
 *   three   the three named tables (today's layout);
 *   one     one named table, each row's key behind a table byte (records < use order < meta), so
 *           the roots are one, and the meta rows sit beside the use order's newest leaf;
 *   unnamed the same rows in LMDB's unnamed table: no table-of-tables page either.
 *
 * Every store is one write transaction committed as the default durability mode commits
 * (MDB_NOMETASYNC: one fdatasync). It reports, per store, the bytes handed to the kernel
 * (/proc/self/io wchar, which is the pages the commit wrote, in 4 KiB pages) and the wall time.
 * The layouts alternate in each repetition. Usage:
 *
 *   cc -O2 -o one-tree one-tree.c -llmdb && ./one-tree DIR [ENTRIES [STORES [REPETITIONS [PER_COMMIT]]]]
 *
 * PER_COMMIT stores share each commit, as a commit carrying several processes' stores does.
 */
#include <lmdb.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { THREE, ONE, UNNAMED, LAYOUTS };
static const char *layout_names[LAYOUTS] = {"three", "one", "unnamed"};

#define IKEY 32
#define RECORD 1000 /* a 1 KiB body's record, compressed, with its head */

typedef struct store_env {
    MDB_env *env;
    MDB_dbi main, use, meta; /* the same handle three times when the layout has one tree */
    int prefixed;
    uint64_t stamp, swept, entries;
} store_env;

static void die(const char *what, int rc) {
    fprintf(stderr, "%s: %s\n", what, mdb_strerror(rc));
    exit(1);
}

static uint64_t wchar(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    uint64_t v = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "wchar:", 6)) v = strtoull(line + 6, NULL, 10);
    if (f) fclose(f);
    return v;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A row's key: the table byte first when the layout shares one tree. */
static MDB_val key_of(const store_env *s, char table, const void *k, size_t n, uint8_t *buf) {
    size_t at = 0;
    if (s->prefixed) buf[at++] = (uint8_t)table;
    memcpy(buf + at, k, n);
    return (MDB_val){at + n, buf};
}

static void ikey_of(uint64_t i, uint8_t out[IKEY]) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
    for (int b = 0; b < IKEY; b += 8) {
        x ^= x >> 29, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 32;
        memcpy(out + b, &x, 8);
    }
}

static void put(MDB_txn *t, MDB_dbi d, MDB_val k, MDB_val v) {
    int rc = mdb_put(t, d, &k, &v, 0);
    if (rc) die("mdb_put", rc);
}

/* One replacing store: the record, the use order's new key (and one old key swept when the
 * order holds more than twice the entries), and five meta rows. */
static void store_one(store_env *s, MDB_txn *t, uint64_t i) {
    uint8_t ikey[IKEY], kb[64], vb[RECORD];
    ikey_of(i % s->entries, ikey);
    memset(vb, (int)(i & 0xff), sizeof vb);
    put(t, s->main, key_of(s, 'M', ikey, IKEY, kb), (MDB_val){RECORD, vb});
    uint8_t uk[8 + IKEY];
    uint64_t stamp = ++s->stamp;
    for (int b = 0; b < 8; b++) uk[b] = (uint8_t)(stamp >> (56 - 8 * b));
    memcpy(uk + 8, ikey, IKEY);
    put(t, s->use, key_of(s, 'U', uk, sizeof uk, kb), (MDB_val){8, vb});
    if (s->stamp - s->swept > 2 * s->entries) {
        uint64_t old = ++s->swept;
        for (int b = 0; b < 8; b++) uk[b] = (uint8_t)(old >> (56 - 8 * b));
        ikey_of((old - 1) % s->entries, uk + 8);
        MDB_val k = key_of(s, 'U', uk, sizeof uk, kb);
        int rc = mdb_del(t, s->use, &k, NULL);
        if (rc && rc != MDB_NOTFOUND) die("mdb_del", rc);
    }
    static const char *meta_rows[5] = {"seq", "stores", "stored_bytes", "record_bytes", "t\x01"};
    for (int m = 0; m < 5; m++) {
        uint64_t value = i;
        put(t, s->meta, key_of(s, 'Z', meta_rows[m], strlen(meta_rows[m]), kb), (MDB_val){8, &value});
    }
}

static void open_layout(store_env *s, const char *dir, int layout, uint64_t entries) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.lmdb", dir, layout_names[layout]);
    unlink(path);
    snprintf(path + strlen(path), sizeof path - strlen(path), "-lock");
    unlink(path);
    path[strlen(path) - 5] = 0;
    memset(s, 0, sizeof *s);
    s->entries = entries;
    int rc = mdb_env_create(&s->env);
    if (!rc) rc = mdb_env_set_maxdbs(s->env, 8);
    if (!rc) rc = mdb_env_set_mapsize(s->env, (size_t)1 << 32);
    if (!rc) rc = mdb_env_open(s->env, path, MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD | MDB_NOMETASYNC, 0660);
    if (rc) die("mdb_env_open", rc);
    MDB_txn *t;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &t))) die("mdb_txn_begin", rc);
    if (layout == THREE) {
        if ((rc = mdb_dbi_open(t, "main", MDB_CREATE, &s->main)) || (rc = mdb_dbi_open(t, "by_use", MDB_CREATE, &s->use)) ||
            (rc = mdb_dbi_open(t, "meta", MDB_CREATE, &s->meta)))
            die("mdb_dbi_open", rc);
    } else {
        if ((rc = mdb_dbi_open(t, layout == ONE ? "index" : NULL, MDB_CREATE, &s->main))) die("mdb_dbi_open", rc);
        s->use = s->meta = s->main;
        s->prefixed = 1;
    }
    /* The directory as the benchmark finds it: every entry stored once. */
    for (uint64_t i = 0; i < entries; i++) store_one(s, t, i);
    if ((rc = mdb_txn_commit(t))) die("mdb_txn_commit", rc);
    mdb_env_sync(s->env, 1);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [ENTRIES [STORES [REPETITIONS]]]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint64_t entries = argc > 2 ? strtoull(argv[2], NULL, 10) : 5000;
    uint64_t stores = argc > 3 ? strtoull(argv[3], NULL, 10) : 2000;
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    uint64_t per_commit = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
    if (per_commit < 1) per_commit = 1;
    stores -= stores % per_commit;
    mkdir(dir, 0770);
    double *lat = malloc(sizeof(double) * stores);
    printf("%llu stores a commit\nlayout   rep  pages/store  stores/s  commit_median_us  commit_p99_us\n",
           (unsigned long long)per_commit);
    for (int r = 0; r < reps; r++) {
        for (int layout = 0; layout < LAYOUTS; layout++) {
            store_env s;
            open_layout(&s, dir, layout, entries);
            /* Warm-up: the replaced records' pages in memory, the free list in its steady state. */
            for (uint64_t i = 0; i < stores / 4; i++) {
                MDB_txn *t;
                if (mdb_txn_begin(s.env, NULL, 0, &t)) die("mdb_txn_begin", 0);
                store_one(&s, t, entries + i * 7919);
                if (mdb_txn_commit(t)) die("mdb_txn_commit", 0);
            }
            uint64_t w0 = wchar();
            double t0 = now();
            uint64_t commits = stores / per_commit;
            for (uint64_t c = 0; c < commits; c++) {
                double a = now();
                MDB_txn *t;
                int rc = mdb_txn_begin(s.env, NULL, 0, &t);
                if (rc) die("mdb_txn_begin", rc);
                for (uint64_t j = 0; j < per_commit; j++) store_one(&s, t, entries + (stores + c * per_commit + j) * 7919);
                if ((rc = mdb_txn_commit(t))) die("mdb_txn_commit", rc);
                lat[c] = now() - a;
            }
            double elapsed = now() - t0;
            double pages = (double)(wchar() - w0) / 4096.0 / (double)stores;
            qsort(lat, commits, sizeof *lat, cmp_double);
            printf("%-8s %3d  %11.2f  %8.0f  %16.1f  %13.1f\n", layout_names[layout], r + 1, pages, stores / elapsed,
                   lat[commits / 2] * 1e6, lat[commits * 99 / 100] * 1e6);
            fflush(stdout);
            mdb_env_close(s.env);
        }
    }
    free(lat);
    return 0;
}
