/* opreg's thread pool (include/opreg/threads.h says what it promises).
 * Not installed. */
#ifndef OPREG_COMMON_POOL_H
#define OPREG_COMMON_POOL_H

#include "opreg/threads.h"

#include <stdint.h>

/* Runs fn(ctx, i) for every i in [0, n): on the host's pool when one is
 * lent, otherwise on opreg's pool with the caller taking part, or on the
 * caller alone when n is 1, the pool has one thread or is busy. Returns
 * when every task has returned. */
void opreg__parallel_for(int64_t n, opreg_task_fn fn, void *ctx);

/* A range loop's body: tasks [i0, i1), i0 < i1. */
typedef void (*opreg__range_fn)(void *ctx, int64_t i0, int64_t i1);

/* opreg__parallel_for for a body that takes a run of tasks at once: fn(ctx,
 * i0, i1) over disjoint ranges that cover [0, n), each as many tasks as
 * one claim takes (one call on the caller alone; on a lent host pool, at
 * most 16 a host thread, one host task each). Returns when every call has
 * returned. */
void opreg__parallel_ranges(int64_t n, opreg__range_fn fn, void *ctx);

/* Where part @p i of [0, n) cut into @p parts contiguous parts begins:
 * floor(n * i / parts) for n >= 0, 1 <= parts < 2^31 and 0 <= i <= parts,
 * without forming n * i, which overflows once n * i passes 2^63. */
static inline int64_t opreg__split_point(int64_t n, int64_t i, int64_t parts) {
    return n / parts * i + n % parts * i / parts;
}

/* Loops handed to opreg's workers so far (not those run on their caller
 * alone, nor those given to a host pool): for tests. */
uint64_t opreg__pool_loops(void);

/* opreg_get_parallel_min_bytes(). */
int64_t opreg__pool_min_bytes(void);

/* The width to size a split for: opreg_get_num_threads(). */
int opreg__pool_threads(void);

#endif
