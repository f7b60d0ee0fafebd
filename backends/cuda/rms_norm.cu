/* rms_norm on the GPU: one block a row. The row's sum of squares is a block
 * reduction in float; then out = (T)((T)(x * r) * w) with r = rsqrt(ss / h
 * + eps), as the reference (ops/ref/norms.c). Rows whose width, stride and
 * pointers allow it move as 16-byte vectors. */
#include "backends/cuda/norm.cuh"

extern "C" opreg_status opreg__cuda_rms_norm(void *out, const void *in, int64_t in_stride,
                                             const void *weight, int64_t rows, int64_t h, float eps,
                                             int dt, void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::rms_norm", opreg_cuda::launch_norm, out, h, in, in_stride,
                               weight, rows, h, eps, false, stream);
}
