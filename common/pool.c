/* opreg's thread pool: one parallel loop at a time, its tasks handed out
 * through one 64-bit ticket that the caller and the workers claim from by
 * compare-and-swap.
 *
 * The ticket holds the loop's generation (40 bits), the end of the
 * unclaimed slots (12) and the next unclaimed slot (12). The caller claims
 * from the front (a swap from next to next+k owns slots [next, next+k)),
 * the workers from the back (end to end-k owns [end-k, end)); when next
 * reaches end, nothing is left to claim, and the caller waits only for the
 * slots other threads took: a worker the OS has not scheduled has claimed
 * nothing, so it delays nothing. A slot is a contiguous run of the caller's
 * tasks (a loop of more than 4095 tasks gives each slot several).
 *
 * Each claim takes what is left over CLAIM_SHARE times the threads (an
 * eighth with two threads), at least one slot (guided self-scheduling): a
 * few dozen claims a loop instead of one a task, and a range function
 * (opreg__parallel_ranges) gets each claim's tasks in one call. With one a
 * task, a caller whose worker did not run (another process held its core)
 * paid a compare-and-swap and a call for every task and came out slower
 * than one thread; the claims shrink to one slot at the end, so both
 * threads still finish together.
 *
 * Claiming from both ends gives each thread the same part of the data from
 * one call to the next, when both run: its rows are still in that core's
 * cache. Claimed in one order by all (as before), the split changed with
 * every call and the rows came from the other core's cache: with 2 threads,
 * rotary_embedding on 256 tokens took 0.70 of one thread's time where it
 * now takes 0.51 (`opreg bench threads`, docs/performance.md).
 *
 * The loop's description (function, context, counts) is written by the
 * caller before it publishes the ticket, and read by a worker only after a
 * successful claim: the loop cannot end while a claimed slot runs, so the
 * caller cannot overwrite it under the reader.
 *
 * Idle workers spin on the ticket for a bounded time, yielding now and
 * then, and then sleep on a condition variable; the caller signals it only
 * when some worker sleeps. A call that finds the pool busy (another
 * thread's loop, or a task's own nested call) runs on its caller. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "common/pool.h"
#include "common/internal.h"
#include "common/thread_keys.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define SLOT_BITS 12
#define MAX_SLOTS ((1 << SLOT_BITS) - 1)
#define GEN_SHIFT (2 * SLOT_BITS)

#define T_NEXT(t)  ((int64_t)((t)&MAX_SLOTS))
#define T_SLOTS(t) ((int64_t)(((t) >> SLOT_BITS) & MAX_SLOTS))

/* Calls that move less than this run on their caller, when
 * OPREG_PARALLEL_MIN_BYTES is unset: waking a sleeping worker and claiming
 * (microseconds) is then a large part of the call. `opreg bench threads`:
 * every op of the catalogue at 16 tokens of 4096 (under 1 MiB) gains
 * nothing from a second thread, and every one at 256 tokens (2-6 MiB)
 * gains 1.6-1.9x. */
#define DEFAULT_MIN_BYTES ((int64_t)1 << 20)
/* Each claim takes the slots left over CLAIM_SHARE times the threads. */
#define CLAIM_SHARE 4
/* Idle spinning before a worker sleeps, when OPREG_POOL_SPIN_US is unset. */
#define DEFAULT_SPIN_US 50
/* Pauses between two looks at the clock (and sched_yield calls). */
#define PAUSES_PER_YIELD 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    _Atomic uint64_t ticket;
    _Atomic int64_t done; /* slots the workers finished, this loop */
    _Atomic int sleepers; /* workers in (or entering) pthread_cond_wait */
    atomic_bool busy;     /* a loop runs, or the workers are being changed */
    atomic_bool stop;     /* written under mu: the workers return */
    atomic_int threads;   /* the current loop's, to size the claims by */
    /* The loop; written by its caller while it holds busy, before the
     * ticket is published. */
    opreg__range_fn fn;
    void *ctx;
    int64_t n, slots;
    /* The workers, under busy. */
    int workers;
    pthread_t tid[OPREG_MAX_THREADS];
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

/* Settings, read once from the environment. */
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static int default_threads = 1;
static int64_t spin_ns = (int64_t)DEFAULT_SPIN_US * 1000;

