/* gelu_tanh_and_mul on the GPU: out = (T)((T)act(x) * y) over rows [x | y], act = gelu(x), tanh
 * approximation (ops/act_math.h). The kernel is act.cuh's gated kernel. */
#include "backends/cuda/act.cuh"

OPREG_CUDA_GATED_OP(gelu_tanh_and_mul, opreg_cuda::act_gelu_tanh)
