/* The input generators of the catalogue's ops, declared with their definitions
 * (catalogue.c): each appends the op's arguments in schema order, with sizes
 * from the caller and index tensors that pass the op's data checks
 * (ops/check): distinct slots inside the cache, block tables inside the
 * blocks, positions inside the cos/sin cache, expert ids below the experts.
 * Distinct destinations keep the result independent of the order in which a
 * parallel kernel writes. */
#include "ops/register/catalogue.h"

#include <math.h>
#include <stdlib.h>

#define DIMS(...) (const int64_t[]){ __VA_ARGS__ }, (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / 8)
#define F         OPREG_DTYPE_F32

/* A tensor of uniform values in [lo, hi). */
static DLTensor *rnd(opreg_gen *b, opreg_dtype dt, double lo, double hi, const int64_t *shape,
                     int ndim) {
    DLTensor *t = opreg_gen_tensor(b, dt, ndim, shape);
    opreg_gen_fill(b, t, lo, hi);
    return t;
}

static DLTensor *zeros(opreg_gen *b, opreg_dtype dt, const int64_t *shape, int ndim) {
    return opreg_gen_tensor(b, dt, ndim, shape);
}

/* A random [rows, width] tensor whose rows lie @p pad elements apart beyond
 * their width (vLLM passes such views, e.g. query sliced out of a fused
 * QKV projection); pad 0 gives a contiguous tensor. */
static DLTensor *rnd_rows(opreg_gen *b, opreg_dtype dt, double lo, double hi, int64_t rows,
                          int64_t width, int64_t pad) {
    if (pad <= 0) return rnd(b, dt, lo, hi, DIMS(rows, width));
    DLTensor *t = opreg_gen_tensor_strided(b, dt, 2, (const int64_t[]){ rows, width },
                                           (const int64_t[]){ width + pad, 1 },
                                           rows ? (rows - 1) * (width + pad) + width : 0);
    opreg_gen_fill(b, t, lo, hi);
    return t;
}

/* key or value [T, H, D] whose tokens lie @p pad elements apart beyond H*D
 * (a slice of a fused KV tensor, as vLLM passes them). */
static DLTensor *rnd_tokens(opreg_gen *b, opreg_dtype dt, int64_t t, int64_t h, int64_t d,
                            int64_t pad) {
    if (pad <= 0) return rnd(b, dt, -1, 1, DIMS(t, h, d));
    DLTensor *x = opreg_gen_tensor_strided(b, dt, 3, (const int64_t[]){ t, h, d },
                                           (const int64_t[]){ h * d + pad, d, 1 },
                                           t ? (t - 1) * (h * d + pad) + h * d : 0);
    opreg_gen_fill(b, x, -1, 1);
    return x;
}

/* A permutation of 0..n-1 that starts as the identity and keeps only the
 * entries moved so far, in an open-addressed table of (index, value):
 * k steps of a Fisher-Yates shuffle move at most 2k entries, so memory
 * follows k, not n (2^31 - 1 experts with two ids per token). */
typedef struct moved_entries {
    int64_t *index, *value; /* index -1: free */
    size_t mask;
} moved_entries;

/* The entry for @p i, added with value i on first use. The table has room
 * for twice the entries it is given, so the walk ends. */
static int64_t *moved_at(moved_entries *m, int64_t i) {
    size_t h = (size_t)(((uint64_t)i * 0x9e3779b97f4a7c15u) >> 32) & m->mask;
    while (m->index[h] != i && m->index[h] != -1)
        h = (h + 1) & m->mask;
    if (m->index[h] == -1) {
        m->index[h] = i;
        m->value[h] = i;
    }
    return &m->value[h];
}

/* The first @p k of a random permutation of 0..n-1 (k distinct values),
 * into the index tensor's elements add, add + stride, ... */