/* opreg_set_num_threads(); 0: the default. */
static atomic_int wanted = 0;
/* opreg_set_parallel_min_bytes(); 0: the default. */
static _Atomic int64_t min_bytes_set = 0;
static int64_t default_min_bytes = DEFAULT_MIN_BYTES;

/* The lent host pool, if any (zero-initialised: none; host_threads is read
 * only while host_fn is set). */
static _Atomic(opreg_parallel_for_fn) host_fn;
static _Atomic(void *) host_ctx;
static atomic_int host_threads;

static _Atomic uint64_t loops_run = 0;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A non-negative decimal integer from @p name, or -1 when unset; a value
 * that is not one is reported and ignored. */
static long env_count(const char *name, long max) {
    const char *s = getenv(name);
    if (!s || !*s) return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > max) {
        opreg__log(OPREG_LOG_WARN, "%s=%s is not a whole number from 0 to %ld; ignored", name, s,
                   max);
        return -1;
    }
    return v;
}

static void fork_child(void);

static void read_settings(void) {
    long n = env_count("OPREG_NUM_THREADS", OPREG_MAX_THREADS);
    if (n > 0) {
        default_threads = (int)n;
    } else {
        cpu_set_t set;
        int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
        default_threads = cpus < 1 ? 1 : cpus > OPREG_MAX_THREADS ? OPREG_MAX_THREADS : cpus;
    }
    long mb = env_count("OPREG_PARALLEL_MIN_BYTES", (long)1 << 40);
    if (mb > 0) default_min_bytes = mb;
    long us = env_count("OPREG_POOL_SPIN_US", 1000000);
    if (us >= 0) spin_ns = us * 1000;
    /* A child has none of its parent's workers. */
    pthread_atfork(NULL, NULL, fork_child);
}

static int resolved_threads(void) {
    pthread_once(&settings_once, read_settings);
    int w = atomic_load_explicit(&wanted, memory_order_relaxed);
    return w > 0 ? w : default_threads;
}

/* ---- claiming ------------------------------------------------------------------------- */

static bool claimable(uint64_t t) {
    return T_NEXT(t) < T_SLOTS(t);
}

/* Claims slots [*first, *first + *count) of the current loop; false when
 * none is left. The caller claims from the front, the workers from the
 * back. */
