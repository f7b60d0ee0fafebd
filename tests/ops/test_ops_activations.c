/* The activations: known values, a hand computation per dtype and shape
 * (odd sizes, one row, 3-d), in-place for the elementwise ones, Meta
 * checks and the bad-input matrix. */
#include "ops_test.h"

typedef opreg_status (*op_fn)(const opreg_tensor *, const opreg_tensor *);
typedef opreg_status (*check_fn)(const opreg_tensor *, const opreg_tensor *);

static long double l_silu(long double x) {
    return x / (1 + expl(-x));
}
static long double l_gelu(long double x) {
    return 0.5L * x * (1 + erfl(x / sqrtl(2.0L)));
}
static long double l_gelu_tanh(long double x) {
    return 0.5L * x *
           (1 + tanhl(sqrtl(2.0L / 3.14159265358979323846264338327950288L) *
                      (x + 0.044715L * x * x * x)));
}
static long double l_gelu_new(long double x) {
    return 0.5L * x * (1 + tanhl(0.79788456L * (x + 0.044715L * x * x * x)));
}
static long double l_gelu_quick(long double x) {
    return x / (1 + expl(-1.702L * x));
}

static const struct gated {
    const char *name;
    op_fn fn;
    check_fn check;
    long double (*act)(long double);
    int gated;
} OPS[6] = {
    { "silu_and_mul", checked_silu_and_mul, opreg__check_silu_and_mul, l_silu, 1 },
    { "gelu_and_mul", checked_gelu_and_mul, opreg__check_gelu_and_mul, l_gelu, 1 },
    { "gelu_tanh_and_mul", checked_gelu_tanh_and_mul, opreg__check_gelu_tanh_and_mul, l_gelu_tanh,
      1 },
    { "gelu_new", checked_gelu_new, opreg__check_gelu_new, l_gelu_new, 0 },
    { "gelu_fast", checked_gelu_fast, opreg__check_gelu_fast, l_gelu_new, 0 },
    { "gelu_quick", checked_gelu_quick, opreg__check_gelu_quick, l_gelu_quick, 0 },
};

TEST(known_values) {
    DLTensor *in = TT(F32, 1, 6), *out = TT(F32, 1, 3);
    static const double xs[3] = { 1.0, -1.0, 0.0 };
    for (int i = 0; i < 3; i++) {
        tt_set(in, i, xs[i]);
        tt_set(in, 3 + i, 1.0);
    }
    CHECK_EQ_INT(checked_gelu_and_mul(out, in), OPREG_OK);
    CHECK(tt_get(out, 0) == (float)0.8413447460685429);
    CHECK(tt_get(out, 1) == (float)-0.15865525393145707);
    CHECK(tt_get(out, 2) == 0.0);
    CHECK_EQ_INT(checked_gelu_tanh_and_mul(out, in), OPREG_OK);
    CHECK(tt_get(out, 0) == (float)0.8411919906082768);
    CHECK_EQ_INT(checked_silu_and_mul(out, in), OPREG_OK);
    CHECK(tt_get(out, 0) == (float)0.7310585786300049);
    CHECK(tt_get(out, 1) == (float)-0.2689414213699951);
    tt_free_all();
}

TEST(hand_computation_all_dtypes_and_shapes) {
    static const opreg_dtype dts[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };
    static const int64_t shapes[4][3] = { { 1, 1, 1 }, { 1, 5, 3 }, { 2, 7, 1001 }, { 3, 4, 16 } };
    for (int o = 0; o < 6; o++)
        for (int k = 0; k < 3; k++)
            for (int s = 0; s < 4; s++) {
                int64_t d = shapes[s][2];
                int64_t ish[3] = { shapes[s][0], shapes[s][1], OPS[o].gated ? 2 * d : d };
                int64_t osh[3] = { shapes[s][0], shapes[s][1], d };
                DLTensor *in = tt_new(dts[k], 3, ish), *out = tt_new(dts[k], 3, osh);
                int64_t rows = ish[0] * ish[1];
                tt_fill(in, -5, 5);
                CHECK_EQ_INT(OPS[o].fn(out, in), OPREG_OK);
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t i = 0; i < d; i++) {
                        double want, got = tt_get(out, r * d + i);
                        if (OPS[o].gated) {
                            double a = opreg__round_to(
                                dts[k], (double)OPS[o].act(tt_get(in, r * 2 * d + i)));
                            want = opreg__round_to(dts[k], a * tt_get(in, r * 2 * d + d + i));
                        } else {
                            want =
                                opreg__round_to(dts[k], (double)OPS[o].act(tt_get(in, r * d + i)));
                        }
                        if (!tt_close(got, want, tt_rtol(dts[k]) / 8, 1e-6)) {
                            TEST_FAIL_AT("%s dtype %d: %g vs %g", OPS[o].name, dts[k], got, want);
                            return;
                        }
                    }
                tt_free_all();
            }
}

