/* reshape_and_cache on the GPU: one block a token (grid-stride); its
 * threads store the token's heads x head_size elements of key and value at
 * its slot of the paged caches (ops/cache_layout.h). Padding slots (< 0)
 * are skipped, as specified; so are slots past the cache, which the host
 * cannot refuse without reading the device's slot_mapping (docs/cuda.md). */
#include "backends/cuda/cache.cuh"

namespace {

template <typename T> __global__ void reshape_and_cache_kernel(opreg__cuda_cache_args a) {
    const int64_t n = a.heads * a.head_size;
    const T *key = (const T *)a.key, *value = (const T *)a.value;
    for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
        int64_t slot = a.slots[t];
        if (slot < 0 || slot >= a.num_slots) continue;
        int64_t blk = slot / a.block_size, off = slot % a.block_size;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            int64_t h = i / a.head_size, d = i % a.head_size;
            opreg_cuda::cache_put<T>(a.key_cache,
                                     opreg__kcache_index(blk, a.key_block_stride, h, d, a.head_size,
                                                         a.x, off, a.block_size),
                                     key[t * a.key_stride + i], a.kind, a.kv_scale);
            opreg_cuda::cache_put<T>(a.value_cache,
                                     opreg__vcache_index(blk, a.value_block_stride, h, d,
                                                         a.head_size, off, a.block_size),
                                     value[t * a.value_stride + i], a.kind, a.kv_scale);
        }
    }
}

template <typename T> opreg_status launch(const opreg__cuda_cache_args *a, void *stream) {
    if (a->tokens == 0 || a->heads * a->head_size == 0) return OPREG_OK;
    reshape_and_cache_kernel<T>
        <<<opreg_cuda::grid_for(a->tokens, 1), opreg_cuda::threads_for(a->heads * a->head_size), 0,
           (cudaStream_t)stream>>>(*a);
    return opreg__cuda_launched("_C::reshape_and_cache", "reshape_and_cache_kernel");
}

} // namespace

extern "C" opreg_status opreg__cuda_reshape_and_cache(const opreg__cuda_cache_args *a,
                                                      void *stream) {
    return OPREG_CUDA_BY_FLOAT(a->dt, "_C::reshape_and_cache", launch, a, stream);
}
