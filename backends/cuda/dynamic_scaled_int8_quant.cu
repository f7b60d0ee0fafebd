/* dynamic_scaled_int8_quant on the GPU: one block a row (grid-stride). The
 * block reduces the row's absolute maximum, then writes rne_sat(x * (127 /
 * amax)) and scale[row] = amax / 127, the reference's float arithmetic (an
 * all-zero row gives 0 * inf = NaN -> 0, as there). */
#include "backends/cuda/quant.cuh"

namespace {

template <typename T>
__global__ void dynamic_int8_kernel(int8_t *out, const T *in, int64_t rows, int64_t h,
                                    float *scale) {
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = in + r * h;
        int8_t *o = out + r * h;
        float m = 0.0f;
        for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
            m = fmaxf(m, fabsf(opreg_cuda::to_f32(x[i])));
        m = opreg_cuda::block_reduce<true>(m, 0.0f);
        const float mult = 127.0f / m;
        for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
            o[i] = opreg__int8_rne_sat(opreg_cuda::to_f32(x[i]) * mult);
        if (threadIdx.x == 0) scale[r] = m / 127.0f;
    }
}

template <typename T>
opreg_status launch(void *out, const void *in, int64_t rows, int64_t h, float *scale,
                    void *stream) {
    if (rows == 0) return OPREG_OK;
    dynamic_int8_kernel<T>
        <<<opreg_cuda::grid_for(rows, 1), opreg_cuda::threads_for(h), 0, (cudaStream_t)stream>>>(
            (int8_t *)out, (const T *)in, rows, h, scale);
    return opreg__cuda_launched("_C::dynamic_scaled_int8_quant", "dynamic_int8_kernel");
}

} // namespace

extern "C" opreg_status opreg__cuda_dynamic_scaled_int8_quant(void *out, const void *in,
                                                              int64_t rows, int64_t h, float *scale,
                                                              int dt, void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::dynamic_scaled_int8_quant", launch, out, in, rows, h, scale,
                               stream);
}
