/* batched_rotary_embedding on the GPU: the cache row of token t is
 * positions[t] + cos_sin_cache_offsets[t] (rotary.cuh). */
#include "backends/cuda/rotary.cuh"

extern "C" opreg_status opreg__cuda_batched_rotary_embedding(const opreg__cuda_rotary_args *a,
                                                             void *stream) {
    return OPREG_CUDA_BY_FLOAT(a->dt, "_C::batched_rotary_embedding", opreg_cuda::launch_rotary,
                               "_C::batched_rotary_embedding", a, stream);
}