static bool claim(int64_t *first, int64_t *count, bool back) {
    int threads = atomic_load_explicit(&pool.threads, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
    while (claimable(t)) {
        int64_t k = (T_SLOTS(t) - T_NEXT(t)) / (CLAIM_SHARE * threads);
        if (k < 1) k = 1;
        uint64_t next = back ? t - ((uint64_t)k << SLOT_BITS) : t + (uint64_t)k;
        if (atomic_compare_exchange_weak_explicit(&pool.ticket, &t, next, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *first = back ? T_SLOTS(t) - k : T_NEXT(t);
            *count = k;
            return true;
        }
    }
    return false;
}

/* The tasks of slots [first, first + count), in one call. */
static void run_slots(int64_t first, int64_t count) {
    int64_t i0 = opreg__split_point(pool.n, first, pool.slots);
    int64_t i1 = opreg__split_point(pool.n, first + count, pool.slots);
    if (i1 > i0) pool.fn(pool.ctx, i0, i1);
}

/* ---- workers -------------------------------------------------------------------------- */

/* Waits until a slot may be claimable: spins for spin_ns, then sleeps.
 * Returns false when the worker is to stop. */
static bool idle_wait(void) {
    if (spin_ns > 0) {
        int64_t start = now_ns();
        for (unsigned i = 1;; i++) {
            if (claimable(atomic_load_explicit(&pool.ticket, memory_order_relaxed))) return true;
            cpu_relax();
            if (i % PAUSES_PER_YIELD == 0) {
                if (now_ns() - start >= spin_ns || atomic_load(&pool.stop)) break;
                sched_yield();
            }
        }
    }
    pthread_mutex_lock(&pool.mu);
    /* Sequentially consistent, as the caller's store of the ticket and its
     * load of sleepers: either this load sees the new loop, or the caller
     * sees a sleeper and signals under mu, after this thread waits. */
    atomic_fetch_add(&pool.sleepers, 1);
    while (!atomic_load(&pool.stop) && !claimable(atomic_load(&pool.ticket)))
        pthread_cond_wait(&pool.wake, &pool.mu);
    atomic_fetch_sub(&pool.sleepers, 1);
    bool go = !atomic_load(&pool.stop);
    pthread_mutex_unlock(&pool.mu);
    return go;
}

static void *worker_main(void *arg) {
    (void)arg;
    for (;;) {
        int64_t first, count;
        if (claim(&first, &count, true)) {
            run_slots(first, count);
            atomic_fetch_add_explicit(&pool.done, count, memory_order_release);
        } else if (!idle_wait()) {
            return NULL;
        }
    }
}

/* Under busy. */
static void stop_workers(void) {
    if (pool.workers == 0) return;
    pthread_mutex_lock(&pool.mu);
    atomic_store(&pool.stop, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.workers; i++)
        pthread_join(pool.tid[i], NULL);
    pool.workers = 0;
    atomic_store(&pool.stop, false);
}

/* Under busy: @p count workers, fewer if the system refuses threads (the
 * loops then run on fewer threads; nothing fails). Workers block every
 * signal, so that the host's handlers run on its own threads. */
static void start_workers(int count) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (pool.workers < count) {
        int rc = pthread_create(&pool.tid[pool.workers], NULL, worker_main, NULL);
        if (rc != 0) {
            opreg__log(OPREG_LOG_WARN, "thread pool: %d of %d workers started (pthread_create: %d)",
                       pool.workers, count, rc);
            break;
        }
        pool.workers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static bool try_own(void) {
    bool expected = false;
    return atomic_compare_exchange_strong_explicit(&pool.busy, &expected, true,
                                                   memory_order_acquire, memory_order_relaxed);
}

/* Waits until the pool is free and takes it (to change its workers). */
static void own(void) {
    for (unsigned i = 1; !try_own(); i++) {
        cpu_relax();
        if (i % PAUSES_PER_YIELD == 0) sched_yield();
    }
}

static void release(void) {
    atomic_store_explicit(&pool.busy, false, memory_order_release);
}

/* The child of a fork has only the forking thread: no workers, and no loop
 * of another thread in progress. */
static void fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pool.workers = 0;
    atomic_store(&pool.stop, false);
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.ticket, 0);
    atomic_store(&pool.busy, false);
}

/* When the library is unloaded (or the process exits), its workers must not
 * outlive its code, nor may its thread keys (common/thread_keys.h): the
 * keys go once the workers have exited, which freed their values. A loop
 * still running elsewhere keeps both. */
__attribute__((destructor)) static void pool_fini(void) {
    if (!try_own()) return;
    stop_workers();
    opreg__thread_keys_delete();
    release();
}

/* ---- loops ---------------------------------------------------------------------------- */

/* Runs fn over [0, n) in ranges, on opreg's pool, or on the caller alone
 * (one call) when n is 1, the pool has one thread or is busy. */
static void pool_ranges(int64_t n, opreg__range_fn fn, void *ctx) {
    if (n == 1 || !try_own()) {
        fn(ctx, 0, n);
        return;
    }
    int want = resolved_threads() - 1;
    if (want != pool.workers) {
        stop_workers();
        start_workers(want);
    }
    if (pool.workers == 0) {
        release();
        fn(ctx, 0, n);
        return;
    }
    atomic_fetch_add_explicit(&loops_run, 1, memory_order_relaxed);
    int64_t slots = n < MAX_SLOTS ? n : MAX_SLOTS;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.slots = slots;
    atomic_store_explicit(&pool.threads, pool.workers + 1, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    uint64_t gen = (atomic_load_explicit(&pool.ticket, memory_order_relaxed) >> GEN_SHIFT) + 1;
    /* Sequentially consistent: see idle_wait. */
    atomic_store(&pool.ticket, gen << GEN_SHIFT | (uint64_t)slots << SLOT_BITS);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.mu);
    }
    int64_t first, count, mine = 0;
    while (claim(&first, &count, false)) {
        run_slots(first, count);
        mine += count;
    }
    /* Only slots that a worker claimed are left, and they are running. */
    for (unsigned i = 1; atomic_load_explicit(&pool.done, memory_order_acquire) < slots - mine;
         i++) {
        cpu_relax();
        if (i % PAUSES_PER_YIELD == 0) sched_yield();
    }
    release();
}

/* A host pool runs tasks one at a time; a range loop gives it at most
 * HOST_GROUPS a thread, each a contiguous group of the loop's tasks in one
 * call. */
