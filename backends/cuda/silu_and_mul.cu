/* silu_and_mul on the GPU: out = (T)((T)act(x) * y) over rows [x | y], act = silu(x) = x / (1 +
 * exp(-x)), (ops/act_math.h). The kernel is act.cuh's gated kernel. */
#include "backends/cuda/act.cuh"

OPREG_CUDA_GATED_OP(silu_and_mul, opreg_cuda::act_silu)
