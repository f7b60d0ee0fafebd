/* The views that serving engines pass, through the registry, on the CPU and
 * Reference keys (and any other key with a kernel that runs on host
 * memory), each against the same op on dense copies:
 * - one combined KV cache kv [num_blocks, 2, ...] whose halves kv[:, 0] and
 *   kv[:, 1] are the key and value caches (block stride twice the dense
 *   one, the two interleaved in one buffer): reshape_and_cache_flash,
 *   reshape_and_cache, paged_attention_v1, swap_blocks, copy_blocks;
 * - query and key of the rotary ops as slices of one fused QKV tensor
 *   [T, (H + 2 * KV) * D] (a token stride larger than the row, the two
 *   interleaved in one buffer);
 * - and the refusals that stay: caches that really overlap, blocks that
 *   overlap, tokens that overlap. */
#include "test.h"

#include "opreg/opreg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NB = 5, BS = 4, H = 2, D = 16, X = 4, T = 7, BLK = BS * H * D };

/* Set-up that cannot go on without its result ends the test program. */
static void must(opreg_status st, const char *what) {
    if (st == OPREG_OK) return;
    fprintf(stderr, "%s: %s\n", what, opreg_last_error());
    exit(1);
}

static const opreg_op *find(const char *name) {
    const opreg_op *op = NULL;
    must(opreg_op_find(&op, opreg_registry_default(), name), name);
    return op;
}

static DLTensor *buffer(opreg_dtype dt, int64_t n) {
    DLTensor *t = NULL;
    must(opreg_tensor_empty_cpu(&t, dt, 1, &n), "opreg_tensor_empty_cpu");
    return t;
}

static DLTensor *view(const DLTensor *base, int ndim, const int64_t *shape, const int64_t *strides,
                      int64_t elem_offset) {
    DLTensor *v = NULL;
    must(opreg_tensor_view(&v, base, ndim, shape, strides,
                           (uint64_t)elem_offset * (base->dtype.bits / 8)),
         "opreg_tensor_view");
    return v;
}

static void fill(DLTensor *t, int64_t n, float scale) {
    float *p = t->data;
    for (int64_t i = 0; i < n; i++)
        p[i] = scale * sinf(0.37f * (float)i + 0.1f);
}

/* Whether the dense tensor @p dense equals block-strided @p kv's blocks. */
static bool same_blocks(const float *kv, int64_t half, const float *dense) {
    for (int64_t b = 0; b < NB; b++)
        if (memcmp(kv + b * 2 * BLK + half * BLK, dense + b * BLK, BLK * sizeof(float)) != 0)
            return false;
    return true;
}

static opreg_status call(const opreg_op *op, opreg_dispatch_key key, opreg_value *args, size_t n) {
    opreg_status st = opreg_call_boxed_key(op, key, args, n, NULL, 0, NULL, 0);
    if (st != OPREG_OK) fprintf(stderr, "  %s: %s\n", opreg_key_name(key), opreg_last_error());
    return st;
}

/* The keys that run here on host memory and have a kernel for @p op. */
static int host_keys(const opreg_op *op, opreg_dispatch_key *keys) {
    int n = 0;
    for (opreg_dispatch_key k = 0; k < opreg_key_count(); k++) {
        const opreg_backend *b = opreg_key_backend(k);
        if (k == OPREG_KEY_META || opreg_op_kernel_kind(op, k) != OPREG_KERNEL_DIRECT) continue;
        if (k == OPREG_KEY_REFERENCE || (b && b->device_type == kDLCPU)) keys[n++] = k;
    }
    return n;
}

static const int64_t slot_of[T] = { 3, 17, -1, 0, 9, 12, 19 };

