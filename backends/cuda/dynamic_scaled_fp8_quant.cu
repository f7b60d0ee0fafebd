/* dynamic_scaled_fp8_quant on the GPU, in four steps on the stream: the
 * absolute maximum of the input into a zeroed scratch float (block
 * reductions, then atomicMax); scale = fmaxf(scale, amax / 448) as the
 * reference (the caller's scale is the starting value); then the static
 * quantisation with that scale; then the scratch is released. */
#include "backends/cuda/quant.cuh"

namespace {

__global__ void update_scale(float *scale, const float *amax) {
    *scale = fmaxf(*scale, *amax / OPREG__FP8_E4M3_MAX);
}

template <typename T>
opreg_status launch(void *out, const void *in, int64_t n, float *scale, void *stream) {
    const char *op = "_C::dynamic_scaled_fp8_quant";
    cudaStream_t s = (cudaStream_t)stream;
    void *amax;
    OPREG__TRY(opreg__cuda_scratch(&amax, sizeof(float), stream, op));
    opreg_status st =
        opreg__cuda_status((int)cudaMemsetAsync(amax, 0, sizeof(float), s), op, "cudaMemsetAsync");
    if (st == OPREG_OK && n > 0) {
        opreg_cuda::amax_kernel<T>
            <<<opreg_cuda::grid_for(n, 256 * 8), 256, 0, s>>>((float *)amax, (const T *)in, n);
        st = opreg__cuda_launched(op, "amax_kernel");
    }
    if (st == OPREG_OK) {
        update_scale<<<1, 1, 0, s>>>(scale, (const float *)amax);
        st = opreg__cuda_launched(op, "update_scale");
    }
    if (st == OPREG_OK)
        st = opreg_cuda::launch_quant<T, opreg_cuda::fp8_step>(op, out, in, n, scale, s);
    opreg_status freed = opreg__cuda_scratch_free(amax, stream, op);
    return st != OPREG_OK ? st : freed;
}

} // namespace

extern "C" opreg_status opreg__cuda_dynamic_scaled_fp8_quant(void *out, const void *in, int64_t n,
                                                             float *scale, int dt, void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::dynamic_scaled_fp8_quant", launch, out, in, n, scale,
                               stream);
}
