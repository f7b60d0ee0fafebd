/* The decode-sized GEMM kernels (gemv.c) on every ISA path here, against
 * double references: linear in f32, f16 and bf16, cutlass_scaled_mm in
 * int8 and fp8 e4m3fn with every scale layout, with and without bias, for
 * M = 1..16 and sizes that miss the vector widths (K = 1, odd K, K and N
 * not multiples of the lanes, the panels' blocks) or are large enough to
 * be split over threads. The kernels sum in f32 (int32 for int8), in
 * another order than the reference: each element may differ by kt_rtol of
 * T relative to its magnitude plus the sum of the magnitudes of its
 * products.
 *
 * Where the avx512_bf16 path runs, every case runs twice: with the FMA
 * kernels and with the pairs kernels (VDPBF16PS, for bf16 linear and fp8),
 * whichever this CPU would choose. */
#include "kern_test.h"

/* Whether this pass forces the pairs kernels on (opreg__cpu_set_gemv_pairs). */
static int pairs_pass;

/* The path's name in messages, and whether the pairs kernels were on. */
static const char *path_name(int isa) {
    static char name[48];
    snprintf(name, sizeof name, "%s%s", opreg__cpu_isa_name(isa),
             pairs_pass && isa == OPREG__ISA_AVX512_BF16 ? "+vdpbf16ps" : "");
    return name;
}

struct nk {
    int64_t n, k;
};
/* The last four: the panel kernels' edges, a block of k (128 values, 512
 * for int8) and one more, a panel of 16 weight rows and two more. */
static const struct nk sizes[] = {
    { 1, 1 },    { 5, 1 },  { 3, 2 },    { 7, 3 },   { 4, 16 },  { 9, 17 },
    { 13, 31 },  { 4, 32 }, { 17, 33 },  { 6, 63 },  { 8, 64 },  { 3, 65 },
    { 33, 257 }, { 2, 0 },  { 18, 128 }, { 5, 129 }, { 3, 512 }, { 2, 513 },
};
#define NSIZES (sizeof sizes / sizeof sizes[0])
/* Large enough to be spread over threads (and N odd). */
static const struct nk big = { 1027, 4099 };

static const int out_dtypes[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };

static bool linear_case(int dt, int64_t m, int64_t n, int64_t k, bool with_bias) {
    void *x = kt_fill(dt, m * k, -1, 1), *w = kt_fill(dt, n * k, -1, 1);
    void *bias = kt_fill(dt, n, -1, 1), *out = malloc((size_t)(m * n + 1) * kt_es(dt));
    double *want = malloc((size_t)(m * n + 1) * sizeof(double));
    double *mag = malloc((size_t)(m * n + 1) * sizeof(double));
    bool ok = true;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = with_bias ? kt_ld(dt, bias, j) : 0, sum = fabs(acc);
            for (int64_t p = 0; p < k; p++) {
                double t = kt_ld(dt, x, i * k + p) * kt_ld(dt, w, j * k + p);
                acc += t, sum += fabs(t);
            }
            want[i * n + j] = kt_round(dt, acc);
            mag[i * n + j] = sum;
        }
    KT_FOR_EACH_ISA(isa) {
        memset(out, 0x7f, (size_t)(m * n) * kt_es(dt));
        opreg__cpu_gemv_linear(isa, dt, out, x, w, with_bias ? bias : NULL, m, n, k);
        for (int64_t e = 0; e < m * n && ok; e++) {
            double g = kt_ld(dt, out, e);
            if (!(fabs(g - want[e]) <= kt_rtol(dt) * (fabs(want[e]) + mag[e]))) {
                fprintf(stderr,
                        "linear [%s, %s] m %lld n %lld k %lld bias %d: element %lld got %.9g "
                        "want %.9g\n",
                        path_name(isa), kt_dt_name(dt), (long long)m, (long long)n, (long long)k,
                        with_bias, (long long)e, g, want[e]);
                ok = false;
            }
        }
    }
    free(x), free(w), free(bias), free(out), free(want), free(mag);
    return ok;
}

TEST(linear_every_path_and_edge) {
    for (int d = 0; d < 3; d++)
        for (int64_t m = 1; m <= 16; m++)
            for (size_t s = 0; s < NSIZES; s++)
                if (!linear_case(kt_float_dtypes[d], m, sizes[s].n, sizes[s].k, (m + s) % 2)) {
                    test_current_failed = 1;
                    return;
                }
}

