/* paged_attention_v1 against a hand softmax over unpaged K/V (scattered
 * into shuffled blocks), with GQA, ALiBi, an empty sequence and an fp8
 * cache; Meta checks and the bad-input matrix (block-sparse refused). */
#include "ops_test.h"

enum { S = 3, HQ = 4, HKV = 2, D = 16, BS = 4, NBLK = 8, MAXB = 3, X = 8 };

static DLTensor *OUT, *Q, *KC, *VC, *BT, *SL, *AL;
static float kv[2][S][12][HKV][D]; /* [k/v][seq][token][head][dim] */
static const int lens[S] = { 5, 0, 12 };

static void setup_cache(opreg_dtype cdt, double kv_scale) {
    static const int32_t tables[S][MAXB] = { { 6, 1, 0 }, { 0, 0, 0 }, { 2, 7, 4 } };
    tt_free_all();
    OUT = TT(F32, S, HQ, D);
    Q = TT(F32, S, HQ, D);
    KC = tt_new(cdt, 5, (int64_t[]){ NBLK, HKV, D / X, BS, X });
    VC = tt_new(cdt, 4, (int64_t[]){ NBLK, HKV, D, BS });
    BT = TT(I32, S, MAXB);
    SL = TT(I32, S);
    AL = TT(F32, HQ);
    tt_fill(Q, -1, 1);
    for (int h = 0; h < HQ; h++)
        tt_set(AL, h, -0.25 * (h + 1));
    memcpy(BT->data, tables, sizeof tables);
    for (int s = 0; s < S; s++) {
        tt_set(SL, s, lens[s]);
        for (int j = 0; j < lens[s]; j++)
            for (int h = 0; h < HKV; h++)
                for (int i = 0; i < D; i++)
                    for (int c = 0; c < 2; c++) {
                        int64_t blk = tables[s][j / BS], off = j % BS;
                        int64_t at =
                            c == 0 ? (((blk * HKV + h) * (D / X) + i / X) * BS + off) * X + i % X
                                   : ((blk * HKV + h) * D + i) * BS + off;
                        float v = (float)tt_rand(-1, 1);
                        if (cdt == OPREG_DTYPE_F32) {
                            ((float *)(c ? VC : KC)->data)[at] = v;
                        } else {
                            uint8_t b = opreg__f32_to_e4m3fn_sat(v);
                            ((uint8_t *)(c ? VC : KC)->data)[at] = b;
                            v = (float)(opreg__e4m3fn_to_f32(b) * kv_scale);
                        }
                        kv[c][s][j][h][i] = v;
                    }
    }
}

static int check_against_hand(double scale, int alibi) {
    for (int s = 0; s < S; s++)
        for (int h = 0; h < HQ; h++) {
            int kvh = h / (HQ / HKV), l = lens[s];
            long double logit[12], mx = -INFINITY, sum = 0;
            for (int j = 0; j < l; j++) {
                long double dot = 0;
                for (int i = 0; i < D; i++)
                    dot += (long double)tt_get(Q, (s * HQ + h) * D + i) * kv[0][s][j][kvh][i];
                logit[j] = scale * dot + (alibi ? tt_get(AL, h) * (j - l + 1) : 0);
                if (logit[j] > mx) mx = logit[j];
            }
            for (int j = 0; j < l; j++)
                sum += expl(logit[j] - mx);
            for (int i = 0; i < D; i++) {
                long double o = 0;
                for (int j = 0; j < l; j++)
                    o += expl(logit[j] - mx) / sum * kv[1][s][j][kvh][i];
                if (!tt_close(tt_get(OUT, (s * HQ + h) * D + i), (double)o, 1e-6, 1e-7)) {
                    fprintf(stderr, "s %d h %d i %d: %g vs %g\n", s, h, i,
                            tt_get(OUT, (s * HQ + h) * D + i), (double)o);
                    return 0;
                }
            }
        }
    return 1;
}

#define PA(al, kind, kvs, vert)                                                                    \
    checked_paged_attention_v1(OUT, Q, KC, VC, HKV, 0.25, BT, SL, BS, 12, al, kind, kvs, 0, 0,     \
                               vert, 0, 0)

TEST(matches_hand_softmax) {
    setup_cache(OPREG_DTYPE_F32, 1.0);
    tt_fill(OUT, 5, 6);
    CHECK_EQ_INT(PA(NULL, "auto", 1.0, 0), OPREG_OK);
    CHECK(check_against_hand(0.25, 0));
    for (int i = 0; i < HQ * D; i++)
        CHECK(tt_get(OUT, 1 * HQ * D + i) == 0.0); /* empty sequence */
    CHECK_EQ_INT(PA(AL, "auto", 1.0, 1), OPREG_OK);
    CHECK(check_against_hand(0.25, 1));
    setup_cache(OPREG_DTYPE_F8_E4M3FN, 0.5);
    CHECK_EQ_INT(PA(NULL, "fp8", 0.5, 0), OPREG_OK);
    CHECK(check_against_hand(0.25, 0));
    tt_free_all();
}

/* max_seq_len only bounds the lengths: far past them (up to INT64_MAX,
 * where a buffer of max_seq_len + 1 doubles wraps to a few bytes) the
 * results are those of a tight bound. */
