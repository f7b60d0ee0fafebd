/* static_scaled_int8_quant on the GPU: out = rne_sat(x / scale), one
 * grid-stride pass (quant.cuh). */
#include "backends/cuda/quant.cuh"

namespace {
template <typename T>
opreg_status launch(void *out, const void *in, int64_t n, const float *scale, void *stream) {
    return opreg_cuda::launch_quant<T, opreg_cuda::int8_step>("_C::static_scaled_int8_quant", out,
                                                              in, n, scale, (cudaStream_t)stream);
}
} // namespace

extern "C" opreg_status opreg__cuda_static_scaled_int8_quant(void *out, const void *in, int64_t n,
                                                             const float *scale, int dt,
                                                             void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::static_scaled_int8_quant", launch, out, in, n, scale,
                               stream);
}