static void distinct(opreg_gen *b, DLTensor *t, int64_t stride, int64_t k, int64_t n, int64_t add) {
    int64_t steps = k < n ? k : n;
    size_t room = 16;
    while (room < 4 * (size_t)steps)
        room *= 2;
    moved_entries m = { malloc(room * sizeof(int64_t)), malloc(room * sizeof(int64_t)), room - 1 };
    if (!m.index || !m.value) {
        free(m.index);
        free(m.value);
        opreg_gen_fail(b, "out of memory");
        return;
    }
    for (size_t h = 0; h < room; h++)
        m.index[h] = -1;
    for (int64_t i = 0; i < steps; i++) {
        int64_t j = i + opreg_gen_below(b, n - i);
        int64_t *at_i = moved_at(&m, i), *at_j = moved_at(&m, j), s = *at_i;
        *at_i = *at_j;
        *at_j = s;
        opreg_gen_set(t, i * stride + add, (double)*at_i);
    }
    free(m.index);
    free(m.value);
}

static void build_rms_norm(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), h = opreg_gen_dim(b, "hidden", 1024);
    int64_t pad = opreg_gen_count(b, "row_pad", 0);
    opreg_dtype dt = opreg_gen_dtype(b);
    opreg_gen_arg_tensor(b, zeros(b, dt, DIMS(t, h)));
    opreg_gen_arg_tensor(b, rnd_rows(b, dt, -1, 1, t, h, pad));
    opreg_gen_arg_tensor(b, rnd(b, dt, 0.5, 1.5, DIMS(h)));
    opreg_gen_arg(b, opreg_float_value(1e-6));
}

static void build_fused_add_rms_norm(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), h = opreg_gen_dim(b, "hidden", 1024);
    int64_t pad = opreg_gen_count(b, "row_pad", 0);
    opreg_dtype dt = opreg_gen_dtype(b);
    opreg_gen_arg_tensor(b, rnd_rows(b, dt, -1, 1, t, h, pad));
    opreg_gen_arg_tensor(b, rnd(b, dt, -1, 1, DIMS(t, h)));
    opreg_gen_arg_tensor(b, rnd(b, dt, 0.5, 1.5, DIMS(h)));
    opreg_gen_arg(b, opreg_float_value(1e-6));
}

/* silu_and_mul and the gated gelus: input [T, 2H] -> out [T, H]. */
static void build_gated(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), h = opreg_gen_dim(b, "hidden", 1024);
    opreg_gen_arg_tensor(b, zeros(b, opreg_gen_dtype(b), DIMS(t, h)));
    opreg_gen_arg_tensor(b, rnd(b, opreg_gen_dtype(b), -3, 3, DIMS(t, 2 * h)));
}

static void build_elementwise(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), h = opreg_gen_dim(b, "hidden", 1024);
    opreg_gen_arg_tensor(b, zeros(b, opreg_gen_dtype(b), DIMS(t, h)));
    opreg_gen_arg_tensor(b, rnd(b, opreg_gen_dtype(b), -3, 3, DIMS(t, h)));
}

