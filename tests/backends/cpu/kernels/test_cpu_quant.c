/* The int8 and fp8 quant kernels on every ISA path here. ops-reference.md
 * §3.5 fixes the float arithmetic, so results are compared bit for bit with
 * a reference that follows it step for step:
 *   static int8   sat(rne(x / scale)), NaN -> 0;
 *   dynamic int8  scale = amax / 127, out = sat(rne(x * (127 / amax)));
 *   fp8 e4m3fn    e4m3fn(fmaxf(-448, fminf(x * (1/scale), 448))). */
#include "kern_test.h"

static int8_t ref_int8(float q) {
    if (isnan(q)) return 0;
    q = nearbyintf(q);
    return q > 127.0f ? 127 : q < -128.0f ? -128 : (int8_t)q;
}

static uint8_t ref_fp8(float q) {
    return opreg__f32_to_e4m3fn(fmaxf(-448.0f, fminf(q, 448.0f)));
}

/* Random data plus the special values at the front: ties, saturation,
 * NaN, infinities, fp8 subnormals and the fp8 limits. */
static void *quant_input(int dt, int64_t n, double range) {
    static const float special[] = { 0.5f,     1.5f,      2.5f,          -0.5f,         -2.5f,
                                     127.5f,   -128.5f,   200.0f,        -300.0f,       NAN,
                                     INFINITY, -INFINITY, 0.0009765625f, 0.0029296875f, 448.0f,
                                     464.0f,   -470.0f,   1e-30f };
    void *p = kt_fill(dt, n, -range, range);
    for (int64_t i = 0; i < n && i < (int64_t)(sizeof special / sizeof special[0]); i++)
        kt_st(dt, p, i, special[i]);
    return p;
}

TEST(static_int8_and_fp8_exact) {
    static const float scales[] = { 0.05f, 1.0f, 0.37f };
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < KT_NSHAPES; s++)
            for (int k = 0; k < 3; k++) {
                int dt = kt_float_dtypes[d];
                int64_t n = kt_shapes[s].rows * kt_shapes[s].width;
                float sc = scales[k], inv = 1.0f / sc;
                void *in = quant_input(dt, n, 8.0);
                int8_t *o8 = malloc((size_t)n), *w8 = malloc((size_t)n);
                uint8_t *of = malloc((size_t)n), *wf = malloc((size_t)n);
                for (int64_t i = 0; i < n; i++) {
                    float x = (float)kt_ld(dt, in, i);
                    w8[i] = ref_int8(x / sc);
                    wf[i] = ref_fp8(x * inv);
                }
                KT_FOR_EACH_ISA(isa) {
                    memset(o8, 0x55, (size_t)n);
                    memset(of, 0x55, (size_t)n);
                    opreg__cpu_int8_static(isa, dt, o8, in, n, sc);
                    opreg__cpu_fp8_static(isa, dt, of, in, n, sc);
                    if (!kt_check_bytes("static int8", isa, o8, w8, (size_t)n) ||
                        !kt_check_bytes("static fp8", isa, of, wf, (size_t)n)) {
                        fprintf(stderr, "  %s n %d scale %g\n", kt_dt_name(dt), (int)n, sc);
                        test_current_failed = 1;
                    }
                }
                free(in), free(o8), free(w8), free(of), free(wf);
                if (test_current_failed) return;
            }
}

