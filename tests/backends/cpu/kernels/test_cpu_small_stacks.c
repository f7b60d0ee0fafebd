/* The CPU kernels on threads with small stacks: a host that lends its pool
 * (opreg_set_parallel_for) runs opreg's kernels on its own threads, whose
 * stacks may be as small as musl's default of 128 KiB. paged_attention_v1's
 * SIMD kernel keeps its large buffers (260 KiB at head_size 256 and a pass
 * of 8 heads) in per-thread scratch, not on the stack; run on such threads,
 * alone and through a lent pool that starts a thread per task, it must give
 * the bytes it gives on the main thread, and the scratch of each finished
 * thread must be freed. (opreg's own workers have the default stack size,
 * which is 128 KiB under musl too.) (the sanitizer build checks for leaks). Label
 * `threads`: TSan runs it too. */
#include "backends/cpu/kernels/kern_internal.h"
#include "kern_test.h"

#include "opreg/opreg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_STACK ((size_t)128 << 10)

/* One paged_attention_v1 call: 2 sequences, 16 query heads on 2 KV heads
 * (two passes of 8), head_size 256, blocks of 32 tokens in reverse order. */
struct pa_call {
    int isa, dt;
    int64_t hq, hkv, d, bs, nseq, max_blocks, blk_stride, q_stride;
    int32_t lens[2];
    int32_t *bt;
    void *q, *kc, *vc, *out;
};

static void pa_setup(struct pa_call *c, int isa, int dt) {
    int64_t nblk = 0;
    memset(c, 0, sizeof *c);
    kt_rng_state = 0x2545F4914F6CDD1Dull; /* every call the same data */
    c->isa = isa;
    c->dt = dt;
    c->hq = 16;
    c->hkv = 2;
    c->d = 256;
    c->bs = 32;
    c->nseq = 2;
    c->lens[0] = 200;
    c->lens[1] = 77;
    c->max_blocks = (200 + 31) / 32;
    c->blk_stride = c->hkv * c->d * c->bs;
    c->q_stride = c->hq * c->d;
    c->bt = calloc((size_t)(c->nseq * c->max_blocks), sizeof *c->bt);
    for (int s = 0; s < 2; s++)
        nblk += (c->lens[s] + c->bs - 1) / c->bs;
    for (int s = 0, next = (int)nblk - 1; s < 2; s++)
        for (int64_t b = 0; b * c->bs < c->lens[s]; b++)
            c->bt[s * c->max_blocks + b] = next--;
    c->q = kt_fill(dt, c->nseq * c->q_stride, -2.0, 2.0);
    c->kc = kt_fill(dt, nblk * c->blk_stride, -1.0, 1.0);
    c->vc = kt_fill(dt, nblk * c->blk_stride, -1.0, 1.0);
    c->out = kt_fill(dt, c->nseq * c->hq * c->d, 1e3, 1e3);
}

static void pa_free(struct pa_call *c) {
    free(c->bt);
    free(c->q);
    free(c->kc);
    free(c->vc);
    free(c->out);
}

static void pa_run(struct pa_call *c) {
    int64_t x = 16 / (int64_t)kt_es(c->dt);
    opreg__cpu_paged_attention_v1(c->isa, c->out, c->q, c->q_stride, c->kc, c->vc, c->bt, c->lens,
                                  NULL, c->nseq, c->hq, c->hkv, c->d, x, c->bs, c->blk_stride,
                                  c->blk_stride, c->max_blocks, 1.0f / 16.0f, c->dt, 0, 1.0f);
}

static void *pa_thread(void *p) {
    pa_run(p);
    return NULL;
}

/* Runs @p fn(@p arg) on a new thread with a SMALL_STACK stack, and waits. */
static bool on_small_stack(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t t;
    bool ok = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, SMALL_STACK) == 0 &&
              pthread_create(&t, &attr, fn, arg) == 0;
    pthread_attr_destroy(&attr);
    return ok && pthread_join(t, NULL) == 0;
}

/* A host pool that runs each task on a thread of its own, started for it
 * with a small stack: every task finds a thread without scratch, and every
 * thread's scratch is freed when it ends. */
struct task_run {
    opreg_task_fn task;
    void *ctx;
    int64_t i;
};

static void *task_thread(void *p) {
    struct task_run *r = p;
    r->task(r->ctx, r->i);
    return NULL;
}

static int host_calls;

