/*
 * ghost_file.c — the `ghost` file beside the index: a table of 8-byte slots where S3-FIFO keeps
 * the fingerprints of keys it recently evicted from its small queue (s3fifo.c decides what goes
 * in and what a slot found there means).
 *
 * The ghost is a hint: a key it remembers wrongly only starts in the main queue instead of the
 * small one, a key it forgets only starts in the small queue. So it is kept out of the index,
 * where every slot a commit changed cost that commit an index leaf and a branch (the table no
 * commit reads in order spreads over every leaf of `meta`; Benchmarks/RESULTS.md): a slot here is
 * one `pwrite` into the page cache, never synced, outside the transaction. Slots change only in
 * write transactions, which one process at a time runs, so writers do not meet. A transaction
 * that aborts leaves its slots changed: a key remembered that was not evicted (the ghost is only
 * asked about a key stored as a new entry, so not while it is still stored) or forgotten though
 * it was, which is what a hint may be.
 *
 * Whatever another process leaves in the file is read as slots: garbage is wrong hints, a short
 * file is empty slots, a file that is not a regular file (or cannot be opened) leaves the handle
 * with an empty ghost until an open a second later succeeds. Nothing here fails a store.
 */
#include "txn.h"
#include "os.h"

#include <string.h>
#include <unistd.h>

/* 2^20 slots of 8 bytes (8 MiB, sparse: blocks only where slots were written). */
#define FILE_SLOTS (1u << 20)
#define SLOT_BYTES 8
/* After an open that failed, how long the ghost stays empty before the next try: what a
 * neighbour did to the file (a directory or a symlink in its place, the descriptors used up)
 * may be undone, and one `openat` a second costs nothing. */
#define RETRY_MS 1000

/* The handle's descriptor of the file, opened at its first use (in a write transaction); -1:
 * none now, and the ghost is empty. */
static int ghost_fd(suc_cache *c) {
    if (c->ghostfd != -1) return c->ghostfd;
    int64_t now = suc_os_monotonic_ms();
    if (c->ghost_failed_ms && now - c->ghost_failed_ms < RETRY_MS) return -1;
    int fd = suc_shared_file_open(c->rootfd, SUC_GHOST_FILE);
    c->ghostfd = fd;
    c->ghost_failed_ms = fd >= 0 ? 0 : now > 0 ? now : 1;
    return fd;
}

uint32_t suc_ghost_file_slots(void) { return FILE_SLOTS; }

void suc_ghost_file_read(suc_cache *c, uint32_t slot, uint8_t out[8]) {
    memset(out, 0, SLOT_BYTES);
    int fd = ghost_fd(c);
    if (fd < 0 || slot >= FILE_SLOTS) return;
    if (suc_os_pread_full(fd, out, SLOT_BYTES, (off_t)slot * SLOT_BYTES) != SLOT_BYTES) memset(out, 0, SLOT_BYTES);
}

void suc_ghost_file_write(suc_cache *c, uint32_t slot, const uint8_t in[8]) {
    int fd = ghost_fd(c);
    /* A full file system (a hole to fill) or any other failure: the key is not remembered. */
    if (fd >= 0 && slot < FILE_SLOTS) (void)suc_os_pwrite_full(fd, in, SLOT_BYTES, (off_t)slot * SLOT_BYTES);
}

void suc_ghost_file_clear(suc_cache *c) {
    int fd = ghost_fd(c);
    if (fd >= 0) (void)ftruncate(fd, 0);
}
