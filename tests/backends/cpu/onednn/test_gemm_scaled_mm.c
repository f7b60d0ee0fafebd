/* opreg__onednn_scaled_mm (vLLM's cutlass_scaled_mm) against a reference
 * that accumulates in double, for per-tensor and per-row a-scales times
 * per-tensor and per-column b-scales, with and without bias, f32 and bf16
 * out. A second, bit-exact check replays the CUTLASS epilogue order in
 * float: the kernel promises that order, not just closeness. */
#include "backends/cpu/onednn/onednn.h"
#include "gemm_util.h"
#include "test.h"

#include <stdio.h>

struct shape {
    int64_t m, n, k;
};

static const struct shape shapes[] = {
    { 1, 1, 1 },     { 1, 17, 33 },    { 3, 5, 7 },     { 7, 33, 65 },
    { 33, 31, 129 }, { 64, 96, 1000 }, { 5, 40, 4099 },
};

struct mm_case {
    tt a, b, as, bs, bias, out;
    int64_t m, n, k;
};

/* b is [K, N] column-major: element (p, j) lives at p + j*K. */
static void mm_init(struct mm_case *c, int64_t m, int64_t n, int64_t k, bool per_row, bool per_col,
                    opreg_dtype out_dt) {
    c->m = m;
    c->n = n;
    c->k = k;
    tt_2d(&c->a, OPREG_DTYPE_I8, m, k);
    tt_2d(&c->b, OPREG_DTYPE_I8, k, n);
    c->b.strides[0] = 1;
    c->b.strides[1] = k;
    c->b.t.strides = c->b.strides;
    tt_1d(&c->as, OPREG_DTYPE_F32, per_row ? m : 1);
    tt_1d(&c->bs, OPREG_DTYPE_F32, per_col ? n : 1);
    tt_1d(&c->bias, out_dt, n);
    tt_2d(&c->out, out_dt, m, n);
    /* The full int8 range, -128 included: CPUs without VNNI multiply
     * u8 x s8 pairs into saturating int16, a known way to lose exactness. */
    for (size_t i = 0; i < c->a.bytes; i++)
        ((int8_t *)c->a.buf)[i] = (int8_t)(rnd_u32() & 0xFF);
    for (size_t i = 0; i < c->b.bytes; i++)
        ((int8_t *)c->b.buf)[i] = (int8_t)(rnd_u32() & 0xFF);
    for (int64_t i = 0; i < (per_row ? m : 1); i++)
        ((float *)c->as.buf)[i] = 1e-3f * (1.0f + 0.5f * rnd_f());
    for (int64_t i = 0; i < (per_col ? n : 1); i++)
        ((float *)c->bs.buf)[i] = 2e-3f * (1.0f + 0.5f * rnd_f());
    tt_fill(&c->bias, 4.0f);
}

static void mm_free(struct mm_case *c) {
    tt_free(&c->a);
    tt_free(&c->b);
    tt_free(&c->as);
    tt_free(&c->bs);
    tt_free(&c->bias);
    tt_free(&c->out);
}

static int64_t acc_of(const struct mm_case *c, int64_t i, int64_t j) {
    const int8_t *a = c->a.buf, *b = c->b.buf;
    int64_t acc = 0;
    for (int64_t p = 0; p < c->k; p++)
        acc += (int64_t)a[i * c->k + p] * b[p + j * c->k];
    return acc;
}

