/* KV-cache ops: every cached element checked by the §3.4 index formulas,
 * padding slots (-1) skipped and untouched slots left as they were, strided
 * tokens, fp8 kinds (saturating), the flash layout, copy_blocks and
 * swap_blocks, Meta checks and the bad-input matrix. */
#include "ops_test.h"

TEST(reshape_and_cache_auto_and_fp8) {
    for (int mode = 0; mode < 4; mode++) {
        /* mode 0: bf16 auto; 1: f32 -> u8 "fp8"; 2: f32 -> e4m3fn "fp8_e4m3"; 3: f16 -> u8
         * "fp8_e5m2" */
        static const char *kinds[4] = { "auto", "fp8", "fp8_e4m3", "fp8_e5m2" };
        opreg_dtype in_dt = mode == 0   ? OPREG_DTYPE_BF16
                            : mode == 3 ? OPREG_DTYPE_F16
                                        : OPREG_DTYPE_F32;
        opreg_dtype c_dt = mode == 0   ? OPREG_DTYPE_BF16
                           : mode == 2 ? OPREG_DTYPE_F8_E4M3FN
                                       : OPREG_DTYPE_U8;
        int64_t t = 5, h = 2, d = 16, x = mode == 0 ? 8 : 16, bs = 4, nblk = 3;
        /* key tokens strided: a [5, 2, 20] buffer viewed as [5, 2, 16]? heads must be dense,
         * so the token stride is 40 > 32 */
        DLTensor *kbuf = tt_new(in_dt, 2, (int64_t[]){ t, 40 });
        DLTensor *key = tt_new(in_dt, 3, (int64_t[]){ t, h, d });
        DLTensor *val = tt_new(in_dt, 3, (int64_t[]){ t, h, d });
        DLTensor *kc = tt_new(c_dt, 5, (int64_t[]){ nblk, h, d / x, bs, x });
        DLTensor *vc = tt_new(c_dt, 4, (int64_t[]){ nblk, h, d, bs });
        DLTensor *sm = TT(I64, 5);
        DLTensor *kc0 = tt_new(c_dt, 5, (int64_t[]){ nblk, h, d / x, bs, x });
        static const int64_t slots[5] = { 0, 5, -1, 11, 7 };
        size_t ces = opreg_dtype_size(c_dt);
        double scale = mode == 0 ? 1.0 : 2.0;
        tt_fill(kbuf, -600, 600);
        tt_fill(val, -600, 600);
        tt_fill(kc, 0, 1);
        memcpy(kc0->data, kc->data, tt_slot_of(kc)->bytes);
        key->data = kbuf->data;
        tt_set_strides(key, (int64_t[]){ 40, 16, 1 });
        for (int i = 0; i < 5; i++)
            tt_set(sm, i, (double)slots[i]);
        CHECK_EQ_INT(checked_reshape_and_cache(key, val, kc, vc, sm, kinds[mode], scale), OPREG_OK);
        for (int64_t tok = 0; tok < t; tok++) {
            int64_t s = slots[tok];
            if (s < 0) continue;
            for (int64_t hh = 0; hh < h; hh++)
                for (int64_t i = 0; i < d; i++) {
                    int64_t blk = s / bs, off = s % bs;
                    int64_t ki = (((blk * h + hh) * (d / x) + i / x) * bs + off) * x + i % x;
                    int64_t vi = ((blk * h + hh) * d + i) * bs + off;
                    const char *kp = (const char *)kc->data + ki * ces,
                               *vp = (const char *)vc->data + vi * ces;
                    double kv = tt_get(kbuf, tok * 40 + hh * d + i),
                           vv = tt_get(val, (tok * h + hh) * d + i);
                    if (mode == 0) {
                        CHECK(opreg__ld(kp, OPREG_DTYPE_BF16, 0) == kv);
                        CHECK(opreg__ld(vp, OPREG_DTYPE_BF16, 0) == vv);
                    } else {
                        uint8_t wk = mode == 3 ? opreg__f32_to_e5m2_sat((float)kv / 2.0f)
                                               : opreg__f32_to_e4m3fn_sat((float)kv / 2.0f);
                        uint8_t wv = mode == 3 ? opreg__f32_to_e5m2_sat((float)vv / 2.0f)
                                               : opreg__f32_to_e4m3fn_sat((float)vv / 2.0f);
                        CHECK_EQ_INT(*(const uint8_t *)kp, wk);
                        CHECK_EQ_INT(*(const uint8_t *)vp, wv);
                        if (mode != 3 && fabs(kv) / 2 > 464)
                            CHECK_EQ_INT(wk & 0x7F, 0x7E); /* saturated */
                    }
                }
        }
        /* slots 1..4, 6, 8..10 were not written: key cache bytes there unchanged */
        for (int64_t s = 0; s < nblk * bs; s++) {
            if (s == 0 || s == 5 || s == 11 || s == 7) continue;
            for (int64_t hh = 0; hh < h; hh++)
                for (int64_t i = 0; i < d; i++) {
                    int64_t ki =
                        ((((s / bs) * h + hh) * (d / x) + i / x) * bs + s % bs) * x + i % x;
                    CHECK(memcmp((char *)kc->data + ki * ces, (char *)kc0->data + ki * ces, ces) ==
                          0);
                }
        }
        tt_free_all();
    }
}