/* key and value [T, H, D] as kv_in[:, 0] and kv_in[:, 1] of [T, 2, H, D]. */
static void token_inputs(DLTensor **kv_in, DLTensor **key, DLTensor **value, DLTensor **dk,
                         DLTensor **dv) {
    const int64_t shape[] = { T, H, D }, strides[] = { 2 * H * D, D, 1 };
    *kv_in = buffer(OPREG_DTYPE_F32, T * 2 * H * D);
    fill(*kv_in, T * 2 * H * D, 1.0f);
    *key = view(*kv_in, 3, shape, strides, 0);
    *value = view(*kv_in, 3, shape, strides, H * D);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(dk, OPREG_DTYPE_F32, 3, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(dv, OPREG_DTYPE_F32, 3, shape), OPREG_OK);
    for (int64_t t = 0; t < T; t++) {
        memcpy((float *)(*dk)->data + t * H * D, (float *)(*kv_in)->data + t * 2 * H * D,
               H * D * sizeof(float));
        memcpy((float *)(*dv)->data + t * H * D, (float *)(*kv_in)->data + t * 2 * H * D + H * D,
               H * D * sizeof(float));
    }
}

/* reshape_and_cache_flash and reshape_and_cache into kv[:, 0], kv[:, 1]. */
static void run_cache_write(const char *name, bool flash) {
    const opreg_op *op = find(name);
    opreg_dispatch_key keys[16];
    int nkeys = op ? host_keys(op, keys) : 0;
    CHECK(nkeys >= 2);
    for (int k = 0; k < nkeys; k++) {
        DLTensor *kv_in, *key, *value, *dk, *dv;
        token_inputs(&kv_in, &key, &value, &dk, &dv);
        int64_t ns = T;
        DLTensor *slots = buffer(OPREG_DTYPE_I64, ns);
        memcpy(slots->data, slot_of, sizeof slot_of);
        /* the combined cache and two dense ones, all starting as zeros */
        DLTensor *kv = buffer(OPREG_DTYPE_F32, NB * 2 * BLK);
        DLTensor *dkc = buffer(OPREG_DTYPE_F32, NB * BLK), *dvc = buffer(OPREG_DTYPE_F32, NB * BLK);
        memset(kv->data, 0, NB * 2 * BLK * sizeof(float));
        memset(dkc->data, 0, NB * BLK * sizeof(float));
        memset(dvc->data, 0, NB * BLK * sizeof(float));
        DLTensor *kc, *vc, *dkc_v, *dvc_v;
        if (flash) {
            const int64_t shape[] = { NB, BS, H, D }, strides[] = { 2 * BLK, H * D, D, 1 };
            kc = view(kv, 4, shape, strides, 0);
            vc = view(kv, 4, shape, strides, BLK);
            dkc_v = view(dkc, 4, shape, NULL, 0);
            dvc_v = view(dvc, 4, shape, NULL, 0);
        } else {
            const int64_t ks[] = { NB, H, D / X, BS, X }, kst[] = { 2 * BLK, D * BS, BS * X, X, 1 };
            const int64_t vs[] = { NB, H, D, BS }, vst[] = { 2 * BLK, D * BS, BS, 1 };
            kc = view(kv, 5, ks, kst, 0);
            vc = view(kv, 4, vs, vst, BLK);
            dkc_v = view(dkc, 5, ks, NULL, 0);
            dvc_v = view(dvc, 4, vs, NULL, 0);
        }
        opreg_value args[7] = { opreg_tensor_value(key),   opreg_tensor_value(value),
                                opreg_tensor_value(kc),    opreg_tensor_value(vc),
                                opreg_tensor_value(slots), opreg_str_value("auto"),
                                opreg_float_value(1.0) };
        opreg_value dargs[7] = { opreg_tensor_value(dk),    opreg_tensor_value(dv),
                                 opreg_tensor_value(dkc_v), opreg_tensor_value(dvc_v),
                                 opreg_tensor_value(slots), opreg_str_value("auto"),
                                 opreg_float_value(1.0) };
        size_t nargs = flash ? 6 : 7;
        CHECK_EQ_INT(call(op, keys[k], args, nargs), OPREG_OK);
        CHECK_EQ_INT(call(op, OPREG_KEY_REFERENCE, dargs, nargs), OPREG_OK);
        if (!same_blocks(kv->data, 0, dkc->data) || !same_blocks(kv->data, 1, dvc->data))
            TEST_FAIL_AT("%s on %s: kv[:, 0] / kv[:, 1] differ from the dense caches", name,
                         opreg_key_name(keys[k]));
        /* A value cache that is the key cache's own half, or half a block
         * off, really overlaps it: refused. */
        if (flash) {
            DLTensor *same = view(kv, 4, kc->shape, kc->strides, 0);
            DLTensor *shifted = view(kv, 4, kc->shape, kc->strides, BLK / 2);
            args[3] = opreg_tensor_value(same);
            CHECK_EQ_INT(opreg_call_boxed_key(op, keys[k], args, nargs, NULL, 0, NULL, 0),
                         OPREG_ERR_INVALID_ARGUMENT);
            CHECK_CONTAINS(opreg_last_error(), "argument 'key_cache' overlaps 'value_cache'");
            args[3] = opreg_tensor_value(shifted);
            CHECK_EQ_INT(opreg_call_boxed_key(op, keys[k], args, nargs, NULL, 0, NULL, 0),
                         OPREG_ERR_INVALID_ARGUMENT);
            CHECK_CONTAINS(opreg_last_error(), "argument 'key_cache' overlaps 'value_cache'");
            opreg_tensor_free(same);
            opreg_tensor_free(shifted);
        }
        opreg_tensor_free(kc), opreg_tensor_free(vc), opreg_tensor_free(dkc_v);
        opreg_tensor_free(dvc_v), opreg_tensor_free(kv), opreg_tensor_free(dkc);
        opreg_tensor_free(dvc), opreg_tensor_free(slots), opreg_tensor_free(key);
        opreg_tensor_free(value), opreg_tensor_free(dk), opreg_tensor_free(dv);
        opreg_tensor_free(kv_in);
    }
}