static int check_case(const struct mm_case *c, bool with_bias, const char *what) {
    bool bf16 = c->out.t.dtype.code == kDLBfloat;
    const float *as = c->as.buf, *bs = c->bs.buf;
    for (int64_t i = 0; i < c->m; i++) {
        for (int64_t j = 0; j < c->n; j++) {
            int64_t acc = acc_of(c, i, j);
            float sa = as[c->as.shape[0] == 1 ? 0 : i], sb = bs[c->bs.shape[0] == 1 ? 0 : j];
            double bias = with_bias ? tt_get(&c->bias, (size_t)j) : 0;
            double ref = (double)acc * sa * sb + bias;
            double got = tt_get(&c->out, (size_t)(i * c->n + j));
            double tol = 1e-6 * (fabs((double)acc * sa * sb) + fabs(bias)) + 1e-30 +
                         (bf16 ? fabs(ref) / 256.0 : 0);
            /* The CUTLASS order, in float, rounded once to out's dtype. */
            float t = (float)acc * sb;
            float v = with_bias ? fmaf(sa, t, (float)bias) : sa * t;
            double exact = bf16 ? opreg__bf16_to_f32(opreg__f32_to_bf16(v)) : v;
            if (!(fabs(got - ref) <= tol) || got != exact) {
                fprintf(stderr, "%s [%lld,%lld]: got %.9g, want %.9g (tol %.3g), exact %.9g\n",
                        what, (long long)i, (long long)j, got, ref, tol, exact);
                return 0;
            }
        }
    }
    return 1;
}

static int run_case(const struct shape *s, bool per_row, bool per_col, bool with_bias,
                    opreg_dtype out_dt) {
    struct mm_case c;
    char what[128];
    opreg_status st;
    int ok;
    mm_init(&c, s->m, s->n, s->k, per_row, per_col, out_dt);
    snprintf(what, sizeof what, "scaled_mm %s m=%lld n=%lld k=%lld row=%d col=%d bias=%d",
             opreg_dtype_name(out_dt), (long long)s->m, (long long)s->n, (long long)s->k, per_row,
             per_col, with_bias);
    st = opreg__onednn_scaled_mm(&c.out.t, &c.a.t, &c.b.t, &c.as.t, &c.bs.t,
                                 with_bias ? &c.bias.t : NULL);
    if (st != OPREG_OK) fprintf(stderr, "%s: %s\n", what, opreg_last_error());
    ok = st == OPREG_OK && check_case(&c, with_bias, what);
    mm_free(&c);
    return ok;
}

static void run_all(opreg_dtype out_dt) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int cfg = 0; cfg < 8; cfg++)
            if (!run_case(&shapes[s], cfg & 1, (cfg >> 1) & 1, (cfg >> 2) & 1, out_dt)) {
                TEST_FAIL_AT("%s shape %zu config %d", opreg_dtype_name(out_dt), s, cfg);
                return;
            }
}

TEST(scaled_mm_f32) {
    run_all(OPREG_DTYPE_F32);
}

TEST(scaled_mm_bf16) {
    run_all(OPREG_DTYPE_BF16);
}

/* Extremes: every product 128*128 or -128*127, so no int16 pair sum fits,
 * which catches a backend whose int8 path saturates. */
TEST(scaled_mm_extremes) {
    struct mm_case c;
    struct shape s = { 5, 9, 77 };
    mm_init(&c, s.m, s.n, s.k, true, true, OPREG_DTYPE_F32);
    for (size_t i = 0; i < c.a.bytes; i++)
        ((int8_t *)c.a.buf)[i] = -128;
    for (size_t i = 0; i < c.b.bytes; i++)
        ((int8_t *)c.b.buf)[i] = (int8_t)(i % 3 ? -128 : 127);
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&c.out.t, &c.a.t, &c.b.t, &c.as.t, &c.bs.t, NULL),
                 OPREG_OK);
    CHECK(check_case(&c, false, "scaled_mm extremes"));
    mm_free(&c);
}

/* K = 0: the accumulators are zero and the result is the bias. */
TEST(scaled_mm_k0) {
    struct mm_case c;
    mm_init(&c, 2, 3, 0, false, true, OPREG_DTYPE_BF16);
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&c.out.t, &c.a.t, &c.b.t, &c.as.t, &c.bs.t, &c.bias.t),
                 OPREG_OK);
    for (int i = 0; i < 6; i++)
        CHECK(tt_get(&c.out, (size_t)i) == tt_get(&c.bias, (size_t)(i % 3)));
    mm_free(&c);
}

int main(void) {
    RUN(scaled_mm_f32);
    RUN(scaled_mm_bf16);
    RUN(scaled_mm_extremes);
    RUN(scaled_mm_k0);
    return test_summary();
}