TEST(reshape_and_cache_flash) {
    DLTensor *key = TT(F16, 5, 3, 4), *val = TT(F16, 5, 3, 4);
    DLTensor *kc = TT(F16, 2, 4, 3, 4), *vc = TT(F16, 2, 4, 3, 4), *sm = TT(I64, 3);
    DLTensor *kc8 = TT(F8_E4M3FN, 2, 4, 3, 4), *vc8 = TT(F8_E4M3FN, 2, 4, 3, 4);
    tt_fill(key, -1, 1);
    tt_fill(val, -1, 1);
    tt_set(sm, 0, 6);
    tt_set(sm, 1, -1);
    tt_set(sm, 2, 1);
    /* slot_mapping may be shorter than key: only its tokens are written */
    CHECK_EQ_INT(checked_reshape_and_cache_flash(key, val, kc, vc, sm, "auto"), OPREG_OK);
    for (int i = 0; i < 12; i++) {
        CHECK(tt_get(kc, 6 * 12 + i) == tt_get(key, i));
        CHECK(tt_get(vc, 6 * 12 + i) == tt_get(val, i));
        CHECK(tt_get(kc, 1 * 12 + i) == tt_get(key, 24 + i));
        CHECK(tt_get(kc, 0 * 12 + i) == 0.0);
    }
    CHECK_EQ_INT(checked_reshape_and_cache_flash(key, val, kc8, vc8, sm, "fp8"), OPREG_OK);
    for (int i = 0; i < 12; i++)
        CHECK_EQ_INT(((uint8_t *)kc8->data)[6 * 12 + i],
                     opreg__f32_to_e4m3fn_sat((float)tt_get(key, i)));
    tt_free_all();
}

