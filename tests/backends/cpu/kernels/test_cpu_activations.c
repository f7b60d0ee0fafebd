/* The activation kernels on every ISA path here, against double references
 * written from ops-reference.md: gated out = (T)((T)act(x) * y) for input
 * rows [x | y], elementwise out = (T)act(x). */
#include "kern_test.h"

/* The kinds of opreg__cpu_gated (the first three) and opreg__cpu_elementwise. */
enum { NACTS = OPREG__ACT_GELU_QUICK + 1 };
static const char *const act_names[NACTS] = { "silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul",
                                              "gelu_new",     "gelu_fast",    "gelu_quick" };

static double act(int kind, double x) {
    const double beta = sqrt(2.0 / 3.14159265358979323846);
    switch (kind) {
    case OPREG__ACT_SILU:
        return x / (1.0 + exp(-x));
    case OPREG__ACT_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case OPREG__ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(beta * (x + 0.044715 * x * x * x)));
    case OPREG__ACT_GELU_NEW:
        return 0.5 * x * (1.0 + tanh(0.79788456 * (x + 0.044715 * x * x * x)));
    case OPREG__ACT_GELU_FAST:
        return 0.5 * x * (1.0 + tanh(0.79788456 * x * (1.0 + 0.044715 * x * x)));
    default:
        return x / (1.0 + exp(-1.702 * x));
    }
}

static void run(int isa, int kind, int dt, void *out, const void *in, int64_t rows, int64_t d) {
    if (kind <= OPREG__ACT_GELU_TANH)
        opreg__cpu_gated(isa, kind, dt, out, d, in, 2 * d, rows, d);
    else
        opreg__cpu_elementwise(isa, kind, dt, out, in, rows * d);
}

static void check_act(int kind, int dt, int64_t rows, int64_t d, double lo, double hi) {
    int gated = kind <= OPREG__ACT_GELU_TANH;
    int64_t n = rows * d, nin = gated ? 2 * n : n;
    void *in = kt_fill(dt, nin, lo, hi), *out = kt_fill(dt, n, 0.0, 0.0);
    double *want = malloc(sizeof *want * (size_t)n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < d; i++) {
            int64_t o = r * d + i;
            if (gated) {
                double x = kt_ld(dt, in, r * 2 * d + i), y = kt_ld(dt, in, r * 2 * d + d + i);
                want[o] = kt_round(dt, kt_round(dt, act(kind, x)) * y);
            } else {
                want[o] = kt_round(dt, act(kind, kt_ld(dt, in, o)));
            }
        }
    KT_FOR_EACH_ISA(isa) {
        memset(out, 0, (size_t)n * kt_es(dt));
        run(isa, kind, dt, out, in, rows, d);
        /* Absolute error is judged against 1% of the range: near the
         * minimum of gelu the result is a small difference of large terms. */
        if (!kt_check_close(act_names[kind], isa, dt, out, want, n, 0.01)) {
            fprintf(stderr, "  rows %d, d %d\n", (int)rows, (int)d);
            test_current_failed = 1;
            break;
        }
    }
    free(in), free(out), free(want);
}

TEST(activations_match_reference) {
    for (int kind = 0; kind < NACTS; kind++)
        for (int d = 0; d < 3; d++)
            for (size_t s = 0; s < KT_NSHAPES; s++)
                check_act(kind, kt_float_dtypes[d], kt_shapes[s].rows, kt_shapes[s].width, -6.0,
                          6.0);
}

/* Far tails: exp's clamps must give x or 0 without NaN or inf. */
TEST(activations_far_tails) {
    for (int kind = 0; kind < NACTS; kind++)
        for (int d = 0; d < 3; d++) {
            check_act(kind, kt_float_dtypes[d], 3, 67, -60.0, -20.0);
            check_act(kind, kt_float_dtypes[d], 3, 67, 20.0, 60.0);
        }
}

/* Fixed values: silu(0) * y = 0, gelu(0) = 0, and act(x) -> x for large x. */
TEST(activations_exact_points) {
    float in[2 * 9], out[9];
    for (int i = 0; i < 9; i++) {
        in[i] = i == 0 ? 0.0f : 100.0f;
        in[9 + i] = 2.0f;
    }
    KT_FOR_EACH_ISA(isa) {
        opreg__cpu_gated(isa, OPREG__ACT_SILU, OPREG_DTYPE_F32, out, 9, in, 18, 1, 9);
        CHECK(out[0] == 0.0f && out[8] == 200.0f);
        opreg__cpu_gated(isa, OPREG__ACT_GELU, OPREG_DTYPE_F32, out, 9, in, 18, 1, 9);
        CHECK(out[0] == 0.0f && out[8] == 200.0f);
        opreg__cpu_elementwise(isa, OPREG__ACT_GELU_QUICK, OPREG_DTYPE_F32, out, in, 9);
        CHECK(out[0] == 0.0f && out[8] == 100.0f);
    }
}

/* Infinities, NaN, values past exp's range, and the range's edges, on
 * every path and dtype: the same NaN-or-not, the same infinities, and the
 * finite results within tolerance of the double reference. */
TEST(activations_special_values) {
    static const double xs[] = { INFINITY, -INFINITY, NAN,   1e30,   -1e30, 104.5, -104.5,
                                 100.0,    -100.0,    88.75, -88.75, 87.0,  -87.0, 0.0 };
    enum { N = sizeof xs / sizeof xs[0] };
    for (int kind = 0; kind < NACTS; kind++)
        for (int d = 0; d < 3; d++) {
            int dt = kt_float_dtypes[d], gated = kind <= OPREG__ACT_GELU_TANH;
            unsigned char in[2 * N * 4], out[N * 4];
            double want[N];
            for (int i = 0; i < N; i++) {
                kt_st(dt, in, i, xs[i]);
                kt_st(dt, in, N + i, 1.5); /* y of the gated ops */
            }
            for (int i = 0; i < N; i++) {
                double x = kt_ld(dt, in, i);
                want[i] = gated ? kt_round(dt, kt_round(dt, act(kind, x)) * 1.5)
                                : kt_round(dt, act(kind, x));
            }
            KT_FOR_EACH_ISA(isa) {
                run(isa, kind, dt, out, in, 1, N);
                for (int i = 0; i < N; i++) {
                    double g = kt_ld(dt, out, i), w = want[i];
                    bool ok = isnan(w)   ? isnan(g)
                              : isinf(w) ? g == w
                                         : fabs(g - w) <= kt_rtol(dt) * (fabs(w) + 0.01);
                    if (!ok) {
                        TEST_FAIL_AT("%s [%s, %s] x = %g: got %.9g want %.9g", act_names[kind],
                                     opreg__cpu_isa_name(isa), kt_dt_name(dt), kt_ld(dt, in, i), g,
                                     w);
                        break;
                    }
                }
            }
        }
}

int main(void) {
    kt_report_isas("test_cpu_activations");
    RUN(activations_match_reference);
    RUN(activations_far_tails);
    RUN(activations_exact_points);
    RUN(activations_special_values);
    return test_summary();
}
