/* topk_softmax's CPU kernel against ops/ref's, on every gating dtype and
 * every path this CPU runs (the SIMD paths' row statistics, rows past a
 * vector's multiple included):
 * random logits, ties (equal logits: the lower expert first), k equal to
 * the expert count, rows holding NaN or infinities (ranked as ops/ref ranks
 * them), and enough tokens that threads split them. The experts and
 * token_expert_indices must be identical; the weights within f32's
 * rounding (expf and a float sum against exp and a double sum: 1e-5
 * relative, the f32 tolerance of the other kernel tests). */
#include "kern_test.h"
#include "ops/ref/ref.h"

#include <stdlib.h>
#include <string.h>

static void dl(opreg_tensor *t, void *data, int dt, int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device = (DLDevice){ kDLCPU, 0 };
    t->ndim = 2;
    t->dtype = opreg_dtype_to_dlpack((opreg_dtype)dt);
    t->shape = shape;
}

/* Run both on @p gating ([t, e] in dt) and compare; false after printing
 * the first difference. */
static bool same_as_ref(const char *what, int dt, const void *gating, int64_t t, int64_t e,
                        int64_t k) {
    size_t n = (size_t)(t * k > 0 ? t * k : 1);
    float *w = malloc(n * sizeof *w), *rw = malloc(n * sizeof *rw);
    int32_t *ids = malloc(n * 4), *rids = malloc(n * 4), *te = malloc(n * 4), *rte = malloc(n * 4);
    int64_t gs[2] = { t, e }, os[2] = { t, k };
    opreg_tensor tw, tid, tte, tg;
    bool ok = true;
    dl(&tw, rw, OPREG_DTYPE_F32, os);
    dl(&tid, rids, OPREG_DTYPE_I32, os);
    dl(&tte, rte, OPREG_DTYPE_I32, os);
    dl(&tg, (void *)gating, dt, gs);
    if (opreg__ref_topk_softmax(&tw, &tid, &tte, &tg) != OPREG_OK) {
        fprintf(stderr, "%s: the reference failed\n", what);
        ok = false;
    }
    KT_FOR_EACH_ISA(isa) {
        opreg__cpu_topk_softmax(isa, w, ids, te, gating, dt, t, e, k);
        for (int64_t i = 0; ok && i < t * k; i++) {
            bool wok = isnan(rw[i]) ? isnan(w[i]) : fabsf(w[i] - rw[i]) <= 1e-5f * rw[i] + 1e-9f;
            if (ids[i] != rids[i] || te[i] != rte[i] || !wok) {
                fprintf(stderr,
                        "%s (%s, path %s, %lld x %lld, k %lld): at %lld: expert %d weight %.9g "
                        "index %d, ops/ref %d %.9g %d\n",
                        what, kt_dt_name(dt), opreg__cpu_isa_name(isa), (long long)t, (long long)e,
                        (long long)k, (long long)i, ids[i], w[i], te[i], rids[i], rw[i], rte[i]);
                ok = false;
            }
        }
    }
    free(w), free(rw), free(ids), free(rids), free(te), free(rte);
    return ok;
}

TEST(topk_softmax_random) {
    static const int64_t shapes[][3] = { { 37, 64, 8 },   { 9, 7, 3 },    { 1, 1, 1 },
                                         { 5, 5, 5 },     { 3, 256, 16 }, { 0, 4, 2 },
                                         { 2, 2000, 40 }, { 6, 24, 6 },   { 5, 100, 10 } };
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int dt = kt_float_dtypes[d];
            const int64_t *sh = shapes[s];
            void *g = kt_fill(dt, sh[0] * sh[1], -4.0, 4.0);
            bool ok = same_as_ref("random", dt, g, sh[0], sh[1], sh[2]);
            free(g);
            CHECK(ok);
        }
}

TEST(topk_softmax_ties) {
    for (int d = 0; d < 3; d++) {
        int dt = kt_float_dtypes[d];
        /* every logit equal; then three values only, so most ranks tie */
        void *g = kt_fill(dt, 4 * 64, 0.0, 0.0);
        CHECK(same_as_ref("all equal", dt, g, 4, 64, 8));
        free(g);
        g = kt_fill(dt, 40 * 64, 0.0, 0.0);
        for (int64_t i = 0; i < 40 * 64; i++)
            kt_st(dt, g, i, (double)((int)kt_uniform(0.0, 3.0) - 1));
        CHECK(same_as_ref("three values", dt, g, 40, 64, 8));
        free(g);
    }
}

TEST(topk_softmax_special) {
    for (int d = 0; d < 3; d++) {
        int dt = kt_float_dtypes[d];
        void *g = kt_fill(dt, 6 * 16, -2.0, 2.0);
        kt_st(dt, g, 0 * 16 + 0, NAN);       /* NaN first: ops/ref takes it first */
        kt_st(dt, g, 1 * 16 + 7, NAN);       /* NaN inside a row */
        kt_st(dt, g, 2 * 16 + 3, INFINITY);  /* +inf: the max, weight NaN */
        kt_st(dt, g, 3 * 16 + 5, -INFINITY); /* -inf: weight 0 */
        for (int64_t i = 0; i < 16; i++)
            kt_st(dt, g, 4 * 16 + i, -INFINITY); /* a row of -inf */
        CHECK(same_as_ref("NaN and infinities", dt, g, 6, 16, 4));
        free(g);
    }
}

TEST(topk_softmax_threads) {
    /* Enough tokens for the pool; the result may not depend on the split. */
    void *g = kt_fill(OPREG_DTYPE_BF16, 3000 * 64, -4.0, 4.0);
    CHECK(same_as_ref("3000 tokens", OPREG_DTYPE_BF16, g, 3000, 64, 8));
    free(g);
}

int main(void) {
    kt_report_isas("test_cpu_moe");
    RUN(topk_softmax_random);
    RUN(topk_softmax_ties);
    RUN(topk_softmax_special);
    RUN(topk_softmax_threads);
    return test_summary();
}