TEST(linear_large_threaded) {
    static const int64_t ms[] = { 1, 5, 16 };
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 3; i++)
            if (!linear_case(kt_float_dtypes[d], ms[i], big.n, big.k, i != 1)) {
                test_current_failed = 1;
                return;
            }
}

/* Random int8 values, or e4m3fn codes other than the NaNs (0x7F, 0xFF). */
static uint8_t *codes(bool fp8, int64_t count) {
    uint8_t *c = malloc((size_t)(count > 0 ? count : 1));
    for (int64_t i = 0; i < count; i++) {
        int v = (int)kt_uniform(0, 256);
        if (fp8 && (v & 0x7F) == 0x7F) v ^= 1;
        c[i] = (uint8_t)v;
    }
    return c;
}

static double code_value(bool fp8, uint8_t c) {
    return fp8 ? (double)opreg__e4m3fn_to_f32(c) : (double)(int8_t)c;
}

struct mm_case {
    bool fp8, per_token, per_channel, with_bias;
    int out_dt;
    int64_t m, n, k, a_pad, b_pad;
    bool nans; /* fp8: NaN codes in some rows of a and b */
};

/* NaN codes (0x7F, 0xFF in turn) at a few places of some rows: weight rows
 * 0, 5 and the last (at k - 1, in the first block, past the first 128),
 * and input row 1. Their results are NaN, the others as without. */
static void put_nans(const struct mm_case *c, uint8_t *a, int64_t as, uint8_t *b, int64_t bs) {
    const int64_t rows[] = { 0, 5, c->n - 1 }, at[] = { c->k - 1, 3, c->k > 130 ? 130 : 0 };
    for (int r = 0; r < 3; r++)
        if (rows[r] < c->n) b[rows[r] * bs + at[r]] = r % 2 ? 0xFF : 0x7F;
    if (c->m > 1) a[as + c->k / 2] = 0xFF;
}

static bool scaled_mm_case(const struct mm_case *c) {
    int64_t m = c->m, n = c->n, k = c->k, as = k + c->a_pad, bs = k + c->b_pad;
    int dt = c->out_dt;
    uint8_t *a = codes(c->fp8, m * as), *b = codes(c->fp8, n * bs);
    float *sa = malloc((size_t)m * sizeof(float)), *sb = malloc((size_t)n * sizeof(float));
    void *bias = kt_fill(dt, n, -1, 1), *out = malloc((size_t)(m * n + 1) * kt_es(dt));
    double *want = malloc((size_t)(m * n + 1) * sizeof(double));
    double *mag = malloc((size_t)(m * n + 1) * sizeof(double));
    bool ok = true;
    if (c->nans) put_nans(c, a, as, b, bs);
    for (int64_t i = 0; i < m; i++)
        sa[i] = (float)kt_uniform(1e-3, 2e-3);
    for (int64_t j = 0; j < n; j++)
        sb[j] = (float)kt_uniform(1e-3, 2e-3);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0, sum = 0,
                   s = (double)sa[c->per_token ? i : 0] * sb[c->per_channel ? j : 0];
            for (int64_t p = 0; p < k; p++) {
                double t = code_value(c->fp8, a[i * as + p]) * code_value(c->fp8, b[j * bs + p]);
                acc += t, sum += fabs(t);
            }
            acc = (double)sa[c->per_token ? i : 0] * (acc * (double)sb[c->per_channel ? j : 0]);
            if (c->with_bias) acc += kt_ld(dt, bias, j), sum += fabs(kt_ld(dt, bias, j)) / s;
            want[i * n + j] = kt_round(dt, acc);
            mag[i * n + j] = sum * s;
        }
    KT_FOR_EACH_ISA(isa) {
        memset(out, 0x7f, (size_t)(m * n) * kt_es(dt));
        opreg__cpu_gemv_scaled_mm(isa, c->fp8 ? OPREG_DTYPE_F8_E4M3FN : OPREG_DTYPE_I8, dt, out, a,
                                  as, b, bs, sa, c->per_token, sb, c->per_channel,
                                  c->with_bias ? bias : NULL, m, n, k);
        for (int64_t e = 0; e < m * n && ok; e++) {
            double g = kt_ld(dt, out, e);
            if (isnan(want[e]) ? !isnan(g)
                               : !(fabs(g - want[e]) <= kt_rtol(dt) * (fabs(want[e]) + mag[e]))) {
                fprintf(stderr,
                        "scaled_mm [%s, %s out] %s m %lld n %lld k %lld per_token %d "
                        "per_channel %d bias %d nans %d: element %lld got %.9g want %.9g\n",
                        path_name(isa), kt_dt_name(dt), c->fp8 ? "fp8" : "int8", (long long)m,
                        (long long)n, (long long)k, c->per_token, c->per_channel, c->with_bias,
                        c->nans, (long long)e, g, want[e]);
                ok = false;
            }
        }
    }
    free(a), free(b), free(sa), free(sb), free(bias), free(out), free(want), free(mag);
    return ok;
}

