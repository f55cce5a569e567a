/*
 * A worker built against the C core of an earlier release (extracted with `git archive` by
 * build.sh), so that tests run real processes of two releases on one directory.
 *
 *   worker DIR store SECONDS    stores old-<i> until SECONDS pass, printing "ACK old-<i>"
 *   worker DIR fill COUNT       stores old-0 … old-(COUNT-1), printing "ACK old-<i>" for each
 *   worker DIR open             opens the directory and exits 0, or prints the error and exits 2
 *
 * Entry i (the Swift side rebuilds it with the same rules, EarlierReleaseEntry):
 *   key "old-<i>", variant "v<i%2>" for odd i and empty for even i, partition "p<i%3>",
 *   head "head-<i>", userInfo "ui-<i>", stored_at_ms 1700000000000 + i, app_flags i;
 *   body: every third entry 20,000 pseudo-random bytes (a body file), the others the text
 *   "{\"old\":<i>}" repeated 40 times (compressible, inline in the index).
 */
#include "shared_url_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t make_body(int i, unsigned char *out) {
    if (i % 3 == 0) {
        unsigned x = (unsigned)i * 2654435761u + 1u;
        for (int j = 0; j < 20000; j++) {
            x = x * 1103515245u + 12345u;
            out[j] = (unsigned char)(x >> 24);
        }
        return 20000;
    }
    char unit[32];
    int n = snprintf(unit, sizeof unit, "{\"old\":%d}", i);
    for (int r = 0; r < 40; r++) memcpy(out + r * n, unit, (size_t)n);
    return (size_t)n * 40;
}

static int store_one(suc_cache *c, int i) {
    static unsigned char body[20000];
    char key[32], variant[8], partition[8], head[32], info[32];
    snprintf(key, sizeof key, "old-%d", i);
    snprintf(variant, sizeof variant, "v%d", i % 2);
    snprintf(partition, sizeof partition, "p%d", i % 3);
    snprintf(head, sizeof head, "head-%d", i);
    snprintf(info, sizeof info, "ui-%d", i);
    suc_put_params p;
    memset(&p, 0, sizeof p);
    p.key = key, p.key_len = strlen(key);
    p.variant = variant, p.variant_len = i % 2 ? strlen(variant) : 0;
    p.partition = partition, p.partition_len = strlen(partition);
    p.head = head, p.head_len = strlen(head);
    p.user_info = info, p.user_info_len = strlen(info);
    p.stored_at_ms = 1700000000000LL + i;
    p.app_flags = (uint32_t)i;
    suc_error e;
    int rc = suc_put(c, &p, body, make_body(i, body), NULL, &e);
    if (rc) {
        fprintf(stderr, "store %s: %s (%s)\n", key, suc_strerror(rc), e.message);
        return rc;
    }
    printf("ACK %s\n", key);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    suc_options o;
    suc_options_init(&o);
    o.create = 1;
    suc_cache *c;
    suc_error e;
    int rc = suc_cache_open(argv[1], &o, &c, &e);
    if (rc) {
        fprintf(stderr, "open: %s (%s)\n", suc_strerror(rc), e.message);
        return 2;
    }
    if (!strcmp(argv[2], "store") || !strcmp(argv[2], "fill")) {
        int seconds = !strcmp(argv[2], "store") ? atoi(argv[3]) : 0;
        int count = !strcmp(argv[2], "fill") ? atoi(argv[3]) : 1 << 30;
        time_t end = time(NULL) + seconds;
        for (int i = 0; i < count && (seconds == 0 || time(NULL) < end); i++)
            if (store_one(c, i)) return 3;
    }
    suc_cache_close(c);
    return 0;
}
