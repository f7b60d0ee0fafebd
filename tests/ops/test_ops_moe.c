/* moe_align_block_size (the §3.6 example, exactly) and topk_softmax (a hand
 * softmax, ties to the lower expert, token_expert_indices), Meta checks and
 * the bad-input matrix. */
#include "ops_test.h"

TEST(moe_align_example) {
    static const int32_t topk[12] = { 2, 3, 0, 1, 2, 0, 1, 3, 0, 1, 2, 3 };
    static const int32_t want_sorted[16] = { 2, 5, 8, 12, 3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12 };
    int64_t cap = opreg__moe_align_capacity(12, 4, 4);
    DLTensor *ids = TT(I32, 4, 3), *sorted = tt_new(OPREG_DTYPE_I32, 1, &cap);
    DLTensor *experts = TT(I32, 6), *post = TT(I32, 1);
    CHECK_EQ_INT(cap, 24);
    memcpy(ids->data, topk, sizeof topk);
    for (int i = 0; i < 24; i++)
        ((int32_t *)sorted->data)[i] = 12; /* caller's fill_(numel) */
    for (int i = 0; i < 6; i++)
        ((int32_t *)experts->data)[i] = -7;
    CHECK_EQ_INT(checked_moe_align_block_size(ids, 4, 4, sorted, experts, post), OPREG_OK);
    for (int i = 0; i < 16; i++)
        CHECK_EQ_INT(((int32_t *)sorted->data)[i], want_sorted[i]);
    for (int i = 16; i < 24; i++)
        CHECK_EQ_INT(((int32_t *)sorted->data)[i], 12);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(((int32_t *)experts->data)[i], i);
    CHECK_EQ_INT(((int32_t *)experts->data)[4], -7);
    CHECK_EQ_INT(((int32_t *)post->data)[0], 16);
    tt_free_all();
}

TEST(moe_align_random_invariants) {
    DLTensor *ids = TT(I64, 37, 2), *sorted = TT(I32, 74 + 5 * 7), *experts = TT(I32, 16),
             *post = TT(I32, 1);
    int seen[74] = { 0 };
    int32_t *s = sorted->data, *e = experts->data, n;
    for (int i = 0; i < 74; i++)
        ((int64_t *)ids->data)[i] = (int64_t)tt_rand(0, 5);
    for (int i = 0; i < 74 + 35; i++)
        s[i] = 74;
    CHECK_EQ_INT(checked_moe_align_block_size(ids, 5, 8, sorted, experts, post), OPREG_OK);
    n = ((int32_t *)post->data)[0];
    CHECK(n % 8 == 0 && n <= 74 + 35);
    for (int i = 0; i < n; i++) {
        if (s[i] == 74) continue;
        CHECK(s[i] >= 0 && s[i] < 74 && !seen[s[i]]);
        seen[s[i]] = 1;
        CHECK_EQ_INT(((int64_t *)ids->data)[s[i]],
                     e[i / 8]); /* each id sits in its expert's block */
        if (i % 8 && s[i - 1] != 74) CHECK(s[i - 1] < s[i]); /* stable order */
    }
    for (int i = 0; i < 74; i++)
        CHECK(seen[i]);
    tt_free_all();
}

/* 2^31 - 1 experts for six ids, through every check: the counts are kept
 * for the experts present only (a table for every expert would be 16 GiB). */
TEST(moe_align_few_ids_of_many_experts) {
    static const int64_t topk[6] = { 2147483646, 5, 70000, 5, 2147483646, 0 };
    static const int32_t want_sorted[6] = { 5, 1, 3, 2, 0, 4 };
    static const int32_t want_experts[6] = { 0, 5, 5, 70000, 2147483646, 2147483646 };
    DLTensor *ids = TT(I64, 3, 2), *sorted = TT(I32, 6), *experts = TT(I32, 6), *post = TT(I32, 1);
    memcpy(ids->data, topk, sizeof topk);
    CHECK_EQ_INT(checked_moe_align_block_size(ids, INT32_MAX, 1, sorted, experts, post), OPREG_OK);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(((int32_t *)sorted->data)[i], want_sorted[i]);
        CHECK_EQ_INT(((int32_t *)experts->data)[i], want_experts[i]);
    }
    CHECK_EQ_INT(((int32_t *)post->data)[0], 6);
    /* No ids at all: nothing to place, and no block. */
    DLTensor *none = TT(I64, 0, 2);
    ((int32_t *)post->data)[0] = -1;
    CHECK_EQ_INT(checked_moe_align_block_size(none, INT32_MAX, 1, sorted, experts, post), OPREG_OK);
    CHECK_EQ_INT(((int32_t *)post->data)[0], 0);
    tt_free_all();
}

/* Ids spread far past the count of ids take the sparse table; the same ids
 * renamed to their ranks (0, 1, ...) take the dense one. Both must place
 * every id alike, and name the same experts' blocks. */