TEST(dynamic_int8_exact) {
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < KT_NSHAPES; s++) {
            int dt = kt_float_dtypes[d];
            int64_t rows = kt_shapes[s].rows, h = kt_shapes[s].width, is = h + 5;
            void *in = kt_fill(dt, rows * is, -3.0, 3.0);
            int8_t *o = malloc((size_t)(rows * h)), *w = malloc((size_t)(rows * h));
            float *sc = malloc(sizeof *sc * (size_t)rows),
                  *wsc = malloc(sizeof *wsc * (size_t)rows);
            if (rows > 1) /* an all-zero row: 127/0 = inf, 0 * inf = NaN -> 0 */
                for (int64_t i = 0; i < h; i++)
                    kt_st(dt, in, is + i, 0.0);
            for (int64_t r = 0; r < rows; r++) {
                float amax = 0.0f, mult;
                for (int64_t i = 0; i < h; i++)
                    amax = fmaxf(amax, fabsf((float)kt_ld(dt, in, r * is + i)));
                mult = 127.0f / amax;
                for (int64_t i = 0; i < h; i++)
                    w[r * h + i] = ref_int8((float)kt_ld(dt, in, r * is + i) * mult);
                wsc[r] = amax / 127.0f;
            }
            KT_FOR_EACH_ISA(isa) {
                memset(o, 0x55, (size_t)(rows * h));
                opreg__cpu_int8_dynamic(isa, dt, o, sc, in, is, rows, h);
                CHECK(kt_check_bytes("dynamic int8", isa, o, w, (size_t)(rows * h)));
                CHECK(
                    kt_check_bytes("dynamic int8 scales", isa, sc, wsc, sizeof *sc * (size_t)rows));
            }
            free(in), free(o), free(w), free(sc), free(wsc);
        }
}

TEST(dynamic_fp8_exact) {
    static const int64_t sizes[] = { 1, 15, 100, 8193, 3000000 };
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 5; s++) {
            int dt = kt_float_dtypes[d];
            int64_t n = sizes[s];
            void *in = kt_fill(dt, n, -50.0, 50.0);
            uint8_t *o = malloc((size_t)n), *w = malloc((size_t)n);
            float amax = 0.0f, wscale, inv;
            kt_st(dt, in, n / 2, -61.0); /* the maximum sits mid-tensor */
            for (int64_t i = 0; i < n; i++)
                amax = fmaxf(amax, fabsf((float)kt_ld(dt, in, i)));
            wscale = amax / 448.0f;
            inv = 1.0f / wscale;
            for (int64_t i = 0; i < n; i++)
                w[i] = ref_fp8((float)kt_ld(dt, in, i) * inv);
            KT_FOR_EACH_ISA(isa) {
                float scale = 0.0f; /* the caller zeroes it */
                opreg__cpu_fp8_dynamic(isa, dt, o, &scale, in, n);
                CHECK(scale == wscale);
                CHECK(kt_check_bytes("dynamic fp8", isa, o, w, (size_t)n));
            }
            free(in), free(o), free(w);
        }
}

/* The spec's fixed points: NaN -> int8 0 and fp8 +448 (0x7E); 2.5 -> 2
 * (ties to even); 300 -> 127, and to fp8 288; e4m3fn(0.0029296875 = 1.5 * 2^-9) -> 0x02. */
TEST(quant_fixed_points) {
    float in[5] = { NAN, 2.5f, 300.0f, -300.0f, 0.0029296875f };
    int8_t o8[5];
    uint8_t of[5];
    KT_FOR_EACH_ISA(isa) {
        opreg__cpu_int8_static(isa, OPREG_DTYPE_F32, o8, in, 5, 1.0f);
        opreg__cpu_fp8_static(isa, OPREG_DTYPE_F32, of, in, 5, 1.0f);
        CHECK_EQ_INT(o8[0], 0);
        CHECK_EQ_INT(o8[1], 2);
        CHECK_EQ_INT(o8[2], 127);
        CHECK_EQ_INT(o8[3], -128);
        CHECK_EQ_INT(of[0], 0x7E);
        CHECK_EQ_INT(of[2], 0x79); /* 300 -> 288 */
        CHECK_EQ_INT(of[3], 0xF9);
        CHECK_EQ_INT(of[4], 0x02);
    }
}

int main(void) {
    kt_report_isas("test_cpu_quant");
    RUN(static_int8_and_fp8_exact);
    RUN(dynamic_int8_exact);
    RUN(dynamic_fp8_exact);
    RUN(quant_fixed_points);
    return test_summary();
}