TEST(reshape_and_cache_flash_into_halves_of_one_cache) {
    run_cache_write("_C::reshape_and_cache_flash", true);
}

TEST(reshape_and_cache_into_halves_of_one_cache) {
    run_cache_write("_C::reshape_and_cache", false);
}

/* Blocks closer than a block's size overlap: refused, with the numbers. */
TEST(overlapping_blocks_refused) {
    const opreg_op *op = find("_C::reshape_and_cache_flash");
    DLTensor *kv_in, *key, *value, *dk, *dv;
    token_inputs(&kv_in, &key, &value, &dk, &dv);
    DLTensor *slots = buffer(OPREG_DTYPE_I64, T), *kv = buffer(OPREG_DTYPE_F32, NB * 2 * BLK);
    memcpy(slots->data, slot_of, sizeof slot_of);
    const int64_t shape[] = { NB, BS, H, D }, close[] = { BLK - 1, H * D, D, 1 };
    const int64_t gap[] = { 2 * BLK, H * D + 1, D, 1 };
    DLTensor *kc = view(kv, 4, shape, close, 0), *vc = view(kv, 4, shape, gap, BLK);
    opreg_value args[6] = { opreg_tensor_value(key),   opreg_tensor_value(value),
                            opreg_tensor_value(kc),    opreg_tensor_value(vc),
                            opreg_tensor_value(slots), opreg_str_value("auto") };
    CHECK_EQ_INT(opreg_call_boxed_key(op, OPREG_KEY_CPU, args, 6, NULL, 0, NULL, 0),
                 OPREG_ERR_SHAPE);
    CHECK_EQ_STR(opreg_last_error(), "_C::reshape_and_cache_flash: argument 'key_cache': blocks "
                                     "overlap (stride 127 in dim 0, less than a block's 128 "
                                     "elements)");
    DLTensor *kc2 = view(kv, 4, shape, gap, 0);
    args[2] = opreg_tensor_value(kc2);
    CHECK_EQ_INT(opreg_call_boxed_key(op, OPREG_KEY_META, args, 6, NULL, 0, NULL, 0),
                 OPREG_ERR_SHAPE);
    CHECK_EQ_STR(opreg_last_error(), "_C::reshape_and_cache_flash: argument 'key_cache': each "
                                     "block must be contiguous (stride 33 in dim 1, expected 32)");
    opreg_tensor_free(kc), opreg_tensor_free(kc2), opreg_tensor_free(vc), opreg_tensor_free(kv);
    opreg_tensor_free(slots), opreg_tensor_free(key), opreg_tensor_free(value);
    opreg_tensor_free(dk), opreg_tensor_free(dv), opreg_tensor_free(kv_in);
}

