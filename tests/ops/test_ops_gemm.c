/* cutlass_scaled_mm (int8 and fp8; per-tensor and per-row/column scales;
 * bias; f32, bf16 and f16 outputs; b column-major) and linear (f32, bf16,
 * 3-d input, bias) against hand sums; the result shape of linear; Meta
 * checks and the bad-input matrix. */
#include "ops_test.h"

TEST(scaled_mm_hand) {
    static const opreg_dtype outs[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16, OPREG_DTYPE_F16 };
    for (int o = 0; o < 3; o++)
        for (int per = 0; per < 2; per++)
            for (int fp8 = 0; fp8 < 2; fp8++) {
                int64_t m = 5, k = 33, n = 7;
                opreg_dtype in = fp8 ? OPREG_DTYPE_F8_E4M3FN : OPREG_DTYPE_I8;
                DLTensor *a = tt_new(in, 2, (int64_t[]){ m, k }),
                         *b = tt_new(in, 2, (int64_t[]){ k, n });
                DLTensor *as = per ? TT(F32, 5, 1) : TT(F32, 1),
                         *bs = per ? TT(F32, 1, 7) : TT(F32, 1);
                DLTensor *bias = tt_new(outs[o], 1, (int64_t[]){ n }),
                         *out = tt_new(outs[o], 2, (int64_t[]){ m, n });
                tt_fill(a, fp8 ? -4 : -128, fp8 ? 4 : 127);
                tt_fill(b, fp8 ? -4 : -128, fp8 ? 4 : 127);
                tt_fill(as, 0.001, 0.01);
                tt_fill(bs, 0.001, 0.01);
                tt_fill(bias, -1, 1);
                tt_set_strides(b, (int64_t[]){ 1, k }); /* column-major */
                CHECK_EQ_INT(checked_cutlass_scaled_mm(out, a, b, as, bs, per ? bias : NULL),
                             OPREG_OK);
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        long double acc = 0, want;
                        for (int64_t p = 0; p < k; p++)
                            acc += (long double)tt_get(a, i * k + p) * tt_get(b, j * k + p);
                        want = tt_get(as, per ? i : 0) * acc * tt_get(bs, per ? j : 0) +
                               (per ? tt_get(bias, j) : 0);
                        CHECK(tt_close(tt_get(out, i * n + j),
                                       opreg__round_to(outs[o], (double)want), 1e-6, 1e-6));
                    }
                tt_free_all();
            }
}

TEST(linear_hand_and_shape) {
    static const opreg_dtype dts[2] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16 };
    for (int d = 0; d < 2; d++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            DLTensor *in = tt_new(dts[d], 3, (int64_t[]){ 2, 3, 19 }),
                     *w = tt_new(dts[d], 2, (int64_t[]){ 11, 19 });
            DLTensor *bias = tt_new(dts[d], 1, (int64_t[]){ 11 }), *out;
            int nd = 0;
            int64_t shape[OPREG__MAX_DIMS];
            opreg_dtype odt;
            tt_fill(in, -1, 1);
            tt_fill(w, -1, 1);
            tt_fill(bias, -1, 1);
            CHECK_EQ_INT(opreg__check_linear(in, w, with_bias ? bias : NULL, &nd, shape, &odt),
                         OPREG_OK);
            CHECK_EQ_INT(nd, 3);
            CHECK(shape[0] == 2 && shape[1] == 3 && shape[2] == 11 && odt == dts[d]);
            out = tt_new(odt, nd, shape);
            CHECK_EQ_INT(checked_linear(out, in, w, with_bias ? bias : NULL), OPREG_OK);
            for (int64_t r = 0; r < 6; r++)
                for (int64_t j = 0; j < 11; j++) {
                    long double acc = with_bias ? tt_get(bias, j) : 0;
                    for (int64_t p = 0; p < 19; p++)
                        acc += (long double)tt_get(in, r * 19 + p) * tt_get(w, j * 19 + p);
                    CHECK(tt_close(tt_get(out, r * 11 + j), opreg__round_to(dts[d], (double)acc),
                                   1e-6, 1e-6));
                }
            tt_free_all();
        }
}

