/*
 * handoff.c — group commit across processes: a store queued in the `handoff` file is committed
 * by whichever process holds the index's write lock next, in that process's transaction, so one
 * fdatasync serves the stores of several processes (within a process, commit.c already batches
 * the stores of its threads).
 *
 * Why: LMDB has one writer at a time and each commit waits for its own fdatasync. Two processes
 * storing in turn therefore commit one store each, and two processes store no faster than one.
 * Here a process queues its store before it waits for the write lock; the process that gets the
 * lock first commits every queued store, and the others, when they get the lock, find theirs
 * done and commit nothing.
 *
 * Layout of `handoff` (all numbers little endian): a header (magic, layout, slot count, slot
 * size), then one state word per slot at STATES_AT, then the slots from SLOTS_AT, SLOT_BYTES each:
 * the store (durability, lengths, flags, capacity, index key, then key, record and selector) and
 * the committer's result (code, errno, LMDB code, version, message). It is read and written with
 * pread/pwrite, never mapped: a neighbour that truncates or garbles it costs a store its handoff
 * (it is committed by its own process), never a SIGBUS.
 *
 * Ownership is two open-file-description locks per slot, in a lock space past the file's end:
 * OWNER, held by the process whose store the slot carries, from reserve to release; CLAIM, held
 * while a committer decides and works on the slot. A state changes only under CLAIM (or OWNER
 * before the store is queued), so the owner and a committer never both take a store. The kernel
 * drops both locks with their process: a slot whose OWNER lock is free is free whatever its state;
 * a CLAIMED slot whose CLAIM lock is free lost its committer, and the owner commits the store
 * itself (again, if the committer got as far as its commit: a put is idempotent, see below).
 *
 * Re-committing a put that a dead committer may already have committed writes the same record
 * again: the body file it names is kept (index.c keeps a replaced record's file when the new one
 * names it), the entry's counters come out the same, and only the store count counts it twice.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x46444E48u /* "HNDF" */
#define LAYOUT 1u
#define STATES_AT 64
#define SLOTS_AT 4096
#define SLOT_BYTES 16384u
#define SLOT_HEAD 320u
#define FILE_BYTES ((off_t)SLOTS_AT + (off_t)SUC_HANDOFF_SLOTS * SLOT_BYTES)
#define LOCK_BASE ((off_t)1 << 30)
#define OWNER_LOCK(i) (LOCK_BASE + 2 * (off_t)(i))
#define CLAIM_LOCK(i) (LOCK_BASE + 2 * (off_t)(i) + 1)

/* How long a committer waits for stores other processes are preparing (suc_put between its
 * reservation and its queueing) before it commits without them, and how long anyone waits for a
 * slot's CLAIM lock, held only for a commit's marking, before giving up on it. */
#define PREPARING_WAIT_US 600
#define CLAIM_WAIT_MS 2000

enum { FREE = 0, WRITING = 1, QUEUED = 2, CLAIMED = 3, DONE = 4, RETRY = 5 };

/* Offsets in a slot. */
enum {
    S_DURABILITY = 0, S_KEY_LEN = 4, S_RECORD_LEN = 8, S_SELECTOR_LEN = 12, S_PUT_FLAGS = 16, S_HAS_CAP = 20,
    S_CAPACITY = 24, S_IKEY = 32, S_RC = 64, S_SYS_ERRNO = 68, S_LIB_RC = 72, S_VERSION = 80, S_REMOVED = 88,
    S_MESSAGE = 96 /* sizeof(suc_error.message) bytes */
};

static off_t slot_at(int i) { return SLOTS_AT + (off_t)i * SLOT_BYTES; }

static int range_lock(int fd, off_t at, short type) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Whether another open file description holds the lock at `at`. */
static int lock_held(int fd, off_t at) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
    return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

static int read_state(int fd, int i) {
    uint8_t b[4];
    if (pread(fd, b, 4, STATES_AT + 4 * (off_t)i) != 4) return -1;
    return (int)suc_get_u32(b);
}

