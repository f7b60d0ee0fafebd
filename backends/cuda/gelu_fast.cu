/* gelu_fast on the GPU: out = (T)gelu_fast(x), elementwise, in float
 * (ops/act_math.h). The kernel is act.cuh's elementwise kernel. */
#include "backends/cuda/act.cuh"

OPREG_CUDA_ELEMENTWISE_OP(gelu_fast, opreg_cuda::act_gelu_fast)
