/*
 * pace.c — bulk work in paced write transactions: compaction's evictions, removals since a date,
 * of every entry or of a list of keys, and purges by tag or URL prefix.
 *
 * Every store of every process waits while a write transaction holds the index's write lock, and
 * most of a bulk transaction's hold is its commit (its pages written, then fdatasync), which grows
 * with the entries it changes and the index's size: a thousand removals held the lock 50–70 ms on
 * this project's benchmark machine. So bulk work starts with a small transaction, then sizes each
 * next one by how long the last held the lock (about SUC_PACE_TARGET_MS), and pauses between two:
 * a mutex released and taken straight back mostly goes to the thread that released it, and a
 * store waiting for it would wait for transaction after transaction (a removal of 200,000 entries
 * since a date made a store wait 3.8 s before this: Benchmarks/RESULTS.md).
 */
#include "txn.h"

#include <unistd.h>

/* The first transaction's size: its pages may not be in memory yet, and nothing is known yet of
 * how long a commit takes here. */
#define PACE_FIRST 64
/* A transaction is not made smaller than this: its commit is then mostly the sync itself. */
#define PACE_LEAST 16
/* The pause between two transactions, in which a waiting writer takes the lock. */
#define PACE_YIELD_US 500

uint32_t suc_pace_first(uint32_t most) { return most < PACE_FIRST ? most : PACE_FIRST; }

uint32_t suc_pace_resize(uint32_t batch, uint32_t most) {
    return suc_pace_resize_held(batch, most, suc_last_write_lock_ms());
}

uint32_t suc_pace_resize_held(uint32_t batch, uint32_t most, uint64_t held) {
    if (held > SUC_PACE_TARGET_MS && batch > PACE_LEAST) {
        uint64_t fewer = (uint64_t)batch * SUC_PACE_TARGET_MS / held + 1;
        return fewer > PACE_LEAST ? (uint32_t)fewer : PACE_LEAST;
    }
    if (held < SUC_PACE_TARGET_MS / 2 && batch < most) return batch + batch / 4 + 1 < most ? batch + batch / 4 + 1 : most;
    return batch < most ? batch : most;
}

void suc_pace_yield(void) { usleep(PACE_YIELD_US); }

uint32_t suc_pace_next(uint32_t batch, uint32_t most) {
    suc_pace_yield();
    return suc_pace_resize(batch, most);
}
