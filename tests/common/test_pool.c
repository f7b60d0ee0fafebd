/* opreg's thread pool (common/pool.c, include/opreg/threads.h): every task
 * runs exactly once, on the threads asked for, the caller's from the front
 * and the workers' from the back, from one caller or several at once,
 * nested, with a host pool lent, after a fork; range loops too, in a few
 * calls each, split exactly up to INT64_MAX tasks; and the settings'
 * errors. Label `threads`: the test script runs it under TSan too. */
#define _GNU_SOURCE /* setenv, fork, execl */
#include "common/pool.h"
#include "spans.h"
#include "test.h"

#include "opreg/opreg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TASKS 9000

/* Which thread ran each task, and how often. */
struct tally {
    atomic_int runs[MAX_TASKS];
    pthread_t who[MAX_TASKS];
    atomic_int spin; /* a task's busy work, so that threads overlap */
};

static void count_task(void *ctx, int64_t i) {
    struct tally *t = ctx;
    atomic_fetch_add(&t->runs[i], 1);
    t->who[i] = pthread_self(); /* each task's own cell */
    for (int k = 0; k < 200; k++)
        atomic_fetch_add_explicit(&t->spin, 1, memory_order_relaxed);
}

static struct tally *tally_new(void) {
    return calloc(1, sizeof(struct tally));
}

/* Every task of [0, n) ran once and none past it; returns the number of
 * distinct threads that ran them, or -1 with a message. */
static int tally_check(struct tally *t, int64_t n) {
    for (int64_t i = 0; i < MAX_TASKS; i++) {
        int want = i < n ? 1 : 0, got = atomic_load(&t->runs[i]);
        if (got != want) {
            fprintf(stderr, "task %lld of %lld ran %d times\n", (long long)i, (long long)n, got);
            return -1;
        }
    }
    pthread_t seen[OPREG_MAX_THREADS];
    int distinct = 0;
    for (int64_t i = 0; i < n; i++) {
        int j = 0;
        while (j < distinct && !pthread_equal(seen[j], t->who[i]))
            j++;
        if (j == distinct && distinct < OPREG_MAX_THREADS) seen[distinct++] = t->who[i];
    }
    return distinct;
}

TEST(every_task_once_at_every_size) {
    /* Past 4095 tasks a slot holds several. */
    static const int64_t sizes[] = { 0, 1, 2, 3, 7, 64, 1000, 4095, 4096, 4097, 8191, MAX_TASKS };
    CHECK_EQ_INT(opreg_set_num_threads(3), OPREG_OK);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        struct tally *t = tally_new();
        CHECK(t);
        opreg__parallel_for(sizes[s], count_task, t);
        int d = tally_check(t, sizes[s]);
        free(t);
        CHECK(d >= 0);
        CHECK(d <= 3);
    }
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