TEST(moe_align_sparse_matches_dense) {
    enum { N = 50, BS = 8, CAP = N + N * (BS - 1) };
    DLTensor *wide = TT(I32, N), *ranks = TT(I32, N);
    DLTensor *so[2] = { TT(I32, CAP), TT(I32, CAP) },
             *ex[2] = { TT(I32, CAP / BS), TT(I32, CAP / BS) };
    DLTensor *np[2] = { TT(I32, 1), TT(I32, 1) };
    int32_t *w = wide->data, *r = ranks->data;
    for (int i = 0; i < N; i++)
        w[i] = (int32_t)tt_rand(0, 12) * 100000007 % 1000000000; /* 12 experts far apart */
    for (int i = 0; i < N; i++) {
        r[i] = 0;
        for (int j = 0; j < N; j++) { /* the rank of w[i] among the distinct ids */
            int first = 1;
            for (int q = 0; q < j; q++)
                if (w[q] == w[j]) first = 0;
            if (first && w[j] < w[i]) r[i]++;
        }
    }
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < CAP; i++) {
            ((int32_t *)so[t]->data)[i] = N;
            if (i < CAP / BS) ((int32_t *)ex[t]->data)[i] = -1;
        }
    CHECK_EQ_INT(opreg__ref_moe_align_block_size(wide, 1000000000, BS, so[0], ex[0], np[0]),
                 OPREG_OK);
    CHECK_EQ_INT(opreg__ref_moe_align_block_size(ranks, N, BS, so[1], ex[1], np[1]), OPREG_OK);
    int32_t post = ((int32_t *)np[0]->data)[0];
    CHECK_EQ_INT(post, ((int32_t *)np[1]->data)[0]);
    CHECK(post > 0 && post % BS == 0);
    CHECK(memcmp(so[0]->data, so[1]->data, CAP * sizeof(int32_t)) == 0);
    for (int b = 0; b < post / BS; b++) {
        int32_t e = ((int32_t *)ex[0]->data)[b], k = ((int32_t *)ex[1]->data)[b];
        /* block b names the expert whose rank names it in the dense run */
        int found = 0;
        for (int i = 0; i < N; i++)
            if (w[i] == e) {
                CHECK_EQ_INT(r[i], k);
                found = 1;
            }
        CHECK(found);
    }
    for (int b = post / BS; b < CAP / BS; b++)
        CHECK_EQ_INT(((int32_t *)ex[0]->data)[b], -1);
    tt_free_all();
}

TEST(topk_softmax_hand) {
    static const float logits[2][5] = { { 1.0f, 3.0f, 3.0f, -1.0f, 0.5f },
                                        { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f } };
    static const int want_idx[2][3] = { { 1, 2, 0 }, { 0, 1, 2 } };
    DLTensor *g = TT(BF16, 2, 5), *w = TT(F32, 2, 3), *ix = TT(I32, 2, 3), *tei = TT(I32, 2, 3);
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 5; e++)
            tt_set(g, t * 5 + e, logits[t][e]);
    CHECK_EQ_INT(checked_topk_softmax(w, ix, tei, g), OPREG_OK);
    for (int t = 0; t < 2; t++) {
        long double sum = 0;
        for (int e = 0; e < 5; e++)
            sum += expl(logits[t][e]);
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_INT(((int32_t *)ix->data)[t * 3 + k], want_idx[t][k]);
            CHECK_EQ_INT(((int32_t *)tei->data)[t * 3 + k], k * 2 + t);
            CHECK(((float *)w->data)[t * 3 + k] == (float)(expl(logits[t][want_idx[t][k]]) / sum));
        }
    }
    tt_free_all();
}

static DLTensor *IDS, *SO, *EX, *NP, *G, *W, *IX, *TEI;
static void setup(void) {
    tt_free_all();
    IDS = TT(I32, 3, 2);
    SO = TT(I32, 6 + 4 * 3);
    EX = TT(I32, 5);
    NP = TT(I32, 1);
    G = TT(F32, 3, 4);
    W = TT(F32, 3, 2);
    IX = TT(I32, 3, 2);
    TEI = TT(I32, 3, 2);
    for (int i = 0; i < 6; i++)
        ((int32_t *)IDS->data)[i] = i % 4;
}

