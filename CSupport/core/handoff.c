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
 * Whether a queued store was committed is written in the index, by the commit that carries it:
 * a ticket in the meta table, "\0H" ‖ slot → the store's nonce, version, entries removed and
 * result. The owner reads it under the write lock (so after any committer's transaction ended,
 * committed or not): its nonce there means done, anything else means it commits the store itself.
 * No process has to be alive, or to have told anyone, for the answer to be exact.
 *
 * Layout of `handoff` (numbers little endian): a header (magic, layout, slot count, slot size),
 * one state word per slot at STATES_AT, then the slots from SLOTS_AT, SLOT_BYTES each: nonce,
 * durability, lengths, put flags, capacity and index key, then key, record and selector. It is
 * read and written with pread/pwrite, never mapped: a neighbour that truncates or garbles it
 * costs stores their handoff (they are committed by their own processes), never a SIGBUS.
 * A slot belongs to one handle for the handle's life: an open-file-description lock on one byte
 * past the end of the file (OWNER_LOCK), which the kernel drops with the process; taken once, so
 * a store adds no line to /proc/locks (which other code reads and which churns with every lock).
 * The owner changes its slot's state; a committer only reads slots, and writes FREE into the
 * slot of a dead owner whose store it committed.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x46444E48u /* "HNDF" */
#define LAYOUT 1u
#define IN_FLIGHT_AT 16 /* the commit in flight: its transaction id, and when it began (monotonic ms) */
#define STATES_AT 64
#define SLOTS_AT 4096
#define SLOT_BYTES 16384u
#define FILE_BYTES ((off_t)SLOTS_AT + (off_t)SUC_HANDOFF_SLOTS * SLOT_BYTES)
#define LOCK_BASE ((off_t)1 << 30)
#define OWNER_LOCK(i) (LOCK_BASE + (off_t)(i))
#define HEADER_LOCK (LOCK_BASE - 1)
#define SLOTS_PER_HANDLE 2 /* stores of one process queued at once; more commit themselves */

/* How long a new handle waits for the header lock a neighbour may hold. (A committer does not
 * wait for stores on their way: holding the write lock idle for them cost more than the syncs it
 * saved, measured with 2 and 4 processes on this project's benchmark machine.) */
#define HEADER_WAIT_MS 2000

/* A slot's states. OWNED: its store is being committed by its own process. (1 is not used: a
 * slot reserved for a store stays FREE until the store is queued, as no reader tells them apart.) */
enum { FREE = 0, QUEUED = 2, OWNED = 3 };

/* Offsets in a slot's head; key, record and selector follow it. */
enum {
    S_NONCE = 0, S_DURABILITY = 8, S_KEY_LEN = 12, S_RECORD_LEN = 16, S_SELECTOR_LEN = 20, S_PUT_FLAGS = 24,
    S_CAPACITY = 28, S_IKEY = 36
};
#define HEAD_LEN (S_IKEY + SUC_IKEY_LEN)

/* The ticket a commit leaves for a queued store it carried. */
#define TICKET_LEN 28
static void ticket_key(int i, uint8_t out[3]) { out[0] = 0x00, out[1] = 'H', out[2] = (uint8_t)i; }

static off_t slot_at(int i) { return SLOTS_AT + (off_t)i * SLOT_BYTES; }

static int range_lock(int fd, off_t at, short type) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Whether another open file description holds the lock at `at` (a query: no lock changes). */
static int lock_held(int fd, off_t at) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1};
    return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