static int write_state(int fd, int i, uint32_t state) {
    uint8_t b[4];
    suc_put_u32(b, state);
    return pwrite(fd, b, 4, STATES_AT + 4 * (off_t)i) == 4 ? 0 : -1;
}

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Takes the CLAIM lock of slot i, waiting (bounded) while a committer marks it. */
static int take_claim(int fd, int i, int wait) {
    int64_t deadline = suc_os_monotonic_ms() + CLAIM_WAIT_MS;
    for (;;) {
        if (range_lock(fd, CLAIM_LOCK(i), F_WRLCK) == 0) return 0;
        if (!wait || (errno != EAGAIN && errno != EACCES) || suc_os_monotonic_ms() >= deadline) return -1;
        sleep_us(20);
    }
}

/* ---- the file ------------------------------------------------------------------------- */

/* Opens (creating it sized and headed if new) the handoff file; -1 leaves the handle without
 * handoff: its stores commit themselves, as before this file existed. */
static int open_file(suc_cache *c) {
    int fd = suc_os_openat(c->rootfd, SUC_HANDOFF_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0660);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        suc_os_close(fd);
        return -1;
    }
    if (st.st_uid == geteuid()) (void)suc_os_fchmod(fd, 0660);
    suc_adopt_owner(c->rootfd, fd);
    uint8_t head[16];
    /* Whoever first locks byte 0 of the lock space writes the header of a new file. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_BASE - 1, .l_len = 1};
    if (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
        suc_os_close(fd);
        return -1;
    }
    ssize_t n = pread(fd, head, sizeof head, 0);
    int ok = n == (ssize_t)sizeof head && suc_get_u32(head) == MAGIC && suc_get_u32(head + 4) == LAYOUT &&
             suc_get_u32(head + 8) == SUC_HANDOFF_SLOTS && suc_get_u32(head + 12) == SLOT_BYTES;
    if (!ok && n == 0) {
        suc_put_u32(head, MAGIC);
        suc_put_u32(head + 4, LAYOUT);
        suc_put_u32(head + 8, SUC_HANDOFF_SLOTS);
        suc_put_u32(head + 12, SLOT_BYTES);
        /* Sparse: the slots take disk blocks only once stores pass through them. */
        ok = ftruncate(fd, FILE_BYTES) == 0 && pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head;
    }
    fl.l_type = F_UNLCK;
    (void)fcntl(fd, F_OFD_SETLK, &fl);
    if (!ok) { /* another layout or garbage: not ours to repair while others may use it */
        suc_os_close(fd);
        return -1;
    }
    return fd;
}

/* The handle's handoff descriptor, opened at its first store; -1: no handoff. */
static int handoff_fd(suc_cache *c) {
    pthread_mutex_lock(&c->handoff_mu);
    if (c->handofffd == -1 && !c->handoff_failed) {
        c->handofffd = open_file(c);
        c->handoff_failed = c->handofffd < 0;
    }
    int fd = c->handofffd;
    pthread_mutex_unlock(&c->handoff_mu);
    return fd;
}

/* ---- the owner's side --------------------------------------------------------------------- */

int suc_handoff_reserve(suc_cache *c) {
    /* Relaxed commits are not synced: a store of another mode must not ride in one (and a
     * relaxed store gains nothing from sharing a commit that costs no sync). */
    if (c->opts.durability == SUC_DURABILITY_RELAXED) return 0;
    int fd = handoff_fd(c);
    if (fd < 0) return 0;
    uint8_t states[4 * SUC_HANDOFF_SLOTS];
    if (pread(fd, states, sizeof states, STATES_AT) != (ssize_t)sizeof states) return 0;
    pthread_mutex_lock(&c->handoff_mu);
    int got = 0;
    for (int k = 0; k < SUC_HANDOFF_SLOTS && !got; k++) {
        int i = (int)((c->handoff_hint + (unsigned)k) % SUC_HANDOFF_SLOTS);
        /* A queued store whose process died is left to the next commit, which takes it. */
        if ((c->handoff_owned & (1u << i)) || suc_get_u32(states + 4 * i) == QUEUED) continue;
        if (range_lock(fd, OWNER_LOCK(i), F_WRLCK) != 0) continue;
        /* Under CLAIM: a committer still working on a slot whose owner left keeps it until it is
         * done, and none reads the slot's old store while it becomes this one. */
        int marked = take_claim(fd, i, 0) == 0;
        if (marked) {
            marked = write_state(fd, i, WRITING) == 0;
            (void)range_lock(fd, CLAIM_LOCK(i), F_UNLCK);
        }
        if (!marked) {
            (void)range_lock(fd, OWNER_LOCK(i), F_UNLCK);
            continue;
        }
        c->handoff_owned |= 1u << i;
        c->handoff_hint = (unsigned)i + 1;
        got = i + 1;
    }
    pthread_mutex_unlock(&c->handoff_mu);
    return got;
}

