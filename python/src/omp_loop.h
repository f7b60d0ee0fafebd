/* How share_openmp (openmp.c) hands a loop's tasks to the threads of a lent
 * OpenMP team: the loop's n tasks fall into at most max_slots slots, slot s
 * the tasks between omp_split's cuts s and s + 1 (one task a slot while n
 * fits), and each thread claims slots one at a time, the team's first thread
 * from the front and the others from the back, until none is left. A thread
 * that starts late takes fewer slots, and each core gets the same part of
 * the data from one call to the next.
 *
 * Apart from openmp.c so that its test (tests/python/test_omp_loop.c) can
 * run it on threads of its own, with small caps on the slots, without
 * CPython or an OpenMP runtime. Header-only; every function is static. */
#ifndef OPREG_PYTHON_OMP_LOOP_H
#define OPREG_PYTHON_OMP_LOOP_H

#include "opreg/threads.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* floor(n * i / parts) without forming n * i, exact for parts < 2^31 and
 * 0 <= i <= parts (the pool's own splits take the same floor). */
static inline int64_t omp_split(int64_t n, int64_t i, int64_t parts) {
    return n / parts * i + n % parts * i / parts;
}

/* One loop: its tasks, and the slots not yet claimed, [next, end), in one
 * word, next in the low 32 bits and end in the high. */
struct omp_loop {
    opreg_task_fn task;
    void *ctx;
    int64_t n, slots;
    _Atomic uint64_t left;
};

/* Sets up @p l for @p n >= 1 tasks in at most @p max_slots (1 to
 * INT32_MAX) slots. */
static inline void omp_loop_init(struct omp_loop *l, int64_t n, int64_t max_slots,
                                 opreg_task_fn task, void *ctx) {
    l->task = task;
    l->ctx = ctx;
    l->n = n;
    l->slots = n < max_slots ? n : max_slots;
    atomic_init(&l->left, (uint64_t)l->slots << 32);
}

/* Claims a slot into @p slot from the front, or with @p back from the back;
 * false when none is left. */
static inline bool omp_claim(struct omp_loop *l, bool back, int64_t *slot) {
    uint64_t v = atomic_load_explicit(&l->left, memory_order_relaxed);
    for (;;) {
        uint64_t next = v & 0xFFFFFFFFu, end = v >> 32;
        if (next >= end) return false;
        uint64_t want = back ? (end - 1) << 32 | next : end << 32 | (next + 1);
        if (atomic_compare_exchange_weak_explicit(&l->left, &v, want, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *slot = (int64_t)(back ? end - 1 : next);
            return true;
        }
    }
}

/* One thread's part of the loop: slots claimed (from the back with @p back)
 * and their tasks run, in order, until none is left. */
static inline void omp_loop_run(struct omp_loop *l, bool back) {
    int64_t s;
    while (omp_claim(l, back, &s)) {
        int64_t end = omp_split(l->n, s + 1, l->slots);
        for (int64_t i = omp_split(l->n, s, l->slots); i < end; i++)
            l->task(l->ctx, i);
    }
}

#endif
