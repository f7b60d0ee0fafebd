/* rotary_embedding and batched_rotary_embedding: a hand computation for
 * NeoX and GPT-J, partial rotary (dims >= rot_dim untouched), 2-d and 3-d
 * layouts, [B,S] positions, batched == unbatched at position + offset,
 * Meta checks and the bad-input matrix. */
#include "ops_test.h"

static void fill_cache(DLTensor *cache, int64_t max_pos, int64_t rot) {
    for (int64_t p = 0; p < max_pos; p++)
        for (int64_t i = 0; i < rot / 2; i++) {
            double th = p * pow(10000.0, -2.0 * (double)i / (double)rot);
            tt_set(cache, p * rot + i, cos(th));
            tt_set(cache, p * rot + rot / 2 + i, sin(th));
        }
}

TEST(hand_computation) {
    static const opreg_dtype dts[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16, OPREG_DTYPE_F16 };
    for (int k = 0; k < 3; k++)
        for (int neox = 0; neox < 2; neox++)
            for (int rot = 4; rot <= 8; rot += 4)
                for (int three_d = 0; three_d < 2; three_d++) {
                    int64_t t = 5, nh = 3, nkv = 1, hs = 8, maxp = 16;
                    DLTensor *pos = TT(I64, 5);
                    DLTensor *q = three_d ? tt_new(dts[k], 3, (int64_t[]){ t, nh, hs })
                                          : tt_new(dts[k], 2, (int64_t[]){ t, nh * hs });
                    DLTensor *kk = tt_new(dts[k], 2, (int64_t[]){ t, nkv * hs });
                    DLTensor *q0 = tt_new(dts[k], 2, (int64_t[]){ t, nh * hs });
                    DLTensor *cache = tt_new(dts[k], 2, (int64_t[]){ maxp, rot });
                    fill_cache(cache, maxp, rot);
                    for (int i = 0; i < 5; i++)
                        tt_set(pos, i, (i * 7) % 16);
                    tt_fill(q, -2, 2);
                    tt_fill(kk, -2, 2);
                    memcpy(q0->data, q->data, tt_slot_of(q)->bytes);
                    CHECK_EQ_INT(checked_rotary_embedding(pos, q, kk, hs, cache, neox), OPREG_OK);
                    for (int64_t tok = 0; tok < t; tok++)
                        for (int64_t h = 0; h < nh; h++) {
                            int64_t b = (tok * nh + h) * hs, p = (int64_t)tt_get(pos, tok);
                            for (int64_t i = 0; i < rot / 2; i++) {
                                int64_t xi = neox ? i : 2 * i, yi = neox ? i + rot / 2 : 2 * i + 1;
                                long double c = tt_get(cache, p * rot + i),
                                            s = tt_get(cache, p * rot + rot / 2 + i);
                                long double x = tt_get(q0, b + xi), y = tt_get(q0, b + yi);
                                double wx = opreg__round_to(dts[k], (double)(x * c - y * s));
                                double wy = opreg__round_to(dts[k], (double)(y * c + x * s));
                                CHECK(tt_close(tt_get(q, b + xi), wx, tt_rtol(dts[k]) / 4, 1e-6));
                                CHECK(tt_close(tt_get(q, b + yi), wy, tt_rtol(dts[k]) / 4, 1e-6));
                            }
                            for (int64_t i = rot; i < hs; i++)
                                CHECK(tt_get(q, b + i) == tt_get(q0, b + i));
                        }
                    tt_free_all();
                }
}

TEST(position_zero_is_identity_and_batched_matches) {
    int64_t maxp = 40;
    DLTensor *pos = TT(I64, 2, 3), *off = TT(I64, 2, 3), *pos2 = TT(I64, 2, 3);
    DLTensor *q = TT(F32, 2, 3, 32), *k = TT(F32, 2, 3, 16);
    DLTensor *q2 = TT(F32, 2, 3, 32), *k2 = TT(F32, 2, 3, 16), *q0 = TT(F32, 2, 3, 32);
    DLTensor *cache = TT(F32, 40, 16);
    fill_cache(cache, maxp, 16);
    tt_fill(q, -1, 1);
    tt_fill(k, -1, 1);
    memcpy(q0->data, q->data, 6 * 32 * 4);
    memcpy(q2->data, q->data, 6 * 32 * 4);
    memcpy(k2->data, k->data, 6 * 16 * 4);
    /* position 0: cos 1, sin 0 -> unchanged */
    CHECK_EQ_INT(checked_rotary_embedding(pos, q, k, 16, cache, true), OPREG_OK);
    CHECK(memcmp(q->data, q0->data, 6 * 32 * 4) == 0);
    for (int i = 0; i < 6; i++) {
        tt_set(pos, i, i * 3);
        tt_set(off, i, 20 - i);
        tt_set(pos2, i, i * 3 + 20 - i);
    }
    CHECK_EQ_INT(checked_batched_rotary_embedding(pos, q, k, 16, cache, false, 16, off), OPREG_OK);
    CHECK_EQ_INT(checked_rotary_embedding(pos2, q2, k2, 16, cache, false), OPREG_OK);
    CHECK(memcmp(q->data, q2->data, 6 * 32 * 4) == 0);
    CHECK(memcmp(k->data, k2->data, 6 * 16 * 4) == 0);
    /* rotation keeps each pair's norm */
    for (int i = 0; i < 6 * 32; i += 2) {
        double a = hypot(tt_get(q, i), tt_get(q, i + 1)),
               b = hypot(tt_get(q0, i), tt_get(q0, i + 1));
        CHECK(fabs(a - b) < 1e-6);
    }
    tt_free_all();
}