TEST(scaled_mm_every_path_and_edge) {
    for (int fp8 = 0; fp8 < 2; fp8++)
        for (int o = 0; o < 3; o++)
            for (int64_t m = 1; m <= 16; m++)
                for (size_t s = 0; s < NSIZES; s++) {
                    int v = (int)(m + s + o);
                    struct mm_case c = { fp8,           v & 1,         (v >> 1) & 1,
                                         (v >> 2) & 1,  out_dtypes[o], m,
                                         sizes[s].n,    sizes[s].k,    s % 3 ? 0 : 5,
                                         s % 2 ? 3 : 0, false };
                    if (!scaled_mm_case(&c)) {
                        test_current_failed = 1;
                        return;
                    }
                }
}

/* fp8 NaN codes in the weights and the inputs, on the tiles (m <= 4) and
 * the panels, at the edges of k's blocks and vectors. */
TEST(scaled_mm_fp8_nan_codes) {
    static const int64_t ms[] = { 1, 2, 4, 5, 16 }, ks[] = { 129, 200, 16 };
    for (int i = 0; i < 5; i++)
        for (int q = 0; q < 3; q++) {
            struct mm_case c = { true,  i & 1, true,  q == 1,         out_dtypes[(i + q) % 3],
                                 ms[i], 18,    ks[q], q == 2 ? 5 : 0, 0,
                                 true };
            if (!scaled_mm_case(&c)) {
                test_current_failed = 1;
                return;
            }
        }
}

TEST(scaled_mm_large_threaded) {
    static const int64_t ms[] = { 1, 5, 16 };
    for (int fp8 = 0; fp8 < 2; fp8++)
        for (int i = 0; i < 3; i++) {
            struct mm_case c = { fp8,   i & 1, true, i != 1, out_dtypes[i], ms[i],
                                 big.n, big.k, 0,    0,      false };
            if (!scaled_mm_case(&c)) {
                test_current_failed = 1;
                return;
            }
        }
}

/* Each output row has the same bits whatever the number of rows in the
 * call, so that a request's results do not depend on the batch it came
 * in: the tiles (up to four rows), the panels past them and each row
 * alone add the same products in the same order and round them the same
 * way. linear in f32 and f16, cutlass_scaled_mm in int8 and fp8 to every
 * output dtype; bf16 linear only with the pairs kernels, whose panels add
 * pairs as the tiles do (VDPBF16PS) where the FMA panels do not. */
struct rows_case {
    int kind; /* 0: linear, 1: int8 scaled_mm, 2: fp8 scaled_mm */
    int dt;   /* linear's dtype, or the output's */
};

static void rows_call(int isa, const struct rows_case *c, void *out, const void *in, const void *w,
                      const float *sa, const float *sb, const void *bias, int64_t m, int64_t n,
                      int64_t k) {
    if (c->kind == 0)
        opreg__cpu_gemv_linear(isa, c->dt, out, in, w, bias, m, n, k);
    else
        opreg__cpu_gemv_scaled_mm(isa, c->kind == 2 ? OPREG_DTYPE_F8_E4M3FN : OPREG_DTYPE_I8, c->dt,
                                  out, in, k, w, k, sa, true, sb, true, bias, m, n, k);
}