TEST(copy_and_swap_blocks) {
    DLTensor *k0 = TT(F16, 4, 2, 3), *k1 = TT(F16, 4, 2, 3), *v0 = TT(U8, 4, 5), *v1 = TT(U8, 4, 5);
    DLTensor *k0c = TT(F16, 4, 2, 3), *v1c = TT(U8, 4, 5), *m = TT(I64, 2, 2);
    const opreg_tensor *ks[2] = { k0, k1 }, *vs[2] = { v0, v1 };
    DLTensor *src = TT(F32, 3, 4), *dst = TT(F32, 5, 4), *dst0 = TT(F32, 5, 4);
    tt_fill(k0, -1, 1);
    tt_fill(k1, -1, 1);
    tt_fill(v0, 0, 255);
    tt_fill(v1, 0, 255);
    memcpy(k0c->data, k0->data, 4 * 6 * 2);
    memcpy(v1c->data, v1->data, 20);
    tt_set(m, 0, 0);
    tt_set(m, 1, 2);
    tt_set(m, 2, 3);
    tt_set(m, 3, 1);
    CHECK_EQ_INT(checked_copy_blocks(ks, 2, vs, 2, m), OPREG_OK);
    CHECK(memcmp((char *)k0->data + 2 * 12, (char *)k0c->data + 0 * 12, 12) == 0);
    CHECK(memcmp((char *)k0->data + 1 * 12, (char *)k0c->data + 3 * 12, 12) == 0);
    CHECK(memcmp((char *)k0->data + 0 * 12, (char *)k0c->data + 0 * 12, 12) == 0);
    CHECK(memcmp((char *)k0->data + 3 * 12, (char *)k0c->data + 3 * 12, 12) == 0);
    CHECK(memcmp((char *)v1->data + 2 * 5, (char *)v1c->data + 0 * 5, 5) == 0);
    CHECK(memcmp((char *)v1->data + 1 * 5, (char *)v1c->data + 3 * 5, 5) == 0);
    CHECK_EQ_INT(checked_copy_blocks(NULL, 0, NULL, 0, m), OPREG_OK); /* no layers */
    tt_fill(src, -1, 1);
    tt_fill(dst, -1, 1);
    memcpy(dst0->data, dst->data, 80);
    tt_set(m, 0, 0);
    tt_set(m, 1, 4);
    tt_set(m, 2, 2);
    tt_set(m, 3, 0);
    CHECK_EQ_INT(checked_swap_blocks(src, dst, m), OPREG_OK);
    CHECK(memcmp((char *)dst->data + 4 * 16, src->data, 16) == 0);
    CHECK(memcmp(dst->data, (char *)src->data + 2 * 16, 16) == 0);
    CHECK(memcmp((char *)dst->data + 16, (char *)dst0->data + 16, 48) == 0);
    tt_free_all();
}

