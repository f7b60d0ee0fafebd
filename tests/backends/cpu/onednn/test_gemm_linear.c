/* opreg__onednn_linear against a double-accumulating reference, for f32 and
 * bf16, with and without bias, over shapes that miss every vector width:
 * M = 1, odd N, K not a multiple of 16, a 3-d input and K = 0. */
#include "backends/cpu/onednn/onednn.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "gemm_util.h"
#include "test.h"

#include <stdio.h>

struct shape {
    int64_t m, n, k;
};

static const struct shape shapes[] = {
    { 1, 1, 1 },    { 1, 17, 33 },   { 3, 5, 7 },     { 7, 33, 65 },
    { 16, 64, 48 }, { 33, 31, 129 }, { 64, 96, 300 }, { 129, 70, 1000 },
};

/* Compare out [M,N] with sum_k x*w + bias in double. The bound is relative
 * to sum |x*w| + |bias| (what f32 accumulation in any order can lose) plus,
 * for bf16, half an ulp of the rounded result. */
static int compare(const tt *out, const tt *x, const tt *w, const tt *bias, int64_t m, int64_t n,
                   int64_t k, const char *what) {
    bool bf16 = out->t.dtype.code == kDLBfloat;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = bias ? tt_get(bias, (size_t)j) : 0, mag = fabs(ref);
            double got = tt_get(out, (size_t)(i * n + j)), tol;
            for (int64_t p = 0; p < k; p++) {
                double prod = tt_get(x, (size_t)(i * k + p)) * tt_get(w, (size_t)(j * k + p));
                ref += prod;
                mag += fabs(prod);
            }
            tol = 1e-5 * mag + 1e-30 + (bf16 ? fabs(ref) / 256.0 : 0);
            if (!(fabs(got - ref) <= tol)) {
                fprintf(stderr, "%s [%lld,%lld]: got %.9g, want %.9g (tol %.3g)\n", what,
                        (long long)i, (long long)j, got, ref, tol);
                return 0;
            }
        }
    }
    return 1;
}

static int run_case(opreg_dtype dt, int64_t m, int64_t n, int64_t k, bool with_bias) {
    tt x, w, b, out;
    char what[96];
    opreg_status st;
    int ok;
    tt_2d(&x, dt, m, k);
    tt_2d(&w, dt, n, k);
    tt_1d(&b, dt, n);
    tt_2d(&out, dt, m, n);
    tt_fill(&x, 1.0f);
    tt_fill(&w, 1.0f);
    tt_fill(&b, 1.0f);
    snprintf(what, sizeof what, "linear %s m=%lld n=%lld k=%lld bias=%d", opreg_dtype_name(dt),
             (long long)m, (long long)n, (long long)k, with_bias);
    st = opreg__onednn_linear(&out.t, &x.t, &w.t, with_bias ? &b.t : NULL);
    if (st != OPREG_OK) fprintf(stderr, "%s: %s\n", what, opreg_last_error());
    ok = st == OPREG_OK && compare(&out, &x, &w, with_bias ? &b : NULL, m, n, k, what);
    tt_free(&x);
    tt_free(&w);
    tt_free(&b);
    tt_free(&out);
    return ok;
}

static void run_all(opreg_dtype dt) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int bias = 0; bias < 2; bias++)
            if (!run_case(dt, shapes[s].m, shapes[s].n, shapes[s].k, bias)) {
                TEST_FAIL_AT("%s case %zu bias %d", opreg_dtype_name(dt), s, bias);
                return;
            }
}

TEST(linear_f32) {
    run_all(OPREG_DTYPE_F32);
}

TEST(linear_bf16) {
    run_all(OPREG_DTYPE_BF16);
}

/* input [2, 3, K] flattens to M = 6; out is [2, 3, N]. */
TEST(linear_3d_input) {
    int64_t in_shape[3] = { 2, 3, 19 }, out_shape[3] = { 2, 3, 11 };
    tt x, w, b, out, x2, out2;
    tt_init(&x, OPREG_DTYPE_F32, 3, in_shape);
    tt_2d(&w, OPREG_DTYPE_F32, 11, 19);
    tt_1d(&b, OPREG_DTYPE_F32, 11);
    tt_init(&out, OPREG_DTYPE_F32, 3, out_shape);
    tt_fill(&x, 1.0f);
    tt_fill(&w, 1.0f);
    tt_fill(&b, 1.0f);
    tt_2d(&x2, OPREG_DTYPE_F32, 6, 19);
    tt_2d(&out2, OPREG_DTYPE_F32, 6, 11);
    memcpy(x2.buf, x.buf, x.bytes);
    CHECK_EQ_INT(opreg__onednn_linear(&out.t, &x.t, &w.t, &b.t), OPREG_OK);
    CHECK(compare(&out, &x2, &w, &b, 6, 11, 19, "linear 3-d"));
    tt_free(&x);
    tt_free(&w);
    tt_free(&b);
    tt_free(&out);
    tt_free(&x2);
    tt_free(&out2);
}

/* K = 0 is an empty sum: every row is the bias, or zero without one. */
TEST(linear_k0) {
    tt x, w, b, out;
    tt_2d(&x, OPREG_DTYPE_BF16, 3, 0);
    tt_2d(&w, OPREG_DTYPE_BF16, 5, 0);
    tt_1d(&b, OPREG_DTYPE_BF16, 5);
    tt_2d(&out, OPREG_DTYPE_BF16, 3, 5);
    tt_fill(&b, 1.0f);
    tt_fill(&out, 1.0f);
    CHECK_EQ_INT(opreg__onednn_linear(&out.t, &x.t, &w.t, &b.t), OPREG_OK);
    for (int i = 0; i < 15; i++)
        CHECK(tt_get(&out, (size_t)i) == tt_get(&b, (size_t)(i % 5)));
    CHECK_EQ_INT(opreg__onednn_linear(&out.t, &x.t, &w.t, NULL), OPREG_OK);
    for (int i = 0; i < 15; i++)
        CHECK(tt_get(&out, (size_t)i) == 0.0);
    tt_free(&x);
    tt_free(&w);
    tt_free(&b);
    tt_free(&out);
}

/* The op's shape check, which the Meta function uses, works on Meta tensors (no data, no CPU). */
TEST(linear_out_shape_meta) {
    int64_t in_shape[3] = { 4, 5, 32 }, w_shape[2] = { 7, 32 }, shape[OPREG__MAX_DIMS];
    opreg_tensor *x = NULL, *w = NULL;
    int ndim = 0;
    opreg_dtype dt = OPREG_DTYPE_F32;
    CHECK_EQ_INT(opreg_tensor_empty_meta(&x, OPREG_DTYPE_BF16, 3, in_shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_meta(&w, OPREG_DTYPE_BF16, 2, w_shape), OPREG_OK);
    CHECK_EQ_INT(opreg__check_linear(x, w, NULL, &ndim, shape, &dt), OPREG_OK);
    CHECK_EQ_INT(ndim, 3);
    CHECK_EQ_INT(shape[0], 4);
    CHECK_EQ_INT(shape[1], 5);
    CHECK_EQ_INT(shape[2], 7);
    CHECK_EQ_INT(dt, OPREG_DTYPE_BF16);
    opreg_tensor_free(x);
    opreg_tensor_free(w);
}

int main(void) {
    RUN(linear_f32);
    RUN(linear_bf16);
    RUN(linear_3d_input);
    RUN(linear_k0);
    RUN(linear_out_shape_meta);
    return test_summary();
}
