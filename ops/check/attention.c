/* Checks of paged_attention_v1 (§3.7). Block-sparse attention is not
 * implemented: blocksparse_vert_stride > 1 is refused as unsupported. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>

opreg_status opreg__check_paged_attention_v1(
    const opreg_tensor *out, const opreg_tensor *query, const opreg_tensor *key_cache,
    const opreg_tensor *value_cache, int64_t num_kv_heads, double scale,
    const opreg_tensor *block_tables, const opreg_tensor *seq_lens, int64_t block_size,
    int64_t max_seq_len, const opreg_tensor *alibi_slopes, const char *kv_cache_dtype,
    double kv_scale, int64_t tp_rank, int64_t blocksparse_local_blocks,
    int64_t blocksparse_vert_stride, int64_t blocksparse_block_size,
    int64_t blocksparse_head_sliding_step) {
    const char *op = "_C::paged_attention_v1";
    int kind = opreg__kv_cache_kind(kv_cache_dtype);
    int64_t s, hq, d, x;
    uint32_t cache_dts;
    (void)tp_rank;
    (void)blocksparse_local_blocks;
    (void)blocksparse_block_size;
    (void)blocksparse_head_sliding_step;
    if (blocksparse_vert_stride > 1)
        return opreg__fail(
            OPREG_ERR_UNSUPPORTED,
            "%s: argument 'blocksparse_vert_stride': block-sparse attention (%" PRId64
            ") is not supported; pass 0 or 1",
            op, blocksparse_vert_stride);
    if (kind < 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'kv_cache_dtype': unsupported \"%s\"", op,
                           kv_cache_dtype ? kv_cache_dtype : "(null)");
    OPREG__TRY(opreg__chk_tensor(op, "query", query, OPREG__DTS_FLOAT, 3));
    /* query may be a slice of a fused QKV tensor: sequences strided */
    OPREG__TRY(opreg__chk_items(op, "query", query, "sequence"));
    s = query->shape[0];
    hq = query->shape[1];
    d = query->shape[2];
    OPREG__TRY(opreg__chk_tensor(op, "out", out, OPREG__DTS_FLOAT, 3));
    OPREG__TRY(opreg__chk_same_dtype(op, "out", out, "query", query));
    OPREG__TRY(opreg__chk_same_shape(op, "out", out, "query", query));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    cache_dts = kind == 0   ? (1u << opreg__dtype_of(query))
                : kind == 1 ? OPREG__DTS(U8) | OPREG__DTS(F8_E4M3FN)
                            : OPREG__DTS(U8) | OPREG__DTS(F8_E5M2);
    OPREG__TRY(opreg__chk_tensor(op, "key_cache", key_cache, cache_dts, 5));
    OPREG__TRY(opreg__chk_tensor(op, "value_cache", value_cache, cache_dts, 4));
    OPREG__TRY(opreg__chk_same_dtype(op, "value_cache", value_cache, "key_cache", key_cache));
    if (num_kv_heads <= 0 || hq % num_kv_heads != 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'num_kv_heads': %" PRId64
                           " must be > 0 and divide the %" PRId64 " query heads",
                           op, num_kv_heads, hq);
    if (block_size <= 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'block_size': must be > 0, got %" PRId64, op, block_size);
    x = key_cache->shape[4];
    if (x <= 0 || d % x != 0)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'key_cache': x = size(4) = %" PRId64
                           " must divide head_size %" PRId64,
                           op, x, d);
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 1, num_kv_heads));
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 2, d / x));
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 3, block_size));
    OPREG__TRY(opreg__chk_blocks(op, "key_cache", key_cache));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 0, key_cache->shape[0]));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 1, num_kv_heads));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 2, d));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 3, block_size));
    OPREG__TRY(opreg__chk_blocks(op, "value_cache", value_cache));
    OPREG__TRY(opreg__chk_tensor(op, "block_tables", block_tables, OPREG__DTS(I32), 2));
    OPREG__TRY(opreg__chk_size(op, "block_tables", block_tables, 0, s));
    OPREG__TRY(opreg__chk_contig(op, "block_tables", block_tables));
    OPREG__TRY(opreg__chk_tensor(op, "seq_lens", seq_lens, OPREG__DTS(I32), 1));
    OPREG__TRY(opreg__chk_size(op, "seq_lens", seq_lens, 0, s));
    OPREG__TRY(opreg__chk_contig(op, "seq_lens", seq_lens));
    if (max_seq_len < 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'max_seq_len': must be >= 0, got %" PRId64, op,
                           max_seq_len);
    if (!isfinite(scale))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument 'scale': must be finite", op);
    if (kind != 0 && !(kv_scale > 0.0 && isfinite(kv_scale)))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'kv_scale': must be finite and > 0, got %g", op, kv_scale);
    if (alibi_slopes) {
        OPREG__TRY(opreg__chk_tensor(op, "alibi_slopes", alibi_slopes, OPREG__DTS(F32), 1));
        OPREG__TRY(opreg__chk_size(op, "alibi_slopes", alibi_slopes, 0, hq));
        OPREG__TRY(opreg__chk_contig(op, "alibi_slopes", alibi_slopes));
    }
    {
        const char *in[6] = { "query",        "key_cache", "value_cache",
                              "block_tables", "seq_lens",  "alibi_slopes" };
        const opreg_tensor *it[6] = { query,        key_cache, value_cache,
                                      block_tables, seq_lens,  alibi_slopes };
        OPREG__TRY(opreg__chk_same_device(op, "out", out, "query", query));
        for (int i = 1; i < 6; i++)
            if (it[i]) OPREG__TRY(opreg__chk_same_device(op, in[i], it[i], "query", query));
        for (int i = 0; i < 6; i++)
            if (it[i]) OPREG__TRY(opreg__chk_no_overlap(op, "out", out, in[i], it[i]));
    }
    return OPREG_OK;
}

opreg_status opreg__check_paged_attention_v1_data(const opreg_tensor *key_cache,
                                                  const opreg_tensor *block_tables,
                                                  const opreg_tensor *seq_lens, int64_t block_size,
                                                  int64_t max_seq_len) {
    const char *op = "_C::paged_attention_v1";
    const int32_t *len = opreg__ptr(seq_lens), *bt = opreg__ptr(block_tables);
    int64_t max_blocks = block_tables->shape[1], nblk = key_cache->shape[0];
    for (int64_t s = 0; s < seq_lens->shape[0]; s++) {
        int64_t l = len[s], used = (l + block_size - 1) / block_size;
        if (l < 0 || l > max_seq_len)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'seq_lens': length %" PRId64 " of sequence %" PRId64
                               " is outside 0..max_seq_len=%" PRId64,
                               op, l, s, max_seq_len);
        if (used > max_blocks)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'block_tables': sequence %" PRId64 " needs %" PRId64
                               " blocks, the table has %" PRId64,
                               op, s, used, max_blocks);
        for (int64_t b = 0; b < used; b++) {
            int64_t blk = bt[s * max_blocks + b];
            if (blk < 0 || blk >= nblk)
                return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                                   "%s: argument 'block_tables': block %" PRId64
                                   " (sequence %" PRId64 ", entry %" PRId64
                                   ") is outside the cache's %" PRId64 " blocks",
                                   op, blk, s, b, nblk);
        }
    }
    return OPREG_OK;
}
