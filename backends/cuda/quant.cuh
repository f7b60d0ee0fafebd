/* The quantisation kernels' shared parts: a grid-stride loop that maps each
 * float element to one byte (16-byte input vectors when aligned), and the
 * absolute maximum of a tensor. The per-element steps are those of
 * ops/quant_math.h, shared with the reference kernels. */
#ifndef OPREG_BACKENDS_CUDA_QUANT_CUH
#define OPREG_BACKENDS_CUDA_QUANT_CUH

#include "backends/cuda/common.cuh"
#include "ops/quant_math.h"

namespace opreg_cuda {

template <int N> struct alignas(N) bytes_of { uint8_t b[N]; };

/* fp8: e4m3fn(clamp(x * (1 / scale))). */
struct fp8_step {
    float inv;
    __device__ __forceinline__ explicit fp8_step(float scale) : inv(1.0f / scale) {}
    __device__ __forceinline__ uint8_t operator()(float x) const {
        return opreg__fp8_quant_one(x * inv);
    }
};

/* int8, static: rne_sat(x / scale). */
struct int8_step {
    float scale;
    __device__ __forceinline__ explicit int8_step(float s) : scale(s) {}
    __device__ __forceinline__ uint8_t operator()(float x) const {
        return (uint8_t)opreg__int8_rne_sat(x / scale);
    }
};

/* out[i] = STEP(*scale)(in[i]) over n elements. */
template <typename T, typename STEP, bool VEC>
__global__ void quant_kernel(uint8_t *out, const T *in, int64_t n, const float *scale) {
    constexpr int V = VEC ? vec16<T>::n : 1;
    typedef vec16<T> vt;
    const STEP step(*scale);
    const int64_t nv = n / V, stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t v = first; v < nv; v += stride) {
        if (VEC) {
            vt a = reinterpret_cast<const vt *>(in)[v];
            bytes_of<vt::n> o;
            for (int j = 0; j < vt::n; j++)
                o.b[j] = step(to_f32(a.e[j]));
            reinterpret_cast<bytes_of<vt::n> *>(out)[v] = o;
        } else {
            out[v] = step(to_f32(in[v]));
        }
    }
    for (int64_t t = nv * V + first; t < n; t += stride)
        out[t] = step(to_f32(in[t]));
}

template <typename T, typename STEP>
opreg_status launch_quant(const char *op, void *out, const void *in, int64_t n, const float *scale,
                          cudaStream_t s) {
    if (n == 0) return OPREG_OK;
    bool vec = aligned16(out) && aligned16(in);
    unsigned threads = 256, grid = grid_for(vec ? n / vec16<T>::n + 1 : n, threads);
    if (vec)
        quant_kernel<T, STEP, true>
            <<<grid, threads, 0, s>>>((uint8_t *)out, (const T *)in, n, scale);
    else
        quant_kernel<T, STEP, false>
            <<<grid, threads, 0, s>>>((uint8_t *)out, (const T *)in, n, scale);
    return opreg__cuda_launched(op, "quant_kernel");
}

/* *amax = max(*amax, max |in|) (fmaxf: NaNs are ignored). *amax must hold
 * a float >= 0; its bits then order like integers, hence atomicMax. */
template <typename T> __global__ void amax_kernel(float *amax, const T *in, int64_t n) {
    float m = 0.0f;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        m = fmaxf(m, fabsf(to_f32(in[i])));
    m = block_reduce<true>(m, 0.0f);
    if (threadIdx.x == 0) atomicMax((int *)amax, __float_as_int(m));
}

} // namespace opreg_cuda

#endif
