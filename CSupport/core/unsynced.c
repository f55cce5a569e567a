/*
 * unsynced.c — relaxed durability: commits without fdatasync, and a marker that makes a power
 * loss detectable (docs/Formats.md, "The unsynced marker"; docs/Design.md invariant 7).
 *
 * In SUC_DURABILITY_RELAXED, commits use LMDB's MDB_NOSYNC: the index reaches the page cache
 * and a process crash loses nothing, but after a power loss or kernel crash LMDB may find pages
 * written out of order, which it cannot detect (no page checksums). So before the first
 * unsynced commit the directory records, durably, "unsynced commits may exist since boot B" in
 * the `unsynced` file. The marker is cleared, durably, only after the index was synced, and
 * every step runs under the index's write lock, so no unsynced commit can slip between a sync
 * and the clear. At open, a marker that names another boot means the machine went down with
 * unsynced commits (a clean shutdown too: this cannot tell them apart), and the index of that
 * time is discarded instead of trusted: the cache starts empty, the orphaned body files are
 * swept by the next compaction, and nothing corrupt is ever read. The discard publishes a new,
 * empty generation (processes that cannot be seen follow it instead of keeping a file that was
 * replaced under them), and it happens only when no other process holds the directory: a live
 * process means no restart took the commits from under it (a sandbox with a boot id of its own
 * sharing the volume), and the marker is left for the process that set it. A machine that gives
 * no boot id cannot tell a restart from a process crash: a marker found there is a restart, and
 * relaxed handles are refused.
 *
 * The other modes' stores are never discarded with it. An unsynced commit can tear pages under
 * any entry, so relaxed commits stay unsynced only in an index where no handle of a synced mode
 * has stored: the first such store syncs the index, clears the marker and records
 * `synced_stores` in the index's meta table, all in its own transaction, and from then on every
 * commit to that index is synced, relaxed handles' included.
 *
 * Marker file (64 bytes): "SUCSYNC\0", the boot id as 40 bytes (NUL padded), the time it was set
 * (i64 ms, little endian; 0 = clear), 8 reserved bytes.
 */
#include "txn.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define MARK_MAGIC "SUCSYNC\0"
#define MARK_LEN 64
#define MARK_BOOT_OFF 8
#define MARK_SET_OFF 48

typedef struct {
    int present;
    char boot[SUC_BOOT_ID_LEN];
    int64_t set_ms;
} marker;

int suc_read_boot_id(char out[SUC_BOOT_ID_LEN]) {
    memset(out, 0, SUC_BOOT_ID_LEN);
    int fd = suc_os_openat(AT_FDCWD, "/proc/sys/kernel/random/boot_id", O_RDONLY, 0);
    if (fd < 0) return -1;
    ssize_t n = suc_os_pread_full(fd, out, SUC_BOOT_ID_LEN - 1, 0);
    suc_os_close(fd);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = 0;
    return n > 0 ? 0 : -1;
}

static int read_marker(int fd, marker *m) {
    uint8_t buf[MARK_LEN];
    memset(m, 0, sizeof *m);
    ssize_t n = suc_os_pread_full(fd, buf, MARK_LEN, 0);
    if (n < 0) return -1;
    if (n < MARK_LEN || memcmp(buf, MARK_MAGIC, 8)) return 0; /* absent or never written: clear */
    m->present = 1;
    memcpy(m->boot, buf + MARK_BOOT_OFF, SUC_BOOT_ID_LEN - 1);
    int64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | buf[MARK_SET_OFF + i];
    m->set_ms = v;
    return 0;
}

/* Writes the marker (set at `set_ms`, or clear when 0) and makes it durable. */
static int write_marker(int fd, const char *boot, int64_t set_ms, suc_error *err) {
    uint8_t buf[MARK_LEN] = {0};
    memcpy(buf, MARK_MAGIC, 8);
    if (set_ms) memcpy(buf + MARK_BOOT_OFF, boot, strnlen(boot, SUC_BOOT_ID_LEN - 1));
    for (int i = 0; i < 8; i++) buf[MARK_SET_OFF + i] = (uint8_t)((uint64_t)set_ms >> (8 * i));
    if (suc_os_pwrite_full(fd, buf, MARK_LEN, 0) < 0) return suc_fail_errno(err, "pwrite(unsynced)", errno);
    if (suc_os_fdatasync(fd) < 0) return suc_fail_errno(err, "fdatasync(unsynced)", errno);
    return SUC_OK;
}

