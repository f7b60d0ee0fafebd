/* Stress: threads call ops in a loop while another thread defines,
 * registers, replaces and closes. Every call must either run a live kernel
 * or get a clean status; a kernel withdrawn by a close that returned before
 * the call started must never run. Runs under TSan in the test script. */
#include "reg_helpers.h"

#include <pthread.h>
#include <stdatomic.h>

#define CALLERS       3
#define WRITER_ROUNDS 1500
#define DYN_OPS       8

struct kctx {
    atomic_int closed_seq; /* the close that withdrew it, 0 while registered */
    atomic_int released;
    int magic;
};

static opreg_registry *reg;
static struct kctx ctxs[WRITER_ROUNDS * 3 + 1];
static atomic_int closes_done;
static atomic_int writer_done;
static atomic_long ran, clean, violations, bad_status;
static _Thread_local int call_start;

static opreg_status live_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)op;
    (void)args;
    (void)rets;
    struct kctx *k = ctx;
    int closed = atomic_load(&k->closed_seq);
    if (k->magic != 0x5eed || atomic_load(&k->released) || (closed && closed <= call_start))
        atomic_fetch_add(&violations, 1);
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
    return OPREG_OK;
}

static void release_ctx(void *ctx) {
    atomic_store(&((struct kctx *)ctx)->released, 1);
}

static void count(opreg_status st) {
    if (st == OPREG_OK) return;
    if (st == OPREG_ERR_NO_KERNEL || st == OPREG_ERR_NOT_FOUND)
        atomic_fetch_add_explicit(&clean, 1, memory_order_relaxed);
    else
        atomic_fetch_add(&bad_status, 1);
}

static void *caller(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    struct fake_tensor a;
    opreg_value v = opreg_tensor_value(fake(&a, kDLCPU, 0));
    const opreg_op *base;
    if (opreg_op_find(&base, reg, "st::base") != OPREG_OK) {
        atomic_fetch_add(&bad_status, 1);
        return NULL;
    }
    char name[32];
    while (!atomic_load(&writer_done)) {
        seed = seed * 1103515245u + 12345u;
        call_start = atomic_load(&closes_done);
        count(opreg_call_boxed(base, &v, 1, NULL, 0, NULL, 0));
        call_start = atomic_load(&closes_done);
        count(opreg_call_unboxed(base, &v, NULL));
        snprintf(name, sizeof name, "d::op%u", (seed >> 16) % DYN_OPS);
        const opreg_op *op;
        call_start = atomic_load(&closes_done);
        opreg_status st = opreg_op_find(&op, reg, name);
        if (st == OPREG_OK) {
            count(opreg_call_boxed(op, &v, 1, NULL, 0, NULL, 0));
            (void)opreg_is_op_supported(reg, name);
        } else {
            count(st);
        }
    }
    return NULL;
}

/* Mark a context withdrawn once its library's close has returned. */
static void closed(struct kctx *k) {
    int n = atomic_load(&closes_done) + 1;
    atomic_store(&k->closed_seq, n);
    atomic_store(&closes_done, n);
}

static void *writer(void *arg) {
    (void)arg;
    int next = 1;
    char schema[64], name[16];
    for (int round = 0; round < WRITER_ROUNDS; round++) {
        struct kctx *direct = &ctxs[next++], *other = &ctxs[next++], *dyn = &ctxs[next++];
        opreg_kernel kd = { live_kernel, direct, release_ctx, 0 };
        opreg_kernel ko = { live_kernel, other, release_ctx, 0 };
        opreg_kernel kn = { live_kernel, dyn, release_ctx, 0 };
        opreg_library *impl, *extra, *defs;
        /* Replace base's CPU kernel, sometimes with a composite or a fallback too. */
        opreg_library_create(&impl, reg, OPREG_LIBRARY_IMPL, "st", OPREG_KEY_CPU, "w.c", 1);
        opreg_library_impl(impl, "base", OPREG_KEY_NONE, &kd);
        opreg_library_create(&extra, reg, OPREG_LIBRARY_IMPL, "st", OPREG_KEY_CPU, "w.c", 2);
        if (round % 3 == 0)
            opreg_library_impl(extra, "base", OPREG_KEY_COMPOSITE, &ko);
        else if (round % 3 == 1)
            opreg_library_fallback(extra, OPREG_KEY_CPU, &ko);
        else
            opreg_library_impl(extra, "base", OPREG_KEY_NONE, &ko);
        /* Define a few ops (growing the name table), with kernels. */
        opreg_library_create(&defs, reg, OPREG_LIBRARY_DEF, "d", OPREG_KEY_CPU, "w.c", 3);
        for (int i = 0; i < 1 + round % DYN_OPS; i++) {
            snprintf(schema, sizeof schema, "op%d(Tensor x) -> ()", i);
            snprintf(name, sizeof name, "op%d", i);
            opreg_library_def(NULL, defs, schema);
            opreg_library_impl(defs, name, OPREG_KEY_NONE, &kn);
        }
        opreg_library_close(extra);
        closed(other);
        opreg_library_close(defs);
        closed(dyn);
        opreg_library_close(impl);
        closed(direct);
    }
    atomic_store(&writer_done, 1);
    return NULL;
}

TEST(calls_race_registration) {
    opreg_library *def;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "st", OPREG_KEY_NONE, "s.c", 1));
    CHECK_OK(opreg_library_def(NULL, def, "base(Tensor x) -> ()"));
    for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++)
        ctxs[i].magic = 0x5eed;
    pthread_t callers[CALLERS], w;
    for (int i = 0; i < CALLERS; i++)
        CHECK_EQ_INT(pthread_create(&callers[i], NULL, caller, (void *)(uintptr_t)(i + 1)), 0);
    CHECK_EQ_INT(pthread_create(&w, NULL, writer, NULL), 0);
    pthread_join(w, NULL);
    for (int i = 0; i < CALLERS; i++)
        pthread_join(callers[i], NULL);
    printf("calls that ran a kernel: %ld, clean statuses: %ld\n", atomic_load(&ran),
           atomic_load(&clean));
    CHECK_EQ_INT(atomic_load(&violations), 0);
    CHECK_EQ_INT(atomic_load(&bad_status), 0);
    CHECK(atomic_load(&ran) > 0);
    CHECK_EQ_INT(atomic_load(&closes_done), 3 * WRITER_ROUNDS);
    /* Contexts are released only now that no call can be running. */
    int released = 0;
    for (size_t i = 1; i < sizeof ctxs / sizeof ctxs[0]; i++)
        released += atomic_load(&ctxs[i].released);
    CHECK_EQ_INT(released, 0);
    opreg_registry_reclaim(reg);
    for (size_t i = 1; i < sizeof ctxs / sizeof ctxs[0]; i++)
        released += atomic_load(&ctxs[i].released);
    CHECK_EQ_INT(released, 3 * WRITER_ROUNDS);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
}

int main(void) {
    RUN(calls_race_registration);
    return test_summary();
}
