/*
 * sync-latency.c — how long fdatasync takes on this disk against the pages written before it:
 * PAGES random 4 KiB pages of a sparse file of GIB GiB, then fdatasync, for SECONDS seconds.
 * A commit of LMDB writes its dirty pages scattered over the index file and then syncs, so this
 * is the part of a write transaction's hold that the disk decides, and its tail. Usage:
 *
 *   cc -O2 -o sync-latency sync-latency.c && ./sync-latency FILE PAGES SECONDS GIB
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s FILE PAGES SECONDS GIB\n", argv[0]);
        return 2;
    }
    int pages = atoi(argv[2]);
    double seconds = atof(argv[3]);
    off_t size = (off_t)atoi(argv[4]) << 30;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, size) != 0) {
        perror(argv[1]);
        return 1;
    }
    char page[4096];
    memset(page, 7, sizeof page);
    size_t cap = 1 << 21, n = 0;
    double *lat = malloc(sizeof(double) * cap), sum = 0, t0 = now();
    srand(1);
    while (now() - t0 < seconds && n < cap) {
        for (int i = 0; i < pages; i++) {
            off_t at = (off_t)(rand() % (size / 4096)) * 4096;
            if (pwrite(fd, page, sizeof page, at) != (ssize_t)sizeof page) {
                perror("pwrite");
                return 1;
            }
        }
        double a = now();
        if (fdatasync(fd) != 0) {
            perror("fdatasync");
            return 1;
        }
        lat[n] = (now() - a) * 1000;
        sum += lat[n++];
    }
    qsort(lat, n, sizeof *lat, cmp_double);
    size_t over25 = 0, over50 = 0;
    for (size_t i = 0; i < n; i++) over25 += lat[i] > 25, over50 += lat[i] > 50;
    printf("pages %4d: %7zu syncs, mean %.2f ms, median %.2f, p99 %.2f, p99.9 %.2f, max %.2f; over 25 ms %zu, "
           "over 50 ms %zu\n",
           pages, n, sum / n, lat[n / 2], lat[n * 99 / 100], lat[n * 999 / 1000], lat[n - 1], over25, over50);
    free(lat);
    close(fd);
    unlink(argv[1]);
    return 0;
}
