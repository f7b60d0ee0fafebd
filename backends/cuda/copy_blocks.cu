/* copy_blocks on the GPU: one block for each (layer, key or value) cache.
 * It runs the mapping's pairs in order, a barrier between two pairs, so a
 * chain (a->b, b->c) leaves a's data at c as the reference's sequential
 * loop does. Pairs whose blocks lie outside the caches are skipped (the
 * host cannot read the device's mapping to refuse them; docs/cuda.md). The
 * cache pointers travel as kernel parameters, LAYERS layers a launch. */
#include "backends/cuda/common.cuh"

namespace {

constexpr int LAYERS = 64;

struct caches {
    void *p[2][LAYERS]; /* [0]: key caches, [1]: value caches */
};

template <bool VEC>
__global__ void copy_blocks_kernel(caches c, const int64_t *mapping, int64_t pairs,
                                   int64_t key_bytes, int64_t key_step, int64_t value_bytes,
                                   int64_t value_step, int64_t blocks) {
    const int kv = blockIdx.y;
    const int64_t bytes = kv == 0 ? key_bytes : value_bytes;
    const int64_t step = kv == 0 ? key_step : value_step;
    char *base = (char *)c.p[kv][blockIdx.x];
    for (int64_t i = 0; i < pairs; i++) {
        int64_t s = mapping[2 * i], d = mapping[2 * i + 1];
        if (s < 0 || d < 0 || s >= blocks || d >= blocks || s == d) continue;
        const char *src = base + s * step;
        char *dst = base + d * step;
        if (VEC) {
            for (int64_t j = threadIdx.x; j < bytes / 16; j += blockDim.x)
                reinterpret_cast<uint4 *>(dst)[j] = reinterpret_cast<const uint4 *>(src)[j];
        } else {
            for (int64_t j = threadIdx.x; j < bytes; j += blockDim.x)
                dst[j] = src[j];
        }
        __syncthreads(); /* the next pair may read what this one wrote */
    }
}

} // namespace

extern "C" opreg_status opreg__cuda_copy_blocks(void *const *key_caches, void *const *value_caches,
                                                int64_t layers, const int64_t *mapping,
                                                int64_t pairs, int64_t key_block_bytes,
                                                int64_t key_block_step, int64_t value_block_bytes,
                                                int64_t value_block_step, int64_t num_blocks,
                                                void *stream) {
    if (pairs == 0 || layers == 0) return OPREG_OK;
    bool vec = key_block_bytes % 16 == 0 && value_block_bytes % 16 == 0 &&
               key_block_step % 16 == 0 && value_block_step % 16 == 0;
    for (int64_t l = 0; l < layers; l++)
        vec = vec && opreg_cuda::aligned16(key_caches[l]) && opreg_cuda::aligned16(value_caches[l]);
    for (int64_t first = 0; first < layers; first += LAYERS) {
        caches c = {};
        int64_t n = layers - first < LAYERS ? layers - first : LAYERS;
        for (int64_t l = 0; l < n; l++) {
            c.p[0][l] = key_caches[first + l];
            c.p[1][l] = value_caches[first + l];
        }
        dim3 grid((unsigned)n, 2);
        cudaStream_t s = (cudaStream_t)stream;
        if (vec)
            copy_blocks_kernel<true><<<grid, 256, 0, s>>>(c, mapping, pairs, key_block_bytes,
                                                          key_block_step, value_block_bytes,
                                                          value_block_step, num_blocks);
        else
            copy_blocks_kernel<false><<<grid, 256, 0, s>>>(c, mapping, pairs, key_block_bytes,
                                                           key_block_step, value_block_bytes,
                                                           value_block_step, num_blocks);
        OPREG__CUDA_TRY_LAUNCH("_C::copy_blocks", "copy_blocks_kernel");
    }
    return OPREG_OK;
}
