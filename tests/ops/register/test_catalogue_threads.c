/* The catalogue's threaded CPU kernels on opreg's pool: each op at a size
 * large enough to be split into tasks, on 1, 2 and 3 threads, and from two
 * callers at once (one owns the pool, the other runs alone), against the
 * Reference key. Label `threads`: the test script runs it under TSan, which
 * sees the pool (opreg's own code) and the kernels' writes on every thread. */
#include "common/pool.h"
#include "test.h"
#include "ops/register/catalogue.h"
#include "opreg/inputs.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Each moves a few MiB (past the 1 MiB below which a call stays on its
 * caller): many 64 KiB tasks, and quick enough under TSan. Odd sizes put
 * task boundaries inside vectors' reach. */
static const struct {
    const char *op, *shape;
} cases[] = {
    { "rms_norm", "tokens=256,hidden=4096" },
    { "fused_add_rms_norm", "tokens=255,hidden=4097" },
    { "silu_and_mul", "tokens=256,hidden=4096" },
    { "gelu_tanh_and_mul", "tokens=130,hidden=4100" },
    { "gelu_new", "tokens=256,hidden=4096" },
    { "gelu_quick", "tokens=129,hidden=4097" },
    { "rotary_embedding", "tokens=1024,heads=8,kv_heads=2,head_size=128,max_pos=2048" },
    { "batched_rotary_embedding", "tokens=1023,heads=8,kv_heads=2,head_size=128,max_pos=2048" },
    { "static_scaled_int8_quant", "tokens=256,hidden=4096" },
    { "dynamic_scaled_int8_quant", "tokens=255,hidden=4099" },
    { "static_scaled_fp8_quant", "tokens=256,hidden=4096" },
    { "dynamic_scaled_fp8_quant", "tokens=257,hidden=4096" },
    { "reshape_and_cache", "tokens=1024,kv_heads=8,head_size=128,blocks=80,block_size=16" },
    { "reshape_and_cache_flash", "tokens=1024,kv_heads=8,head_size=128,blocks=80,block_size=16" },
    { "paged_attention_v1",
      "seqs=8,heads=8,kv_heads=2,head_size=128,max_seq_len=512,block_size=16,blocks=300" },
};
#define NCASES (sizeof cases / sizeof cases[0])

static const opreg_op *find(const char *name) {
    char full[96];
    const opreg_op *op = NULL;
    snprintf(full, sizeof full, "_C::%s", name);
    return opreg_op_find(&op, opreg_registry_default(), full) == OPREG_OK ? op : NULL;
}

static opreg_status call(const opreg_op *op, opreg_dispatch_key key, opreg_inputs *in) {
    return opreg_call_boxed_key(op, key, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                opreg_inputs_rets(in), opreg_inputs_nrets(in));
}

/* Case @p c in bf16 (f32 for the ops without it): inputs, and the
 * Reference key's results on a clone of them. */
struct prepared {
    opreg_inputs *base, *ref;
    const opreg_op *op;
    char err[256];
};

static bool prepare(struct prepared *p, size_t c, int dtype) {
    opreg_sizes shape;
    memset(p, 0, sizeof *p);
    p->op = find(cases[c].op);
    if (!p->op || opreg_sizes_parse(&shape, cases[c].shape, p->err, sizeof p->err) != 0)
        return false;
    if (opreg_inputs_build(&p->base, p->op, dtype, &shape, 7 + c, p->err, sizeof p->err) !=
        OPREG_OK)
        return false;
    if (opreg_inputs_clone(&p->ref, p->base) != OPREG_OK) return false;
    if (call(p->op, OPREG_KEY_REFERENCE, p->ref) != OPREG_OK) {
        snprintf(p->err, sizeof p->err, "Reference: %s", opreg_last_error());
        return false;
    }
    return true;
}

static void release(struct prepared *p) {
    opreg_inputs_free(p->base);
    opreg_inputs_free(p->ref);
}

