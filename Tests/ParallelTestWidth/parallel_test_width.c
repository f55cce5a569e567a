/*
 * parallel_test_width.c — how many test cases a parallel `swift test` runs at once.
 *
 * Swift Testing starts every test case of the bundle at once unless told a width (the default
 * is unbounded), and the suites here wait on child processes, sockets and disks on threads of
 * their own: some 580 cases then ran together on two cores, and tests that time a skip, a
 * lock timeout or a deadline failed for want of a core, not for a fault (a parent's 500 ms
 * timeout fired after 58 s). The testing library reads its width from
 * SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH when it starts, and it starts a test's time
 * limit only once the case is let through, so the bundle sets it here, before main, to four
 * cases per core. A width given in the environment is kept; `--no-parallel` ignores it.
 */
#include "parallel_test_width.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CASES_PER_CORE 4

__attribute__((constructor)) static void set_parallel_test_width(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char width[24];
    snprintf(width, sizeof width, "%ld", (cores > 0 ? cores : 1) * CASES_PER_CORE);
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}
