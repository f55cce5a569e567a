/*
 * lease.c — request leases across processes: one byte lock per name in the `leases` file.
 *
 * Why locks and not index records: a lease lives for one origin round trip. Writing it into the
 * index would cost a commit (and its fdatasync) per miss, and a process killed while holding one
 * would leave it behind until a deadline passed. An open-file-description lock (F_OFD_SETLK)
 * costs one system call, writes nothing, and the kernel drops it with its process.
 *
 * Layout of `leases`: the lock space is the offsets LOCK_BASE + (SHA-256(name) mod 2^40): locks
 * may lie past the end of a file, so the file stays small and two names practically never share
 * a byte. The file's first NOTE_SLOTS × 16 bytes are release notes: the owner of a lease writes
 * { first 8 bytes of SHA-256(name), release time in ms } into slot (hash mod NOTE_SLOTS) before
 * it unlocks, so a waiter can tell "finished: read the cache" from "died: take the lease over".
 * A note of another name in the same slot reads as "not finished", which only costs a
 * redundant origin request.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define NOTE_SLOTS 4096u
#define NOTE_LEN 16
#define LOCK_BASE ((off_t)NOTE_SLOTS * NOTE_LEN)

typedef struct lease_name {
    off_t lock_at;
    off_t note_at;
    uint8_t tag[8];
} lease_name;

static void lease_name_make(const void *name, size_t len, lease_name *out) {
    uint8_t h[32];
    suc_sha256(name, len, h);
    uint64_t a = 0, b = 0;
    for (int i = 0; i < 8; i++) {
        a = (a << 8) | h[i];
        b = (b << 8) | h[8 + i];
    }
    out->lock_at = LOCK_BASE + (off_t)(a & ((UINT64_C(1) << 40) - 1));
    out->note_at = (off_t)(b % NOTE_SLOTS) * NOTE_LEN;
    memcpy(out->tag, h + 16, 8);
}

/* The lease file's descriptor, opened (created 0660, group-owned like every file here) once. */
static int lease_fd(suc_cache *c, suc_error *err) {
    pthread_mutex_lock(&c->lease_mu);
    if (c->leasefd < 0) {
        int fd = suc_os_openat(c->rootfd, SUC_LEASE_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0660);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) (void)suc_os_fchmod(fd, 0660);
            suc_adopt_owner(c->rootfd, fd);
            c->leasefd = fd;
        }
    }
    int fd = c->leasefd;
    pthread_mutex_unlock(&c->lease_mu);
    if (fd < 0) return suc_fail_errno(err, "openat(leases)", errno);
    return fd;
}

static int lock_op(int fd, int cmd, short type, off_t at) {
    struct flock fl = {0};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = at;
    fl.l_len = 1;
    int rc;
    do {
        rc = fcntl(fd, cmd, &fl);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0 && cmd == F_OFD_GETLK) return fl.l_type == F_UNLCK ? 0 : 1;
    return rc;
}

/* What every lease call starts with: the handle's checks, the file, the name's offsets. */
static int lease_begin(suc_cache *c, const void *name, size_t len, const char *op, int *fd, lease_name *n,
                       suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!name || !len) return suc_fail(err, SUC_EINVAL, op, 0, 0, "a lease needs a name");
    if ((*fd = lease_fd(c, err)) < 0) return err ? err->code : SUC_EIO;
    lease_name_make(name, len, n);
    return SUC_OK;
}

/* Whether the note in n's slot says n's last owner released it at or after since_ms. */
static int released_since(int fd, const lease_name *n, int64_t since_ms) {
    uint8_t note[NOTE_LEN];
    return suc_os_pread_full(fd, note, NOTE_LEN, n->note_at) == NOTE_LEN && memcmp(note, n->tag, 8) == 0 &&
           (int64_t)suc_get_u64(note + 8) >= since_ms;
}

int suc_lease_try(suc_cache *c, const void *name, size_t len, int64_t unless_finished_since_ms, int *out_state,
                  suc_error *err) {
    int fd;
    lease_name n;
    int rc = lease_begin(c, name, len, "suc_lease_try", &fd, &n, err);
    if (rc) return rc;
    if (lock_op(fd, F_OFD_SETLK, F_WRLCK, n.lock_at) == 0) {
        /* Read under the lock: no owner can release (and note) it between this look and the answer. */
        if (unless_finished_since_ms >= 0 && released_since(fd, &n, unless_finished_since_ms)) {
            if (lock_op(fd, F_OFD_SETLK, F_UNLCK, n.lock_at) < 0) return suc_fail_errno(err, "fcntl(unlock lease)", errno);
            *out_state = SUC_LEASE_FINISHED;
            return SUC_OK;
        }
        *out_state = SUC_LEASE_ACQUIRED;
        return SUC_OK;
    }
    if (errno == EAGAIN || errno == EACCES) {
        *out_state = SUC_LEASE_HELD;
        return SUC_OK;
    }
    return suc_fail_errno(err, "fcntl(lease)", errno);
}

int suc_lease_state(suc_cache *c, const void *name, size_t len, int64_t since_ms, int *out_state, int *out_released,
                    suc_error *err) {
    int fd;
    lease_name n;
    int rc = lease_begin(c, name, len, "suc_lease_state", &fd, &n, err);
    if (rc) return rc;
    int held = lock_op(fd, F_OFD_GETLK, F_WRLCK, n.lock_at);
    if (held < 0) return suc_fail_errno(err, "fcntl(lease)", errno);
    *out_state = held ? SUC_LEASE_HELD : SUC_LEASE_FREE;
    *out_released = !held && released_since(fd, &n, since_ms);
    return SUC_OK;
}

int suc_lease_release(suc_cache *c, const void *name, size_t len, suc_error *err) {
    int fd;
    lease_name n;
    int rc = lease_begin(c, name, len, "suc_lease_release", &fd, &n, err);
    if (rc) return rc;
    uint8_t note[NOTE_LEN];
    memcpy(note, n.tag, 8);
    suc_put_u64(note + 8, (uint64_t)suc_os_now_ms());
    /* A note that cannot be written only makes waiters take the lease over: still correct. */
    (void)suc_os_pwrite_full(fd, note, NOTE_LEN, n.note_at);
    if (lock_op(fd, F_OFD_SETLK, F_UNLCK, n.lock_at) < 0) return suc_fail_errno(err, "fcntl(unlock lease)", errno);
    return SUC_OK;
}