/* paged_attention_v1 reading kv[:, 0] and kv[:, 1], against dense caches. */
TEST(paged_attention_on_halves_of_one_cache) {
    const opreg_op *op = find("_C::paged_attention_v1");
    enum { S = 2, HQ = 4, MAXB = 3 };
    opreg_dispatch_key keys[16];
    int nkeys = op ? host_keys(op, keys) : 0;
    const int64_t qs[] = { S, HQ, D };
    const int64_t ks[] = { NB, H, D / X, BS, X }, kst[] = { 2 * BLK, D * BS, BS * X, X, 1 };
    const int64_t vs[] = { NB, H, D, BS }, vst[] = { 2 * BLK, D * BS, BS, 1 };
    DLTensor *kv = buffer(OPREG_DTYPE_F32, NB * 2 * BLK), *dkc = buffer(OPREG_DTYPE_F32, NB * BLK);
    DLTensor *dvc = buffer(OPREG_DTYPE_F32, NB * BLK);
    fill(kv, NB * 2 * BLK, 0.5f);
    for (int64_t b = 0; b < NB; b++) {
        memcpy((float *)dkc->data + b * BLK, (float *)kv->data + b * 2 * BLK, BLK * 4);
        memcpy((float *)dvc->data + b * BLK, (float *)kv->data + b * 2 * BLK + BLK, BLK * 4);
    }
    DLTensor *kc = view(kv, 5, ks, kst, 0), *vc = view(kv, 4, vs, vst, BLK);
    DLTensor *dk = view(dkc, 5, ks, NULL, 0), *dv = view(dvc, 4, vs, NULL, 0);
    DLTensor *q = NULL, *out = NULL, *want = NULL, *tables = NULL, *lens = NULL;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&q, OPREG_DTYPE_F32, 3, qs), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&out, OPREG_DTYPE_F32, 3, qs), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&want, OPREG_DTYPE_F32, 3, qs), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&tables, OPREG_DTYPE_I32, 2, (int64_t[]){ S, MAXB }),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&lens, OPREG_DTYPE_I32, 1, (int64_t[]){ S }), OPREG_OK);
    fill(q, S * HQ * D, 1.0f);
    const int32_t tb[S * MAXB] = { 4, 1, 3, 0, 2, 0 }, ln[S] = { 11, 6 };
    memcpy(tables->data, tb, sizeof tb);
    memcpy(lens->data, ln, sizeof ln);
    for (int k = 0; k < nkeys; k++) {
        opreg_value a[18];
        DLTensor *o[2] = { out, want }, *c[2][2] = { { kc, vc }, { dk, dv } };
        for (int run = 0; run < 2; run++) {
            a[0] = opreg_tensor_value(o[run]);
            a[1] = opreg_tensor_value(q);
            a[2] = opreg_tensor_value(c[run][0]);
            a[3] = opreg_tensor_value(c[run][1]);
            a[4] = opreg_int_value(H);
            a[5] = opreg_float_value(0.25);
            a[6] = opreg_tensor_value(tables);
            a[7] = opreg_tensor_value(lens);
            a[8] = opreg_int_value(BS);
            a[9] = opreg_int_value(MAXB * BS);
            a[10] = opreg_none();
            a[11] = opreg_str_value("auto");
            a[12] = opreg_float_value(1.0);
            for (int i = 13; i < 18; i++)
                a[i] = opreg_int_value(i == 16 ? 64 : 0);
            CHECK_EQ_INT(call(op, run == 0 ? keys[k] : OPREG_KEY_REFERENCE, a, 18), OPREG_OK);
        }
        double worst = 0;
        for (int64_t i = 0; i < S * HQ * D; i++)
            worst = fmax(worst, fabs(((float *)out->data)[i] - ((float *)want->data)[i]));
        if (worst > 1e-5)
            TEST_FAIL_AT("paged_attention_v1 on %s: off by %g on split caches",
                         opreg_key_name(keys[k]), worst);
    }
    opreg_tensor_free(kc), opreg_tensor_free(vc), opreg_tensor_free(dk), opreg_tensor_free(dv);
    opreg_tensor_free(kv), opreg_tensor_free(dkc), opreg_tensor_free(dvc), opreg_tensor_free(q);
    opreg_tensor_free(out), opreg_tensor_free(want), opreg_tensor_free(tables);
    opreg_tensor_free(lens);
}