void suc_handoff_release(suc_cache *c, suc_op *op) {
    if (!op->handoff) return;
    int i = op->handoff - 1, fd = c->handofffd;
    if (!op->handoff_abandoned) (void)write_state(fd, i, FREE);
    if (op->handoff_claimed) (void)range_lock(fd, CLAIM_LOCK(i), F_UNLCK);
    pthread_mutex_lock(&c->handoff_mu);
    (void)range_lock(fd, OWNER_LOCK(i), F_UNLCK);
    c->handoff_owned &= ~(1u << i);
    pthread_mutex_unlock(&c->handoff_mu);
    op->handoff = op->handoff_claimed = op->handoff_abandoned = 0;
}

int suc_handoff_enqueue(suc_cache *c, suc_op *op) {
    if (!op->handoff) return 0;
    size_t need = SLOT_HEAD + op->key_len + op->record_len + op->selector_len;
    int i = op->handoff - 1, fd = c->handofffd;
    if (op->kind != SUC_OP_PUT || need > SLOT_BYTES) {
        suc_handoff_release(c, op);
        return 0;
    }
    uint8_t *slot = calloc(1, need);
    if (!slot) {
        suc_handoff_release(c, op);
        return 0;
    }
    uint64_t cap = op->capacity_bytes ? op->capacity_bytes : c->opts.hard_cap_bytes;
    suc_put_u32(slot + S_DURABILITY, (uint32_t)c->opts.durability);
    suc_put_u32(slot + S_KEY_LEN, (uint32_t)op->key_len);
    suc_put_u32(slot + S_RECORD_LEN, (uint32_t)op->record_len);
    suc_put_u32(slot + S_SELECTOR_LEN, (uint32_t)op->selector_len);
    suc_put_u32(slot + S_PUT_FLAGS, op->put_flags);
    suc_put_u32(slot + S_HAS_CAP, 1);
    suc_put_u64(slot + S_CAPACITY, cap);
    memcpy(slot + S_IKEY, op->ikey, SUC_IKEY_LEN);
    uint8_t *p = slot + SLOT_HEAD;
    memcpy(p, op->key, op->key_len);
    memcpy(p + op->key_len, op->record, op->record_len);
    if (op->selector_len) memcpy(p + op->key_len + op->record_len, op->selector, op->selector_len);
    int ok = pwrite(fd, slot, need, slot_at(i)) == (ssize_t)need && write_state(fd, i, QUEUED) == 0;
    free(slot);
    if (!ok) {
        suc_handoff_release(c, op);
        return 0;
    }
    if (suc_os_fault(SUC_FAULT_HANDOFF_QUEUED)) _exit(77); /* a kill point (armed only by crash tests) */
    return 1;
}

/* Copies a committer's result out of slot i into op (a store another process committed). */
static void take_result(int fd, int i, suc_op *op) {
    uint8_t r[S_MESSAGE + sizeof op->err.message];
    memset(r, 0, sizeof r);
    if (pread(fd, r, sizeof r, slot_at(i)) != (ssize_t)sizeof r) {
        op->op_rc = suc_fail(&op->err, SUC_EIO, "pread(handoff)", errno, 0, "the handoff file is unreadable");
        return;
    }
    int rc = (int32_t)suc_get_u32(r + S_RC);
    op->version = suc_get_u64(r + S_VERSION);
    op->removed = suc_get_u64(r + S_REMOVED);
    op->op_rc = rc;
    if (rc) {
        memset(&op->err, 0, sizeof op->err);
        op->err.code = rc;
        op->err.sys_errno = (int32_t)suc_get_u32(r + S_SYS_ERRNO);
        op->err.lib_rc = (int32_t)suc_get_u32(r + S_LIB_RC);
        op->err.op = "commit(handed off)";
        memcpy(op->err.message, r + S_MESSAGE, sizeof op->err.message - 1);
    }
}