TEST(max_seq_len_far_past_the_lengths) {
    static const int64_t bounds[] = { (int64_t)1 << 40, ((int64_t)1 << 61) + 1, INT64_MAX };
    setup_cache(OPREG_DTYPE_F32, 1.0);
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        tt_fill(OUT, 5, 6);
        CHECK_EQ_INT(checked_paged_attention_v1(OUT, Q, KC, VC, HKV, 0.25, BT, SL, BS, bounds[b],
                                                NULL, "auto", 1.0, 0, 0, 0, 0, 0),
                     OPREG_OK);
        CHECK(check_against_hand(0.25, 0));
    }
    tt_free_all();
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
#define P     PA(NULL, "auto", 1.0, 0)
#define SET() setup_cache(OPREG_DTYPE_F32, 1.0)
    SET();
    EXPECT_REFUSED(OPREG_ERR_UNSUPPORTED, "block-sparse attention (2) is not supported",
                   PA(NULL, "auto", 1.0, 2));
    SET();
    EXPECT_REFUSED(IA, "'kv_cache_dtype': unsupported \"int4\"", PA(NULL, "int4", 1.0, 0));
    SET();
    EXPECT_REFUSED(SH, "'key_cache': expected dtype u8 or f8_e4m3fn", PA(NULL, "fp8", 1.0, 0));
    SET();
    Q->dtype = DT(I8);
    EXPECT_REFUSED(SH, "'query': expected dtype", P);
    SET();
    OUT->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'out': dtype bf16 differs", P);
    SET();
    OUT->shape[2] = 8;
    EXPECT_REFUSED(SH, "'out': shape differs", P);
    SET();
    KC->dtype = DT(F16);
    VC->dtype = DT(F16);
    EXPECT_REFUSED(SH, "'key_cache': expected dtype f32", P);
    SET();
    EXPECT_REFUSED(IA, "'num_kv_heads': 3 must be > 0 and divide",
                   checked_paged_attention_v1(OUT, Q, KC, VC, 3, 0.25, BT, SL, BS, 12, NULL, "auto",
                                              1.0, 0, 0, 0, 0, 0));
    SET();
    EXPECT_REFUSED(SH, "'key_cache': expected size 8 in dim 3",
                   checked_paged_attention_v1(OUT, Q, KC, VC, HKV, 0.25, BT, SL, 8, 12, NULL,
                                              "auto", 1.0, 0, 0, 0, 0, 0));
    SET();
    KC->shape[4] = 5;
    EXPECT_REFUSED(SH, "x = size(4) = 5 must divide", P);
    SET();
    VC->shape[2] = 8;
    EXPECT_REFUSED(SH, "'value_cache': expected size 16 in dim 2", P);
    SET();
    tt_set_strides(Q, (int64_t[]){ 64, 1, 4 });
    EXPECT_REFUSED(SH, "'query': each sequence must be contiguous", P);
    SET();
    BT->dtype = DT(I64);
    EXPECT_REFUSED(SH, "'block_tables': expected dtype i32", P);
    SET();
    SL->shape[0] = 2;
    EXPECT_REFUSED(SH, "'seq_lens': expected size 3", P);
    SET();
    ((int32_t *)BT->data)[6 + 1] = 8;
    EXPECT_REFUSED(IA, "block 8 (sequence 2, entry 1) is outside the cache's 8 blocks", P);
    SET();
    ((int32_t *)SL->data)[0] = 13;
    EXPECT_REFUSED(IA, "length 13 of sequence 0 is outside 0..max_seq_len=12", P);
    SET();
    ((int32_t *)SL->data)[0] = -1;
    EXPECT_REFUSED(IA, "length -1 of sequence 0", P);
    SET();
    AL->shape[0] = 3;
    EXPECT_REFUSED(SH, "'alibi_slopes': expected size 4", PA(AL, "auto", 1.0, 0));
    SET();
    OUT->data = (char *)Q->data + 4;
    EXPECT_REFUSED(IA, "'out' overlaps 'query'", P);
    SET();
    OUT->data = VC->data;
    EXPECT_REFUSED(IA, "'out' overlaps 'value_cache'", P);
    SET();
    KC->data = NULL;
    EXPECT_REFUSED(IA, "'key_cache': data is NULL", P);
    SET();
    SL->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'seq_lens' is on cuda", P);
    SET();
    EXPECT_REFUSED(IA, "'scale': must be finite",
                   checked_paged_attention_v1(OUT, Q, KC, VC, HKV, NAN, BT, SL, BS, 12, NULL,
                                              "auto", 1.0, 0, 0, 0, 0, 0));
    SET();
    tt_to_meta(OUT);
    tt_to_meta(Q);
    tt_to_meta(KC);
    tt_to_meta(VC);
    tt_to_meta(BT);
    tt_to_meta(SL);
    CHECK_EQ_INT(opreg__check_paged_attention_v1(OUT, Q, KC, VC, HKV, 0.25, BT, SL, BS, 12, NULL,
                                                 "auto", 1.0, 0, 0, 0, 0, 0),
                 OPREG_OK);
#undef P
#undef SET
    tt_free_all();
}

int main(void) {
    RUN(matches_hand_softmax);
    RUN(max_seq_len_far_past_the_lengths);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
