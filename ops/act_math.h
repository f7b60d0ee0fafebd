/* The activations of the catalogue in float, as the CUDA kernels compute
 * them (OPREG_HD: host and device). The reference kernels compute in
 * double; tests/backends/cuda/test_cuda_math.c compares these functions with the
 * reference on the CPU over a wide range of inputs, so the formulas of the
 * GPU kernels are tested where no GPU is present. */
#ifndef OPREG_OPS_ACT_MATH_H
#define OPREG_OPS_ACT_MATH_H

#include "common/dtype_convert.h"

#include <math.h>

static inline OPREG_HD float opreg__act_silu(float x) {
    return x / (1.0f + expf(-x));
}

static inline OPREG_HD float opreg__act_gelu_erf(float x) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* sqrt(2/pi), as the erf-free gelu approximations use it. */
static inline OPREG_HD float opreg__act_gelu_tanh(float x) {
    const float beta = 0.79788456080286536f;
    return 0.5f * x * (1.0f + tanhf(beta * (x + 0.044715f * x * x * x)));
}

static inline OPREG_HD float opreg__act_gelu_new(float x) {
    return 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
}

static inline OPREG_HD float opreg__act_gelu_fast(float x) {
    return 0.5f * x * (1.0f + tanhf(0.79788456f * x * (1.0f + 0.044715f * x * x)));
}

static inline OPREG_HD float opreg__act_gelu_quick(float x) {
    return x / (1.0f + expf(-1.702f * x));
}

#endif
