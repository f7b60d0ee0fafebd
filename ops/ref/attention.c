/* Reference paged_attention_v1 (§3.7): exact softmax in double over the
 * L_s cached tokens of each sequence; an empty sequence gives zeros. fp8
 * caches are dequantised as fp8_value * kv_scale. */
#include "ops/cache_layout.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

#include <stdlib.h>

static double cache_ld(const void *p, int dt, int kind, int64_t i, double kv_scale) {
    if (kind == 0) return opreg__ld(p, dt, i);
    {
        uint8_t v = ((const uint8_t *)p)[i];
        return (kind == 1 ? opreg__e4m3fn_to_f32(v) : opreg__e5m2_to_f32(v)) * kv_scale;
    }
}

opreg_status
opreg__ref_paged_attention_v1(const opreg_tensor *out, const opreg_tensor *query,
                              const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                              int64_t num_kv_heads, double scale, const opreg_tensor *block_tables,
                              const opreg_tensor *seq_lens, int64_t block_size, int64_t max_seq_len,
                              const opreg_tensor *alibi_slopes, const char *kv_cache_dtype,
                              double kv_scale, int64_t tp_rank, int64_t blocksparse_local_blocks,
                              int64_t blocksparse_vert_stride, int64_t blocksparse_block_size,
                              int64_t blocksparse_head_sliding_step) {
    const char *op = "_C::paged_attention_v1";
    int qdt, cdt, kind;
    int64_t s_count, hq, d, x, bs, kbs, vbs, max_blocks, group;
    double *logit, *acc;
    const int32_t *bt, *len;
    /* The check refuses block-sparse attention: these select nothing here. */
    (void)tp_rank, (void)blocksparse_local_blocks, (void)blocksparse_vert_stride;
    (void)blocksparse_block_size, (void)blocksparse_head_sliding_step;
    qdt = opreg__dtype_of(query);
    cdt = opreg__dtype_of(key_cache);
    kind = opreg__kv_cache_kind(kv_cache_dtype);
    s_count = query->shape[0];
    hq = query->shape[1];
    d = query->shape[2];
    x = key_cache->shape[4];
    bs = block_size;
    kbs = opreg__block_stride(key_cache);
    vbs = opreg__block_stride(value_cache);
    max_blocks = block_tables->shape[1];
    group = hq / num_kv_heads;
    bt = opreg__ptr(block_tables);
    len = opreg__ptr(seq_lens);
    /* One logit a token of the longest sequence, not of max_seq_len: the
     * checks hold every length below it, but it may be far larger (up to
     * INT64_MAX, where (max_seq_len + 1) * 8 bytes wraps). */
    int64_t longest = 0;
    for (int64_t s = 0; s < s_count; s++)
        if (len[s] > longest) longest = len[s];
    (void)max_seq_len;
    logit = malloc(((size_t)longest + 1) * sizeof *logit);
    acc = malloc(((size_t)d + 1) * sizeof *acc);
    if (!logit || !acc) {
        free(logit);
        free(acc);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    for (int64_t s = 0; s < s_count; s++)
        for (int64_t h = 0; h < hq; h++) {
            int64_t kvh = h / group, l = len[s];
            const void *q = (const char *)opreg__ptr(query) +
                            (size_t)(s * opreg__stride(query, 0) + h * d) * opreg__dtype_bytes(qdt);
            double mx = -INFINITY, sum = 0.0;
            double slope = alibi_slopes ? ((const float *)opreg__ptr(alibi_slopes))[h] : 0.0;
            for (int64_t j = 0; j < l; j++) {
                int64_t blk = bt[s * max_blocks + j / bs], off = j % bs;
                double dot = 0.0;
                for (int64_t i = 0; i < d; i++) {
                    int64_t k = opreg__kcache_index(blk, kbs, kvh, i, d, x, off, bs);
                    dot += opreg__ld(q, qdt, i) *
                           cache_ld(opreg__ptr(key_cache), cdt, kind, k, kv_scale);
                }
                logit[j] = scale * dot + slope * (double)(j - l + 1);
                if (logit[j] > mx) mx = logit[j];
            }
            for (int64_t i = 0; i < d; i++)
                acc[i] = 0.0;
            for (int64_t j = 0; j < l; j++) {
                int64_t blk = bt[s * max_blocks + j / bs], off = j % bs;
                double p = exp(logit[j] - mx);
                sum += p;
                for (int64_t i = 0; i < d; i++)
                    acc[i] +=
                        p * cache_ld(opreg__ptr(value_cache), cdt, kind,
                                     opreg__vcache_index(blk, vbs, kvh, i, d, off, bs), kv_scale);
            }
            for (int64_t i = 0; i < d; i++)
                opreg__st(opreg__ptr(out), qdt, (s * hq + h) * d + i, l > 0 ? acc[i] / sum : 0.0);
        }
    free(logit);
    free(acc);
    return OPREG_OK;
}