static bool rows_case_run(const struct rows_case *c) {
    enum { MAXM = 16, N = 37 }; /* N: a partial panel */
    static const int64_t ms[] = { 16, 7, 5, 4 };
    const int64_t n = N, k = 600; /* k past an int8 block */
    size_t es = kt_es(c->dt), ies = c->kind ? 1 : es;
    void *in = c->kind ? (void *)codes(c->kind == 2, MAXM * k) : kt_fill(c->dt, MAXM * k, -1, 1);
    void *w = c->kind ? (void *)codes(c->kind == 2, n * k) : kt_fill(c->dt, n * k, -1, 1);
    void *bias = kt_fill(c->dt, n, -1, 1);
    char *all = malloc((size_t)(MAXM * n) * es), *one = malloc((size_t)n * es);
    float sa[MAXM], sb[N];
    bool ok = true;
    for (int i = 0; i < MAXM; i++)
        sa[i] = (float)kt_uniform(1e-3, 2e-3);
    for (int j = 0; j < n; j++)
        sb[j] = (float)kt_uniform(1e-3, 2e-3);
    KT_FOR_EACH_ISA(isa) {
        if (c->kind == 0 && c->dt == OPREG_DTYPE_BF16 &&
            !(pairs_pass && isa == OPREG__ISA_AVX512_BF16))
            continue;
        for (size_t t = 0; t < sizeof ms / sizeof ms[0] && ok; t++) {
            rows_call(isa, c, all, in, w, sa, sb, bias, ms[t], n, k);
            for (int64_t i = 0; i < ms[t] && ok; i++) {
                rows_call(isa, c, one, (const char *)in + (size_t)(i * k) * ies, w, sa + i, sb,
                          bias, 1, n, k);
                if (memcmp(one, all + (size_t)(i * n) * es, (size_t)n * es) != 0) {
                    fprintf(stderr,
                            "rows [%s] %s %s: row %lld of %lld differs from the row alone\n",
                            path_name(isa),
                            c->kind == 0   ? "linear"
                            : c->kind == 1 ? "int8"
                                           : "fp8",
                            kt_dt_name(c->dt), (long long)i, (long long)ms[t]);
                    ok = false;
                }
            }
        }
    }
    free(in), free(w), free(bias), free(all), free(one);
    return ok;
}

