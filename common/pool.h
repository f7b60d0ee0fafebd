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

/* Loops handed to opreg's workers so far (not those run on their caller
 * alone, nor those given to a host pool): for tests. */
uint64_t opreg__pool_loops(void);

/* opreg_get_parallel_min_bytes(). */
int64_t opreg__pool_min_bytes(void);

/* The width to size a split for: opreg_get_num_threads(). */
int opreg__pool_threads(void);

#endif