/* One CPU call on a clone of p's inputs, compared with the Reference; 0, or
 * -1 with the reason in @p why. */
static int run_cpu(const struct prepared *p, char *why, size_t cap) {
    opreg_inputs *in = NULL;
    if (opreg_inputs_clone(&in, p->base) != OPREG_OK) {
        snprintf(why, cap, "clone: %s", opreg_last_error());
        return -1;
    }
    int rc = 0;
    if (call(p->op, OPREG_KEY_CPU, in) != OPREG_OK) {
        snprintf(why, cap, "CPU: %s", opreg_last_error());
        rc = -1;
    } else {
        opreg_diff d;
        opreg_inputs_compare(&d, in, p->ref);
        if (!d.ok || d.checked == 0) {
            snprintf(why, cap, "%s%s (%lld of %lld bad)", d.why, d.first_bad, (long long)d.bad,
                     (long long)d.checked);
            rc = -1;
        }
    }
    opreg_inputs_free(in);
    return rc;
}

static int dtype_of_case(size_t c) {
    const opreg_generator *e = opreg__catalogue_generators;
    while (e->name && strcmp(e->name, cases[c].op) != 0)
        e++;
    return e->name && (e->dtypes & (1u << OPREG_DTYPE_BF16)) ? OPREG_DTYPE_BF16 : -1;
}

TEST(every_threaded_op_on_one_two_and_three_threads) {
    for (size_t c = 0; c < NCASES; c++) {
        struct prepared p;
        if (!prepare(&p, c, dtype_of_case(c))) {
            TEST_FAIL_AT("%s %s: %s", cases[c].op, cases[c].shape, p.err);
            release(&p);
            continue;
        }
        for (int t = 1; t <= 3; t++) {
            char why[512];
            CHECK_EQ_INT(opreg_set_num_threads(t), OPREG_OK);
            uint64_t loops = opreg__pool_loops();
            if (run_cpu(&p, why, sizeof why) != 0)
                TEST_FAIL_AT("%s %s on %d threads: %s", cases[c].op, cases[c].shape, t, why);
            /* Split over the pool exactly when it has workers. */
            if ((opreg__pool_loops() > loops) != (t > 1))
                TEST_FAIL_AT("%s %s on %d threads: %s the pool", cases[c].op, cases[c].shape, t,
                             t > 1 ? "did not use" : "used");
        }
        release(&p);
    }
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

/* Two callers, each through the whole table: at any moment one of them
 * owns the pool and the other runs its kernel alone. */
struct caller {
    size_t first;
    int failures;
    char why[512];
};

static void *caller_main(void *arg) {
    struct caller *k = arg;
    for (size_t i = 0; i < NCASES; i++) {
        size_t c = (k->first + i) % NCASES;
        struct prepared p;
        char why[400] = "";
        int rc = prepare(&p, c, dtype_of_case(c)) ? run_cpu(&p, why, sizeof why)
                                                  : (snprintf(why, sizeof why, "%s", p.err), -1);
        if (rc != 0 && !k->failures++) snprintf(k->why, sizeof k->why, "%s: %s", cases[c].op, why);
        release(&p);
    }
    return NULL;
}

TEST(two_callers_at_once) {
    CHECK_EQ_INT(opreg_set_num_threads(2), OPREG_OK);
    struct caller k[2] = { { 0, 0, "" }, { NCASES / 2, 0, "" } };
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, caller_main, &k[1]), 0);
    caller_main(&k[0]);
    pthread_join(th, NULL);
    for (int i = 0; i < 2; i++)
        if (k[i].failures)
            TEST_FAIL_AT("caller %d: %d failures; first: %s", i, k[i].failures, k[i].why);
    CHECK_EQ_INT(opreg_set_num_threads(0), OPREG_OK);
}

int main(void) {
    RUN(every_threaded_op_on_one_two_and_three_threads);
    RUN(two_callers_at_once);
    return test_summary();
}