int suc_handoff_resolve(suc_cache *c, suc_op *op) {
    if (!op->handoff || op->handoff_claimed || op->handoff_abandoned) return SUC_HANDOFF_APPLY;
    int i = op->handoff - 1, fd = c->handofffd;
    if (take_claim(fd, i, 1) != 0) {
        /* A committer holds it past any marking: leave the slot to it, commit the store here. */
        op->handoff_abandoned = 1;
        return SUC_HANDOFF_APPLY;
    }
    op->handoff_claimed = 1;
    if (read_state(fd, i) == DONE) {
        take_result(fd, i, op);
        return SUC_HANDOFF_DONE;
    }
    /* QUEUED, RETRY (the committer's commit failed), CLAIMED by a committer that died, garbage:
     * this process commits it (the CLAIM lock it now holds keeps every committer off). */
    (void)write_state(fd, i, CLAIMED);
    return SUC_HANDOFF_APPLY;
}

/* ---- the committer's side ----------------------------------------------------------------- */

/* Decodes slot i's store into op (the slot's bytes in op->handoff_buf); 0 if it is well formed. */
static int read_store(int fd, int i, int durability, suc_op *op) {
    uint8_t head[SLOT_HEAD];
    if (pread(fd, head, SLOT_HEAD, slot_at(i)) != (ssize_t)SLOT_HEAD) return -1;
    uint64_t key_len = suc_get_u32(head + S_KEY_LEN), record_len = suc_get_u32(head + S_RECORD_LEN),
             selector_len = suc_get_u32(head + S_SELECTOR_LEN);
    if ((int)suc_get_u32(head + S_DURABILITY) != durability || key_len == 0 || record_len == 0 ||
        SLOT_HEAD + key_len + record_len + selector_len > SLOT_BYTES)
        return -1;
    size_t n = (size_t)(key_len + record_len + selector_len);
    uint8_t *buf = malloc(n);
    if (!buf || pread(fd, buf, n, slot_at(i) + SLOT_HEAD) != (ssize_t)n) {
        free(buf);
        return -1;
    }
    suc_record r;
    /* A record that does not decode, or names another key, is not a store anyone queued. */
    if (suc_record_decode(buf + key_len, (size_t)record_len, &r) != SUC_OK || r.key_len != key_len ||
        memcmp(r.key, buf, (size_t)key_len) != 0) {
        free(buf);
        return -1;
    }
    memset(op, 0, sizeof *op);
    op->kind = SUC_OP_PUT;
    memcpy(op->ikey, head + S_IKEY, SUC_IKEY_LEN);
    op->key = buf, op->key_len = (size_t)key_len;
    op->record = buf + key_len, op->record_len = (size_t)record_len;
    if (selector_len) op->selector = buf + key_len + record_len, op->selector_len = (size_t)selector_len;
    op->put_flags = suc_get_u32(head + S_PUT_FLAGS) & (SUC_PUT_SOLE_VARIANT | SUC_PUT_SELECTOR);
    if (op->put_flags & SUC_PUT_SELECTOR && !selector_len) op->put_flags &= ~(uint32_t)SUC_PUT_SELECTOR;
    op->capacity_bytes = suc_get_u64(head + S_CAPACITY);
    op->capacity_fixed = 1;
    op->handoff = i + 1;
    op->handoff_buf = buf;
    return 0;
}

