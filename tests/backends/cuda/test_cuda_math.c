/* The float math of the CUDA kernels, tested on the CPU: the activations of
 * ops/act_math.h against the reference kernels (double), the quantisation
 * steps of ops/quant_math.h on their edge cases, and the cache layouts of
 * ops/cache_layout.h. These headers are compiled into the CUDA kernels
 * unchanged (OPREG_HD), so this covers their arithmetic where no GPU is. */
#include "ops/act_math.h"
#include "ops/cache_layout.h"
#include "ops/quant_math.h"
#include "opreg/opreg.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 24001

/* Run op NAME (elementwise, or gated with y = 1) on the Reference key over
 * xs, and compare with @p fn within |d| <= 2e-6 + 2e-5 |ref|. */
static int compare_act(const char *name, bool gated, float (*fn)(float), const float *xs) {
    const opreg_op *op;
    DLTensor *in = NULL, *out = NULL;
    int64_t ishape[2] = { 1, gated ? 2 * N : N }, oshape[2] = { 1, N };
    int bad = 0;
    if (opreg_op_find(&op, opreg_registry_default(), name) != OPREG_OK) return -1;
    if (opreg_tensor_empty_cpu(&in, OPREG_DTYPE_F32, 2, ishape) != OPREG_OK ||
        opreg_tensor_empty_cpu(&out, OPREG_DTYPE_F32, 2, oshape) != OPREG_OK)
        return -1;
    float *pi = in->data, *po = out->data;
    for (int i = 0; i < N; i++) {
        pi[i] = xs[i];
        if (gated) pi[N + i] = 1.0f;
    }
    opreg_value args[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    if (opreg_call_boxed_key(op, OPREG_KEY_REFERENCE, args, 2, NULL, 0, NULL, 0) != OPREG_OK)
        bad = -1;
    for (int i = 0; i < N && bad >= 0; i++) {
        double want = po[i], got = fn(xs[i]);
        if (!(fabs(got - want) <= 2e-6 + 2e-5 * fabs(want))) {
            if (bad < 5)
                fprintf(stderr, "%s(%.9g): %.9g, the reference %.9g\n", name, xs[i], got, want);
            bad++;
        }
    }
    opreg_tensor_free(in);
    opreg_tensor_free(out);
    return bad;
}

TEST(activations_match_the_reference) {
    float *xs = malloc(N * sizeof *xs);
    CHECK(xs != NULL);
    for (int i = 0; i < N; i++)
        xs[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
    xs[0] = -80.0f, xs[1] = 80.0f, xs[2] = 0.0f, xs[3] = -0.0f, xs[4] = 1e-30f;
    struct {
        const char *name;
        bool gated;
        float (*fn)(float);
    } acts[] = {
        { "_C::silu_and_mul", true, opreg__act_silu },
        { "_C::gelu_and_mul", true, opreg__act_gelu_erf },
        { "_C::gelu_tanh_and_mul", true, opreg__act_gelu_tanh },
        { "_C::gelu_new", false, opreg__act_gelu_new },
        { "_C::gelu_fast", false, opreg__act_gelu_fast },
        { "_C::gelu_quick", false, opreg__act_gelu_quick },
    };
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        int bad = compare_act(acts[a].name, acts[a].gated, acts[a].fn, xs);
        if (bad != 0) TEST_FAIL_AT("%s: %d values outside tolerance", acts[a].name, bad);
    }
    free(xs);
}

TEST(quantisation_steps) {
    CHECK_EQ_INT(opreg__int8_rne_sat(2.5f), 2);
    CHECK_EQ_INT(opreg__int8_rne_sat(3.5f), 4);
    CHECK_EQ_INT(opreg__int8_rne_sat(-2.5f), -2);
    CHECK_EQ_INT(opreg__int8_rne_sat(126.5f), 126);
    CHECK_EQ_INT(opreg__int8_rne_sat(127.5f), 127);
    CHECK_EQ_INT(opreg__int8_rne_sat(-128.5f), -128);
    CHECK_EQ_INT(opreg__int8_rne_sat(1e9f), 127);
    CHECK_EQ_INT(opreg__int8_rne_sat(-INFINITY), -128);
    CHECK_EQ_INT(opreg__int8_rne_sat(NAN), 0);
    CHECK_EQ_INT(opreg__fp8_quant_one(1000.0f), 0x7E);  /* 448 */
    CHECK_EQ_INT(opreg__fp8_quant_one(-1000.0f), 0xFE); /* -448 */
    CHECK_EQ_INT(opreg__fp8_quant_one(NAN), 0x7E);      /* fmin/fmax drop the NaN */
    CHECK_EQ_INT(opreg__fp8_quant_one(1.0f), 0x38);
    CHECK_EQ_INT(opreg__fp8_quant_one(0.0f), 0x00);
}

/* Every layout maps its elements one to one onto the cache; with a block
 * stride twice the dense one (kv[:, 0] of a combined cache) each block
 * stays within the first half of its period, so kv[:, 1] fills the rest. */
TEST(cache_layouts_are_bijections) {
    enum { NB = 3, H = 2, D = 8, X = 4, BS = 5, BLK = H * D * BS };
    for (int period = 1; period <= 2; period++) {
        int64_t stride = (int64_t)period * BLK;
        unsigned char seen_k[NB * 2 * BLK], seen_v[NB * 2 * BLK], seen_f[NB * 2 * BLK];
        memset(seen_k, 0, sizeof seen_k);
        memset(seen_v, 0, sizeof seen_v);
        memset(seen_f, 0, sizeof seen_f);
        for (int b = 0; b < NB; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < D; i++)
                    for (int o = 0; o < BS; o++) {
                        int64_t k = opreg__kcache_index(b, stride, h, i, D, X, o, BS);
                        int64_t v = opreg__vcache_index(b, stride, h, i, D, o, BS);
                        int64_t f =
                            opreg__flash_cache_index(b * BS + o, stride, BS, H * D, h * D + i);
                        CHECK(k >= b * stride && k < b * stride + BLK);
                        CHECK(v >= b * stride && v < b * stride + BLK);
                        CHECK(f >= b * stride && f < b * stride + BLK);
                        seen_k[k]++, seen_v[v]++, seen_f[f]++;
                    }
        for (int64_t i = 0; i < NB * stride; i++) {
            int want = i % stride < BLK;
            CHECK_EQ_INT(seen_k[i], want);
            CHECK_EQ_INT(seen_v[i], want);
            CHECK_EQ_INT(seen_f[i], want);
        }
    }
    /* x consecutive dims of one token are adjacent in the key cache */
    CHECK_EQ_INT(opreg__kcache_index(1, BLK, 1, 5, D, X, 2, BS) -
                     opreg__kcache_index(1, BLK, 1, 4, D, X, 2, BS),
                 1);
}

int main(void) {
    RUN(activations_match_the_reference);
    RUN(quantisation_steps);
    RUN(cache_layouts_are_bijections);
    return test_summary();
}