TEST(one_thread_runs_on_the_caller) {
    CHECK_EQ_INT(opreg_set_num_threads(1), OPREG_OK);
    CHECK_EQ_INT(opreg_get_num_threads(), 1);
    struct tally *t = tally_new();
    CHECK(t);
    opreg__parallel_for(500, count_task, t);
    int d = tally_check(t, 500);
    bool on_caller = pthread_equal(t->who[0], pthread_self());
    free(t);
    CHECK_EQ_INT(d, 1);
    CHECK(on_caller);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* With one worker, the caller claims from the front and the worker from
 * the back: every task the caller ran comes before every task the worker
 * ran, so each thread keeps its part of the rows from one call to the
 * next (whichever part it gets to, when the other thread is late). */
/* Of tasks [0, n) in @p t: -1 when a task the worker ran comes before one
 * the caller ran, else 1 when both threads ran some, 0 when one ran all. */
static int front_and_back(const struct tally *t, int64_t n) {
    int64_t last_caller = -1, first_worker = n;
    for (int64_t i = 0; i < n; i++) {
        if (pthread_equal(t->who[i], pthread_self()))
            last_caller = i;
        else if (first_worker == n)
            first_worker = i;
    }
    if (last_caller >= first_worker) return -1;
    return last_caller >= 0 && first_worker < n;
}

TEST(caller_front_worker_back) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    int split = 0;
    for (int rep = 0; rep < 50; rep++) {
        struct tally *t = tally_new();
        CHECK(t);
        opreg__parallel_for(300, count_task, t);
        CHECK(tally_check(t, 300) >= 1);
        int fb = front_and_back(t, 300);
        free(t);
        CHECK(fb >= 0);
        split += fb;
    }
    printf("  %d of 50 loops ran on both threads\n", split);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* Widths change between loops: the workers are stopped and started again,
 * and a loop never runs on more threads than asked. */
TEST(width_changes_between_loops) {
    static const int widths[] = { 2, 4, 1, 8, 2, 3 };
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        CHECK_EQ_INT(opreg_set_num_threads(widths[w]), OPREG_OK);
        CHECK_EQ_INT(opreg_get_num_threads(), widths[w]);
        for (int rep = 0; rep < 20; rep++) {
            struct tally *t = tally_new();
            CHECK(t);
            opreg__parallel_for(256, count_task, t);
            int d = tally_check(t, 256);
            free(t);
            CHECK(d >= 1);
            CHECK(d <= widths[w]);
        }
    }
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* Range loops (opreg__parallel_ranges): the calls' ranges are non-empty,
 * disjoint and cover [0, n); each claim is one call, so a loop makes far
 * fewer calls than it has tasks; the caller's ranges come before the
 * worker's. */
struct ranges {
    struct tally tally;
    atomic_int calls, bad;
};

static void count_range(void *ctx, int64_t i0, int64_t i1) {
    struct ranges *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    if (i0 < 0 || i1 <= i0 || i1 > MAX_TASKS) {
        atomic_fetch_add(&r->bad, 1);
        return;
    }
    for (int64_t i = i0; i < i1; i++)
        count_task(&r->tally, i);
}

TEST(range_loops_cover_every_task_once) {
    static const int64_t sizes[] = { 0, 1, 2, 3, 7, 64, 1000, 4095, 4096, 4097, 8191, MAX_TASKS };
    static const int widths[] = { 1, 2, 3 };
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        CHECK_EQ_INT(opreg_set_num_threads(widths[w]), OPREG_OK);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            struct ranges *r = calloc(1, sizeof *r);
            CHECK(r);
            opreg__parallel_ranges(sizes[s], count_range, r);
            int d = tally_check(&r->tally, sizes[s]);
            int calls = atomic_load(&r->calls), bad = atomic_load(&r->bad);
            free(r);
            CHECK_EQ_INT(bad, 0);
            CHECK(d >= 0 && d <= widths[w]);
            if (widths[w] == 1) CHECK_EQ_INT(calls, sizes[s] > 0); /* one call, or none */
            /* Guided claims: about CLAIM_SHARE * threads * ln(n) of them. */
            if (sizes[s] >= 1000) CHECK(calls <= 300);
        }
    }
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

TEST(range_loops_caller_front_worker_back) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    int split = 0;
    for (int rep = 0; rep < 50; rep++) {
        struct ranges *r = calloc(1, sizeof *r);
        CHECK(r);
        opreg__parallel_ranges(2000, count_range, r);
        CHECK(tally_check(&r->tally, 2000) >= 1);
        int fb = front_and_back(&r->tally, 2000);
        free(r);
        CHECK(fb >= 0);
        split += fb;
    }
    printf("  %d of 50 range loops ran on both threads\n", split);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

TEST(settings_refuse_bad_widths) {
    CHECK_EQ_INT(opreg_set_num_threads(-1), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "-1 threads; give 1 to 256, or 0 for the default");
    CHECK_EQ_INT(opreg_set_num_threads(OPREG_MAX_THREADS + 1), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "257 threads");
    CHECK_EQ_INT(opreg_set_parallel_for(NULL, NULL, 0), OPREG_OK); /* unset: width ignored */
    CHECK_EQ_INT(opreg_get_num_threads() >= 1, 1);
}

TEST(parallel_min_bytes_setting) {
    int64_t dflt = opreg_get_parallel_min_bytes();
    CHECK(dflt > 0);
    CHECK_EQ_INT(opreg_set_parallel_min_bytes(4096), OPREG_OK);
    CHECK_EQ_INT(opreg_get_parallel_min_bytes(), 4096);
    CHECK_EQ_INT(opreg_set_parallel_min_bytes(-1), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "-1 bytes; give a size, or 0 for the default");
    CHECK_EQ_INT(opreg_get_parallel_min_bytes(), 4096); /* a refusal changes nothing */
    CHECK_EQ_INT(opreg_set_parallel_min_bytes(0), OPREG_OK);
    CHECK_EQ_INT(opreg_get_parallel_min_bytes(), dflt);
}