static int open_marker(int rootfd, suc_error *err) {
    int created = 0;
    int fd = suc_os_openat(rootfd, SUC_UNSYNCED_FILE, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0 && errno == ENOENT) {
        fd = suc_os_openat(rootfd, SUC_UNSYNCED_FILE, O_RDWR | O_CREAT | O_NOFOLLOW, 0660);
        created = fd >= 0;
    }
    if (fd < 0) return suc_fail_errno(err, "open(unsynced)", errno);
    if (created) {
        (void)suc_os_fchmod(fd, 0660);
        suc_adopt_owner(rootfd, fd);
    }
    return fd;
}

int suc_unsynced_restart_found(suc_cache *c, int *root_locked, uint64_t *gen, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, SUC_UNSYNCED_FILE, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0) return errno == ENOENT ? SUC_OK : suc_fail_errno(err, "open(unsynced)", errno);
    char boot[SUC_BOOT_ID_LEN];
    int have_boot = suc_read_boot_id(boot) == 0;
    marker m;
    int rc = SUC_OK;
    if (read_marker(fd, &m) < 0) rc = suc_fail_errno(err, "pread(unsynced)", errno);
    if (rc || !m.present || !m.set_ms || (have_boot && !strcmp(m.boot, boot))) goto out;
    /* The machine may have restarted since unsynced commits: decide under the creation lock, so
     * that of several processes opening now exactly one discards, and none uses the old index
     * first (none holds the directory before it has passed here). */
    if (!*root_locked) {
        if (suc_os_flock_bounded(c->rootfd, LOCK_EX, SUC_ROOT_LOCK_WAIT_MS) < 0) {
            rc = errno == EWOULDBLOCK ? suc_fail(err, SUC_EBUSY, "flock(root)", errno, 0,
                                                 "another process holds the directory's creation lock")
                                      : suc_fail_errno(err, "flock(root)", errno);
            goto out;
        }
        *root_locked = 1;
    }
    if (read_marker(fd, &m) < 0) {
        rc = suc_fail_errno(err, "pread(unsynced)", errno);
        goto out;
    }
    if (!m.present || !m.set_ms || (have_boot && !strcmp(m.boot, boot))) goto out;
    /* Every process holding the directory now opened it after the commits in question or lives
     * where they were made: no restart lost them. */
    if (suc_gen_held_elsewhere(c)) goto out;
    if (!suc_gen_read(c, gen)) {
        rc = suc_fail(err, SUC_EIO, "read(generation)", errno, 0, "cannot read the generation file");
        goto out;
    }
    rc = 1;
out:
    suc_os_close(fd);
    return rc;
}

int suc_unsynced_clear(suc_cache *c, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, SUC_UNSYNCED_FILE, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0) return suc_fail_errno(err, "open(unsynced)", errno);
    int rc = write_marker(fd, "", 0, err);
    suc_os_close(fd);
    return rc;
}

int suc_unsynced_open(suc_cache *c, suc_error *err) {
    if (c->opts.durability != SUC_DURABILITY_RELAXED) return SUC_OK;
    /* Without a boot id a restart cannot be told from a process crash, so a marker would be
     * read as a restart at every open: refuse rather than discard the cache each time. */
    if (suc_read_boot_id(c->boot_id) < 0)
        return suc_fail(err, SUC_EINVAL, "open(boot_id)", errno, 0,
                        "relaxed durability needs the machine's boot id (/proc/sys/kernel/random/boot_id), "
                        "which cannot be read here; use the standard durability");
    int fd = open_marker(c->rootfd, err);
    if (fd < 0) return SUC_EIO;
    c->unsyncedfd = fd;
    /* From here on commits may skip their sync: every one of them sets the marker first. */
    int mrc = mdb_env_set_flags(c->env, MDB_NOSYNC, 1);
    return mrc ? suc_fail_mdb(err, "mdb_env_set_flags", mrc) : SUC_OK;
}

