/*
 * files.c — the directory's files below the index: making and owning directories, body-file
 * paths and their fan-out directories, unlinking body files, and the file system's free space.
 * Everything above uses these instead of paths of its own.
 */
#include "txn.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* mkdirat + fchmod(2770) when we created it, so the umask cannot take the group's access. */
int suc_make_dir(int dirfd, const char *name, int *out_fd, suc_error *err) {
    int created = suc_os_mkdirat(dirfd, name, 02770) == 0;
    if (!created && errno != EEXIST) return suc_fail_errno(err, "mkdirat", errno);
    int fd = suc_os_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0) {
        int e = errno;
        /* O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP): hostile, not I/O. */
        if (e == ENOTDIR || e == ELOOP)
            return suc_fail(err, SUC_EUNSAFE, "openat(dir)", e, 0, "%s is not a real directory", name);
        return suc_fail_errno(err, "openat(dir)", e);
    }
    if (created) {
        (void)suc_os_fchmod(fd, 02770);
        suc_adopt_owner(dirfd, fd);
    }
    if (out_fd) *out_fd = fd;
    else suc_os_close(fd);
    return SUC_OK;
}

void suc_adopt_owner(int rootfd, int fd) {
    if (geteuid() != 0) return;
    struct stat root, st;
    if (suc_os_fstat(rootfd, &root) < 0 || suc_os_fstat(fd, &st) < 0) return;
    if (st.st_uid != root.st_uid || st.st_gid != root.st_gid) (void)fchown(fd, root.st_uid, root.st_gid);
}

int suc_shared_file_open(int rootfd, const char *name) {
    int fd = suc_os_openat(rootfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0660);
    if (fd < 0) return -1;
    struct stat st;
    if (suc_os_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        suc_os_close(fd);
        return -1;
    }
    if (st.st_uid == geteuid()) (void)suc_os_fchmod(fd, 0660);
    suc_adopt_owner(rootfd, fd);
    return fd;
}

/* ---- body files ---- */

static const char HEX[] = "0123456789abcdef";

void suc_body_path(const uint8_t id[SUC_BODY_ID_LEN], char out[SUC_BODY_PATH_LEN]) {
    out[0] = HEX[id[0] >> 4];
    out[1] = HEX[id[0] & 15];
    out[2] = '/';
    for (int i = 0; i < SUC_BODY_ID_LEN; i++) {
        out[3 + 2 * i] = HEX[id[i] >> 4];
        out[4 + 2 * i] = HEX[id[i] & 15];
    }
    out[3 + 2 * SUC_BODY_ID_LEN] = '\0';
}

int suc_body_open_fanout(suc_cache *c, const uint8_t id[SUC_BODY_ID_LEN], int create) {
    char sub[3] = {HEX[id[0] >> 4], HEX[id[0] & 15], '\0'};
    int fd = suc_os_openat(c->bodiesfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0 && errno == ENOENT && create) {
        if (suc_make_dir(c->bodiesfd, sub, &fd, NULL) != SUC_OK) fd = -1;
        else if (atomic_load(&c->fanout_dirs) < 256) atomic_fetch_add(&c->fanout_dirs, 1);
    }
    /* A process of another user that is making this directory right now: mkdirat applied its
     * umask, and until its fchmod a moment later (suc_make_dir) the directory is its owner's
     * alone (docs/Reliability.md §3.4, T9). Wait for that, up to ~25 ms; a directory that stays
     * closed to us is a real permission error. */
    for (useconds_t pause = 50; fd < 0 && errno == EACCES && pause <= 12800; pause *= 2) {
        usleep(pause);
        fd = suc_os_openat(c->bodiesfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    }
    return fd;
}

void suc_body_unlink_ids(suc_cache *c, const uint8_t *ids, size_t count) {
    char path[SUC_BODY_PATH_LEN];
    for (size_t i = 0; i < count; i++) {
        const uint8_t *id = ids + i * SUC_BODY_ID_LEN;
        int dirfd = suc_body_open_fanout(c, id, 0);
        if (dirfd < 0) continue; /* gone, or not a real directory: never unlink through a link */
        suc_body_path(id, path);
        (void)suc_os_unlinkat(dirfd, SUC_BODY_NAME(path), 0);
        suc_os_close(dirfd);
    }
}

/* ---- free space ---- */

int suc_errno_is_disk_full(int e) { return e == ENOSPC || e == EDQUOT; }

int suc_fs_is_full(suc_cache *c) {
    struct statvfs st;
    /* Less than a few pages free: LMDB reports a short write on such a file system as EIO. */
    return fstatvfs(c->rootfd, &st) == 0 && (uint64_t)st.f_bavail * st.f_frsize < (64u << 10);
}

int64_t suc_fs_free_bytes(suc_cache *c) {
    struct statvfs st;
    if (fstatvfs(c->rootfd, &st) < 0) return -1;
    return (int64_t)((uint64_t)st.f_bavail * st.f_frsize);
}
