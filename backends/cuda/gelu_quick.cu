/* gelu_quick on the GPU: out = (T)gelu_quick(x), elementwise, in float
 * (ops/act_math.h). The kernel is act.cuh's elementwise kernel. */
#include "backends/cuda/act.cuh"

OPREG_CUDA_ELEMENTWISE_OP(gelu_quick, opreg_cuda::act_gelu_quick)
