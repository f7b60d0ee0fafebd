/* rms_norm and fused_add_rms_norm: a hand computation per dtype, properties
 * (constant rows, scale invariance, strided rows, in place), Meta checks,
 * and the bad-input matrix. */
#include "ops_test.h"

static const opreg_dtype FLOATS[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };

/* out_i = (T)((T)(x_i r) w_i), r = 1/sqrt(mean(x^2) + eps), by long double. */
static double hand_rms(const DLTensor *x, const DLTensor *w, int64_t row, int64_t rstride,
                       int64_t h, int64_t i, double eps) {
    long double ss = 0;
    int dt = tt_dt(x);
    for (int64_t j = 0; j < h; j++) {
        long double v = tt_get(x, row * rstride + j);
        ss += v * v;
    }
    {
        long double r = 1.0L / sqrtl(ss / h + eps);
        double xr = opreg__round_to(dt, (double)(tt_get(x, row * rstride + i) * r));
        return opreg__round_to(dt, xr * tt_get(w, i));
    }
}

TEST(rms_norm_matches_hand_computation) {
    static const int64_t hs[] = { 1, 7, 64, 1000 };
    for (int k = 0; k < 3; k++)
        for (int hi = 0; hi < 4; hi++) {
            int64_t h = hs[hi];
            DLTensor *x = tt_new(FLOATS[k], 2, (int64_t[]){ 3, h });
            DLTensor *w = tt_new(FLOATS[k], 1, (int64_t[]){ h });
            DLTensor *o = tt_new(FLOATS[k], 2, (int64_t[]){ 3, h });
            tt_fill(x, -3, 3);
            tt_fill(w, 0.5, 1.5);
            CHECK_EQ_INT(checked_rms_norm(o, x, w, 1e-6), OPREG_OK);
            for (int64_t r = 0; r < 3; r++)
                for (int64_t i = 0; i < h; i++) {
                    double want = hand_rms(x, w, r, h, h, i, 1e-6), got = tt_get(o, r * h + i);
                    if (!tt_close(got, want, FLOATS[k] == OPREG_DTYPE_F32 ? 1e-6 : 1e-9, 0)) {
                        TEST_FAIL_AT("dtype %d h %lld [%lld,%lld]: %g vs %g", FLOATS[k],
                                     (long long)h, (long long)r, (long long)i, got, want);
                        return;
                    }
                }
            tt_free_all();
        }
}

TEST(rms_norm_properties) {
    /* A constant row with eps 0 normalises to sign(c) * w, exactly for c = 2^k. */
    DLTensor *x = TT(F32, 4, 9), *w = TT(F32, 9), *o = TT(F32, 4, 9), *o2 = TT(F32, 4, 9);
    for (int i = 0; i < 9; i++)
        tt_set(w, i, 1.0);
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 9; i++)
            tt_set(x, r * 9 + i, r % 2 ? -ldexp(1, r * 3) : ldexp(1, -r));
    CHECK_EQ_INT(checked_rms_norm(o, x, w, 0.0), OPREG_OK);
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 9; i++)
            CHECK(tt_get(o, r * 9 + i) == (r % 2 ? -1.0 : 1.0));
    /* Scaling a row by a power of two changes nothing (eps 0). */
    tt_fill(x, -2, 2);
    tt_fill(w, -1, 1);
    CHECK_EQ_INT(checked_rms_norm(o, x, w, 0.0), OPREG_OK);
    for (int i = 0; i < 36; i++)
        tt_set(x, i, tt_get(x, i) * 8.0);
    CHECK_EQ_INT(checked_rms_norm(o2, x, w, 0.0), OPREG_OK);
    CHECK(memcmp(o->data, o2->data, 36 * 4) == 0);
    /* In place (out is input) gives the same bytes. */
    CHECK_EQ_INT(checked_rms_norm(x, x, w, 0.0), OPREG_OK);
    CHECK(memcmp(x->data, o2->data, 36 * 4) == 0);
    tt_free_all();
}

