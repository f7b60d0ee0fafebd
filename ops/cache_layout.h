/* Element indices of the paged KV cache layouts (ops-reference.md §2.3),
 * shared by the reference, CPU and CUDA kernels (OPREG_HD):
 *   key cache   [num_blocks, heads, head_size / x, block_size, x]
 *   value cache [num_blocks, heads, head_size, block_size]
 *   flash cache [num_blocks, block_size, heads, head_size]
 * for dimension i of head h of the token at offset off of block blk.
 *
 * Blocks are addressed through the cache's stride in dim 0 (@p blk_stride,
 * in elements), as vLLM's kernels do, so a cache may be a view with a
 * larger block stride than the dense one: kv[:, 0] and kv[:, 1] of a
 * combined [num_blocks, 2, ...] cache. Within a block the layout is dense. */
#ifndef OPREG_OPS_CACHE_LAYOUT_H
#define OPREG_OPS_CACHE_LAYOUT_H

#include "common/dtype_convert.h"

static inline OPREG_HD int64_t opreg__kcache_index(int64_t blk, int64_t blk_stride, int64_t h,
                                                   int64_t i, int64_t head_size, int64_t x,
                                                   int64_t off, int64_t block_size) {
    return blk * blk_stride + ((h * (head_size / x) + i / x) * block_size + off) * x + i % x;
}

static inline OPREG_HD int64_t opreg__vcache_index(int64_t blk, int64_t blk_stride, int64_t h,
                                                   int64_t i, int64_t head_size, int64_t off,
                                                   int64_t block_size) {
    return blk * blk_stride + (h * head_size + i) * block_size + off;
}

/* Element i of the heads x head_size row of slot @p slot in a flash cache. */
static inline OPREG_HD int64_t opreg__flash_cache_index(int64_t slot, int64_t blk_stride,
                                                        int64_t block_size, int64_t row,
                                                        int64_t i) {
    return (slot / block_size) * blk_stride + (slot % block_size) * row + i;
}

#endif