static void build_rotary_common(opreg_gen *b, bool batched) {
    int64_t t = opreg_gen_count(b, "tokens", 64), nh = opreg_gen_dim(b, "heads", 8);
    int64_t nkv = opreg_gen_dim(b, "kv_heads", 4), hs = opreg_gen_dim(b, "head_size", 128);
    int64_t rot = opreg_gen_dim(b, "rot_dim", hs), maxp = opreg_gen_dim(b, "max_pos", 2048);
    bool neox = !opreg_gen_flag(b, "gptj", false);
    opreg_dtype dt = opreg_gen_dtype(b);
    if (rot % 2 || rot > hs) opreg_gen_fail(b, "rot_dim must be even and <= head_size");
    if (batched && maxp < 2) opreg_gen_fail(b, "max_pos must be >= 2 for batched_rotary_embedding");
    DLTensor *pos = zeros(b, OPREG_DTYPE_I64, DIMS(t));
    DLTensor *off = batched ? zeros(b, OPREG_DTYPE_I64, DIMS(t)) : NULL;
    DLTensor *cache = zeros(b, dt, DIMS(maxp, rot));
    if (opreg_gen_failed(b)) return;
    /* batched: row = offset + position, each below max_pos / 2 */
    for (int64_t i = 0; i < t; i++) {
        opreg_gen_set(pos, i, (double)opreg_gen_below(b, batched ? maxp / 2 : maxp));
        if (off) opreg_gen_set(off, i, (double)opreg_gen_below(b, maxp / 2));
    }
    for (int64_t p = 0; p < maxp; p++)
        for (int64_t i = 0; i < rot / 2; i++) {
            double theta = p * pow(10000.0, -2.0 * (double)i / (double)rot);
            opreg_gen_set(cache, p * rot + i, cos(theta));
            opreg_gen_set(cache, p * rot + rot / 2 + i, sin(theta));
        }
    /* query and key as slices of a fused QKV tensor (row_pad), in the
     * [T, heads * head_size] or (qk_3d=1) the [T, heads, head_size] form */
    int64_t pad = opreg_gen_count(b, "row_pad", 0);
    bool three_d = opreg_gen_flag(b, "qk_3d", false);
    opreg_gen_arg_tensor(b, pos);
    opreg_gen_arg_tensor(b, three_d ? rnd_tokens(b, dt, t, nh, hs, pad)
                                    : rnd_rows(b, dt, -1, 1, t, nh * hs, pad));
    opreg_gen_arg_tensor(b, three_d ? rnd_tokens(b, dt, t, nkv, hs, pad)
                                    : rnd_rows(b, dt, -1, 1, t, nkv * hs, pad));
    opreg_gen_arg(b, opreg_int_value(hs));
    opreg_gen_arg_tensor(b, cache);
    opreg_gen_arg(b, opreg_bool_value(neox));
    if (!batched) return;
    opreg_gen_arg(b, opreg_int_value(rot));
    opreg_gen_arg_tensor(b, off);
}

static void build_rotary_embedding(opreg_gen *b) {
    build_rotary_common(b, false);
}
static void build_batched_rotary_embedding(opreg_gen *b) {
    build_rotary_common(b, true);
}

/* The KV cache sizes shared by the cache ops; x = 16 bytes of elements. */
typedef struct kv_sizes {
    int64_t t, h, d, nb, bs, x;
    bool fp8, split;
    opreg_dtype cache_dt;
} kv_sizes;

static kv_sizes kv_dims(opreg_gen *b, bool tokens, bool fp8_ok) {
    kv_sizes k;
    k.t = tokens ? opreg_gen_count(b, "tokens", 64) : 0;
    k.h = opreg_gen_dim(b, "kv_heads", 8);
    k.d = opreg_gen_dim(b, "head_size", 128);
    k.nb = opreg_gen_dim(b, "blocks", 64);
    k.bs = opreg_gen_dim(b, "block_size", 16);
    k.fp8 = fp8_ok && opreg_gen_flag(b, "kv_fp8", false);
    k.split = opreg_gen_flag(b, "kv_split", false);
    k.cache_dt = k.fp8 ? OPREG_DTYPE_F8_E4M3FN : opreg_gen_dtype(b);
    k.x = 16 / (int64_t)opreg_dtype_size(k.cache_dt);
    if (k.d % k.x) opreg_gen_fail(b, "head_size must be a multiple of %lld", (long long)k.x);
    return k;
}

/* A cache of @p ndim dims [blocks, ...] (random when @p fill, else zeros).
 * With kv_split=1 it is half @p half of a combined [blocks, 2, ...] cache,
 * as kv[:, 0] and kv[:, 1] of vLLM's combined KV cache: each block dense,
 * blocks twice a block's size apart. */
static DLTensor *cache(opreg_gen *b, const kv_sizes *k, const int64_t *shape, int ndim, int half,
                       bool fill) {
    DLTensor *c;
    if (!k->split) {
        c = opreg_gen_tensor(b, k->cache_dt, ndim, shape);
    } else {
        int64_t strides[5], block = 1;
        for (int d = ndim - 1; d >= 1; d--) {
            strides[d] = block;
            block *= shape[d];
        }
        strides[0] = 2 * block;
        c = opreg_gen_tensor_strided(b, k->cache_dt, ndim, shape, strides, 2 * block * shape[0]);
        if (c && half) c->byte_offset = (uint64_t)block * opreg_dtype_size(k->cache_dt);
    }
    if (fill) opreg_gen_fill(b, c, -1, 1);
    return c;
}

