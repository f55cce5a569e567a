#ifndef PARALLEL_TEST_WIDTH_H
#define PARALLEL_TEST_WIDTH_H

/* Nothing to call: the target's one object sets the parallel test width from a constructor
 * when the test bundle loads (parallel_test_width.c). */

#endif
