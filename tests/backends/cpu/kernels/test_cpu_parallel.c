/* How the CPU kernels split a call over threads (opreg__cpu_parallel in
 * backends/cpu/kernels/isa.c): a call that moves fewer bytes than the
 * pool's threshold, or any call on one thread, is one call on the caller;
 * a larger one is cut into contiguous row ranges that tile [0, rows)
 * exactly, for every row count up to INT64_MAX and every byte count, on
 * opreg's pool and on a lent host pool. Label `threads`: TSan runs it too. */
#include "backends/cpu/kernels/kern_internal.h"
#include "spans.h"
#include "test.h"

#include "opreg/opreg.h"

#include <pthread.h>

#define MAX_SPANS 8192

/* The row ranges of one call, by whoever ran them. */
static struct {
    pthread_mutex_t mu;
    int count, off_caller;
    pthread_t caller;
    struct span at[MAX_SPANS];
} seen = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void record(const void *a, int64_t r0, int64_t r1) {
    (void)a;
    pthread_mutex_lock(&seen.mu);
    if (seen.count < MAX_SPANS) seen.at[seen.count] = (struct span){ r0, r1 };
    seen.count++;
    if (!pthread_equal(pthread_self(), seen.caller)) seen.off_caller++;
    pthread_mutex_unlock(&seen.mu);
}

/* Splits @p rows rows moving @p bytes; returns the calls, or -1 unless they
 * tile [0, rows) exactly, each non-empty. */
static int split(int64_t rows, int64_t bytes) {
    seen.count = seen.off_caller = 0;
    seen.caller = pthread_self();
    opreg__cpu_parallel(record, NULL, rows, bytes);
    return seen.count > MAX_SPANS ? -1 : spans_tile(seen.at, seen.count, rows);
}

TEST(small_calls_stay_on_the_caller) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    int64_t min = opreg_get_parallel_min_bytes();
    CHECK(min > 0);
    CHECK_EQ_INT(split(0, 0), 0);
    CHECK_EQ_INT(split(0, INT64_MAX), 0);
    CHECK_EQ_INT(split(1, INT64_MAX), 1);
    CHECK_EQ_INT(split(4096, min - 1), 1);
    CHECK_EQ_INT(seen.off_caller, 0);
    CHECK_EQ_INT(split(INT64_MAX, min - 1), 1);
    CHECK_EQ_INT(seen.off_caller, 0);
    /* One thread: any call, in one piece. */
    CHECK_EQ_INT(opreg_set_num_threads(1), OPREG_OK);
    CHECK_EQ_INT(split(4096, (int64_t)1 << 40), 1);
    CHECK_EQ_INT(seen.off_caller, 0);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

TEST(large_calls_tile_their_rows) {
    static const int64_t rows[] = {
        2, 3, 17, 4096, 1000003, (int64_t)1 << 40, ((int64_t)1 << 62) + 5, INT64_MAX
    };
    static const int64_t bytes[] = { (int64_t)64 << 20, (int64_t)1 << 40, INT64_MAX };
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++) {
            int calls = split(rows[r], bytes[b]);
            if (calls < 1)
                printf("  rows %lld bytes %lld: %d\n", (long long)rows[r], (long long)bytes[b],
                       calls);
            CHECK(calls >= 1);
            CHECK(calls <= rows[r]);
        }
    /* 64 MiB of 4096 rows: more than one piece, so both threads may work. */
    CHECK(split(4096, (int64_t)64 << 20) > 1);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* A host pool that runs its tasks on the calling thread, in order. */
static int host_loops;
static void host_for(void *ctx, int64_t n, opreg_task_fn task, void *task_ctx) {
    (void)ctx;
    host_loops++;
    for (int64_t i = 0; i < n; i++)
        task(task_ctx, i);
}

TEST(large_calls_on_a_lent_pool) {
    CHECK_EQ_INT(opreg_set_parallel_for(host_for, NULL, 4), OPREG_OK);
    CHECK_EQ_INT(split(INT64_MAX, INT64_MAX), 64); /* 16 groups a host thread */
    CHECK_EQ_INT(split(3, INT64_MAX), 3);
    CHECK_EQ_INT(split(4096, (int64_t)64 << 20), 64);
    CHECK_EQ_INT(host_loops, 3);
    CHECK_EQ_INT(opreg_set_parallel_for(NULL, NULL, 0), OPREG_OK);
}

int main(void) {
    RUN(small_calls_stay_on_the_caller);
    RUN(large_calls_tile_their_rows);
    RUN(large_calls_on_a_lent_pool);
    return test_summary();
}