/* slot_mapping [T]: distinct slots of the cache, every 8th token padding (-1). */
static DLTensor *slots(opreg_gen *b, const kv_sizes *k) {
    DLTensor *s = zeros(b, OPREG_DTYPE_I64, DIMS(k->t));
    if (k->t > k->nb * k->bs) opreg_gen_fail(b, "tokens must be <= blocks * block_size");
    if (opreg_gen_failed(b)) return s;
    distinct(b, s, 1, k->t, k->nb * k->bs, 0);
    for (int64_t i = 7; i < k->t; i += 8)
        opreg_gen_set(s, i, -1);
    return s;
}

static void build_reshape_and_cache(opreg_gen *b) {
    kv_sizes k = kv_dims(b, true, true);
    opreg_dtype dt = opreg_gen_dtype(b);
    int64_t pad = opreg_gen_count(b, "row_pad", 0);
    opreg_gen_arg_tensor(b, rnd_tokens(b, dt, k.t, k.h, k.d, pad));
    opreg_gen_arg_tensor(b, rnd_tokens(b, dt, k.t, k.h, k.d, pad));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.h, k.d / k.x, k.bs, k.x), 0, false));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.h, k.d, k.bs), 1, false));
    opreg_gen_arg_tensor(b, slots(b, &k));
    opreg_gen_arg_str(b, k.fp8 ? "fp8" : "auto");
    opreg_gen_arg(b, opreg_float_value(k.fp8 ? 0.02 : 1.0));
}

static void build_reshape_and_cache_flash(opreg_gen *b) {
    kv_sizes k = kv_dims(b, true, true);
    opreg_dtype dt = opreg_gen_dtype(b);
    int64_t pad = opreg_gen_count(b, "row_pad", 0);
    opreg_gen_arg_tensor(b, rnd_tokens(b, dt, k.t, k.h, k.d, pad));
    opreg_gen_arg_tensor(b, rnd_tokens(b, dt, k.t, k.h, k.d, pad));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.bs, k.h, k.d), 0, false));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.bs, k.h, k.d), 1, false));
    opreg_gen_arg_tensor(b, slots(b, &k));
    opreg_gen_arg_str(b, k.fp8 ? "fp8" : "auto");
}

/* block_mapping [P, 2]: distinct sources and distinct destinations. */
static DLTensor *block_pairs(opreg_gen *b, int64_t pairs, int64_t src_blocks, int64_t dst_blocks,
                             bool disjoint) {
    DLTensor *m = zeros(b, OPREG_DTYPE_I64, DIMS(pairs, 2));
    if (pairs > (disjoint ? src_blocks / 2 : src_blocks) || pairs > dst_blocks)
        opreg_gen_fail(b, "pairs must be <= %s", disjoint ? "blocks / 2" : "blocks");
    if (opreg_gen_failed(b)) return m;
    if (disjoint) { /* copy_blocks: pair i is (perm[2i], perm[2i+1]), 2P distinct blocks */
        distinct(b, m, 1, 2 * pairs, src_blocks, 0);
        return m;
    }
    distinct(b, m, 2, pairs, src_blocks, 0);
    distinct(b, m, 2, pairs, dst_blocks, 1);
    return m;
}

static void build_copy_blocks(opreg_gen *b) {
    kv_sizes k = kv_dims(b, false, false);
    int64_t layers = opreg_gen_count(b, "layers", 2), pairs = opreg_gen_count(b, "pairs", 8);
    DLTensor *kc[8], *vc[8];
    if (layers > 8) opreg_gen_fail(b, "layers must be <= 8");
    for (int64_t l = 0; l < layers && !opreg_gen_failed(b); l++) {
        kc[l] = cache(b, &k, DIMS(k.nb, k.h, k.d / k.x, k.bs, k.x), 0, true);
        vc[l] = cache(b, &k, DIMS(k.nb, k.h, k.d, k.bs), 1, true);
    }
    if (opreg_gen_failed(b)) return;
    opreg_gen_arg_list(b, kc, (size_t)layers);
    opreg_gen_arg_list(b, vc, (size_t)layers);
    opreg_gen_arg_tensor(b, block_pairs(b, pairs, k.nb, k.nb, true));
}

