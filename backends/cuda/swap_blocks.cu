/* swap_blocks on the GPU: one cudaMemcpyAsync a pair of the (host) mapping,
 * host to device, device to host or device to device, enqueued in order on
 * the current stream; CUDA infers the direction from the addresses. The
 * caller (register.c) has checked every pair against both tensors. */
#include "backends/cuda/common.cuh"

extern "C" opreg_status opreg__cuda_swap_blocks(void *dst, int64_t dst_step, const void *src,
                                                int64_t src_step, const int64_t *mapping,
                                                int64_t pairs, int64_t block_bytes, void *stream) {
    if (block_bytes == 0) return OPREG_OK;
    for (int64_t i = 0; i < pairs; i++) {
        const char *s = (const char *)src + mapping[2 * i] * src_step;
        char *d = (char *)dst + mapping[2 * i + 1] * dst_step;
        cudaError_t e =
            cudaMemcpyAsync(d, s, (size_t)block_bytes, cudaMemcpyDefault, (cudaStream_t)stream);
        if (e != cudaSuccess)
            return opreg__cuda_status((int)e, "_C::swap_blocks", "cudaMemcpyAsync");
    }
    return OPREG_OK;
}