static void small_stack_pool(void *host, int64_t n, opreg_task_fn task, void *ctx) {
    pthread_attr_t attr;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    struct task_run *r = calloc((size_t)n, sizeof *r);
    bool *started = calloc((size_t)n, sizeof *started);
    (void)host;
    host_calls++;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SMALL_STACK);
    for (int64_t i = 0; i < n; i++) {
        r[i] = (struct task_run){ task, ctx, i };
        started[i] = pthread_create(&t[i], &attr, task_thread, &r[i]) == 0;
        if (!started[i]) task(ctx, i); /* no thread: the caller runs it */
    }
    for (int64_t i = 0; i < n; i++)
        if (started[i]) pthread_join(t[i], NULL);
    pthread_attr_destroy(&attr);
    free(t);
    free(r);
    free(started);
}

static bool same_output(const char *what, struct pa_call *got, struct pa_call *want) {
    size_t bytes = (size_t)(want->nseq * want->hq * want->d) * kt_es(want->dt);
    char name[96];
    snprintf(name, sizeof name, "%s, %s", what, kt_dt_name(want->dt));
    return kt_check_bytes(name, want->isa, got->out, want->out, bytes);
}

TEST(paged_attention_on_a_small_stack) {
    /* one thread: the small-stacked caller runs every row itself */
    CHECK_EQ_INT(opreg_set_num_threads(1), OPREG_OK);
    KT_FOR_EACH_ISA(isa) {
        for (int t = 0; t < 3; t++) {
            struct pa_call main_thread, small;
            pa_setup(&main_thread, isa, kt_float_dtypes[t]);
            pa_run(&main_thread);
            pa_setup(&small, isa, kt_float_dtypes[t]);
            memset(small.out, 0, (size_t)(small.nseq * small.hq * small.d) * kt_es(small.dt));
            CHECK(on_small_stack(pa_thread, &small));
            CHECK(same_output("one thread with a 128 KiB stack", &small, &main_thread));
            pa_free(&main_thread);
            pa_free(&small);
        }
    }
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

TEST(paged_attention_on_a_lent_pool_of_small_stacks) {
    CHECK_EQ_INT(opreg_set_parallel_min_bytes(1), OPREG_OK); /* every call splits */
    KT_FOR_EACH_ISA(isa) {
        struct pa_call alone, pooled;
        pa_setup(&alone, isa, OPREG_DTYPE_BF16);
        pa_run(&alone);
        pa_setup(&pooled, isa, OPREG_DTYPE_BF16);
        memset(pooled.out, 0, (size_t)(pooled.nseq * pooled.hq * pooled.d) * 2);
        host_calls = 0;
        CHECK_EQ_INT(opreg_set_parallel_for(small_stack_pool, NULL, 4), OPREG_OK);
        pa_run(&pooled);
        CHECK_EQ_INT(opreg_set_parallel_for(NULL, NULL, 0), OPREG_OK);
        CHECK(host_calls == 1);
        CHECK(same_output("a lent pool of 128 KiB stacks", &pooled, &alone));
        pa_free(&alone);
        pa_free(&pooled);
    }
    CHECK_EQ_INT(opreg_set_parallel_min_bytes(0), OPREG_OK);
}

static void *scratch_of_a_thread(void *p) {
    *(void **)p = opreg__cpu_scratch(64);
    return NULL;
}

TEST(scratch_is_per_thread_aligned_and_grows) {
    void *a = opreg__cpu_scratch(100), *b, *c, *other = NULL;
    CHECK(a != NULL);
    CHECK(((uintptr_t)a & 63) == 0);
    memset(a, 0x5a, 100);
    b = opreg__cpu_scratch(4096); /* within the page it already has */
    CHECK(b == a);
    c = opreg__cpu_scratch((size_t)1 << 20);
    CHECK(c != NULL);
    CHECK(((uintptr_t)c & 63) == 0);
    memset(c, 0, (size_t)1 << 20);
    CHECK(opreg__cpu_scratch(16) == c);          /* smaller asks keep the larger one */
    CHECK(opreg__cpu_scratch(SIZE_MAX) == NULL); /* past any size: none, no wrap */
    CHECK(opreg__cpu_scratch(16) == c);          /* and the old one stays */
    CHECK(on_small_stack(scratch_of_a_thread, &other));
    CHECK(other != NULL);
    CHECK(other != c);
}

int main(void) {
    kt_report_isas("test_cpu_small_stacks");
    RUN(paged_attention_on_a_small_stack);
    RUN(paged_attention_on_a_lent_pool_of_small_stacks);
    RUN(scratch_is_per_thread_aligned_and_grows);
    return test_summary();
}