static void build_swap_blocks(opreg_gen *b) {
    kv_sizes k = kv_dims(b, false, false);
    int64_t pairs = opreg_gen_count(b, "pairs", 8);
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.bs, k.h, k.d), 0, true));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.bs, k.h, k.d), 1, false));
    opreg_gen_arg_tensor(b, block_pairs(b, pairs, k.nb, k.nb, false));
}

/* The quantisers: a static scale small enough that some values saturate. */
static void build_quant(opreg_gen *b, opreg_dtype out_dt, double static_scale) {
    int64_t t = opreg_gen_count(b, "tokens", 64), h = opreg_gen_dim(b, "hidden", 1024);
    DLTensor *scale = static_scale > 0           ? zeros(b, F, DIMS(1))
                      : out_dt == OPREG_DTYPE_I8 ? zeros(b, F, DIMS(t, 1))
                                                 : zeros(b, F, DIMS(1));
    if (scale && static_scale > 0) opreg_gen_set(scale, 0, static_scale);
    opreg_gen_arg_tensor(b, zeros(b, out_dt, DIMS(t, h)));
    opreg_gen_arg_tensor(b, rnd(b, opreg_gen_dtype(b), -1, 1, DIMS(t, h)));
    opreg_gen_arg_tensor(b, scale);
}

static void build_static_scaled_fp8_quant(opreg_gen *b) {
    build_quant(b, OPREG_DTYPE_F8_E4M3FN, 1.0 / 480);
}
static void build_dynamic_scaled_fp8_quant(opreg_gen *b) {
    build_quant(b, OPREG_DTYPE_F8_E4M3FN, 0);
}
static void build_static_scaled_int8_quant(opreg_gen *b) {
    build_quant(b, OPREG_DTYPE_I8, 1.0 / 140);
}
static void build_dynamic_scaled_int8_quant(opreg_gen *b) {
    build_quant(b, OPREG_DTYPE_I8, 0);
}

static void build_moe_align_block_size(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), k = opreg_gen_dim(b, "topk", 2);
    int64_t e = opreg_gen_dim(b, "experts", 8), bs = opreg_gen_dim(b, "block_size", 16);
    int64_t cap = t * k + e * (bs - 1);
    DLTensor *ids = zeros(b, opreg_gen_dtype(b), DIMS(t, k));
    DLTensor *sorted = zeros(b, OPREG_DTYPE_I32, DIMS(cap));
    DLTensor *experts = zeros(b, OPREG_DTYPE_I32, DIMS((cap + bs - 1) / bs));
    if (k > e) opreg_gen_fail(b, "topk must be <= experts");
    if (opreg_gen_failed(b)) return;
    for (int64_t i = 0; i < t; i++) /* each token picks k distinct experts */
        distinct(b, ids, 1, k, e, i * k);
    for (int64_t i = 0; i < cap; i++) /* the sentinel the caller pre-fills */
        opreg_gen_set(sorted, i, (double)(t * k));
    for (int64_t i = 0; i < (cap + bs - 1) / bs; i++)
        opreg_gen_set(experts, i, -1);
    opreg_gen_arg_tensor(b, ids);
    opreg_gen_arg(b, opreg_int_value(e));
    opreg_gen_arg(b, opreg_int_value(bs));
    opreg_gen_arg_tensor(b, sorted);
    opreg_gen_arg_tensor(b, experts);
    opreg_gen_arg_tensor(b, zeros(b, OPREG_DTYPE_I32, DIMS(1)));
}

static void build_topk_softmax(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), e = opreg_gen_dim(b, "experts", 8),
            k = opreg_gen_dim(b, "topk", 2);
    if (k > e) opreg_gen_fail(b, "topk must be <= experts");
    opreg_gen_arg_tensor(b, zeros(b, F, DIMS(t, k)));
    opreg_gen_arg_tensor(b, zeros(b, OPREG_DTYPE_I32, DIMS(t, k)));
    opreg_gen_arg_tensor(b, zeros(b, OPREG_DTYPE_I32, DIMS(t, k)));
    opreg_gen_arg_tensor(b, rnd(b, opreg_gen_dtype(b), -4, 4, DIMS(t, e)));
}