/* Whether a slot another process owns is being prepared (reserved, not yet queued). */
static int others_preparing(suc_cache *c, int fd) {
    uint8_t b[4 * SUC_HANDOFF_SLOTS];
    if (pread(fd, b, sizeof b, STATES_AT) != (ssize_t)sizeof b) return 0;
    pthread_mutex_lock(&c->handoff_mu);
    uint32_t mine = c->handoff_owned;
    pthread_mutex_unlock(&c->handoff_mu);
    for (int i = 0; i < SUC_HANDOFF_SLOTS; i++)
        if (!(mine & (1u << i)) && suc_get_u32(b + 4 * i) == WRITING && lock_held(fd, OWNER_LOCK(i))) return 1;
    return 0;
}

int suc_handoff_claim(suc_cache *c, suc_op *ops, size_t *count) {
    if (c->opts.durability == SUC_DURABILITY_RELAXED || c->handofffd < 0) return 0;
    int fd = c->handofffd;
    /* Stores other processes are preparing join this commit if they are ready soon: the commit
     * that would follow for them costs a whole fdatasync more. */
    for (int waited = 0; waited < PREPARING_WAIT_US && others_preparing(c, fd); waited += 50) sleep_us(50);
    uint8_t b[4 * SUC_HANDOFF_SLOTS];
    if (pread(fd, b, sizeof b, STATES_AT) != (ssize_t)sizeof b) return 0;
    pthread_mutex_lock(&c->handoff_mu);
    uint32_t mine = c->handoff_owned;
    pthread_mutex_unlock(&c->handoff_mu);
    size_t before = *count;
    for (int i = 0; i < SUC_HANDOFF_SLOTS && *count < SUC_HANDOFF_SLOTS; i++) {
        if ((mine & (1u << i)) || suc_get_u32(b + 4 * i) != QUEUED) continue;
        if (take_claim(fd, i, 0) != 0) continue;
        if (read_state(fd, i) != QUEUED) {
            (void)range_lock(fd, CLAIM_LOCK(i), F_UNLCK);
            continue;
        }
        if (read_store(fd, i, c->opts.durability, &ops[*count]) != 0) {
            /* Another mode's store or one that does not read back: its owner commits it. */
            (void)write_state(fd, i, RETRY);
            (void)range_lock(fd, CLAIM_LOCK(i), F_UNLCK);
            continue;
        }
        (void)write_state(fd, i, CLAIMED);
        (*count)++;
    }
    if (*count > before && suc_os_fault(SUC_FAULT_HANDOFF_CLAIMED)) _exit(77); /* kill point */
    return (int)(*count - before);
}

void suc_handoff_finish(suc_cache *c, suc_op *ops, size_t count, int committed) {
    if (!count) return;
    int fd = c->handofffd;
    if (committed && suc_os_fault(SUC_FAULT_HANDOFF_COMMITTED)) _exit(77); /* kill point */
    for (size_t k = 0; k < count; k++) {
        suc_op *op = &ops[k];
        int i = op->handoff - 1;
        if (committed) {
            uint8_t r[S_MESSAGE + sizeof op->err.message];
            memset(r, 0, sizeof r);
            suc_put_u32(r + S_RC, (uint32_t)op->op_rc);
            if (op->op_rc) {
                suc_put_u32(r + S_SYS_ERRNO, (uint32_t)op->err.sys_errno);
                suc_put_u32(r + S_LIB_RC, (uint32_t)op->err.lib_rc);
                memcpy(r + S_MESSAGE, op->err.message, sizeof op->err.message);
                r[sizeof r - 1] = 0;
            }
            suc_put_u64(r + S_VERSION, op->version);
            suc_put_u64(r + S_REMOVED, op->removed);
            if (pwrite(fd, r, sizeof r, slot_at(i)) != (ssize_t)sizeof r || write_state(fd, i, DONE) != 0)
                (void)write_state(fd, i, RETRY);
            /* The bodies this commit dropped for that store (replaced, evicted) go now. */
            suc_body_unlink_ids(c, op->dead_ids, op->dead_count);
        } else {
            (void)write_state(fd, i, RETRY);
        }
        (void)range_lock(fd, CLAIM_LOCK(i), F_UNLCK);
        free(op->handoff_buf);
        suc_op_release(op);
    }
}