int suc_unsynced_before_commit(suc_cache *c, MDB_txn *txn, suc_error *err) {
    if (c->unsyncedfd < 0) return SUC_OK;
    uint64_t synced_stores = 0;
    if (suc_meta_get(c, txn, SUC_META_SYNCED_STORES, &synced_stores) == 0 && synced_stores) {
        /* Stores of a synced mode live in this index: commit as the standard mode does. */
        int mrc = mdb_env_set_flags(c->env, MDB_NOSYNC, 0);
        if (!mrc) mrc = mdb_env_set_flags(c->env, MDB_NOMETASYNC, 1);
        return mrc ? suc_fail_mdb(err, "mdb_env_set_flags", mrc) : SUC_OK;
    }
    marker m;
    if (read_marker(c->unsyncedfd, &m) < 0) return suc_fail_errno(err, "pread(unsynced)", errno);
    int64_t now = suc_os_now_ms();
    int set_here = m.present && m.set_ms && !strcmp(m.boot, c->boot_id);
    if (set_here && now - m.set_ms < (int64_t)c->opts.relaxed_sync_interval_ms) return SUC_OK;
    if (set_here) {
        /* Every commit so far becomes durable once a sync interval has passed, so a power loss
         * can only ever cost the index (and then it is discarded whole, never half-read). */
        int mrc = mdb_env_sync(c->env, 1);
        if (mrc) return suc_fail_mdb(err, "mdb_env_sync", mrc);
    }
    return write_marker(c->unsyncedfd, c->boot_id, now > 0 ? now : 1, err);
}

typedef struct {
    int synced;
} sync_ctx;

/* Syncs the index and clears the marker, inside a write transaction that is then aborted (it
 * changes nothing); holding the write lock is what keeps unsynced commits out meanwhile. */
static int sync_and_clear(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)txn;
    sync_ctx *ctx = vctx;
    marker m;
    if (read_marker(c->unsyncedfd, &m) < 0) return suc_fail_errno(err, "pread(unsynced)", errno);
    if (m.present && m.set_ms) {
        int mrc = mdb_env_sync(c->env, 1);
        if (mrc) return suc_fail_mdb(err, "mdb_env_sync", mrc);
        int rc = write_marker(c->unsyncedfd, c->boot_id, 0, err);
        if (rc) return rc;
    }
    ctx->synced = 1;
    return SUC_ABORT_TXN;
}

int suc_unsynced_sync(suc_cache *c, suc_error *err) {
    if (c->unsyncedfd < 0) return SUC_OK;
    sync_ctx ctx = {0};
    int rc = suc_write_txn(c, sync_and_clear, NULL, &ctx, err);
    return rc == SUC_ABORT_TXN ? SUC_OK : rc;
}

int suc_unsynced_note_synced_store(suc_cache *c, MDB_txn *txn, suc_error *err) {
    if (c->opts.durability == SUC_DURABILITY_RELAXED || c->synced_stores_gen == c->gen + 1) return SUC_OK;
    uint64_t noted = 0;
    int mrc = suc_meta_get(c, txn, SUC_META_SYNCED_STORES, &noted);
    if (mrc == 0 && noted) {
        c->synced_stores_gen = c->gen + 1; /* committed by someone: true for this index's life */
        return SUC_OK;
    }
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta synced_stores)", mrc);
    /* The first synced store in this index: the unsynced commits before it become durable and
     * the marker is cleared before it is acknowledged, or a restart would discard it with them.
     * Under the write lock, so no unsynced commit slips in between. */
    int fd = suc_os_openat(c->rootfd, SUC_UNSYNCED_FILE, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0 && errno != ENOENT) return suc_fail_errno(err, "open(unsynced)", errno);
    if (fd >= 0) {
        marker m;
        int rc = read_marker(fd, &m) < 0 ? suc_fail_errno(err, "pread(unsynced)", errno) : SUC_OK;
        if (rc == SUC_OK && m.present && m.set_ms) {
            mrc = mdb_env_sync(c->env, 1);
            rc = mrc ? suc_fail_mdb(err, "mdb_env_sync", mrc) : write_marker(fd, m.boot, 0, err);
        }
        suc_os_close(fd);
        if (rc) return rc;
    }
    mrc = suc_meta_put(c, txn, SUC_META_SYNCED_STORES, 1);
    return mrc ? suc_fail_mdb(err, "mdb_put(meta synced_stores)", mrc) : SUC_OK;
}
