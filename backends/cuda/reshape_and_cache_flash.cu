/* reshape_and_cache_flash on the GPU: one block a token (grid-stride); the
 * token's heads x head_size elements go to slot s of the [num_blocks,
 * block_size, heads, head_size] caches: row s % block_size of block
 * s / block_size (ops/cache_layout.h). Padding slots (< 0) and slots past
 * the cache are skipped. */
#include "backends/cuda/cache.cuh"

namespace {

template <typename T> __global__ void flash_kernel(opreg__cuda_cache_args a) {
    const int64_t n = a.heads * a.head_size;
    const T *key = (const T *)a.key, *value = (const T *)a.value;
    for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
        int64_t slot = a.slots[t];
        if (slot < 0 || slot >= a.num_slots) continue;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            opreg_cuda::cache_put<T>(
                a.key_cache, opreg__flash_cache_index(slot, a.key_block_stride, a.block_size, n, i),
                key[t * a.key_stride + i], a.kind, 1.0f);
            opreg_cuda::cache_put<T>(
                a.value_cache,
                opreg__flash_cache_index(slot, a.value_block_stride, a.block_size, n, i),
                value[t * a.value_stride + i], a.kind, 1.0f);
        }
    }
}

template <typename T> opreg_status launch(const opreg__cuda_cache_args *a, void *stream) {
    if (a->tokens == 0 || a->heads * a->head_size == 0) return OPREG_OK;
    flash_kernel<T>
        <<<opreg_cuda::grid_for(a->tokens, 1), opreg_cuda::threads_for(a->heads * a->head_size), 0,
           (cudaStream_t)stream>>>(*a);
    return opreg__cuda_launched("_C::reshape_and_cache_flash", "flash_kernel");
}

} // namespace

extern "C" opreg_status opreg__cuda_reshape_and_cache_flash(const opreg__cuda_cache_args *a,
                                                            void *stream) {
    return OPREG_CUDA_BY_FLOAT(a->dt, "_C::reshape_and_cache_flash", launch, a, stream);
}
