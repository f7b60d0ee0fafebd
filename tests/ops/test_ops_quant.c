/* fp8 and int8 quantisation: exact expectations from §3.5 (ties, clamp,
 * saturation, NaN, zero rows), a nearest-value property over random inputs,
 * the dynamic scales, Meta checks and the bad-input matrix. */
#include "ops_test.h"

static float e4m3(uint8_t v) {
    return opreg__e4m3fn_to_f32(v);
}

TEST(static_fp8_exact) {
    DLTensor *in = TT(F32, 8), *out = TT(F8_E4M3FN, 8), *scale = TT(F32, 1);
    static const float xs[8] = {
        1.0f, 300.0f, -300.0f, 0.53125f, 0.0f, -0.0009765625f, 224.0f, 1.0f
    };
    static const uint8_t want[8] = { 0x40, 0x7E, 0xFE, 0x38, 0x00, 0x81, 0x7E, 0x40 };
    for (int i = 0; i < 8; i++)
        tt_set(in, i, xs[i]);
    ((float *)in->data)[7] = NAN; /* fminf/fmaxf clamp: NaN -> +448 (CUDA's behaviour) */
    tt_set(scale, 0, 0.5);
    CHECK_EQ_INT(checked_static_scaled_fp8_quant(out, in, scale), OPREG_OK);
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(((uint8_t *)out->data)[i], want[i]);
    CHECK_EQ_INT(((uint8_t *)out->data)[7], 0x7E);
    tt_free_all();
}

/* Every output is the e4m3fn value nearest to clamp(x * (1/scale)). */
TEST(fp8_nearest_property_and_dynamic_scale) {
    static const opreg_dtype dts[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };
    for (int k = 0; k < 3; k++) {
        DLTensor *in = tt_new(dts[k], 2, (int64_t[]){ 7, 129 });
        DLTensor *out = TT(F8_E4M3FN, 7, 129), *scale = TT(F32, 1);
        float amax = 0, inv;
        tt_fill(in, -1000, 1000);
        for (int i = 0; i < 7 * 129; i++)
            amax = fmaxf(amax, fabsf((float)tt_get(in, i)));
        CHECK_EQ_INT(checked_dynamic_scaled_fp8_quant(out, in, scale), OPREG_OK);
        CHECK(((float *)scale->data)[0] == amax / 448.0f);
        inv = 1.0f / (amax / 448.0f);
        for (int i = 0; i < 7 * 129; i++) {
            float v = fmaxf(-448.0f, fminf((float)tt_get(in, i) * inv, 448.0f));
            float got = e4m3(((uint8_t *)out->data)[i]);
            for (int c = 0; c < 256; c++) {
                if ((c & 0x7F) == 0x7F) continue;
                CHECK(fabsf(got - v) <= fabsf(e4m3((uint8_t)c) - v));
            }
        }
        /* a larger scale already there wins (atomicMax) */
        tt_set(scale, 0, 1e6);
        CHECK_EQ_INT(checked_dynamic_scaled_fp8_quant(out, in, scale), OPREG_OK);
        CHECK(((float *)scale->data)[0] == 1e6f);
        tt_free_all();
    }
}

TEST(int8_exact) {
    DLTensor *in = TT(F32, 2, 5), *out = TT(I8, 2, 5), *scale = TT(F32, 1), *ts = TT(F32, 2, 1);
    static const float xs[10] = { 2.5f, 3.5f,  -2.5f, 200.0f, -200.0f,
                                  1.0f, -2.0f, 0.5f,  0.25f,  -0.0f };
    static const int8_t st[10] = { 2, 4, -2, 127, -128, 1, -2, 0, 0, 0 };
    int8_t *o = out->data;
    for (int i = 0; i < 10; i++)
        tt_set(in, i, xs[i]);
    tt_set(scale, 0, 1.0);
    CHECK_EQ_INT(checked_static_scaled_int8_quant(out, in, scale), OPREG_OK);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(o[i], st[i]);
    ((float *)in->data)[0] = NAN;
    tt_set(scale, 0, 0.5); /* x / 0.5: 1.0 -> 2, 0.25 -> 0.5 -> 0 (ties to even) */
    CHECK_EQ_INT(checked_static_scaled_int8_quant(out, in, scale), OPREG_OK);
    CHECK_EQ_INT(o[0], 0);
    CHECK_EQ_INT(o[5], 2);
    CHECK_EQ_INT(o[8], 0);
    CHECK_EQ_INT(o[7], 1);
    /* dynamic: row 1 = [1, -2, .5, .25, -0]: amax 2, mult 63.5 -> 63.5 -> 64 (even), -127, 31.75 ->
     * 32 */
    ((float *)in->data)[0] = 0;
    for (int i = 0; i < 5; i++)
        tt_set(in, i, 0.0);
    CHECK_EQ_INT(checked_dynamic_scaled_int8_quant(out, in, ts), OPREG_OK);
    CHECK(((float *)ts->data)[0] == 0.0f); /* a zero row: scale 0, outputs 0 */
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(o[i], 0);
    CHECK(((float *)ts->data)[1] == 2.0f / 127.0f);
    CHECK_EQ_INT(o[5], 64);
    CHECK_EQ_INT(o[6], -127);
    CHECK_EQ_INT(o[7], 32);
    CHECK_EQ_INT(o[8], 16);
    tt_free_all();
}