static void build_paged_attention_v1(opreg_gen *b) {
    int64_t s = opreg_gen_count(b, "seqs", 8), hq = opreg_gen_dim(b, "heads", 8);
    int64_t maxlen = opreg_gen_dim(b, "max_seq_len", 256), bs_ = opreg_gen_dim(b, "block_size", 16);
    int64_t maxb = (maxlen + bs_ - 1) / bs_;
    opreg_gen_dim(b, "blocks", s * maxb); /* read by kv_dims, defaulted here */
    kv_sizes k = kv_dims(b, false, true);
    bool alibi = opreg_gen_flag(b, "alibi", false);
    opreg_dtype dt = opreg_gen_dtype(b);
    DLTensor *tables = zeros(b, OPREG_DTYPE_I32, DIMS(s, maxb));
    DLTensor *lens = zeros(b, OPREG_DTYPE_I32, DIMS(s));
    DLTensor *slopes = alibi ? zeros(b, F, DIMS(hq)) : NULL;
    if (hq % k.h) opreg_gen_fail(b, "kv_heads must divide heads");
    if (maxlen > INT32_MAX || k.nb > INT32_MAX) opreg_gen_fail(b, "sizes must fit in int32");
    if (opreg_gen_failed(b)) return;
    for (int64_t i = 0; i < s * maxb; i++)
        opreg_gen_set(tables, i, (double)opreg_gen_below(b, k.nb));
    for (int64_t i = 0; i < s; i++) /* the first sequence is as long as allowed */
        opreg_gen_set(lens, i, (double)(i == 0 ? maxlen : 1 + opreg_gen_below(b, maxlen)));
    for (int64_t h = 0; alibi && h < hq; h++)
        opreg_gen_set(slopes, h, -pow(2.0, -8.0 * (double)(h + 1) / (double)hq));
    opreg_gen_arg_tensor(b, zeros(b, dt, DIMS(s, hq, k.d)));
    /* query as a slice of a fused QKV tensor with row_pad */
    opreg_gen_arg_tensor(b, rnd_tokens(b, dt, s, hq, k.d, opreg_gen_count(b, "row_pad", 0)));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.h, k.d / k.x, k.bs, k.x), 0, true));
    opreg_gen_arg_tensor(b, cache(b, &k, DIMS(k.nb, k.h, k.d, k.bs), 1, true));
    opreg_gen_arg(b, opreg_int_value(k.h));
    opreg_gen_arg(b, opreg_float_value(1.0 / sqrt((double)k.d)));
    opreg_gen_arg_tensor(b, tables);
    opreg_gen_arg_tensor(b, lens);
    opreg_gen_arg(b, opreg_int_value(k.bs));
    opreg_gen_arg(b, opreg_int_value(maxlen));
    opreg_gen_arg(b, opreg_optional_tensor_value(slopes));
    opreg_gen_arg_str(b, k.fp8 ? "fp8" : "auto");
    opreg_gen_arg(b, opreg_float_value(1.0));
    for (int i = 0; i < 5; i++) /* tp_rank and the block-sparse sizes (unused) */
        opreg_gen_arg(b, opreg_int_value(i == 3 ? 64 : 0));
}

/* int8 (or, with fp8=1, e4m3fn) a [M,K] row-major, b [K,N] column-major;
 * --dtype is out's. */
