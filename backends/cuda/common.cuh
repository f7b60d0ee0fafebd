/* Shared device code of the CUDA kernels: element types and conversions,
 * 16-byte vectors, warp and block reductions, launch sizes and the dispatch
 * of a float dtype to a template. The conversions are the shared exact ones
 * of common/dtype_convert.h (bf16, fp8), and the hardware's round-to-nearest-
 * even conversion for IEEE half, which gives the same bits for every
 * non-NaN value. */
#ifndef OPREG_BACKENDS_CUDA_COMMON_CUH
#define OPREG_BACKENDS_CUDA_COMMON_CUH

#include "backends/cuda/cuda_internal.h"
extern "C" {
#include "common/internal.h"
}
#include "common/dtype_convert.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace opreg_cuda {

/* Narrow float storage, as raw bits. */
struct bf16 {
    uint16_t bits;
};
struct f16 {
    uint16_t bits;
};

__device__ __forceinline__ float to_f32(float x) {
    return x;
}
__device__ __forceinline__ float to_f32(bf16 x) {
    return opreg__bf16_to_f32(x.bits);
}
__device__ __forceinline__ float to_f32(f16 x) {
    return __half2float(__ushort_as_half(x.bits));
}

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) {
    return x;
}
template <> __device__ __forceinline__ bf16 from_f32<bf16>(float x) {
    return bf16{ opreg__f32_to_bf16(x) };
}
template <> __device__ __forceinline__ f16 from_f32<f16>(float x) {
    return f16{ __half_as_ushort(__float2half_rn(x)) };
}

/* x rounded to T and back, as a float. */
template <typename T> __device__ __forceinline__ float round_to(float x) {
    return to_f32(from_f32<T>(x));
}

/* 16 bytes of T, loaded and stored as one vector. */
template <typename T> struct alignas(16) vec16 {
    static constexpr int n = 16 / sizeof(T);
    T e[n];
};

__host__ __device__ inline bool aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

/* ---- reductions (blockDim.x a multiple of 32, at most 1024) ---- */

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The sum (MAX = false) or fmaxf (MAX = true) of every thread's @p v, given
 * to every thread. @p identity is 0 for a sum and the starting value of a
 * max. Uses 33 floats of shared memory, and may be called repeatedly. */
template <bool MAX> __device__ float block_reduce(float v, float identity) {
    __shared__ float part[33];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int warps = (blockDim.x + 31) >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? part[lane] : identity;
        w = MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0) part[32] = w;
    }
    __syncthreads();
    float r = part[32];
    __syncthreads(); /* part may be written again by the next call */
    return r;
}

/* ---- launch sizes ---- */

/* Blocks for @p work items of @p per_block each, at least 1, capped so the
 * grid stays well inside gridDim.x; kernels loop over what is left. */
inline unsigned grid_for(int64_t work, int64_t per_block) {
    int64_t g = (work + per_block - 1) / per_block;
    if (g < 1) g = 1;
    if (g > (int64_t)1 << 20) g = (int64_t)1 << 20;
    return (unsigned)g;
}

/* Threads for a row of @p width items: a multiple of 32 in 32..1024. */
inline unsigned threads_for(int64_t width) {
    int64_t t = (width + 31) / 32 * 32;
    if (t < 32) t = 32;
    if (t > 1024) t = 1024;
    return (unsigned)t;
}

} // namespace opreg_cuda

/* Call F<T>(args...) with T the element type of float dtype @p dt (f32,
 * f16, bf16); any other dtype is an internal error (the checks refuse it). */
#define OPREG_CUDA_BY_FLOAT(dt, op, F, ...)                                                        \
    ((dt) == OPREG_DTYPE_F32    ? F<float>(__VA_ARGS__)                                            \
     : (dt) == OPREG_DTYPE_BF16 ? F<::opreg_cuda::bf16>(__VA_ARGS__)                               \
     : (dt) == OPREG_DTYPE_F16  ? F<::opreg_cuda::f16>(__VA_ARGS__)                                \
                                : opreg__cuda_bad_dtype(op, dt))

/* Return the launch's status from the enclosing function when it failed. */
#define OPREG__CUDA_TRY_LAUNCH(op, kernel) OPREG__TRY(opreg__cuda_launched(op, kernel))

#endif