static DLTensor *O, *A, *B, *AS, *BS, *BI, *LI, *LW, *LB, *LO;
static void setup(void) {
    tt_free_all();
    O = TT(BF16, 3, 4);
    A = TT(I8, 3, 5);
    B = TT(I8, 5, 4);
    tt_set_strides(B, (int64_t[]){ 1, 5 });
    AS = TT(F32, 3);
    BS = TT(F32, 1);
    BI = TT(BF16, 4);
    LI = TT(F32, 2, 6);
    LW = TT(F32, 3, 6);
    LB = TT(F32, 3);
    LO = TT(F32, 2, 3);
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT,
                 DM = OPREG_ERR_DEVICE_MISMATCH;
#define MM checked_cutlass_scaled_mm(O, A, B, AS, BS, BI)
    setup();
    A->dtype = DT(U8);
    EXPECT_REFUSED(SH, "'a': expected dtype i8 or f8_e4m3fn", MM);
    setup();
    B->dtype = DT(F8_E4M3FN);
    EXPECT_REFUSED(SH, "'b': dtype f8_e4m3fn differs from 'a'", MM);
    setup();
    O->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'out': expected dtype", MM);
    setup();
    B->shape[0] = 4;
    EXPECT_REFUSED(SH, "'b': expected size 5 in dim 0", MM);
    setup();
    B->strides = NULL;
    EXPECT_REFUSED(SH, "'b': must be column-major", MM);
    setup();
    tt_set_strides(A, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'a': must be row-major", MM);
    setup();
    O->shape[1] = 5;
    EXPECT_REFUSED(SH, "'out': expected size 4 in dim 1", MM);
    setup();
    tt_set_strides(O, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'out': must be contiguous", MM);
    setup();
    AS->shape[0] = 2;
    EXPECT_REFUSED(SH, "'a_scales': expected 1 (per tensor) or 3 elements", MM);
    setup();
    BS->shape[0] = 3;
    EXPECT_REFUSED(SH, "'b_scales': expected 1 (per tensor) or 4 elements", MM);
    setup();
    BS->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'b_scales': expected dtype f32", MM);
    setup();
    BI->dtype = DT(F32);
    EXPECT_REFUSED(SH, "'bias': dtype f32 differs from 'out'", MM);
    setup();
    BI->shape[0] = 3;
    EXPECT_REFUSED(SH, "'bias': expected size 4", MM);
    setup();
    O->data = A->data;
    EXPECT_REFUSED(IA, "'out' overlaps 'a'", MM);
    setup();
    BI->data = (char *)O->data + 2;
    EXPECT_REFUSED(IA, "'out' overlaps 'bias'", MM);
    setup();
    AS->data = NULL;
    EXPECT_REFUSED(IA, "'a_scales': data is NULL", MM);
    setup();
    B->device.device_type = kDLCUDA;
    EXPECT_REFUSED(DM, "'b' is on cuda", MM);
    setup();
    EXPECT_REFUSED(IA, "'b_scales': tensor is NULL",
                   checked_cutlass_scaled_mm(O, A, B, AS, NULL, BI));
#undef MM
#define LIN checked_linear(LO, LI, LW, LB)
    setup();
    LI->dtype = DT(F64);
    EXPECT_REFUSED(SH, "'input': expected dtype", LIN);
    setup();
    LW->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'weight': dtype bf16 differs", LIN);
    setup();
    LW->shape[1] = 5;
    EXPECT_REFUSED(SH, "'weight': expected size 6 in dim 1", LIN);
    setup();
    LB->shape[0] = 4;
    EXPECT_REFUSED(SH, "'bias': expected size 3", LIN);
    setup();
    LO->shape[1] = 4;
    EXPECT_REFUSED(SH, "'result': expected size 3 in dim 1", LIN);
    setup();
    LO->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'result'", LIN);
    setup();
    tt_set_strides(LW, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'weight': must be contiguous", LIN);
    setup();
    LI->ndim = 0;
    EXPECT_REFUSED(SH, "'input': expected rank >= 1", LIN);
    setup();
    LO->data = LW->data;
    EXPECT_REFUSED(IA, "'result' overlaps 'weight'", LIN);
    setup();
    LB->data = NULL;
    EXPECT_REFUSED(IA, "'bias': data is NULL", LIN);
    setup();
    LW->device.device_type = kDLCUDA;
    EXPECT_REFUSED(DM, "'weight' is on cuda", LIN);
#undef LIN
    setup();
    tt_to_meta(O);
    tt_to_meta(A);
    tt_to_meta(B);
    tt_to_meta(AS);
    tt_to_meta(BS);
    tt_to_meta(BI);
    CHECK_EQ_INT(opreg__check_cutlass_scaled_mm(O, A, B, AS, BS, BI), OPREG_OK);
    tt_to_meta(LI);
    tt_to_meta(LW);
    CHECK_EQ_INT(opreg__check_linear(LI, LW, NULL, NULL, NULL, NULL), OPREG_OK);
    tt_free_all();
}

int main(void) {
    RUN(scaled_mm_hand);
    RUN(linear_hand_and_shape);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