static DLTensor *P, *Q, *K, *C, *OFF;
static void setup(void) {
    tt_free_all();
    P = TT(I64, 4);
    Q = TT(F16, 4, 32);
    K = TT(F16, 4, 16);
    C = TT(F16, 10, 8);
    OFF = TT(I64, 4);
    tt_fill(Q, -1, 1);
    tt_fill(K, -1, 1);
    tt_fill(C, -1, 1);
    for (int i = 0; i < 4; i++)
        tt_set(P, i, i * 2);
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
#define R     checked_rotary_embedding(P, Q, K, 16, C, true)
#define B(rd) checked_batched_rotary_embedding(P, Q, K, 16, C, false, rd, OFF)
    setup();
    P->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'positions': expected dtype i64", R);
    setup();
    P->ndim = 3;
    P->shape[1] = 1;
    P->shape[2] = 1;
    EXPECT_REFUSED(SH, "'positions': expected rank 1 or 2", R);
    setup();
    Q->ndim = 1;
    EXPECT_REFUSED(SH, "'query': expected rank 2", R);
    setup();
    Q->shape[0] = 3;
    EXPECT_REFUSED(SH, "'query': expected size 4", R);
    setup();
    Q->shape[1] = 24;
    EXPECT_REFUSED(SH, "'query': last dim 24 is not a multiple", R);
    setup();
    K->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'key': dtype bf16 differs", R);
    setup();
    C->dtype = DT(F32);
    EXPECT_REFUSED(SH, "'cos_sin_cache': dtype f32 differs", R);
    setup();
    C->shape[1] = 3;
    EXPECT_REFUSED(SH, "rot_dim (dim 1) must be even", R);
    setup();
    C->shape[1] = 18;
    C->shape[0] = 4;
    EXPECT_REFUSED(SH, "rot_dim (dim 1) must be even", R);
    setup();
    EXPECT_REFUSED(IA, "'head_size': must be > 0", checked_rotary_embedding(P, Q, K, 0, C, true));
    setup();
    tt_set_strides(Q, (int64_t[]){ 1, 4 });
    EXPECT_REFUSED(SH, "'query': last dim must have stride 1, got 4", R);
    setup();
    tt_set_strides(C, (int64_t[]){ 1, 10 });
    EXPECT_REFUSED(SH, "'cos_sin_cache': must be contiguous", R);
    setup();
    K->data = Q->data;
    EXPECT_REFUSED(IA, "'query' overlaps 'key'", R);
    setup();
    Q->data = C->data;
    Q->shape[0] = 1;
    P->shape[0] = 1;
    K->shape[0] = 1;
    EXPECT_REFUSED(IA, "'query' overlaps 'cos_sin_cache'", R);
    setup();
    tt_set(P, 3, 10);
    EXPECT_REFUSED(IA, "token 3 uses cache row 10", R);
    setup();
    tt_set(P, 0, -1);
    EXPECT_REFUSED(IA, "token 0 uses cache row -1", R);
    setup();
    K->data = NULL;
    EXPECT_REFUSED(IA, "'key': data is NULL", R);
    setup();
    C->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'cos_sin_cache' is on cuda", R);
    setup();
    EXPECT_REFUSED(IA, "'key': tensor is NULL", checked_rotary_embedding(P, Q, NULL, 16, C, true));
    setup();
    EXPECT_REFUSED(IA, "'rot_dim': 6 differs", B(6));
    setup();
    OFF->shape[0] = 3;
    EXPECT_REFUSED(SH, "'cos_sin_cache_offsets': 3 elements", B(8));
    setup();
    OFF->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'cos_sin_cache_offsets': expected dtype i64", B(8));
    setup();
    tt_set(OFF, 2, 6);
    EXPECT_REFUSED(IA, "token 2 uses cache row 4 + offset 6", B(8));
    setup();
    OFF->data = Q->data;
    OFF->shape[0] = 4;
    EXPECT_REFUSED(IA, "'query' overlaps 'cos_sin_cache_offsets'", B(8));
    setup();
    tt_to_meta(P);
    tt_to_meta(Q);
    tt_to_meta(K);
    tt_to_meta(C);
    tt_to_meta(OFF);
    CHECK_EQ_INT(opreg__check_rotary_embedding(P, Q, K, 16, C, true), OPREG_OK);
    CHECK_EQ_INT(opreg__check_batched_rotary_embedding(P, Q, K, 16, C, true, 8, OFF), OPREG_OK);
    EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "runs on the CPU", R);
#undef R
#undef B
    tt_free_all();
}

int main(void) {
    RUN(hand_computation);
    RUN(position_zero_is_identity_and_batched_matches);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