TEST(rms_norm_strided_rows) {
    /* rows of 5 inside a [3, 8] buffer, and 3-d [2, 3, 5] collapsing to 6 rows */
    DLTensor *buf = TT(BF16, 6, 8), *x = TT(BF16, 6, 5), *w = TT(BF16, 5);
    DLTensor *o1 = TT(BF16, 2, 3, 5), *o2 = TT(BF16, 2, 3, 5);
    DLTensor *v = tt_new(OPREG_DTYPE_BF16, 3, (int64_t[]){ 2, 3, 5 });
    tt_fill(buf, -4, 4);
    tt_fill(w, -2, 2);
    v->data = buf->data;
    tt_set_strides(v, (int64_t[]){ 24, 8, 1 });
    for (int r = 0; r < 6; r++)
        for (int i = 0; i < 5; i++)
            tt_set(x, r * 5 + i, tt_get(buf, r * 8 + i));
    x->ndim = 3;
    x->shape[0] = 2;
    x->shape[1] = 3;
    x->shape[2] = 5;
    CHECK_EQ_INT(checked_rms_norm(o1, v, w, 1e-5), OPREG_OK);
    CHECK_EQ_INT(checked_rms_norm(o2, x, w, 1e-5), OPREG_OK);
    CHECK(memcmp(o1->data, o2->data, 30 * 2) == 0);
    tt_free_all();
}

TEST(fused_add_rms_norm_matches_hand_computation) {
    for (int k = 0; k < 3; k++) {
        int64_t h = 37;
        DLTensor *x = tt_new(FLOATS[k], 2, (int64_t[]){ 4, h });
        DLTensor *res = tt_new(FLOATS[k], 2, (int64_t[]){ 4, h });
        DLTensor *w = tt_new(FLOATS[k], 1, (int64_t[]){ h });
        DLTensor *x0 = tt_new(FLOATS[k], 2, (int64_t[]){ 4, h });
        DLTensor *z = tt_new(FLOATS[k], 2, (int64_t[]){ 4, h });
        tt_fill(x, -2, 2);
        tt_fill(res, -2, 2);
        tt_fill(w, 0, 2);
        memcpy(x0->data, x->data, tt_slot_of(x)->bytes);
        for (int64_t i = 0; i < 4 * h; i++)
            tt_set(z, i, tt_get(x, i) + tt_get(res, i));
        CHECK_EQ_INT(checked_fused_add_rms_norm(x, res, w, 1e-5), OPREG_OK);
        CHECK(memcmp(res->data, z->data, tt_slot_of(z)->bytes) == 0);
        for (int64_t r = 0; r < 4; r++)
            for (int64_t i = 0; i < h; i++) {
                double want = hand_rms(z, w, r, h, h, i, 1e-5), got = tt_get(x, r * h + i);
                CHECK(tt_close(got, want, FLOATS[k] == OPREG_DTYPE_F32 ? 1e-6 : 1e-9, 0));
            }
        tt_free_all();
    }
}

static DLTensor *O, *X, *W, *R;
static void setup(void) {
    tt_free_all();
    O = TT(F32, 3, 8);
    X = TT(F32, 3, 8);
    W = TT(F32, 8);
    R = TT(F32, 3, 8);
    tt_fill(X, -1, 1);
    tt_fill(W, -1, 1);
    tt_fill(R, -1, 1);
}