static void build_cutlass_scaled_mm(opreg_gen *b) {
    int64_t m = opreg_gen_count(b, "tokens", 64), kk = opreg_gen_dim(b, "hidden", 1024);
    int64_t n = opreg_gen_dim(b, "out_features", 1024), pad = opreg_gen_count(b, "row_pad", 0);
    bool per_token = opreg_gen_flag(b, "per_token", false),
         per_channel = opreg_gen_flag(b, "per_channel", false);
    bool bias = opreg_gen_flag(b, "bias", true);
    opreg_dtype ab = opreg_gen_flag(b, "fp8", false) ? OPREG_DTYPE_F8_E4M3FN : OPREG_DTYPE_I8;
    opreg_gen_arg_tensor(b, zeros(b, opreg_gen_dtype(b), DIMS(m, n)));
    opreg_gen_arg_tensor(b, rnd_rows(b, ab, -128, 128, m, kk, pad));
    DLTensor *bt = opreg_gen_tensor_strided(b, ab, 2, (const int64_t[]){ kk, n },
                                            (const int64_t[]){ 1, kk }, kk * n);
    opreg_gen_fill(b, bt, -128, 128);
    opreg_gen_arg_tensor(b, bt);
    opreg_gen_arg_tensor(b, rnd(b, F, 1e-3, 2e-3, DIMS(per_token ? m : 1)));
    opreg_gen_arg_tensor(b, rnd(b, F, 1e-3, 2e-3, DIMS(per_channel ? n : 1)));
    opreg_gen_arg(
        b, opreg_optional_tensor_value(bias ? rnd(b, opreg_gen_dtype(b), -1, 1, DIMS(n)) : NULL));
}

static void build_linear(opreg_gen *b) {
    int64_t t = opreg_gen_count(b, "tokens", 64), kk = opreg_gen_dim(b, "hidden", 1024);
    int64_t n = opreg_gen_dim(b, "out_features", 1024);
    bool bias = opreg_gen_flag(b, "bias", true);
    opreg_dtype dt = opreg_gen_dtype(b);
    opreg_gen_arg_tensor(b, rnd(b, dt, -0.5, 0.5, DIMS(t, kk)));
    opreg_gen_arg_tensor(b, rnd(b, dt, -0.5, 0.5, DIMS(n, kk)));
    opreg_gen_arg(b, opreg_optional_tensor_value(bias ? rnd(b, dt, -1, 1, DIMS(n)) : NULL));
}

#define FL  OPREG_GEN_FLOATS
#define IDX ((1u << OPREG_DTYPE_I32) | (1u << OPREG_DTYPE_I64))

const opreg_generator opreg__catalogue_generators[] = {
    { "rms_norm", build_rms_norm, FL, F, 0, NULL },
    { "fused_add_rms_norm", build_fused_add_rms_norm, FL, F, 0, NULL },
    { "silu_and_mul", build_gated, FL, F, 0, NULL },
    { "gelu_and_mul", build_gated, FL, F, 0, NULL },
    { "gelu_tanh_and_mul", build_gated, FL, F, 0, NULL },
    { "gelu_new", build_elementwise, FL, F, 0, NULL },
    { "gelu_fast", build_elementwise, FL, F, 0, NULL },
    { "gelu_quick", build_elementwise, FL, F, 0, NULL },
    { "rotary_embedding", build_rotary_embedding, FL, F, 0, NULL },
    { "batched_rotary_embedding", build_batched_rotary_embedding, FL, F, 0, NULL },
    { "reshape_and_cache", build_reshape_and_cache, FL, F, 0, NULL },
    { "reshape_and_cache_flash", build_reshape_and_cache_flash, FL, F, 0, NULL },
    { "copy_blocks", build_copy_blocks, FL, F, 0, NULL },
    { "swap_blocks", build_swap_blocks, FL, F, (1u << 0) | (1u << 2), NULL },
    { "static_scaled_fp8_quant", build_static_scaled_fp8_quant, FL, F, 0, NULL },
    { "dynamic_scaled_fp8_quant", build_dynamic_scaled_fp8_quant, FL, F, 0, NULL },
    { "static_scaled_int8_quant", build_static_scaled_int8_quant, FL, F, 0, NULL },
    { "dynamic_scaled_int8_quant", build_dynamic_scaled_int8_quant, FL, F, 0, NULL },
    { "moe_align_block_size", build_moe_align_block_size, IDX, OPREG_DTYPE_I32, 0, NULL },
    { "topk_softmax", build_topk_softmax, FL, F, 0, NULL },
    { "paged_attention_v1", build_paged_attention_v1, FL, F, 0, NULL },
    { "cutlass_scaled_mm", build_cutlass_scaled_mm, FL, F, 0, NULL },
    { "linear", build_linear, FL, F, 0, NULL },
    { NULL, NULL, 0, F, 0, NULL },
};
