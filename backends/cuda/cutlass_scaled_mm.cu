/* cutlass_scaled_mm on the GPU: the tiled GEMM of gemm.cuh over int8 (exact
 * integer accumulation) or fp8 e4m3fn (float accumulation), then the
 * reference's epilogue in double: out = a_s * (acc * b_s) + bias, with
 * per-tensor or per-row a_s and per-tensor or per-column b_s, rounded to
 * the output dtype (f32, bf16, f16). */
#include "backends/cuda/gemm.cuh"

namespace {

template <typename TOUT> struct scaled_epilogue {
    TOUT *out;
    const TOUT *bias;
    const float *as, *bs;
    int64_t n;
    int per_row_a, per_col_b;
    template <typename U> __device__ void operator()(int64_t i, int64_t j, U acc) const {
        double v = (double)as[per_row_a ? i : 0] * ((double)acc * (double)bs[per_col_b ? j : 0]);
        if (bias) v += (double)opreg_cuda::to_f32(bias[j]);
        out[i * n + j] = opreg_cuda::from_f32<TOUT>((float)v);
    }
};

template <typename TIN, typename TOUT>
opreg_status run(const opreg__cuda_scaled_mm_args *g, void *stream) {
    scaled_epilogue<TOUT> e = { (TOUT *)g->out, (const TOUT *)g->bias, g->a_scales, g->b_scales,
                                g->n,           g->per_row_a,          g->per_col_b };
    return opreg_cuda::launch_gemm("_C::cutlass_scaled_mm", (const TIN *)g->a, g->a_stride,
                                   (const TIN *)g->b, g->b_stride, g->m, g->n, g->k, e, stream);
}

template <typename TOUT> opreg_status by_input(const opreg__cuda_scaled_mm_args *g, void *stream) {
    if (g->in_dt == OPREG_DTYPE_I8) return run<int8_t, TOUT>(g, stream);
    if (g->in_dt == OPREG_DTYPE_F8_E4M3FN) return run<opreg_cuda::e4m3, TOUT>(g, stream);
    return opreg__cuda_bad_dtype("_C::cutlass_scaled_mm", g->in_dt);
}

} // namespace

extern "C" opreg_status opreg__cuda_cutlass_scaled_mm(const opreg__cuda_scaled_mm_args *g,
                                                      void *stream) {
    return OPREG_CUDA_BY_FLOAT(g->out_dt, "_C::cutlass_scaled_mm", by_input, g, stream);
}