TEST(elementwise_in_place) {
    for (int o = 3; o < 6; o++) {
        DLTensor *a = TT(BF16, 3, 33), *b = TT(BF16, 3, 33);
        tt_fill(a, -3, 3);
        CHECK_EQ_INT(OPS[o].fn(b, a), OPREG_OK);
        CHECK_EQ_INT(OPS[o].fn(a, a), OPREG_OK);
        CHECK(memcmp(a->data, b->data, 99 * 2) == 0);
        tt_free_all();
    }
}

static DLTensor *I, *O;
static void setup(int gated) {
    tt_free_all();
    I = TT(F32, 2, 3, 8);
    O = gated ? TT(F32, 2, 3, 4) : TT(F32, 2, 3, 8);
    tt_fill(I, -1, 1);
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
    for (int o = 0; o < 6; o++) {
        int g = OPS[o].gated;
#define CALL OPS[o].fn(O, I)
        setup(g);
        I->dtype = DT(I8);
        EXPECT_REFUSED(SH, "'input': expected dtype", CALL);
        setup(g);
        O->dtype = DT(F16);
        EXPECT_REFUSED(SH, "'out': dtype f16 differs", CALL);
        setup(g);
        O->ndim = 2;
        EXPECT_REFUSED(SH, "'out'", CALL);
        setup(g);
        O->shape[2] = 5;
        EXPECT_REFUSED(SH, "'out'", CALL);
        setup(g);
        O->shape[0] = 1;
        EXPECT_REFUSED(SH, "'out'", CALL);
        setup(g);
        tt_set_strides(I, (int64_t[]){ 24, 1, 3 });
        EXPECT_REFUSED(SH, "'input': must be contiguous", CALL);
        setup(g);
        tt_set_strides(O, (int64_t[]){ 1, 2, 6 });
        EXPECT_REFUSED(SH, "'out': must be contiguous", CALL);
        setup(g);
        I->data = NULL;
        EXPECT_REFUSED(IA, "'input': data is NULL", CALL);
        setup(g);
        O->data = NULL;
        EXPECT_REFUSED(IA, "'out': data is NULL", CALL);
        setup(g);
        EXPECT_REFUSED(IA, "'input': tensor is NULL", OPS[o].fn(O, NULL));
        setup(g);
        O->device.device_type = kDLCUDA;
        EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'out' is on cuda", CALL);
        setup(g);
        O->data = (char *)I->data + 4;
        EXPECT_REFUSED(IA, "overlaps 'input'", CALL);
        if (g) {
            setup(g);
            I->shape[2] = 7;
            EXPECT_REFUSED(SH, "'input': last dim must be even", CALL);
            setup(g);
            O->data = I->data;
            EXPECT_REFUSED(IA, "'out' overlaps 'input'", CALL);
        }
        setup(g);
        I->device.device_type = kDLCUDA;
        O->device.device_type = kDLCUDA;
        EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "runs on the CPU", CALL);
        setup(g);
        tt_to_meta(I);
        tt_to_meta(O);
        CHECK_EQ_INT(OPS[o].check(O, I), OPREG_OK);
#undef CALL
    }
    tt_free_all();
}

int main(void) {
    RUN(known_values);
    RUN(hand_computation_all_dtypes_and_shapes);
    RUN(elementwise_in_place);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