/* Several callers at once: one owns the pool, the others run on their own
 * thread; every loop is complete. */
struct caller {
    int loops;
    int bad;
};

static void *caller_main(void *arg) {
    struct caller *c = arg;
    for (int l = 0; l < c->loops; l++) {
        struct tally *t = tally_new();
        if (!t) {
            c->bad++;
            continue;
        }
        int64_t n = 1 + (l * 37) % 300;
        opreg__parallel_for(n, count_task, t);
        if (tally_check(t, n) < 0) c->bad++;
        free(t);
    }
    return NULL;
}

TEST(concurrent_callers) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    pthread_t th[4];
    struct caller c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct caller){ 60, 0 };
        CHECK_EQ_INT(pthread_create(&th[i], NULL, caller_main, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(c[i].bad, 0);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* A task that starts a loop of its own: the pool is busy, so the inner loop
 * runs on the task's thread; nothing deadlocks. */
struct nest {
    struct tally *inner[16];
    atomic_int bad;
};

static void outer_task(void *ctx, int64_t i) {
    struct nest *n = ctx;
    opreg__parallel_for(40, count_task, n->inner[i]);
    if (tally_check(n->inner[i], 40) != 1) atomic_fetch_add(&n->bad, 1);
}

TEST(nested_loops_run_inline) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    struct nest n = { { 0 }, 0 };
    for (int i = 0; i < 16; i++) {
        n.inner[i] = tally_new();
        CHECK(n.inner[i]);
    }
    opreg__parallel_for(16, outer_task, &n);
    for (int i = 0; i < 16; i++)
        free(n.inner[i]);
    CHECK_EQ_INT(atomic_load(&n.bad), 0);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* A host pool: two threads of the host's, started per loop (a real host
 * keeps them; this is enough to see that opreg uses it and nothing else). */
struct host {
    atomic_int loops;
    atomic_int tasks;
};

struct host_part {
    opreg_task_fn task;
    void *ctx;
    int64_t from, to;
};

static void *host_part_main(void *arg) {
    struct host_part *p = arg;
    for (int64_t i = p->from; i < p->to; i++)
        p->task(p->ctx, i);
    return NULL;
}

static void host_parallel_for(void *hp, int64_t n, opreg_task_fn task, void *task_ctx) {
    struct host *h = hp;
    atomic_fetch_add(&h->loops, 1);
    atomic_fetch_add(&h->tasks, (int)n);
    struct host_part a = { task, task_ctx, 0, n / 2 }, b = { task, task_ctx, n / 2, n };
    pthread_t t;
    if (pthread_create(&t, NULL, host_part_main, &b) != 0) {
        host_part_main(&b);
        host_part_main(&a);
        return;
    }
    host_part_main(&a);
    pthread_join(t, NULL);
}

TEST(host_pool_is_used_when_lent) {
    struct host h = { 0, 0 };
    CHECK_EQ_INT(opreg_set_parallel_for(host_parallel_for, &h, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "a host pool of 0 threads");
    CHECK_EQ_INT(opreg_set_parallel_for(host_parallel_for, &h, 6), OPREG_OK);
    CHECK_EQ_INT(opreg_get_num_threads(), 6);
    struct tally *t = tally_new();
    CHECK(t);
    opreg__parallel_for(100, count_task, t);
    int d = tally_check(t, 100);
    free(t);
    CHECK_EQ_INT(d, 2);
    CHECK_EQ_INT(atomic_load(&h.loops), 1);
    CHECK_EQ_INT(atomic_load(&h.tasks), 100);
    /* A range loop reaches the host as up to 16 groups a host thread: 100
     * tasks as 96 on 6 threads, 50 as 50. */
    static const int64_t sizes[] = { 100, 50 };
    int host_tasks = 100;
    for (int s = 0; s < 2; s++) {
        struct ranges *r = calloc(1, sizeof *r);
        CHECK(r);
        opreg__parallel_ranges(sizes[s], count_range, r);
        d = tally_check(&r->tally, sizes[s]);
        int calls = atomic_load(&r->calls), bad = atomic_load(&r->bad);
        free(r);
        CHECK_EQ_INT(d, 2);
        CHECK_EQ_INT(calls, sizes[s] < 96 ? sizes[s] : 96);
        CHECK_EQ_INT(bad, 0);
        host_tasks += calls;
    }
    CHECK_EQ_INT(atomic_load(&h.loops), 3);
    CHECK_EQ_INT(atomic_load(&h.tasks), host_tasks);
    /* One task never reaches the host. */
    t = tally_new();
    CHECK(t);
    opreg__parallel_for(1, count_task, t);
    free(t);
    CHECK_EQ_INT(atomic_load(&h.loops), 3);
    /* Given back: opreg's own pool again. */
    CHECK_EQ_INT(opreg_set_parallel_for(NULL, NULL, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    CHECK_EQ_INT(opreg_get_num_threads(), 2);
    t = tally_new();
    CHECK(t);
    opreg__parallel_for(100, count_task, t);
    d = tally_check(t, 100);
    free(t);
    CHECK(d >= 1 && d <= 2);
    CHECK_EQ_INT(atomic_load(&h.loops), 3);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* opreg__split_point against 128-bit arithmetic, at the ends of int64_t. */
TEST(split_points_are_exact) {
    __extension__ typedef __int128 wide;
    static const int64_t ns[] = {
        0, 1, 7, 4095, (int64_t)1 << 40, ((int64_t)1 << 62) + 5, INT64_MAX - 1, INT64_MAX
    };
    static const int64_t parts[] = { 1, 2, 3, 96, 4095, (int64_t)1 << 20, INT32_MAX };
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof parts / sizeof parts[0]; b++) {
            int64_t n = ns[a], p = parts[b];
            const int64_t is[] = { 0, 1, p / 3, p / 2, p - 1, p };
            for (size_t c = 0; c < sizeof is / sizeof is[0]; c++) {
                int64_t want = (int64_t)((wide)n * is[c] / p);
                CHECK(opreg__split_point(n, is[c], p) == want);
            }
        }
}

/* Each call of a range loop too long to tally, by its bounds. */
#define MAX_SPANS 8192
struct spans {
    pthread_mutex_t mu;
    int count;
    struct span at[MAX_SPANS];
};

static void record_span(void *ctx, int64_t i0, int64_t i1) {
    struct spans *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (s->count < MAX_SPANS) s->at[s->count] = (struct span){ i0, i1 };
    s->count++;
    pthread_mutex_unlock(&s->mu);
}

/* Runs a range loop of @p n tasks; returns its calls, or -1 unless they
 * tile [0, n) exactly, each non-empty. */
static int range_calls(int64_t n) {
    struct spans *s = calloc(1, sizeof *s);
    if (!s) return -1;
    pthread_mutex_init(&s->mu, NULL);
    opreg__parallel_ranges(n, record_span, s);
    int calls = s->count > MAX_SPANS ? -1 : spans_tile(s->at, s->count, n);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return calls;
}

/* Loops of up to INT64_MAX tasks split without overflow: on opreg's pool
 * and on a lent host's, the calls tile [0, n) exactly. */
TEST(range_loops_of_any_length) {
    static const int64_t sizes[] = { (int64_t)1 << 40, ((int64_t)1 << 62) + 5, INT64_MAX };
    for (int w = 1; w <= 2; w++) {
        CHECK_EQ_INT(opreg_set_num_threads(w), OPREG_OK);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            int calls = range_calls(sizes[k]);
            CHECK(calls >= 1);
            if (w == 1) CHECK_EQ_INT(calls, 1);
        }
    }
    struct host h = { 0, 0 };
    CHECK_EQ_INT(opreg_set_parallel_for(host_parallel_for, &h, 6), OPREG_OK);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        CHECK_EQ_INT(range_calls(sizes[k]), 96); /* 16 groups a host thread */
    CHECK_EQ_INT(opreg_set_parallel_for(NULL, NULL, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* The child of a fork has no workers; its loops still complete (on threads
 * it starts itself). ThreadSanitizer cannot start threads in the child of
 * a multi-threaded process, so under it this runs in the other builds only. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

TEST(loops_complete_after_fork) {
#ifdef UNDER_TSAN
    printf("  loops_complete_after_fork: not under TSan (no threads after a fork there)\n");
    return;
#endif
    CHECK_EQ_INT(opreg_set_num_threads(3), OPREG_OK);
    struct tally *t = tally_new();
    CHECK(t);
    opreg__parallel_for(300, count_task, t); /* the parent's workers run */
    free(t);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a hang fails the test instead of stalling it */
        struct tally *c = tally_new();
        if (!c) _exit(3);
        opreg__parallel_for(300, count_task, c);
        int d = tally_check(c, 300);
        free(c);
        _exit(d >= 1 && d <= 3 ? 0 : 4);
    }
    int status = 0;
    CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* The default width is OPREG_NUM_THREADS, read when the pool first starts;
 * a value that is not a count is ignored with a warning. Run in a child
 * process each, so that the settings are read afresh. */
static int child_run(const char *var, const char *value, const char *mode) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* A fresh process image, so that the pool reads its settings anew. */
        setenv(var, value, 1);
        execl("/proc/self/exe", "test_pool", mode, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static int child_width(const char *value) {
    return child_run("OPREG_NUM_THREADS", value, "--width");
}

static int warnings;
static void count_warning(void *ud, opreg_log_level level, const char *msg) {
    (void)ud;
    if (level == OPREG_LOG_WARN && strstr(msg, "=") && strstr(msg, "is not a whole number"))
        warnings++;
}

TEST(environment_sets_the_default_width) {
    CHECK_EQ_INT(child_width("3"), 3);
    CHECK_EQ_INT(child_width("1"), 1);
    /* Not a count: the default (the CPUs), and a warning (exit code 200 +
     * width would overflow; the child reports 100 + warnings instead). */
    CHECK_EQ_INT(child_width("many"), 101);
    CHECK_EQ_INT(child_width("-2"), 101);
    CHECK_EQ_INT(child_width("999"), 101);
}

/* OPREG_PARALLEL_MIN_BYTES: the child exits 0 when the default is the
 * variable's value, 1 when it is 1 MiB, 100 + warnings when refused. */
TEST(environment_sets_the_default_min_bytes) {
    CHECK_EQ_INT(child_run("OPREG_PARALLEL_MIN_BYTES", "12345", "--min-bytes"), 0);
    CHECK_EQ_INT(child_run("OPREG_PARALLEL_MIN_BYTES", "lots", "--min-bytes"), 101);
}

static int min_bytes_main(void) {
    opreg_set_log_callback(count_warning, NULL, OPREG_LOG_DEBUG);
    int64_t b = opreg_get_parallel_min_bytes();
    const char *v = getenv("OPREG_PARALLEL_MIN_BYTES");
    if (warnings) return 100 + warnings;
    return v && atoll(v) == b ? 0 : b == ((int64_t)1 << 20) ? 1 : 50;
}

/* The child's side of environment_sets_the_default_width: exits with the
 * width, or with 100 + the number of warnings when the value was refused. */
static int width_main(void) {
    opreg_set_log_callback(count_warning, NULL, OPREG_LOG_DEBUG);
    int w = opreg_get_num_threads();
    const char *v = getenv("OPREG_NUM_THREADS");
    if (warnings) return 100 + warnings;
    return v && atoi(v) == w ? w : 50;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--width") == 0) return width_main();
    if (argc > 1 && strcmp(argv[1], "--min-bytes") == 0) return min_bytes_main();
    RUN(every_task_once_at_every_size);
    RUN(one_thread_runs_on_the_caller);
    RUN(caller_front_worker_back);
    RUN(range_loops_cover_every_task_once);
    RUN(range_loops_caller_front_worker_back);
    RUN(width_changes_between_loops);
    RUN(settings_refuse_bad_widths);
    RUN(parallel_min_bytes_setting);
    RUN(concurrent_callers);
    RUN(nested_loops_run_inline);
    RUN(host_pool_is_used_when_lent);
    RUN(split_points_are_exact);
    RUN(range_loops_of_any_length);
    RUN(loops_complete_after_fork);
    RUN(environment_sets_the_default_width);
    RUN(environment_sets_the_default_min_bytes);
    return test_summary();
}