static DLTensor *KEY, *VAL, *KC, *VC, *SM, *M, *K0, *K1, *V0, *V1, *SRC, *DST;
static void setup(void) {
    tt_free_all();
    KEY = TT(F32, 3, 2, 8);
    VAL = TT(F32, 3, 2, 8);
    KC = TT(F32, 2, 2, 2, 4, 4);
    VC = TT(F32, 2, 2, 8, 4);
    SM = TT(I64, 3);
    M = TT(I64, 1, 2);
    K0 = TT(BF16, 3, 4);
    K1 = TT(BF16, 3, 4);
    V0 = TT(BF16, 3, 4);
    V1 = TT(BF16, 3, 4);
    SRC = TT(F32, 3, 4);
    DST = TT(F32, 3, 4);
    tt_fill(KEY, -1, 1);
    tt_fill(VAL, -1, 1);
    tt_set(SM, 0, 7);
    tt_set(SM, 1, -1);
    tt_set(SM, 2, 0);
    tt_set(M, 0, 2);
    tt_set(M, 1, 0);
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT,
                 DM = OPREG_ERR_DEVICE_MISMATCH;
#define RC checked_reshape_and_cache(KEY, VAL, KC, VC, SM, "auto", 1.0)
    setup();
    EXPECT_REFUSED(IA, "'kv_cache_dtype': unsupported \"fp16\"",
                   checked_reshape_and_cache(KEY, VAL, KC, VC, SM, "fp16", 1.0));
    setup();
    KC->dtype = DT(BF16);
    VC->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'key_cache': dtype bf16 differs from 'key'", RC);
    setup();
    EXPECT_REFUSED(SH, "'key_cache': expected dtype u8 or f8_e4m3fn",
                   checked_reshape_and_cache(KEY, VAL, KC, VC, SM, "fp8", 1.0));
    setup();
    KC->dtype = DT(F8_E4M3FN);
    VC->dtype = DT(F8_E4M3FN);
    EXPECT_REFUSED(SH, "'key_cache': expected dtype u8 or f8_e5m2",
                   checked_reshape_and_cache(KEY, VAL, KC, VC, SM, "fp8_e5m2", 1.0));
    setup();
    KC->dtype = DT(U8);
    VC->dtype = DT(U8);
    EXPECT_REFUSED(IA, "'kv_scale': must be finite and > 0",
                   checked_reshape_and_cache(KEY, VAL, KC, VC, SM, "fp8", 0.0));
    setup();
    VC->dtype = DT(F16);
    EXPECT_REFUSED(SH, "'value_cache': dtype f16 differs", RC);
    setup();
    KC->shape[4] = 3;
    EXPECT_REFUSED(SH, "x = size(4) = 3 must divide", RC);
    setup();
    KC->shape[1] = 3;
    EXPECT_REFUSED(SH, "'key_cache': expected size 2 in dim 1", RC);
    setup();
    KC->ndim = 4;
    EXPECT_REFUSED(SH, "'key_cache': expected rank 5", RC);
    setup();
    VC->shape[2] = 4;
    EXPECT_REFUSED(SH, "'value_cache': expected size 8 in dim 2", RC);
    setup();
    VC->shape[0] = 1;
    EXPECT_REFUSED(SH, "'value_cache': expected size 2 in dim 0", RC);
    setup();
    tt_set_strides(KC, (int64_t[]){ 64, 32, 16, 1, 4 });
    EXPECT_REFUSED(SH, "'key_cache': each block must be contiguous (stride 4 in dim 4, expected 1)",
                   RC);
    setup();
    SM->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'slot_mapping': expected dtype i64", RC);
    setup();
    SM->shape[0] = 2;
    EXPECT_REFUSED(SH, "'slot_mapping': expected size 3", RC);
    setup();
    tt_set(SM, 2, 8);
    EXPECT_REFUSED(IA, "slot 8 of token 2 is outside the cache's 8 slots", RC);
    setup();
    tt_set_strides(KEY, (int64_t[]){ 16, 1, 2 });
    EXPECT_REFUSED(SH, "'key': heads and head dims must be contiguous", RC);
    setup();
    VAL->shape[1] = 1;
    EXPECT_REFUSED(SH, "'value': shape differs", RC);
    setup();
    VAL->dtype = DT(F16);
    EXPECT_REFUSED(SH, "'value': dtype f16 differs", RC);
    setup();
    VC->data = (char *)KC->data + 4;
    EXPECT_REFUSED(IA, "'key_cache' overlaps 'value_cache'", RC);
    setup();
    KC->data = KEY->data;
    EXPECT_REFUSED(IA, "'key_cache' overlaps 'key'", RC);
    setup();
    VC->data = SM->data;
    EXPECT_REFUSED(IA, "'value_cache' overlaps 'slot_mapping'", RC);
    setup();
    VAL->data = NULL;
    EXPECT_REFUSED(IA, "'value': data is NULL", RC);
    setup();
    VC->device.device_type = kDLCUDA;
    EXPECT_REFUSED(DM, "'value_cache' is on cuda", RC);
    setup();
    EXPECT_REFUSED(IA, "'slot_mapping': tensor is NULL",
                   checked_reshape_and_cache(KEY, VAL, KC, VC, NULL, "auto", 1.0));
#undef RC
    {
        /* flash: [nblk, bs, H, D] */
#define RF checked_reshape_and_cache_flash(KEY, VAL, KC, VC, SM, "auto")
        setup();
        KC->ndim = 4;
        KC->shape[0] = 2;
        KC->shape[1] = 4;
        KC->shape[2] = 2;
        KC->shape[3] = 8;
        VC->shape[0] = 2;
        VC->shape[1] = 4;
        VC->shape[2] = 2;
        VC->shape[3] = 8;
        tt_set(SM, 0, 8);
        EXPECT_REFUSED(IA, "slot 8 of token 0 is outside", RF);
        tt_set(SM, 0, 7);
        SM->shape[0] = 4;
        EXPECT_REFUSED(SH, "'slot_mapping': 4 slots for 3 tokens", RF);
        SM->shape[0] = 3;
        VC->shape[3] = 4;
        EXPECT_REFUSED(SH, "'value_cache': shape differs", RF);
        VC->shape[3] = 8;
        KC->shape[2] = 1;
        EXPECT_REFUSED(SH, "'key_cache': expected size 2 in dim 2", RF);
        KC->shape[2] = 2;
        CHECK_EQ_INT(opreg__check_reshape_and_cache_flash(KEY, VAL, KC, VC, SM, "auto"), OPREG_OK);
#undef RF
    }
    {
        const opreg_tensor *ks[2], *vs[2];
#define CB  checked_copy_blocks(ks, 2, vs, 2, M)
#define L() (setup(), ks[0] = K0, ks[1] = K1, vs[0] = V0, vs[1] = V1)
        L();
        EXPECT_REFUSED(IA, "'value_caches': 1 layers, but key_caches has 2",
                       checked_copy_blocks(ks, 2, vs, 1, M));
        L();
        M->shape[1] = 3;
        EXPECT_REFUSED(SH, "'block_mapping': expected size 2 in dim 1", CB);
        L();
        M->dtype = DT(I32);
        EXPECT_REFUSED(SH, "'block_mapping': expected dtype i64", CB);
        L();
        tt_set(M, 0, 3);
        EXPECT_REFUSED(IA, "source block 3 of pair 0 is outside 0..2", CB);
        L();
        tt_set(M, 1, -1);
        EXPECT_REFUSED(IA, "destination block -1 of pair 0", CB);
        L();
        K1->dtype = DT(F16);
        EXPECT_REFUSED(SH, "'key_caches[1]': dtype f16 differs", CB);
        L();
        V1->shape[1] = 2;
        EXPECT_REFUSED(SH, "'value_caches[1]': shape differs", CB);
        L();
        K1->data = NULL;
        EXPECT_REFUSED(IA, "'key_caches[1]': data is NULL", CB);
        L();
        tt_set_strides(V0, (int64_t[]){ 1, 3 });
        EXPECT_REFUSED(SH, "'value_caches[0]': each block must be contiguous", CB);
        L();
        V1->device.device_type = kDLCUDA;
        EXPECT_REFUSED(DM, "'value_caches[1]' is on cuda", CB);
        L();
        K0->data = M->data;
        K0->dtype = DT(I64);
        K1->dtype = DT(I64);
        K0->shape[0] = 1;
        K0->shape[1] = 2;
        K1->shape[0] = 1;
        K1->shape[1] = 2;
        EXPECT_REFUSED(IA, "'key_caches[0]' overlaps 'block_mapping'", CB);
        L();
        ks[1] = NULL;
        EXPECT_REFUSED(IA, "'key_caches[1]': tensor is NULL", CB);
#undef CB
#undef L
    }
#define SB checked_swap_blocks(SRC, DST, M)
    setup();
    DST->dtype = DT(F16);
    EXPECT_REFUSED(SH, "'dst': dtype f16 differs", SB);
    setup();
    DST->shape[1] = 5;
    EXPECT_REFUSED(SH, "'dst': expected size 4 in dim 1", SB);
    setup();
    M->device.device_type = kDLCUDA;
    EXPECT_REFUSED(DM, "'block_mapping' must be on the CPU", SB);
    setup();
    tt_set(M, 1, 3);
    EXPECT_REFUSED(IA, "destination block 3 of pair 0 is outside 0..2", SB);
    setup();
    DST->data = (char *)SRC->data + 8;
    EXPECT_REFUSED(IA, "'dst' overlaps 'src'", SB);
    setup();
    SRC->data = NULL;
    EXPECT_REFUSED(IA, "'src': data is NULL", SB);
    setup();
    DST->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "'dst' is on cuda:0; this kernel runs on the CPU", SB);
#undef SB
    setup();
    tt_to_meta(KEY);
    tt_to_meta(VAL);
    tt_to_meta(KC);
    tt_to_meta(VC);
    tt_to_meta(SM);
    CHECK_EQ_INT(opreg__check_reshape_and_cache(KEY, VAL, KC, VC, SM, "auto", 1.0), OPREG_OK);
    tt_free_all();
}

int main(void) {
    RUN(reshape_and_cache_auto_and_fp8);
    RUN(reshape_and_cache_flash);
    RUN(copy_and_swap_blocks);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
