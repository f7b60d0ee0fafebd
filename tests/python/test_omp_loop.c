/* How share_openmp hands a loop's tasks to a lent OpenMP team
 * (python/src/omp_loop.h), run here on threads of the test's own in place
 * of the team: every task runs exactly once whatever the cap on the slots
 * and however many threads claim them; one thread from the front runs the
 * tasks in order, one from the back runs the slots backwards, each in
 * order; slots past the cap hold runs of tasks that differ by at most one;
 * and at the real cap, INT32_MAX slots, the claim word's two 32-bit halves
 * give the first and last slots of loops up to INT64_MAX tasks. No CPython
 * and no OpenMP runtime are needed. Label `threads`: TSan runs it too. */
#include "python/src/omp_loop.h"
#include "test.h"

#include <pthread.h>
#include <stdlib.h>

/* One thread of the stand-in team: its loop, and the end it claims from. */
struct runner {
    struct omp_loop *l;
    bool back;
};

static void *run_thread(void *p) {
    struct runner *r = p;
    omp_loop_run(r->l, r->back);
    return NULL;
}

/* Runs @p l on @p threads (at most 8) threads, the first (this one) from
 * the front and the others from the back, as the team's threads do. */
static void run_on(struct omp_loop *l, int threads) {
    pthread_t t[8];
    struct runner r[8];
    for (int i = 1; i < threads; i++) {
        r[i] = (struct runner){ l, true };
        if (pthread_create(&t[i], NULL, run_thread, &r[i]) != 0) abort();
    }
    omp_loop_run(l, false);
    for (int i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
}

/* Each task counts its own runs. */
static void count_runs(void *ctx, int64_t i) {
    atomic_fetch_add_explicit((_Atomic int *)ctx + i, 1, memory_order_relaxed);
}

/* Runs a loop of @p n tasks in at most @p cap slots on @p threads threads,
 * each task counting its runs in @p runs: -1 when every task ran exactly
 * once, else the first that did not, or n when the slots were miscounted
 * or one is left to claim. */
static int64_t run_counted(_Atomic int *runs, int64_t n, int64_t cap, int threads) {
    struct omp_loop l;
    int64_t s;
    for (int64_t i = 0; i < n; i++)
        atomic_init(&runs[i], 0);
    omp_loop_init(&l, n, cap, count_runs, runs);
    if (l.slots != (n < cap ? n : cap)) return n;
    run_on(&l, threads);
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&runs[i]) != 1) return i;
    return omp_claim(&l, false, &s) || omp_claim(&l, true, &s) ? n : -1;
}

TEST(every_task_runs_once) {
    static const int64_t ns[] = { 1, 2, 3, 7, 64, 1000, 4097 };
    static const int64_t caps[] = { 1, 2, 3, 5, 64, 4096, INT32_MAX };
    static const int threads[] = { 1, 2, 4 };
    _Atomic int *runs = calloc(4097, sizeof *runs);
    CHECK(runs != NULL);
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof caps / sizeof caps[0]; b++)
            for (size_t c = 0; c < sizeof threads / sizeof threads[0]; c++) {
                int64_t bad = run_counted(runs, ns[a], caps[b], threads[c]);
                if (bad >= 0) {
                    TEST_FAIL_AT("n %lld, cap %lld, %d threads: task %lld ran %d times (n: "
                                 "slots miscounted or one left)",
                                 (long long)ns[a], (long long)caps[b], threads[c], (long long)bad,
                                 bad < ns[a] ? atomic_load(&runs[bad]) : -1);
                    free(runs);
                    return;
                }
            }
    free(runs);
}

/* The order the tasks ran in, on one thread. */
static struct {
    int64_t at[64];
    int count;
} order;

static void note_order(void *ctx, int64_t i) {
    (void)ctx;
    if (order.count < 64) order.at[order.count] = i;
    order.count++;
}