TEST(rows_independent_of_m) {
    static const struct rows_case cases[] = {
        { 0, OPREG_DTYPE_F32 }, { 0, OPREG_DTYPE_F16 },  { 1, OPREG_DTYPE_F32 },
        { 1, OPREG_DTYPE_F16 }, { 1, OPREG_DTYPE_BF16 }, { 2, OPREG_DTYPE_F32 },
        { 2, OPREG_DTYPE_F16 }, { 2, OPREG_DTYPE_BF16 }, { 0, OPREG_DTYPE_BF16 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (!rows_case_run(&cases[c])) {
            test_current_failed = 1;
            return;
        }
}

/* The choice between the FMA and the pairs kernels: made once, by
 * OPREG_CPU_VDPBF16PS or by timing, and never the pairs without the path. */
TEST(pairs_choice) {
    int prev = opreg__cpu_set_gemv_pairs(-1), on = opreg__cpu_gemv_pairs();
    printf("test_cpu_gemv: this CPU's choice: %s kernels\n", on ? "pairs (VDPBF16PS)" : "FMA");
    if (on != 0 && on != 1) TEST_FAIL_AT("opreg__cpu_gemv_pairs() = %d", on);
    if (opreg__cpu_gemv_pairs() != on) TEST_FAIL_AT("the choice changed between two calls");
    if (on && opreg__cpu_isa() < OPREG__ISA_AVX512_BF16)
        TEST_FAIL_AT("pairs kernels chosen without the avx512_bf16 path");
    int cap = opreg__cpu_set_isa_limit(OPREG__ISA_AVX512);
    opreg__cpu_set_gemv_pairs(1);
    if (opreg__cpu_gemv_pairs() != 0) TEST_FAIL_AT("pairs kernels on the avx512 path");
    opreg__cpu_set_isa_limit(cap);
    opreg__cpu_set_gemv_pairs(prev);
}

/* Which calls the pairs kernels take under each choice: none when off;
 * bf16 past one tile of rows and fp8 at every m when on; and none at all
 * on a path without them (avx512), or for fp8 without AVX512-VBMI. */
TEST(pairs_by_rows) {
    int isa = OPREG__ISA_AVX512_BF16;
    if (opreg__cpu_isa() < isa) {
        printf("test_cpu_gemv: pairs kernels NOT CHECKABLE on this CPU (no AVX512-BF16)\n");
        return;
    }
    bool vbmi = opreg__cpu_has_vbmi();
    const int f8 = OPREG_DTYPE_F8_E4M3FN, bf = OPREG_DTYPE_BF16;
    int prev = opreg__cpu_set_gemv_pairs(OPREG__GEMV_PAIRS_OFF);
    for (int64_t m = 1; m <= 16; m++)
        if (opreg__cpu_gemv_takes_pairs(isa, f8, m) || opreg__cpu_gemv_takes_pairs(isa, bf, m))
            TEST_FAIL_AT("pairs kernels at m = %lld with the choice off", (long long)m);
    opreg__cpu_set_gemv_pairs(OPREG__GEMV_PAIRS_ON);
    for (int64_t m = 1; m <= 16; m++) {
        if (opreg__cpu_gemv_takes_pairs(isa, f8, m) != vbmi)
            TEST_FAIL_AT("fp8 at m = %lld with the choice on", (long long)m);
        if (opreg__cpu_gemv_takes_pairs(isa, bf, m) != (m > 4))
            TEST_FAIL_AT("bf16 at m = %lld with the choice on (tiles of 4 rows)", (long long)m);
        if (opreg__cpu_gemv_takes_pairs(isa, OPREG_DTYPE_F32, m))
            TEST_FAIL_AT("f32 at m = %lld took the pairs kernels", (long long)m);
    }
    if (opreg__cpu_gemv_takes_pairs(OPREG__ISA_AVX512, f8, 1) ||
        opreg__cpu_gemv_takes_pairs(OPREG__ISA_AVX512, bf, 16))
        TEST_FAIL_AT("pairs kernels on the avx512 path");
    opreg__cpu_set_gemv_pairs(prev);
}

/* The tiles' fetch ahead: from 1 input row on Intel CPUs, from 3
 * elsewhere, the vendor read as /proc/cpuinfo names it where it can be
 * read. */
TEST(fetch_rows_by_vendor) {
    int rows = opreg__cpu_gemv_fetch_rows();
    bool intel = opreg__cpu_is_intel();
    printf("test_cpu_gemv: %s CPU: tiles of %d rows or more fetch ahead\n",
           intel ? "an Intel" : "a non-Intel", rows);
    if (rows != (intel ? 1 : 3))
        TEST_FAIL_AT("fetch rows %d on %s CPU", rows, intel ? "an Intel" : "another");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    int seen = -1;
    while (seen < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, "vendor_id", 9) == 0) seen = strstr(line, "GenuineIntel") != NULL;
    fclose(f);
    if (seen >= 0 && seen != intel)
        TEST_FAIL_AT("/proc/cpuinfo says %s, opreg__cpu_is_intel() %d",
                     seen ? "Intel" : "not Intel", intel);
}

int main(void) {
    kt_report_isas("test_cpu_gemv");
    RUN(pairs_choice);
    RUN(pairs_by_rows);
    RUN(fetch_rows_by_vendor);
    for (pairs_pass = 0; pairs_pass < 2; pairs_pass++) {
        if (pairs_pass && opreg__cpu_isa_detected() < OPREG__ISA_AVX512_BF16) {
            printf("test_cpu_gemv: pairs kernels NOT CHECKABLE on this CPU (no AVX512-BF16)\n");
            break;
        }
        if (pairs_pass && !opreg__cpu_has_vbmi())
            printf("test_cpu_gemv: fp8 pairs kernels NOT CHECKABLE on this CPU (no AVX512-VBMI)\n");
        opreg__cpu_set_gemv_pairs(pairs_pass);
        RUN(linear_every_path_and_edge);
        RUN(linear_large_threaded);
        RUN(scaled_mm_every_path_and_edge);
        RUN(scaled_mm_fp8_nan_codes);
        RUN(scaled_mm_large_threaded);
        RUN(rows_independent_of_m);
    }
    /* fp8 on the FMA kernels that widen by conversions, which the split
     * kernels replace on AVX-512 CPUs with VBMI (and so would go untested
     * there on those paths) */
    pairs_pass = 0;
    int split = opreg__cpu_set_gemv_split(0), pairs = opreg__cpu_set_gemv_pairs(0);
    RUN(scaled_mm_every_path_and_edge);
    RUN(scaled_mm_fp8_nan_codes);
    RUN(scaled_mm_large_threaded);
    RUN(rows_independent_of_m);
    opreg__cpu_set_gemv_split(split);
    opreg__cpu_set_gemv_pairs(pairs);
    return test_summary();
}
