/* paged_attention_v1 on the CPU: one work item per (sequence, KV head), so
 * the query heads that share a KV head (grouped-query attention) read each
 * cache block once. Work items are spread over threads.
 *
 * Per item, the cache is walked block by block with an online softmax: a
 * running maximum m, a running sum and a running f32 accumulator per query
 * head, rescaled by exp(m_old - m_new) when a block raises the maximum. So
 * no per-token buffer is needed and a call allocates nothing.
 *
 * A key block [head_size/x, block_size, x] and a value block
 * [head_size, block_size] are both widened to f32 as [head_size][block_size]
 * (the key block transposed on the way), with the slots past the sequence's
 * end set to zero, so that the inner loops are contiguous multiply-adds over
 * the block's tokens. Arithmetic is f32, as the CUDA kernel's; the
 * reference (ops/ref/attention.c) uses double, and the tests hold the two
 * to the dtype's tolerance. */
#include "backends/cpu/kernels/kern_internal.h"

#include <string.h>

/* The portable path, also the SIMD paths' fallback for block and chunk
 * sizes that do not fill their vectors. */

/* Element @p i of a cache: the query's dtype, or an fp8 code's value
 * times kv_scale, from @p lut. */
static inline float cache_ld(const struct opreg__pa_args *a, const float *lut, const void *p,
                             int64_t i) {
    if (a->kind == 0) return opreg__cpu_ld(a->dt, p, i);
    return lut[((const uint8_t *)p)[i]];
}

/* Key block [d/x][bs][x] -> buf[d][bs]; tokens at or past @p n are 0. */
static void load_keys(const struct opreg__pa_args *a, const float *lut, float *buf, int64_t blk,
                      int64_t kvh, int64_t n) {
    int64_t d = a->d, x = a->x, bs = a->bs;
    int64_t base = blk * a->kblk + kvh * d * bs;
    for (int64_t c = 0; c < d / x; c++)
        for (int64_t off = 0; off < bs; off++)
            for (int64_t e = 0; e < x; e++)
                buf[(c * x + e) * bs + off] =
                    off < n ? cache_ld(a, lut, a->kc, base + (c * bs + off) * x + e) : 0.0f;
}

/* Value block [d][bs] -> buf[d][bs]; tokens at or past @p n are 0. */
static void load_values(const struct opreg__pa_args *a, const float *lut, float *buf, int64_t blk,
                        int64_t kvh, int64_t n) {
    int64_t d = a->d, bs = a->bs;
    int64_t base = blk * a->vblk + kvh * d * bs;
    for (int64_t i = 0; i < d; i++)
        for (int64_t off = 0; off < bs; off++)
            buf[i * bs + off] = off < n ? cache_ld(a, lut, a->vc, base + i * bs + off) : 0.0f;
}

/* Query heads h0..h0+nh-1 of sequence @p s, all on KV head @p kvh. */
static void attend(const struct opreg__pa_args *a, const float *lut, int64_t s, int64_t kvh,
                   int64_t h0, int64_t nh, float *blockbuf) {
    int64_t d = a->d, bs = a->bs, l = a->len[s];
    float q[OPREG__CPU_PA_HEADS][OPREG__CPU_PA_MAX_HEAD];
    float acc[OPREG__CPU_PA_HEADS][OPREG__CPU_PA_MAX_HEAD];
    float m[OPREG__CPU_PA_HEADS], sum[OPREG__CPU_PA_HEADS], slope[OPREG__CPU_PA_HEADS];
    float lg[OPREG__CPU_PA_HEADS][OPREG__CPU_PA_MAX_BLOCK];
    for (int64_t g = 0; g < nh; g++) {
        int64_t h = h0 + g;
        for (int64_t i = 0; i < d; i++) {
            q[g][i] = opreg__cpu_ld(a->dt, a->q, s * a->q_stride + h * d + i);
            acc[g][i] = 0.0f;
        }
        m[g] = -INFINITY;
        sum[g] = 0.0f;
        slope[g] = a->alibi ? a->alibi[h] : 0.0f;
    }
    for (int64_t b = 0; b * bs < l; b++) {
        int64_t blk = a->bt[s * a->max_blocks + b];
        int64_t n = l - b * bs < bs ? l - b * bs : bs;
        load_keys(a, lut, blockbuf, blk, kvh, n);
        for (int64_t g = 0; g < nh; g++) {
            for (int64_t off = 0; off < bs; off++)
                lg[g][off] = 0.0f;
            for (int64_t i = 0; i < d; i++) {
                float qi = q[g][i];
                const float *k = blockbuf + i * bs;
                for (int64_t off = 0; off < bs; off++)
                    lg[g][off] += qi * k[off];
            }
            opreg__pa_softmax_block(lg[g], n, bs, a->scale, slope[g], b * bs - l + 1, &m[g],
                                    &sum[g], acc[g], d);
        }
        load_values(a, lut, blockbuf, blk, kvh, n);
        for (int64_t g = 0; g < nh; g++)
            for (int64_t i = 0; i < d; i++) {
                const float *v = blockbuf + i * bs;
                float t = 0.0f;
                for (int64_t off = 0; off < bs; off++)
                    t += lg[g][off] * v[off];
                acc[g][i] += t;
            }
    }
    for (int64_t g = 0; g < nh; g++)
        for (int64_t i = 0; i < d; i++)
            opreg__cpu_st(a->dt, a->out, (s * a->hq + h0 + g) * d + i,
                          l > 0 ? acc[g][i] / sum[g] : 0.0f);
}

