/* Checks of rotary_embedding and batched_rotary_embedding (§3.3). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>

/* query/key: positions.shape + [heads * head_size], or [T, heads, head_size]
 * when positions is [T]; same dtype as cos_sin_cache. Each token's heads
 * are dense; tokens may lie further apart (a view of a fused QKV tensor),
 * but not overlap, since the op writes them. */
static opreg_status check_qk(const char *op, const char *arg, const opreg_tensor *t,
                             const opreg_tensor *positions, int64_t head_size) {
    int pn = positions->ndim;
    int64_t inner;
    OPREG__TRY(opreg__chk_tensor(op, arg, t, OPREG__DTS_FLOAT, -1));
    if (!(t->ndim == pn + 1 || (pn == 1 && t->ndim == 3)))
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': expected rank %d (or 3 with 1-d positions), got %d",
                           op, arg, pn + 1, t->ndim);
    for (int d = 0; d < pn; d++)
        OPREG__TRY(opreg__chk_size(op, arg, t, d, positions->shape[d]));
    if (t->ndim == pn + 1) {
        inner = t->shape[pn];
        if (inner % head_size != 0)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': last dim %" PRId64
                               " is not a multiple of head_size %" PRId64,
                               op, arg, inner, head_size);
    } else {
        OPREG__TRY(opreg__chk_size(op, arg, t, 2, head_size));
    }
    if (t->ndim == pn + 1) {
        OPREG__TRY(opreg__chk_rows(op, arg, t));
    } else if (t->strides && opreg__numel(t) > 0) {
        if ((t->shape[2] > 1 && t->strides[2] != 1) ||
            (t->shape[1] > 1 && t->strides[1] != t->shape[2]))
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': each token's heads must be contiguous "
                               "(strides %" PRId64 ", %" PRId64 " in dims 1, 2)",
                               op, arg, t->strides[1], t->strides[2]);
        if (t->shape[0] > 1 && t->strides[0] < t->shape[1] * t->shape[2])
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': tokens overlap (token stride %" PRId64
                               " < %" PRId64 ")",
                               op, arg, t->strides[0], t->shape[1] * t->shape[2]);
    }
    return opreg__chk_same_device(op, arg, t, "positions", positions);
}

int64_t opreg__rotary_token_stride(const opreg_tensor *qk, const opreg_tensor *positions) {
    int64_t row = 1;
    for (int d = positions->ndim; d < qk->ndim; d++)
        row *= qk->shape[d];
    if (opreg__numel(positions) <= 1) return row;
    /* positions.shape + [heads * head_size]: rows as opreg__chk_rows has
     * them; [T, heads, head_size]: dim 0 */
    return qk->ndim == positions->ndim + 1 ? opreg__row_stride(qk) : opreg__stride(qk, 0);
}

static opreg_status check_common(const char *op, const opreg_tensor *positions,
                                 const opreg_tensor *query, const opreg_tensor *key,
                                 int64_t head_size, const opreg_tensor *cache) {
    OPREG__TRY(opreg__chk_tensor(op, "positions", positions, OPREG__DTS(I64), -2));
    if (positions->ndim > 2)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'positions': expected rank 1 or 2, got %d", op,
                           positions->ndim);
    OPREG__TRY(opreg__chk_contig(op, "positions", positions));
    if (head_size <= 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'head_size': must be > 0, got %" PRId64, op, head_size);
    OPREG__TRY(check_qk(op, "query", query, positions, head_size));
    OPREG__TRY(check_qk(op, "key", key, positions, head_size));
    OPREG__TRY(opreg__chk_same_dtype(op, "key", key, "query", query));
    OPREG__TRY(opreg__chk_tensor(op, "cos_sin_cache", cache, OPREG__DTS_FLOAT, 2));
    OPREG__TRY(opreg__chk_same_dtype(op, "cos_sin_cache", cache, "query", query));
    OPREG__TRY(opreg__chk_contig(op, "cos_sin_cache", cache));
    OPREG__TRY(opreg__chk_same_device(op, "cos_sin_cache", cache, "positions", positions));
    if (cache->shape[1] <= 0 || cache->shape[1] % 2 != 0 || cache->shape[1] > head_size)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'cos_sin_cache': rot_dim (dim 1) must be even and in "
                           "2..head_size=%" PRId64 ", got %" PRId64,
                           op, head_size, cache->shape[1]);
    OPREG__TRY(opreg__chk_no_overlap(op, "query", query, "key", key));
    OPREG__TRY(opreg__chk_no_overlap(op, "query", query, "positions", positions));
    OPREG__TRY(opreg__chk_no_overlap(op, "query", query, "cos_sin_cache", cache));
    OPREG__TRY(opreg__chk_no_overlap(op, "key", key, "positions", positions));
    return opreg__chk_no_overlap(op, "key", key, "cos_sin_cache", cache);
}