static int read_states(int fd, uint8_t out[4 * SUC_HANDOFF_SLOTS]) {
    return pread(fd, out, 4 * SUC_HANDOFF_SLOTS, STATES_AT) == 4 * SUC_HANDOFF_SLOTS ? 0 : -1;
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

/* ---- the file ------------------------------------------------------------------------- */

/* Opens (creating it sized and headed if new) the handoff file; -1 leaves the handle without
 * handoff: its stores commit themselves, as before this file existed. */
static int open_file(suc_cache *c) {
    int fd = suc_shared_file_open(c->rootfd, SUC_HANDOFF_FILE);
    if (fd < 0) return -1;
    /* Whoever holds the header lock writes the header of a new file; waited for with a bound (a
     * neighbour may hold it, or a lock over the whole file, forever). */
    int64_t deadline = suc_os_monotonic_ms() + HEADER_WAIT_MS;
    while (range_lock(fd, HEADER_LOCK, F_WRLCK) != 0) {
        if ((errno != EAGAIN && errno != EACCES) || suc_os_monotonic_ms() >= deadline) {
            suc_os_close(fd);
            return -1;
        }
        sleep_us(1000);
    }
    uint8_t head[16];
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
    (void)range_lock(fd, HEADER_LOCK, F_UNLCK);
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

int suc_handoff_open(suc_cache *c) {
    return c->opts.durability != SUC_DURABILITY_RELAXED && handoff_fd(c) >= 0;
}

/* ---- the owner's side --------------------------------------------------------------------- */

int suc_handoff_reserve(suc_cache *c) {
    /* Relaxed commits are not synced: a store of another mode must not ride in one (and a
     * relaxed store gains nothing from sharing a commit that costs no sync). */
    if (c->opts.durability == SUC_DURABILITY_RELAXED) return 0;
    int fd = handoff_fd(c);
    if (fd < 0) return 0;
    int got = 0;
    pthread_mutex_lock(&c->handoff_mu);
    uint32_t idle = c->handoff_owned & ~c->handoff_busy;
    if (idle) {
        got = __builtin_ctz(idle) + 1;
    } else if (__builtin_popcount(c->handoff_owned) < SLOTS_PER_HANDLE) {
        uint8_t states[4 * SUC_HANDOFF_SLOTS];
        for (int i = 0; i < SUC_HANDOFF_SLOTS && !got && read_states(fd, states) == 0; i++) {
            if (c->handoff_owned & (1u << i)) continue;
            /* A queued store whose process died is left to the next commit, which frees it. */
            if (suc_get_u32(states + 4 * i) == QUEUED) continue;
            if (range_lock(fd, OWNER_LOCK(i), F_WRLCK) != 0) continue;
            c->handoff_owned |= 1u << i;
            got = i + 1;
        }
    }
    if (got) c->handoff_busy |= 1u << (got - 1);
    pthread_mutex_unlock(&c->handoff_mu);
    return got;
}

void suc_handoff_release(suc_cache *c, suc_op *op) {
    if (!op->handoff) return;
    int i = op->handoff - 1;
    /* A store still queued after this process's own commit failed stays queued, and its slot out
     * of use, for the handle's life: a committer may be reading it right now, and must not find
     * the next store half written over it; the next commit carries it (or finds its ticket). */
    if (op->handoff_uncertain) {
        op->handoff = 0;
        return;
    }
    (void)write_state(c->handofffd, i, FREE);
    pthread_mutex_lock(&c->handoff_mu);
    c->handoff_busy &= ~(1u << i);
    pthread_mutex_unlock(&c->handoff_mu);
    op->handoff = 0;
}

int suc_handoff_enqueue(suc_cache *c, suc_op *op) {
    if (!op->handoff) return 0;
    size_t need = HEAD_LEN + op->key_len + op->record_len + op->selector_len;
    int i = op->handoff - 1, fd = c->handofffd;
    uint8_t *slot = op->kind == SUC_OP_PUT && need <= SLOT_BYTES ? calloc(1, need) : NULL;
    if (!slot || suc_os_random(&op->handoff_nonce, sizeof op->handoff_nonce) != 0) {
        free(slot);
        suc_handoff_release(c, op);
        return 0;
    }
    uint64_t cap = op->capacity_bytes ? op->capacity_bytes : c->opts.hard_cap_bytes;
    suc_put_u64(slot + S_NONCE, op->handoff_nonce);
    suc_put_u32(slot + S_DURABILITY, (uint32_t)c->opts.durability);
    suc_put_u32(slot + S_KEY_LEN, (uint32_t)op->key_len);
    suc_put_u32(slot + S_RECORD_LEN, (uint32_t)op->record_len);
    suc_put_u32(slot + S_SELECTOR_LEN, (uint32_t)op->selector_len);
    suc_put_u32(slot + S_PUT_FLAGS, op->put_flags);
    suc_put_u64(slot + S_CAPACITY, cap);
    memcpy(slot + S_IKEY, op->ikey, SUC_IKEY_LEN);
    uint8_t *p = slot + HEAD_LEN;
    memcpy(p, op->key, op->key_len);
    memcpy(p + op->key_len, op->record, op->record_len);
    if (op->selector_len) memcpy(p + op->key_len + op->record_len, op->selector, op->selector_len);
    /* The nonce last, and zero while the rest is written: a committer reads it before and after
     * the slot and takes the slot only when both reads agree and are not zero, so a slot read
     * while its owner writes the next store into it (possible once the owner learns without the
     * write lock that its last store was carried: suc_handoff_wait_carried) is never taken torn. */
    uint64_t zero = 0;
    int ok = pwrite(fd, &zero, sizeof zero, slot_at(i) + S_NONCE) == (ssize_t)sizeof zero &&
             pwrite(fd, slot + sizeof zero, need - sizeof zero, slot_at(i) + sizeof zero) == (ssize_t)(need - sizeof zero) &&
             pwrite(fd, slot + S_NONCE, sizeof zero, slot_at(i) + S_NONCE) == (ssize_t)sizeof zero &&
             write_state(fd, i, QUEUED) == 0;
    free(slot);
    if (!ok) {
        suc_handoff_release(c, op);
        return 0;
    }
    if (suc_os_fault(SUC_FAULT_HANDOFF_QUEUED)) _exit(77); /* a kill point (armed only by crash tests) */
    return 1;
}

/* Whether `txn` holds the ticket of op's queued store; if so, op's results are filled from it. */
static int ticket_found(suc_cache *c, MDB_txn *txn, suc_op *op) {
    uint8_t key[3];
    ticket_key(op->handoff - 1, key);
    MDB_val k = {sizeof key, key}, v;
    if (mdb_get(txn, c->dbi_meta, &k, &v) != 0 || v.mv_size != TICKET_LEN) return 0;
    const uint8_t *t = v.mv_data;
    if (suc_get_u64(t) != op->handoff_nonce) return 0;
    op->version = suc_get_u64(t + 8);
    op->removed = suc_get_u64(t + 16);
    op->op_rc = (int32_t)suc_get_u32(t + 24);
    if (op->op_rc)
        suc_fail(&op->err, op->op_rc, "commit(handed off)", 0, 0, "store refused by the commit that carried it: %s",
                 suc_strerror(op->op_rc));
    return 1;
}

int suc_handoff_resolve(suc_cache *c, MDB_txn *txn, suc_op *op) {
    if (!op->handoff || op->handoff_owned) return SUC_HANDOFF_APPLY;
    if (ticket_found(c, txn, op)) return SUC_HANDOFF_DONE;
    /* Not committed by anyone: this process does it, and no committer takes it meanwhile (they
     * read slots only under the write lock, which this process holds now). */
    (void)write_state(c->handofffd, op->handoff - 1, OWNED);
    op->handoff_owned = 1;
    return SUC_HANDOFF_APPLY;
}

int suc_handoff_resolve_failed(suc_cache *c, suc_op *op) {
    if (!op->handoff || op->handoff_owned) return SUC_HANDOFF_APPLY;
    MDB_txn *txn = NULL;
    int done = 0;
    if (suc_rtxn_begin(c, &txn, NULL) == SUC_OK) {
        done = ticket_found(c, txn, op);
        suc_rtxn_end(c, txn);
    }
    /* Otherwise a committer may still be carrying it: its body file must stay (an orphan at
     * worst, which compaction sweeps), and the store may yet appear. */
    if (!done) op->handoff_uncertain = 1;
    return done ? SUC_HANDOFF_DONE : SUC_HANDOFF_APPLY;
}

/* ---- waiting without the write lock ------------------------------------------------------ */

/* A store queued while another process commits is often carried by that commit. Waiting for the
 * write lock to learn so costs a turn at LMDB's mutex behind every other waiter, during which the
 * process queues nothing new; with four processes storing, that serialised the learning and kept
 * commits small. So a committer says in the file that a commit is in flight, and a store queued
 * behind it looks for its ticket in read snapshots meanwhile. When the commit ends without it, the
 * store still waits WAIT_GRACE_US for the next commit to begin: the process that just committed
 * is usually about to commit again, and a store already queued rides in that commit with its
 * next one, where taking the lock first commits it alone. The write lock is taken when no commit
 * is in flight for that long, or after WAIT_MAX_MS (a commit stalled in the disk, or a marker
 * left by a process that died or a neighbour's bytes: the lock is then waited for as before).
 * The grace was chosen with store-scaling.py: 0, 150, 400, 800, 1500 and 3000 µs gave 2 ÷ 1
 * processes 1.22–1.28×, 1.31–1.36×, 1.34–1.47× and then no more. For the first WAIT_SPIN_US
 * (about one commit) the wait yields the processor instead of sleeping: a sleep of 50 µs lasts
 * 100 µs with the kernel's default timer slack, a long time to learn that a store is done while
 * the process has its next one to queue (4 ÷ 1 processes 1.55–1.65× sleeping, 1.82–1.86× so;
 * shorter sleeps with less slack were no better). It costs a core at most that long a wait. */
#define WAIT_SPIN_US 300
#define WAIT_POLL_US 50
#define WAIT_GRACE_US 400
#define WAIT_MAX_MS 100

/* The handle's descriptor if it is open (another thread of the handle may be opening it). */
static int open_fd(suc_cache *c) {
    pthread_mutex_lock(&c->handoff_mu);
    int fd = c->handofffd;
    pthread_mutex_unlock(&c->handoff_mu);
    return fd;
}

static void write_in_flight(suc_cache *c, uint64_t txn_id, int64_t began_ms) {
    uint8_t b[16];
    suc_put_u64(b, txn_id);
    suc_put_u64(b + 8, (uint64_t)began_ms);
    int fd = open_fd(c);
    if (fd >= 0) (void)pwrite(fd, b, sizeof b, IN_FLIGHT_AT);
}

void suc_handoff_commit_begins(suc_cache *c, MDB_txn *txn) {
    if (c->opts.durability != SUC_DURABILITY_RELAXED) write_in_flight(c, mdb_txn_id(txn), suc_os_monotonic_ms());
}

void suc_handoff_commit_ends(suc_cache *c) {
    if (c->opts.durability != SUC_DURABILITY_RELAXED) write_in_flight(c, 0, 0);
}

/* Whether the file says a commit began less than WAIT_MAX_MS ago and has not ended. */
static int commit_in_flight(int fd, int64_t now_ms) {
    uint8_t b[16];
    if (pread(fd, b, sizeof b, IN_FLIGHT_AT) != (ssize_t)sizeof b || suc_get_u64(b) == 0) return 0;
    int64_t began = (int64_t)suc_get_u64(b + 8);
    return began <= now_ms && now_ms - began < WAIT_MAX_MS;
}

/* Settles each queued store of the list found carried in a read snapshot. */
static int settle_carried(suc_cache *c, suc_op *ops) {
    MDB_txn *txn = NULL;
    int all = 1;
    if (suc_rtxn_begin(c, &txn, NULL) != SUC_OK) return 0;
    for (suc_op *op = ops; op; op = op->next) {
        if (!op->settled && ticket_found(c, txn, op)) op->settled = 1;
        all &= op->settled;
    }
    suc_rtxn_end(c, txn);
    return all;
}

int suc_handoff_wait_carried(suc_cache *c, suc_op *ops) {
    int fd = open_fd(c);
    if (fd < 0 || c->opts.durability == SUC_DURABILITY_RELAXED) return 0;
    for (suc_op *op = ops; op; op = op->next)
        if (op->settled || !op->handoff || op->handoff_owned) return 0; /* not all queued: no use */
    /* One clock, in µs: the spin, the grace and the bound are measured from the same readings. */
    int64_t start = suc_os_monotonic_us(), now = start, last_seen = start;
    if (!commit_in_flight(fd, start / 1000)) return 0;
    while (now - start < WAIT_MAX_MS * 1000) {
        if (now - start < WAIT_SPIN_US) sched_yield();
        else sleep_us(WAIT_POLL_US);
        if (settle_carried(c, ops)) {
            if (suc_os_fault(SUC_FAULT_HANDOFF_SETTLED)) _exit(77); /* a kill point (crash tests only) */
            return 1;
        }
        now = suc_os_monotonic_us();
        if (commit_in_flight(fd, now / 1000)) last_seen = now;
        else if (now - last_seen >= WAIT_GRACE_US) break;
    }
    return 0;
}

/* ---- the committer's side ----------------------------------------------------------------- */

/* Decodes slot i's store into op (its bytes in op->handoff_buf); 0 if it is well formed. */
static int read_store(int fd, int i, int durability, suc_op *op) {
    uint8_t head[HEAD_LEN], nonce_before[8];
    /* The nonce read on its own before and after the rest (see enqueue): one pread of the whole
     * head guarantees no order among its bytes. */
    if (pread(fd, nonce_before, sizeof nonce_before, slot_at(i) + S_NONCE) != (ssize_t)sizeof nonce_before ||
        pread(fd, head, HEAD_LEN, slot_at(i)) != (ssize_t)HEAD_LEN)
        return -1;
    uint64_t key_len = suc_get_u32(head + S_KEY_LEN), record_len = suc_get_u32(head + S_RECORD_LEN),
             selector_len = suc_get_u32(head + S_SELECTOR_LEN);
    if ((int)suc_get_u32(head + S_DURABILITY) != durability || key_len == 0 || record_len == 0 ||
        HEAD_LEN + key_len + record_len + selector_len > SLOT_BYTES)
        return -1;
    size_t n = (size_t)(key_len + record_len + selector_len);
    uint8_t *buf = malloc(n), nonce_after[8];
    if (!buf || pread(fd, buf, n, slot_at(i) + HEAD_LEN) != (ssize_t)n ||
        pread(fd, nonce_after, sizeof nonce_after, slot_at(i) + S_NONCE) != (ssize_t)sizeof nonce_after ||
        suc_get_u64(nonce_after) != suc_get_u64(nonce_before) || suc_get_u64(nonce_before) == 0) {
        free(buf); /* or a slot its owner was writing meanwhile (the nonce moved: see enqueue) */
        return -1;
    }
    /* What a neighbour wrote, or a slot read while its owner moved on to its next store: the
     * record must decode, name the key, and hash to the index key it is queued under. */
    suc_record r;
    uint8_t ikey[SUC_IKEY_LEN];
    int ok = suc_record_decode(buf + key_len, (size_t)record_len, &r) == SUC_OK && r.key_len == key_len &&
             memcmp(r.key, buf, (size_t)key_len) == 0;
    if (ok) suc_ikey_make(r.key, r.key_len, r.variant, r.variant_len, ikey);
    if (!ok || memcmp(ikey, head + S_IKEY, SUC_IKEY_LEN) != 0) {
        free(buf);
        return -1;
    }
    memset(op, 0, sizeof *op);
    op->kind = SUC_OP_PUT;
    memcpy(op->ikey, ikey, SUC_IKEY_LEN);
    op->key = buf, op->key_len = (size_t)key_len;
    op->record = buf + key_len, op->record_len = (size_t)record_len;
    if (selector_len) op->selector = buf + key_len + record_len, op->selector_len = (size_t)selector_len;
    op->put_flags = suc_get_u32(head + S_PUT_FLAGS) & (SUC_PUT_SOLE_VARIANT | SUC_PUT_SELECTOR);
    if ((op->put_flags & SUC_PUT_SELECTOR) && !selector_len) op->put_flags &= ~(uint32_t)SUC_PUT_SELECTOR;
    op->capacity_bytes = suc_get_u64(head + S_CAPACITY);
    op->capacity_fixed = 1;
    op->handoff = i + 1;
    op->handoff_nonce = suc_get_u64(nonce_before);
    op->handoff_buf = buf;
    return 0;
}

int suc_handoff_claim(suc_cache *c, MDB_txn *txn, suc_op *ops, size_t *count) {
    if (c->opts.durability == SUC_DURABILITY_RELAXED) return 0;
    /* Under the lock: another thread of this handle may be opening the file right now. */
    pthread_mutex_lock(&c->handoff_mu);
    int fd = c->handofffd;
    uint32_t mine = c->handoff_owned;
    pthread_mutex_unlock(&c->handoff_mu);
    if (fd < 0) return 0;
    uint8_t b[4 * SUC_HANDOFF_SLOTS];
    if (read_states(fd, b) != 0) return 0;
    size_t before = *count;
    for (int i = 0; i < SUC_HANDOFF_SLOTS && *count < SUC_HANDOFF_SLOTS; i++) {
        if ((mine & (1u << i)) || suc_get_u32(b + 4 * i) != QUEUED) continue;
        int taken = 0;
        for (size_t k = 0; k < *count; k++) taken |= ops[k].handoff == i + 1;
        if (taken || read_store(fd, i, c->opts.durability, &ops[*count]) != 0) continue;
        suc_op probe = ops[*count];
        if (ticket_found(c, txn, &probe)) { /* committed already; its owner has not looked yet */
            free(ops[*count].handoff_buf);
            /* Or never will: it died after it found the ticket, before it freed the slot. */
            if (!lock_held(fd, OWNER_LOCK(i))) (void)write_state(fd, i, FREE);
            continue;
        }
        (*count)++;
    }
    if (*count > before && suc_os_fault(SUC_FAULT_HANDOFF_CLAIMED)) _exit(77); /* kill point */
    return (int)(*count - before);
}

int suc_handoff_ticket(suc_cache *c, MDB_txn *txn, const suc_op *op, suc_error *err) {
    uint8_t key[3], t[TICKET_LEN];
    ticket_key(op->handoff - 1, key);
    suc_put_u64(t, op->handoff_nonce);
    suc_put_u64(t + 8, op->version);
    suc_put_u64(t + 16, op->removed);
    suc_put_u32(t + 24, (uint32_t)op->op_rc);
    MDB_val k = {sizeof key, key}, v = {sizeof t, t};
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(handoff ticket)", mrc) : SUC_OK;
}

void suc_handoff_finish(suc_cache *c, suc_op *ops, size_t count, int committed) {
    if (committed && count && suc_os_fault(SUC_FAULT_HANDOFF_COMMITTED)) _exit(77); /* kill point */
    for (size_t k = 0; k < count; k++) {
        suc_op *op = &ops[k];
        if (committed) {
            /* The bodies this commit dropped for that store (replaced, evicted) go now. */
            suc_body_unlink_ids(c, op->dead_ids, op->dead_count);
            /* A store whose process died: nobody else will free its slot. */
            int i = op->handoff - 1;
            if (!lock_held(c->handofffd, OWNER_LOCK(i))) (void)write_state(c->handofffd, i, FREE);
        }
        free(op->handoff_buf);
        suc_op_release(op);
    }
}
