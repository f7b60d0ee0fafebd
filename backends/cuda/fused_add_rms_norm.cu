/* fused_add_rms_norm on the GPU: one block a row. residual = (T)(input +
 * residual), then input = rms_norm(residual), as the reference: the norm
 * reads the rounded sum. */
#include "backends/cuda/norm.cuh"

extern "C" opreg_status opreg__cuda_fused_add_rms_norm(void *in, int64_t in_stride, void *residual,
                                                       const void *weight, int64_t rows, int64_t h,
                                                       float eps, int dt, void *stream) {
    /* in place: the residual is both the sum's second operand and its
     * destination; the normalised row goes to input (rows in_stride apart) */
    return OPREG_CUDA_BY_FLOAT(dt, "_C::fused_add_rms_norm", opreg_cuda::launch_norm, in, in_stride,
                               residual, h, weight, rows, h, eps, true, stream);
}
