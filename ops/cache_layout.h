/* Element indices of the paged KV cache layouts (ops-reference.md §2.3),
 * shared by the reference kernels and the CUDA kernels (OPREG_HD):
 *   key cache   [num_blocks, heads, head_size / x, block_size, x]
 *   value cache [num_blocks, heads, head_size, block_size]
 * for dimension i of head h of the token at offset off of block blk. */
#ifndef OPREG_OPS_CACHE_LAYOUT_H
#define OPREG_OPS_CACHE_LAYOUT_H

#include "ops/dtype_convert.h"

static inline OPREG_HD int64_t opreg__kcache_index(int64_t blk, int64_t h, int64_t heads, int64_t i,
                                                   int64_t head_size, int64_t x, int64_t off,
                                                   int64_t block_size) {
    return (((blk * heads + h) * (head_size / x) + i / x) * block_size + off) * x + i % x;
}

static inline OPREG_HD int64_t opreg__vcache_index(int64_t blk, int64_t h, int64_t heads, int64_t i,
                                                   int64_t head_size, int64_t off,
                                                   int64_t block_size) {
    return ((blk * heads + h) * head_size + i) * block_size + off;
}

#endif