/* rotary_embedding on query = qkv[:, :Q] and key = qkv[:, Q:Q+K] of one
 * fused [T, Q + 2K] tensor, against dense copies; value untouched. */
TEST(rotary_on_slices_of_fused_qkv) {
    const char *names[2] = { "_C::rotary_embedding", "_C::batched_rotary_embedding" };
    enum { HQ = 3, HK = 1, Q = HQ * D, K = HK * D, W = Q + 2 * K, MAXP = 32 };
    for (int n = 0; n < 2; n++) {
        const opreg_op *op = find(names[n]);
        opreg_dispatch_key keys[16];
        int nkeys = op ? host_keys(op, keys) : 0;
        for (int k = 0; k < nkeys; k++) {
            DLTensor *qkv = buffer(OPREG_DTYPE_F32, T * W), *dq = NULL, *dk = NULL;
            DLTensor *pos = buffer(OPREG_DTYPE_I64, T), *off = buffer(OPREG_DTYPE_I64, T);
            DLTensor *cache = NULL;
            CHECK_EQ_INT(opreg_tensor_empty_cpu(&cache, OPREG_DTYPE_F32, 2, (int64_t[]){ MAXP, D }),
                         OPREG_OK);
            CHECK_EQ_INT(opreg_tensor_empty_cpu(&dq, OPREG_DTYPE_F32, 2, (int64_t[]){ T, Q }),
                         OPREG_OK);
            CHECK_EQ_INT(opreg_tensor_empty_cpu(&dk, OPREG_DTYPE_F32, 2, (int64_t[]){ T, K }),
                         OPREG_OK);
            fill(qkv, T * W, 1.0f);
            fill(cache, MAXP * D, 1.0f);
            for (int64_t t = 0; t < T; t++) {
                ((int64_t *)pos->data)[t] = (t * 5) % (MAXP / 2);
                ((int64_t *)off->data)[t] = t % 3;
                memcpy((float *)dq->data + t * Q, (float *)qkv->data + t * W, Q * 4);
                memcpy((float *)dk->data + t * K, (float *)qkv->data + t * W + Q, K * 4);
            }
            float before_v[T * K];
            for (int64_t t = 0; t < T; t++)
                memcpy(before_v + t * K, (float *)qkv->data + t * W + Q + K, K * 4);
            DLTensor *qv = view(qkv, 2, (int64_t[]){ T, Q }, (int64_t[]){ W, 1 }, 0);
            DLTensor *kvw = view(qkv, 2, (int64_t[]){ T, K }, (int64_t[]){ W, 1 }, Q);
            opreg_value a[8] = { opreg_tensor_value(pos),   opreg_tensor_value(qv),
                                 opreg_tensor_value(kvw),   opreg_int_value(D),
                                 opreg_tensor_value(cache), opreg_bool_value(true),
                                 opreg_int_value(D),        opreg_tensor_value(off) };
            size_t na = n ? 8 : 6;
            CHECK_EQ_INT(call(op, keys[k], a, na), OPREG_OK);
            a[1] = opreg_tensor_value(dq);
            a[2] = opreg_tensor_value(dk);
            CHECK_EQ_INT(call(op, OPREG_KEY_REFERENCE, a, na), OPREG_OK);
            double worst = 0;
            for (int64_t t = 0; t < T; t++) {
                for (int64_t i = 0; i < Q; i++)
                    worst = fmax(worst, fabs(((float *)qkv->data)[t * W + i] -
                                             ((float *)dq->data)[t * Q + i]));
                for (int64_t i = 0; i < K; i++)
                    worst = fmax(worst, fabs(((float *)qkv->data)[t * W + Q + i] -
                                             ((float *)dk->data)[t * K + i]));
                if (memcmp(before_v + t * K, (float *)qkv->data + t * W + Q + K, K * 4) != 0)
                    TEST_FAIL_AT("%s on %s: the value slice changed", names[n],
                                 opreg_key_name(keys[k]));
            }
            if (worst > 1e-5)
                TEST_FAIL_AT("%s on %s: off by %g on fused QKV slices", names[n],
                             opreg_key_name(keys[k]), worst);
            /* Tokens closer than a row overlap: refused. */
            DLTensor *tight = view(qkv, 2, (int64_t[]){ T, Q }, (int64_t[]){ Q - 1, 1 }, 0);
            a[1] = opreg_tensor_value(tight);
            a[2] = opreg_tensor_value(dk);
            CHECK_EQ_INT(opreg_call_boxed_key(op, keys[k], a, na, NULL, 0, NULL, 0),
                         OPREG_ERR_SHAPE);
            CHECK_CONTAINS(opreg_last_error(),
                           "argument 'query': rows overlap (row stride 47 < 48)");
            opreg_tensor_free(tight), opreg_tensor_free(qv), opreg_tensor_free(kvw);
            opreg_tensor_free(qkv), opreg_tensor_free(dq), opreg_tensor_free(dk);
            opreg_tensor_free(pos), opreg_tensor_free(off), opreg_tensor_free(cache);
        }
    }
}

