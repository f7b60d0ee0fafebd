/* Unloading a plugin while other threads call its kernel (labels plugin,
 * threads; runs under TSan): every call either runs the plugin's kernel to
 * the end or finds the op withdrawn; the code stays mapped until reclaim,
 * which runs after the callers are joined. */
#include "plugin_test.h"

#include <pthread.h>
#include <stdatomic.h>

static opreg_registry *reg;
static _Atomic int stop;
static _Atomic long ran, withdrawn, wrong;

static void *caller(void *arg) {
    (void)arg;
    float x[4] = { 1, 2, 3, 4 }, o[4];
    int64_t shape[1] = { 4 };
    DLTensor tx = { x, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    DLTensor to = { o, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    opreg_value args[3] = { opreg_tensor_value(&to), opreg_tensor_value(&tx),
                            opreg_float_value(2.0) };
    while (!atomic_load(&stop)) {
        const opreg_op *op;
        if (opreg_op_find(&op, reg, "v1test::scale") != OPREG_OK) {
            atomic_fetch_add(&withdrawn, 1);
            continue;
        }
        opreg_status st = opreg_call_boxed(op, args, 3, NULL, 0, NULL, 0);
        if (st == OPREG_OK && o[3] == 8.0f)
            atomic_fetch_add(&ran, 1);
        else if (st == OPREG_ERR_NOT_FOUND || st == OPREG_ERR_NO_KERNEL)
            atomic_fetch_add(&withdrawn, 1);
        else
            atomic_fetch_add(&wrong, 1);
    }
    return NULL;
}

TEST(unload_while_calling) {
    CHECK_EQ_INT(opreg_registry_create(&reg), OPREG_OK);
    pthread_t t[3];
    for (int round = 0; round < 20; round++) {
        opreg_plugin *p;
        CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_V1), OPREG_OK);
        atomic_store(&stop, 0);
        for (int i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, caller, NULL);
        while (atomic_load(&ran) < (round + 1) * 50L)
            ;
        opreg_plugin_unload(p);
        long w = atomic_load(&withdrawn);
        while (atomic_load(&withdrawn) < w + 10)
            ;
        atomic_store(&stop, 1);
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
        opreg_registry_reclaim(reg); /* no call is running: fini, then dlclose */
    }
    CHECK_EQ_INT(atomic_load(&wrong), 0);
    opreg_registry_destroy(reg);
}

int main(void) {
    RUN(unload_while_calling);
    return test_summary();
}