TEST(bad_inputs) {
    opreg_status SH = OPREG_ERR_SHAPE, IA = OPREG_ERR_INVALID_ARGUMENT;
#define MA checked_moe_align_block_size(IDS, 4, 4, SO, EX, NP)
    setup();
    IDS->dtype = DT(F32);
    EXPECT_REFUSED(SH, "'topk_ids': expected dtype i32 or i64", MA);
    setup();
    IDS->ndim = 1;
    EXPECT_REFUSED(SH, "'topk_ids': expected rank 2", MA);
    setup();
    EXPECT_REFUSED(IA, "'num_experts': must be in",
                   checked_moe_align_block_size(IDS, 0, 4, SO, EX, NP));
    setup();
    EXPECT_REFUSED(IA, "'block_size': must be in",
                   checked_moe_align_block_size(IDS, 4, 0, SO, EX, NP));
    setup();
    SO->shape[0] = 17;
    EXPECT_REFUSED(SH, "'sorted_token_ids': needs at least 18 elements", MA);
    setup();
    EX->shape[0] = 4;
    EXPECT_REFUSED(SH, "'experts_ids': needs at least 5 elements", MA);
    setup();
    NP->shape[0] = 0;
    EXPECT_REFUSED(SH, "'num_tokens_post_pad': needs at least 1", MA);
    setup();
    SO->dtype = DT(I64);
    SO->shape[0] = 9;
    EXPECT_REFUSED(SH, "'sorted_token_ids': expected dtype i32", MA);
    setup();
    ((int32_t *)IDS->data)[5] = 4;
    EXPECT_REFUSED(IA, "expert 4 at flat index 5 is outside 0..3", MA);
    setup();
    ((int32_t *)IDS->data)[0] = -1;
    EXPECT_REFUSED(IA, "expert -1 at flat index 0", MA);
    setup();
    EX->data = (char *)SO->data + 8;
    EXPECT_REFUSED(IA, "'experts_ids' overlaps 'sorted_token_ids'", MA);
    setup();
    NP->data = IDS->data;
    EXPECT_REFUSED(IA, "'num_tokens_post_pad' overlaps 'topk_ids'", MA);
    setup();
    tt_set_strides(IDS, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'topk_ids': must be contiguous", MA);
    setup();
    EX->data = NULL;
    EXPECT_REFUSED(IA, "'experts_ids': data is NULL", MA);
    setup();
    NP->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'num_tokens_post_pad' is on cuda", MA);
#undef MA
#define TS checked_topk_softmax(W, IX, TEI, G)
    setup();
    G->dtype = DT(I32);
    EXPECT_REFUSED(SH, "'gating_output': expected dtype", TS);
    setup();
    W->dtype = DT(BF16);
    EXPECT_REFUSED(SH, "'topk_weights': expected dtype f32", TS);
    setup();
    IX->dtype = DT(I64);
    EXPECT_REFUSED(SH, "'topk_indices': expected dtype i32", TS);
    setup();
    TEI->shape[1] = 3;
    EXPECT_REFUSED(SH, "'token_expert_indices': expected size 2 in dim 1", TS);
    setup();
    W->shape[0] = 2;
    EXPECT_REFUSED(SH, "'topk_weights': expected size 3 in dim 0", TS);
    setup();
    W->shape[1] = 5;
    IX->shape[1] = 5;
    TEI->shape[1] = 5;
    W->shape[0] = 1;
    IX->shape[0] = 1;
    TEI->shape[0] = 1;
    G->shape[0] = 1;
    EXPECT_REFUSED(SH, "k = 5 exceeds the 4 experts", TS);
    setup();
    TEI->data = IX->data;
    EXPECT_REFUSED(IA, "'token_expert_indices' overlaps 'topk_indices'", TS);
    setup();
    W->data = G->data;
    EXPECT_REFUSED(IA, "'topk_weights' overlaps 'gating_output'", TS);
    setup();
    G->data = NULL;
    EXPECT_REFUSED(IA, "'gating_output': data is NULL", TS);
    setup();
    IX->device.device_type = kDLCUDA;
    EXPECT_REFUSED(OPREG_ERR_DEVICE_MISMATCH, "'topk_indices' is on cuda", TS);
    setup();
    tt_set_strides(G, (int64_t[]){ 1, 3 });
    EXPECT_REFUSED(SH, "'gating_output': must be contiguous", TS);
#undef TS
    setup();
    tt_to_meta(IDS);
    tt_to_meta(SO);
    tt_to_meta(EX);
    tt_to_meta(NP);
    CHECK_EQ_INT(opreg__check_moe_align_block_size(IDS, 4, 4, SO, EX, NP), OPREG_OK);
    tt_to_meta(G);
    tt_to_meta(W);
    tt_to_meta(IX);
    tt_to_meta(TEI);
    CHECK_EQ_INT(opreg__check_topk_softmax(W, IX, TEI, G), OPREG_OK);
    tt_free_all();
}

int main(void) {
    RUN(moe_align_example);
    RUN(moe_align_random_invariants);
    RUN(moe_align_few_ids_of_many_experts);
    RUN(moe_align_sparse_matches_dense);
    RUN(topk_softmax_hand);
    RUN(bad_inputs);
    printf("%d bad-input cases\n", bad_cases);
    return test_summary();
}