#define HOST_GROUPS 16

struct groups {
    opreg__range_fn fn;
    void *ctx;
    int64_t n, groups;
};

static void group_range(void *ctx, int64_t g) {
    const struct groups *l = ctx;
    int64_t i0 = opreg__split_point(l->n, g, l->groups);
    int64_t i1 = opreg__split_point(l->n, g + 1, l->groups);
    if (i1 > i0) l->fn(l->ctx, i0, i1);
}

void opreg__parallel_ranges(int64_t n, opreg__range_fn fn, void *ctx) {
    if (n <= 0) return;
    opreg_parallel_for_fn host = atomic_load_explicit(&host_fn, memory_order_acquire);
    if (host && n > 1) {
        int64_t most =
            (int64_t)HOST_GROUPS * atomic_load_explicit(&host_threads, memory_order_relaxed);
        struct groups l = { fn, ctx, n, n < most ? n : most };
        host(atomic_load_explicit(&host_ctx, memory_order_relaxed), l.groups, group_range, &l);
        return;
    }
    pool_ranges(n, fn, ctx);
}

/* opreg__parallel_for's tasks as ranges. */
struct tasks {
    opreg_task_fn fn;
    void *ctx;
};

static void task_range(void *ctx, int64_t i0, int64_t i1) {
    const struct tasks *t = ctx;
    for (int64_t i = i0; i < i1; i++)
        t->fn(t->ctx, i);
}

void opreg__parallel_for(int64_t n, opreg_task_fn fn, void *ctx) {
    if (n <= 0) return;
    opreg_parallel_for_fn host = atomic_load_explicit(&host_fn, memory_order_acquire);
    if (host && n > 1) {
        host(atomic_load_explicit(&host_ctx, memory_order_relaxed), n, fn, ctx);
        return;
    }
    struct tasks t = { fn, ctx };
    pool_ranges(n, task_range, &t);
}

uint64_t opreg__pool_loops(void) {
    return atomic_load_explicit(&loops_run, memory_order_relaxed);
}

int opreg__pool_threads(void) {
    if (atomic_load_explicit(&host_fn, memory_order_acquire))
        return atomic_load_explicit(&host_threads, memory_order_relaxed);
    return resolved_threads();
}

/* ---- the public API ------------------------------------------------------------------- */

opreg_status opreg_set_num_threads(int n) {
    if (n < 0 || n > OPREG_MAX_THREADS)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_set_num_threads: %d threads; give 1 to %d, or 0 for the default",
                           n, OPREG_MAX_THREADS);
    atomic_store_explicit(&wanted, n, memory_order_relaxed);
    return OPREG_OK;
}

void opreg_parallel_for(int64_t n, opreg_task_fn task, void *task_ctx) {
    opreg__parallel_for(n, task, task_ctx);
}

opreg_status opreg_set_parallel_min_bytes(int64_t bytes) {
    if (bytes < 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_set_parallel_min_bytes: %lld bytes; give a size, or 0 for the "
                           "default",
                           (long long)bytes);
    atomic_store_explicit(&min_bytes_set, bytes, memory_order_relaxed);
    return OPREG_OK;
}

int64_t opreg__pool_min_bytes(void) {
    int64_t b = atomic_load_explicit(&min_bytes_set, memory_order_relaxed);
    if (b > 0) return b;
    pthread_once(&settings_once, read_settings);
    return default_min_bytes;
}

int64_t opreg_get_parallel_min_bytes(void) {
    return opreg__pool_min_bytes();
}

int opreg_get_num_threads(void) {
    return opreg__pool_threads();
}

opreg_status opreg_set_parallel_for(opreg_parallel_for_fn fn, void *host, int threads) {
    if (fn && (threads < 1 || threads > OPREG_MAX_THREADS))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_set_parallel_for: a host pool of %d threads; give 1 to %d",
                           threads, OPREG_MAX_THREADS);
    atomic_store_explicit(&host_ctx, fn ? host : NULL, memory_order_relaxed);
    atomic_store_explicit(&host_threads, fn ? threads : 1, memory_order_relaxed);
    atomic_store_explicit(&host_fn, fn, memory_order_release);
    if (fn) {
        own();
        stop_workers();
        release();
    }
    return OPREG_OK;
}
