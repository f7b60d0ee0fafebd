/* _C::linear on the GPU: out = input . weight^T + bias with the tiled GEMM
 * of gemm.cuh (float accumulation), in f32, f16 or bf16. The result tensor
 * comes from the CUDA backend's allocator (register.c). */
#include "backends/cuda/gemm.cuh"

namespace {

template <typename T> struct linear_epilogue {
    T *out;
    const T *bias;
    int64_t n;
    __device__ void operator()(int64_t i, int64_t j, float acc) const {
        if (bias) acc += opreg_cuda::to_f32(bias[j]);
        out[i * n + j] = opreg_cuda::from_f32<T>(acc);
    }
};

template <typename T>
opreg_status launch(void *out, const void *in, const void *weight, const void *bias, int64_t rows,
                    int64_t n, int64_t k, void *stream) {
    linear_epilogue<T> e = { (T *)out, (const T *)bias, n };
    return opreg_cuda::launch_gemm("_C::linear", (const T *)in, k, (const T *)weight, k, rows, n, k,
                                   e, stream);
}

} // namespace

extern "C" opreg_status opreg__cuda_linear(void *out, const void *in, const void *weight,
                                           const void *bias, int64_t rows, int64_t n, int64_t k,
                                           int dt, void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::linear", launch, out, in, weight, bias, rows, n, k, stream);
}
