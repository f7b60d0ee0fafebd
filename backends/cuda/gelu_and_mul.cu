/* gelu_and_mul on the GPU: out = (T)((T)act(x) * y) over rows [x | y], act = the erf gelu
 * (ops/act_math.h). The kernel is act.cuh's gated kernel. */
#include "backends/cuda/act.cuh"

OPREG_CUDA_GATED_OP(gelu_and_mul, opreg_cuda::act_gelu_erf)
