/* The calls of a split loop, by their bounds: for the tests of opreg's pool
 * (test_pool) and of the CPU kernels' split (test_cpu_parallel), which
 * check that a loop's calls tile [0, n) exactly however long it is. */
#ifndef OPREG_TEST_SPANS_H
#define OPREG_TEST_SPANS_H

#include <stdint.h>
#include <stdlib.h>

/* A call's range [lo, hi). */
struct span {
    int64_t lo, hi;
};

static inline int span_order(const void *a, const void *b) {
    int64_t x = ((const struct span *)a)->lo, y = ((const struct span *)b)->lo;
    return (x > y) - (x < y);
}

/* Sorts the @p count spans at @p at by their start; returns count, or -1
 * unless they tile [0, n) exactly, each non-empty. */
static inline int spans_tile(struct span *at, int count, int64_t n) {
    if (count > 0) qsort(at, (size_t)count, sizeof at[0], span_order);
    int64_t end = 0;
    for (int k = 0; k < count; k++) {
        if (at[k].lo != end || at[k].hi <= end) return -1;
        end = at[k].hi;
    }
    return end == n ? count : -1;
}

#endif