opreg_status opreg__check_rotary_embedding(const opreg_tensor *positions, const opreg_tensor *query,
                                           const opreg_tensor *key, int64_t head_size,
                                           const opreg_tensor *cos_sin_cache, bool is_neox) {
    (void)is_neox;
    return check_common("_C::rotary_embedding", positions, query, key, head_size, cos_sin_cache);
}

opreg_status opreg__check_batched_rotary_embedding(const opreg_tensor *positions,
                                                   const opreg_tensor *query,
                                                   const opreg_tensor *key, int64_t head_size,
                                                   const opreg_tensor *cos_sin_cache, bool is_neox,
                                                   int64_t rot_dim, const opreg_tensor *offsets) {
    const char *op = "_C::batched_rotary_embedding";
    (void)is_neox;
    OPREG__TRY(check_common(op, positions, query, key, head_size, cos_sin_cache));
    if (rot_dim != cos_sin_cache->shape[1])
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'rot_dim': %" PRId64
                           " differs from cos_sin_cache.size(1) = %" PRId64,
                           op, rot_dim, cos_sin_cache->shape[1]);
    OPREG__TRY(opreg__chk_tensor(op, "cos_sin_cache_offsets", offsets, OPREG__DTS(I64), -1));
    if (opreg__numel(offsets) != opreg__numel(positions))
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'cos_sin_cache_offsets': %" PRId64
                           " elements, expected one per token (%" PRId64 ")",
                           op, opreg__numel(offsets), opreg__numel(positions));
    OPREG__TRY(opreg__chk_contig(op, "cos_sin_cache_offsets", offsets));
    OPREG__TRY(
        opreg__chk_same_device(op, "cos_sin_cache_offsets", offsets, "positions", positions));
    OPREG__TRY(opreg__chk_no_overlap(op, "query", query, "cos_sin_cache_offsets", offsets));
    return opreg__chk_no_overlap(op, "key", key, "cos_sin_cache_offsets", offsets);
}

static opreg_status check_rows(const char *op, const opreg_tensor *positions,
                               const opreg_tensor *cache, const opreg_tensor *offsets) {
    int64_t n = opreg__numel(positions), max_pos = cache->shape[0];
    const int64_t *pos = opreg__ptr(positions);
    const int64_t *off = offsets ? opreg__ptr(offsets) : NULL;
    for (int64_t t = 0; t < n; t++) {
        int64_t row = pos[t], o = off ? off[t] : 0;
        if (row < 0 || o < 0 || row >= max_pos || o >= max_pos - row) {
            if (!off)
                return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                                   "%s: argument 'positions': token %" PRId64
                                   " uses cache row %" PRId64 ", outside cos_sin_cache's %" PRId64
                                   " rows",
                                   op, t, row, max_pos);
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'positions': token %" PRId64 " uses cache row %" PRId64
                               " + offset %" PRId64 ", outside cos_sin_cache's %" PRId64 " rows",
                               op, t, row, o, max_pos);
        }
    }
    return OPREG_OK;
}

opreg_status opreg__check_rotary_embedding_data(const opreg_tensor *positions,
                                                const opreg_tensor *cos_sin_cache) {
    return check_rows("_C::rotary_embedding", positions, cos_sin_cache, NULL);
}

opreg_status opreg__check_batched_rotary_embedding_data(const opreg_tensor *positions,
                                                        const opreg_tensor *cos_sin_cache,
                                                        const opreg_tensor *offsets) {
    return check_rows("_C::batched_rotary_embedding", positions, cos_sin_cache, offsets);
}