void opreg__cpu_pa_portable_range(const void *p, int64_t r0, int64_t r1) {
    const struct opreg__pa_args *a = p;
    int64_t group = a->hq / a->hkv;
    float blockbuf[OPREG__CPU_PA_MAX_HEAD * OPREG__CPU_PA_MAX_BLOCK];
    /* fp8 codes decoded once per range: the SIMD paths, which widen codes
     * in registers, do not pay for the table */
    float lut[256];
    for (int c = 0; a->kind != 0 && c < 256; c++)
        lut[c] =
            (a->kind == 1 ? opreg__e4m3fn_to_f32((uint8_t)c) : opreg__e5m2_to_f32((uint8_t)c)) *
            a->kv_scale;
    for (int64_t r = r0; r < r1; r++) {
        int64_t s = r / a->hkv, kvh = r % a->hkv;
        for (int64_t g = 0; g < group; g += OPREG__CPU_PA_HEADS)
            attend(a, lut, s, kvh, kvh * group + g,
                   group - g < OPREG__CPU_PA_HEADS ? group - g : OPREG__CPU_PA_HEADS, blockbuf);
    }
}

void opreg__cpu_paged_attention_v1(int isa, void *out, const void *query, int64_t q_stride,
                                   const void *key_cache, const void *value_cache,
                                   const int32_t *block_tables, const int32_t *seq_lens,
                                   const float *alibi_slopes, int64_t seqs, int64_t heads,
                                   int64_t kv_heads, int64_t head_size, int64_t x,
                                   int64_t block_size, int64_t key_block_stride,
                                   int64_t value_block_stride, int64_t max_blocks, float scale,
                                   int dtype, int kv_kind, float kv_scale) {
    const struct opreg__cpu_simd *simd = opreg__cpu_simd_for(isa);
    struct opreg__pa_args a;
    int64_t bytes = 0, es = kv_kind ? 1 : (int64_t)opreg__cpu_es(dtype);
    a.out = out;
    a.q = query;
    a.q_stride = q_stride;
    a.kc = key_cache;
    a.vc = value_cache;
    a.bt = block_tables;
    a.len = seq_lens;
    a.alibi = alibi_slopes;
    a.hq = heads;
    a.hkv = kv_heads;
    a.d = head_size;
    a.x = x;
    a.bs = block_size;
    a.kblk = key_block_stride;
    a.vblk = value_block_stride;
    a.max_blocks = max_blocks;
    a.scale = scale;
    a.dt = dtype;
    a.kind = kv_kind;
    a.kv_scale = kv_scale;
    /* Keys by bf16 pairs with a bf16 query (bf16 caches in place, fp8
     * caches widened to bf16 a block at a time): through two FMAs a pair
     * on the paths without VDPBF16PS (faster than widening the block to
     * f32 first: measured in docs/performance.md), through VDPBF16PS where
     * it is fast (the GEMVs' choice); where it is slow, widened to f32. */
    a.pairs = simd && dtype == OPREG_DTYPE_BF16 && (!simd->gemv_pairs || opreg__cpu_gemv_pairs());
    for (int64_t s = 0; s < seqs; s++)
        bytes += (int64_t)seq_lens[s] * kv_heads * head_size * 2 * es;
    opreg__cpu_parallel(simd ? simd->attention : opreg__cpu_pa_portable_range, &a, seqs * kv_heads,
                        bytes);
}