TEST(front_runs_forwards_back_runs_backwards) {
    struct omp_loop l;
    /* 10 tasks in 4 slots: [0, 2), [2, 5), [5, 7), [7, 10). */
    static const int64_t back[] = { 7, 8, 9, 5, 6, 2, 3, 4, 0, 1 };
    order.count = 0;
    omp_loop_init(&l, 10, 4, note_order, NULL);
    omp_loop_run(&l, true);
    CHECK_EQ_INT(order.count, 10);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(order.at[i], back[i]);
    order.count = 0;
    omp_loop_init(&l, 10, 4, note_order, NULL);
    omp_loop_run(&l, false);
    CHECK_EQ_INT(order.count, 10);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(order.at[i], i);
}

TEST(slots_differ_by_at_most_one_task) {
    static const int64_t ns[] = { 5, 1000003, (int64_t)1 << 40, INT64_MAX };
    static const int64_t caps[] = { 3, 4096, INT32_MAX };
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof caps / sizeof caps[0]; b++) {
            int64_t n = ns[a], slots = n < caps[b] ? n : caps[b], small = n / slots;
            CHECK_EQ_INT(omp_split(n, 0, slots), 0);
            CHECK_EQ_INT(omp_split(n, slots, slots), n);
            /* Every cut for the small slot counts, the first and last
             * thousand for the large ones. */
            for (int64_t s = 0; s < slots; s = (s == 999 && slots > 2000) ? slots - 1000 : s + 1) {
                int64_t len = omp_split(n, s + 1, slots) - omp_split(n, s, slots);
                if (len != small && len != small + 1) {
                    TEST_FAIL_AT("n %lld in %lld slots: slot %lld holds %lld tasks", (long long)n,
                                 (long long)slots, (long long)s, (long long)len);
                    return;
                }
            }
        }
}

/* At the real cap (INT32_MAX slots, the most the claim word holds) and the
 * longest loop: the first and last slots claimed from either end start and
 * end where the split says, the last ending at n. Claiming all 2^31 - 1
 * slots would take seconds; the small caps above run loops to the end. */
TEST(the_real_cap_at_the_longest_loop) {
    static const int64_t ns[] = { ((int64_t)1 << 31) + 7, (int64_t)1 << 40, INT64_MAX };
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        int64_t n = ns[a], s;
        struct omp_loop l;
        omp_loop_init(&l, n, INT32_MAX, count_runs, NULL);
        CHECK_EQ_INT(l.slots, INT32_MAX);
        CHECK(omp_claim(&l, false, &s));
        CHECK_EQ_INT(s, 0);
        CHECK(omp_claim(&l, true, &s));
        CHECK_EQ_INT(s, INT32_MAX - 1);
        CHECK_EQ_INT(omp_split(n, s + 1, l.slots), n);
        CHECK(omp_claim(&l, true, &s));
        CHECK_EQ_INT(s, INT32_MAX - 2);
        CHECK(omp_claim(&l, false, &s));
        CHECK_EQ_INT(s, 1);
        CHECK_EQ_INT(omp_split(n, 1, l.slots), n / INT32_MAX);
    }
}

/* Many tasks in fewer slots, on threads that contend for them. */
TEST(many_tasks_grouped_on_contending_threads) {
    enum { N = 1000003 };
    _Atomic int *runs = calloc(N, sizeof *runs);
    CHECK(runs != NULL);
    for (int cap = 1000; cap <= 1000000; cap *= 1000) {
        int64_t bad = run_counted(runs, N, cap, 4);
        if (bad >= 0) {
            TEST_FAIL_AT("cap %d: task %lld ran %d times (n: slots miscounted or one left)", cap,
                         (long long)bad, bad < N ? atomic_load(&runs[bad]) : -1);
            free(runs);
            return;
        }
    }
    free(runs);
}

int main(void) {
    RUN(every_task_runs_once);
    RUN(front_runs_forwards_back_runs_backwards);
    RUN(slots_differ_by_at_most_one_task);
    RUN(the_real_cap_at_the_longest_loop);
    RUN(many_tasks_grouped_on_contending_threads);
    return test_summary();
}
