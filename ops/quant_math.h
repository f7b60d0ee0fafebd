/* The scalar steps of the quantisation ops (ops-reference.md §3.5), shared
 * by the reference kernels and the CUDA kernels (OPREG_HD), so the GPU's
 * arithmetic is the reference's, bit for bit:
 *   fp8:  clamp x * (1/scale) to [-448, 448] with fmin/fmax (a NaN product
 *         becomes +448, as CUDA's fminf/fmaxf give), then the e4m3fn cast;
 *   int8: round to nearest, ties to even, saturate to [-128, 127], NaN -> 0
 *         (PTX cvt.rni.sat.s8.f32). */
#ifndef OPREG_OPS_QUANT_MATH_H
#define OPREG_OPS_QUANT_MATH_H

#include "common/dtype_convert.h"

#include <math.h>

#define OPREG__FP8_E4M3_MAX 448.0f

/* e4m3fn of @p scaled (x already multiplied by 1/scale). */
static inline OPREG_HD uint8_t opreg__fp8_quant_one(float scaled) {
    return opreg__f32_to_e4m3fn(fmaxf(-OPREG__FP8_E4M3_MAX, fminf(scaled, OPREG__FP8_E4M3_MAX)));
}

static inline OPREG_HD int8_t opreg__int8_rne_sat(float x) {
    float r;
    if (x != x) return 0;
    r = rintf(x); /* the default rounding mode: to nearest, ties to even */
    if (r > 127.0f) return 127;
    if (r < -128.0f) return -128;
    return (int8_t)r;
}

#endif