TEST(rms_norm_bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
#define RMS checked_rms_norm(O, X, W, 1e-6)
    setup();
    X->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'input': expected dtype f16, f32 or bf16, got i32", RMS);
    setup();
    O->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'out': dtype bf16 differs", RMS);
    setup();
    W->dtype = DT(F16);
    EXPECT_REFUSED(SH, "'weight'", RMS);
    setup();
    X->ndim = 0;
    EXPECT_REFUSED(SH, "'input': expected rank >= 1", RMS);
    setup();
    O->shape[1] = 7;
    EXPECT_REFUSED(SH, "'out': shape differs", RMS);
    setup();
    W->shape[0] = 7;
    EXPECT_REFUSED(SH, "'weight': expected size 8", RMS);
    setup();
    W->ndim = 2;
    EXPECT_REFUSED(SH, "'weight': expected rank 1", RMS);
    setup();
    X->shape[0] = -1;
    EXPECT_REFUSED(SH, "'input': negative size", RMS);
    setup();
    tt_set_strides(O, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'out': must be contiguous", RMS);
    setup();
    tt_set_strides(X, (int64_t[]){ 8, 2 });
    X->shape[1] = 4;
    O->shape[1] = 4;
    W->shape[0] = 4;
    EXPECT_REFUSED(SH, "'input': last dim must have stride 1", RMS);
    setup();
    tt_set_strides(X, (int64_t[]){ 4, 1 });
    EXPECT_REFUSED(SH, "'input': rows overlap", RMS);
    setup();
    W->strides = tt_slot_of(W)->strides;
    W->strides[0] = 2;
    W->shape[0] = 8;
    EXPECT_REFUSED(SH, "'weight': must be contiguous", RMS);
    setup();
    X->data = NULL;
    EXPECT_REFUSED(IA, "'input': data is NULL", RMS);
    setup();
    O->data = NULL;
    EXPECT_REFUSED(IA, "'out': data is NULL", RMS);
    setup();
    W->data = NULL;
    EXPECT_REFUSED(IA, "'weight': data is NULL", RMS);
    setup();
    EXPECT_REFUSED(IA, "'out': tensor is NULL", checked_rms_norm(NULL, X, W, 1e-6));
    setup();
    O->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'out' is on cuda:0 but 'input' is on cpu", RMS);
    setup();
    W->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'weight' is on", RMS);
    setup();
    O->data = (char *)X->data + 4;
    EXPECT_REFUSED(IA, "'out' partially overlaps 'input'", RMS);
    setup();
    O->data = W->data;
    O->shape[0] = 1;
    X->shape[0] = 1;
    EXPECT_REFUSED(IA, "'out' overlaps 'weight'", RMS);
    setup();
    EXPECT_REFUSED(IA, "'epsilon'", checked_rms_norm(O, X, W, -1.0));
    setup();
    EXPECT_REFUSED(IA, "'epsilon'", checked_rms_norm(O, X, W, NAN));
    setup();
    X->device.device_type = kDLCUDA;
    O->device.device_type = kDLCUDA;
    W->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "this kernel runs on the CPU", RMS);
#undef RMS
#define FA checked_fused_add_rms_norm(X, R, W, 1e-6)
    setup();
    R->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'residual': dtype bf16 differs", FA);
    setup();
    R->shape[0] = 2;
    EXPECT_REFUSED(SH, "'residual': shape differs", FA);
    setup();
    X->dtype = DT(F64);
    EXPECT_REFUSED(SH, "'input': expected dtype", FA);
    setup();
    /* strided rows are a view fused_add_rms_norm takes; overlapping ones not */
    tt_set_strides(X, (int64_t[]){ 7, 1 });
    EXPECT_REFUSED(SH, "'input': rows overlap (row stride 7 < 8)", FA);
    setup();
    tt_set_strides(R, (int64_t[]){ 9, 1 });
    EXPECT_REFUSED(SH, "'residual': must be contiguous", FA);
    setup();
    W->shape[0] = 9;
    EXPECT_REFUSED(SH, "'weight': expected size 8", FA);
    setup();
    R->data = NULL;
    EXPECT_REFUSED(IA, "'residual': data is NULL", FA);
    setup();
    R->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'residual' is on cuda", FA);
    setup();
    R->data = X->data;
    EXPECT_REFUSED(IA, "'input' overlaps 'residual'", FA);
    setup();
    W->data = (char *)R->data + 8;
    EXPECT_REFUSED(IA, "'residual' overlaps 'weight'", FA);
    setup();
    EXPECT_REFUSED(IA, "'residual': tensor is NULL", checked_fused_add_rms_norm(X, NULL, W, 1e-6));
#undef FA
    tt_free_all();
}

TEST(checks_accept_meta_tensors) {
    setup();
    tt_to_meta(O);
    tt_to_meta(X);
    tt_to_meta(W);
    tt_to_meta(R);
    CHECK_EQ_INT(opreg__check_rms_norm(O, X, W, 1e-6), OPREG_OK);
    CHECK_EQ_INT(opreg__check_fused_add_rms_norm(X, R, W, 1e-6), OPREG_OK);
    /* and the same checks still refuse a Meta tensor with a wrong size */
    O->shape[1] = 3;
    CHECK_EQ_INT(opreg__check_rms_norm(O, X, W, 1e-6), OPREG_ERR_SHAPE);
    tt_free_all();
}

int main(void) {
    RUN(rms_norm_matches_hand_computation);
    RUN(rms_norm_properties);
    RUN(rms_norm_strided_rows);
    RUN(fused_add_rms_norm_matches_hand_computation);
    RUN(rms_norm_bad_inputs);
    RUN(checks_accept_meta_tensors);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
