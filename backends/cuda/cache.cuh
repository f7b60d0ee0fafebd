/* The element store shared by reshape_and_cache.cu and
 * reshape_and_cache_flash.cu: "auto" copies the element; the fp8 kinds store
 * fp8(v / kv_scale) with the division in float and a saturating cast, the
 * reference's arithmetic (ops/ref/kv_cache.c) with its shared conversions. */
#ifndef OPREG_BACKENDS_CUDA_CACHE_CUH
#define OPREG_BACKENDS_CUDA_CACHE_CUH

#include "backends/cuda/common.cuh"
#include "ops/cache_layout.h"

namespace opreg_cuda {

template <typename T>
__device__ __forceinline__ void cache_put(void *cache, int64_t j, T v, int kind, float kv_scale) {
    if (kind == 0) {
        ((T *)cache)[j] = v;
        return;
    }
    float f = to_f32(v) / kv_scale;
    ((uint8_t *)cache)[j] = kind == 1 ? opreg__f32_to_e4m3fn_sat(f) : opreg__f32_to_e5m2_sat(f);
}

} // namespace opreg_cuda

#endif