/* swap_blocks and copy_blocks on kv[:, 0] / kv[:, 1], against dense. */
TEST(block_copies_on_halves_of_one_cache) {
    const opreg_op *swap = find("_C::swap_blocks"), *copy = find("_C::copy_blocks");
    const int64_t shape[] = { NB, BS, H, D }, strides[] = { 2 * BLK, H * D, D, 1 };
    DLTensor *kv = buffer(OPREG_DTYPE_F32, NB * 2 * BLK),
             *dense = buffer(OPREG_DTYPE_F32, NB * BLK);
    DLTensor *map = NULL;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&map, OPREG_DTYPE_I64, 2, (int64_t[]){ 2, 2 }), OPREG_OK);
    const int64_t pairs[4] = { 0, 3, 4, 1 };
    memcpy(map->data, pairs, sizeof pairs);
    fill(kv, NB * 2 * BLK, 1.0f);
    for (int64_t b = 0; b < NB; b++)
        memcpy((float *)dense->data + b * BLK, (float *)kv->data + b * 2 * BLK, BLK * 4);
    DLTensor *k0 = view(kv, 4, shape, strides, 0), *v0 = view(kv, 4, shape, strides, BLK);
    DLTensor *dk = view(dense, 4, shape, NULL, 0);
    /* swap_blocks from kv[:, 0] into kv[:, 1]: blocks 3 and 1 of the value
     * half become blocks 0 and 4 of the key half */
    opreg_value a[3] = { opreg_tensor_value(k0), opreg_tensor_value(v0), opreg_tensor_value(map) };
    CHECK_EQ_INT(call(swap, OPREG_KEY_CPU, a, 3), OPREG_OK);
    const float *p = kv->data;
    CHECK(memcmp(p + 3 * 2 * BLK + BLK, p + 0, BLK * 4) == 0);
    CHECK(memcmp(p + 1 * 2 * BLK + BLK, p + 4 * 2 * BLK, BLK * 4) == 0);
    /* copy_blocks within the key half, against the same on a dense copy */
    DLTensor *kl[1] = { k0 }, *vl[1] = { v0 }, *dkl[1] = { dk };
    opreg_value c[3] = { opreg_tensor_list_value(kl, 1), opreg_tensor_list_value(vl, 1),
                         opreg_tensor_value(map) };
    CHECK_EQ_INT(call(copy, OPREG_KEY_CPU, c, 3), OPREG_OK);
    opreg_value dc[3] = { opreg_tensor_list_value(dkl, 1), opreg_tensor_list_value(dkl, 1),
                          opreg_tensor_value(map) };
    CHECK_EQ_INT(call(copy, OPREG_KEY_REFERENCE, dc, 3), OPREG_OK);
    CHECK(same_blocks(kv->data, 0, dense->data));
    opreg_tensor_free(k0), opreg_tensor_free(v0), opreg_tensor_free(dk);
    opreg_tensor_free(kv), opreg_tensor_free(dense), opreg_tensor_free(map);
}