TEST(int8_random_dequantises_within_half_step) {
    DLTensor *in = TT(BF16, 9, 301), *out = TT(I8, 9, 301), *ts = TT(F32, 9, 1);
    tt_fill(in, -7, 7);
    CHECK_EQ_INT(checked_dynamic_scaled_int8_quant(out, in, ts), OPREG_OK);
    for (int r = 0; r < 9; r++) {
        double s = ((float *)ts->data)[r], amax = 0;
        int hit = 0;
        for (int i = 0; i < 301; i++)
            amax = fmax(amax, fabs(tt_get(in, r * 301 + i)));
        CHECK(fabs(s - amax / 127) <= 1e-6 * amax);
        for (int i = 0; i < 301; i++) {
            int q = ((int8_t *)out->data)[r * 301 + i];
            CHECK(fabs(q * s - tt_get(in, r * 301 + i)) <= 0.5001 * s);
            hit |= q == 127 || q == -127;
        }
        CHECK(hit);
    }
    tt_free_all();
}

static DLTensor *I, *O, *S;
static void setup(int fp8, int per_token) {
    tt_free_all();
    I = TT(F16, 4, 6);
    O = fp8 ? TT(F8_E4M3FN, 4, 6) : TT(I8, 4, 6);
    S = per_token ? TT(F32, 4, 1) : TT(F32, 1);
    tt_fill(I, -1, 1);
    tt_set(S, 0, 0.25);
}

typedef opreg_status (*qfn)(const opreg_tensor *, const opreg_tensor *, const opreg_tensor *);

TEST(bad_inputs) {
    static const qfn fns[4] = { checked_static_scaled_fp8_quant, checked_dynamic_scaled_fp8_quant,
                                checked_static_scaled_int8_quant,
                                checked_dynamic_scaled_int8_quant };
    static const qfn checks[4] = { opreg__check_static_scaled_fp8_quant,
                                   opreg__check_dynamic_scaled_fp8_quant,
                                   opreg__check_static_scaled_int8_quant,
                                   opreg__check_dynamic_scaled_int8_quant };
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
    for (int f = 0; f < 4; f++) {
        int fp8 = f < 2, pt = f == 3;
#define CALL fns[f](O, I, S)
        setup(fp8, pt);
        O->dtype = fp8 ? DT(I8) : DT(F8_E4M3FN);
        EXPECT_REFUSED(SH, "'out': expected dtype", CALL);
        setup(fp8, pt);
        O->dtype = DT(U8);
        EXPECT_REFUSED(SH, "'out': expected dtype", CALL);
        setup(fp8, pt);
        I->dtype = DT(I32);
        EXPECT_REFUSED(SH, "'input': expected dtype", CALL);
        setup(fp8, pt);
        S->dtype = DT(F16);
        EXPECT_REFUSED(SH, "'scale': expected dtype f32", CALL);
        setup(fp8, pt);
        O->shape[1] = 5;
        EXPECT_REFUSED(SH, "'out': shape differs", CALL);
        setup(fp8, pt);
        S->shape[0] = pt ? 3 : 2;
        EXPECT_REFUSED(SH, "'scale': expected", CALL);
        setup(fp8, pt);
        tt_set_strides(I, (int64_t[]){ 1, 4 });
        EXPECT_REFUSED(SH, "'input': must be contiguous", CALL);
        setup(fp8, pt);
        tt_set_strides(O, (int64_t[]){ 1, 4 });
        EXPECT_REFUSED(SH, "'out': must be contiguous", CALL);
        setup(fp8, pt);
        I->data = NULL;
        EXPECT_REFUSED(IA, "'input': data is NULL", CALL);
        setup(fp8, pt);
        O->data = NULL;
        EXPECT_REFUSED(IA, "'out': data is NULL", CALL);
        setup(fp8, pt);
        S->data = NULL;
        EXPECT_REFUSED(IA, "'scale': data is NULL", CALL);
        setup(fp8, pt);
        S->device.device_type = kDLCUDA;
        EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'scale' is on cuda", CALL);
        setup(fp8, pt);
        O->device.device_type = kDLCUDA;
        EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'out' is on cuda", CALL);
        setup(fp8, pt);
        O->data = I->data;
        EXPECT_REFUSED(IA, "'out' overlaps 'input'", CALL);
        setup(fp8, pt);
        S->data = (char *)I->data + 8;
        EXPECT_REFUSED(IA, "'scale' overlaps 'input'", CALL);
        setup(fp8, pt);
        S->data = (char *)O->data + 4;
        EXPECT_REFUSED(IA, "'out' overlaps 'scale'", CALL);
        setup(fp8, pt);
        EXPECT_REFUSED(IA, "'scale': tensor is NULL", fns[f](O, I, NULL));
        setup(fp8, pt);
        tt_to_meta(I);
        tt_to_meta(O);
        tt_to_meta(S);
        CHECK_EQ_INT(checks[f](O, I, S), OPREG_OK);
        EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "runs on the CPU", CALL);
#undef CALL
    }
    tt_free_all();
}

int main(void) {
    RUN(static_fp8_exact);
    RUN(fp8_nearest_property_and_dynamic_scale);
    RUN(int8_exact);
    RUN(int8_random_dequantises_within_half_step);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