/* A dim of size 1 has no stride that matters: a view whose size-1 dims
 * carry any stride is dense, and the kernels step rows along the dims that
 * have more than one. (The CPU kernels took the stride of dim -2 and wrote
 * past the buffer.) */
TEST(size_one_dims_with_any_stride) {
    const opreg_op *gelu = find("_C::gelu_new"), *silu = find("_C::silu_and_mul");
    enum { R = 8 };
    DLTensor *in = buffer(OPREG_DTYPE_F32, R * 4), *out = buffer(OPREG_DTYPE_F32, R * 2);
    DLTensor *want = buffer(OPREG_DTYPE_F32, R * 2);
    fill(in, R * 4, 2.0f);
    DLTensor *o1 = view(out, 3, (int64_t[]){ R, 1, 1 }, (int64_t[]){ 1, 100, 1 }, 0);
    DLTensor *i1 = view(in, 3, (int64_t[]){ R, 1, 1 }, NULL, 0);
    DLTensor *w1 = view(want, 3, (int64_t[]){ R, 1, 1 }, NULL, 0);
    opreg_value a[2] = { opreg_tensor_value(o1), opreg_tensor_value(i1) };
    opreg_value b[2] = { opreg_tensor_value(w1), opreg_tensor_value(i1) };
    CHECK_EQ_INT(call(gelu, OPREG_KEY_CPU, a, 2), OPREG_OK);
    CHECK_EQ_INT(call(gelu, OPREG_KEY_REFERENCE, b, 2), OPREG_OK);
    for (int i = 0; i < R; i++)
        CHECK(fabsf(((float *)out->data)[i] - ((float *)want->data)[i]) < 1e-5f);
    DLTensor *o2 = view(out, 3, (int64_t[]){ R, 1, 2 }, (int64_t[]){ 2, 100, 1 }, 0);
    DLTensor *i2 = view(in, 3, (int64_t[]){ R, 1, 4 }, (int64_t[]){ 4, 7, 1 }, 0);
    DLTensor *w2 = view(want, 3, (int64_t[]){ R, 1, 2 }, NULL, 0);
    a[0] = opreg_tensor_value(o2), a[1] = opreg_tensor_value(i2);
    b[0] = opreg_tensor_value(w2), b[1] = opreg_tensor_value(i2);
    CHECK_EQ_INT(call(silu, OPREG_KEY_CPU, a, 2), OPREG_OK);
    CHECK_EQ_INT(call(silu, OPREG_KEY_REFERENCE, b, 2), OPREG_OK);
    for (int i = 0; i < R * 2; i++)
        CHECK(fabsf(((float *)out->data)[i] - ((float *)want->data)[i]) < 1e-5f);
    opreg_tensor_free(o1), opreg_tensor_free(i1), opreg_tensor_free(w1), opreg_tensor_free(o2);
    opreg_tensor_free(i2), opreg_tensor_free(w2), opreg_tensor_free(in), opreg_tensor_free(out);
    opreg_tensor_free(want);
}

/* Sizes whose product, or strides whose span, pass 2^63 bytes cannot
 * describe a buffer: refused before anything multiplies them. */
TEST(sizes_and_strides_past_the_address_space_refused) {
    const opreg_op *op = find("_C::rms_norm");
    DLTensor *x = buffer(OPREG_DTYPE_F32, 16), *w = buffer(OPREG_DTYPE_F32, 8);
    /* opreg_tensor_view() refuses such shapes; a caller's own DLTensor may not */
    int64_t huge_shape[2] = { (int64_t)1 << 62, 2 };
    DLTensor huge_t = *x;
    huge_t.ndim = 2;
    huge_t.shape = huge_shape;
    huge_t.strides = NULL;
    DLTensor *huge = &huge_t;
    DLTensor *w2 = view(w, 1, (int64_t[]){ 2 }, NULL, 0);
    opreg_value a[4] = { opreg_tensor_value(huge), opreg_tensor_value(huge), opreg_tensor_value(w2),
                         opreg_float_value(0.125) };
    CHECK_EQ_INT(opreg_call_boxed_key(op, OPREG_KEY_CPU, a, 4, NULL, 0, NULL, 0), OPREG_ERR_SHAPE);
    CHECK_EQ_STR(opreg_last_error(),
                 "_C::rms_norm: argument 'input': its sizes multiply past 2^63 bytes");
    int64_t far_shape[2] = { 2, 8 }, far_strides[2] = { (int64_t)1 << 62, 1 };
    DLTensor far_t = *x;
    far_t.ndim = 2;
    far_t.shape = far_shape;
    far_t.strides = far_strides;
    DLTensor *far = &far_t;
    DLTensor *o = view(x, 2, (int64_t[]){ 2, 8 }, NULL, 0);
    a[0] = opreg_tensor_value(o), a[1] = opreg_tensor_value(far), a[2] = opreg_tensor_value(w);
    CHECK_EQ_INT(opreg_call_boxed_key(op, OPREG_KEY_CPU, a, 4, NULL, 0, NULL, 0), OPREG_ERR_SHAPE);
    CHECK_EQ_STR(opreg_last_error(), "_C::rms_norm: argument 'input': its strides reach past 2^63 "
                                     "bytes (stride 4611686018427387904 in dim 0)");
    opreg_tensor_free(w2), opreg_tensor_free(o);
    opreg_tensor_free(x), opreg_tensor_free(w);
}

/* Tensors with no data: an empty CPU tensor, and Meta tensors handed to the
 * Reference key, which refuses them; neither computes an address from NULL
 * (undefined, which UBSan reports). */
TEST(tensors_without_data) {
    const opreg_op *silu = find("_C::silu_and_mul"), *gelu = find("_C::gelu_fast");
    DLTensor *o = NULL, *i = NULL, *mo = NULL, *mi = NULL;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&o, OPREG_DTYPE_F32, 2, (int64_t[]){ 0, 8 }), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&i, OPREG_DTYPE_F32, 2, (int64_t[]){ 0, 16 }), OPREG_OK);
    void *od = o->data, *id = i->data;
    o->data = i->data = NULL;
    opreg_value a[2] = { opreg_tensor_value(o), opreg_tensor_value(i) };
    CHECK_EQ_INT(call(silu, OPREG_KEY_CPU, a, 2), OPREG_OK);
    o->data = od, i->data = id;
    CHECK_EQ_INT(opreg_tensor_empty_meta(&mo, OPREG_DTYPE_F32, 1, (int64_t[]){ 4 }), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_meta(&mi, OPREG_DTYPE_F32, 1, (int64_t[]){ 4 }), OPREG_OK);
    a[0] = opreg_tensor_value(mo), a[1] = opreg_tensor_value(mi);
    CHECK(opreg_call_boxed_key(gelu, OPREG_KEY_REFERENCE, a, 2, NULL, 0, NULL, 0) != OPREG_OK);
    CHECK(opreg_last_error()[0] != '\0');
    opreg_tensor_free(o), opreg_tensor_free(i), opreg_tensor_free(mo), opreg_tensor_free(mi);
}

int main(void) {
    RUN(reshape_and_cache_flash_into_halves_of_one_cache);
    RUN(reshape_and_cache_into_halves_of_one_cache);
    RUN(overlapping_blocks_refused);
    RUN(paged_attention_on_halves_of_one_cache);
    RUN(rotary_on_slices_of_fused_qkv);
    RUN(block_copies_on_halves_of_one_cache);
    RUN(size_one_dims_with_any_stride);
    RUN(sizes_and_strides_past_the_address_space_refused);
    RUN(tensors_without_data);
    return test_summary();
}
