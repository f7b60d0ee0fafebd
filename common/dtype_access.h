/* Elements of every opreg dtype, read and written through double: the one
 * place that knows how each dtype's bits become a number and back. The
 * reference kernels, the op checks, opcheck's generated inputs and its
 * comparison, and the tests' helpers all load and store through these, so
 * a value means the same thing to all of them. Not installed.
 *
 * Loads are exact (every value of every dtype is a double). Stores round
 * once, to nearest even: a double goes to float by rounding to odd, so the
 * second rounding to bf16, f16 or fp8 is the correct rounding of the double
 * (float keeps 24 significand bits, at least two more than any of them).
 * Overflow and NaN of the narrow floats follow common/dtype_convert.h (fp8
 * e4m3fn does not saturate). An integer store truncates toward zero and
 * saturates at the type's range, NaN stores 0, and bool stores v != 0: a
 * store never performs a conversion that C leaves undefined. */
#ifndef OPREG_COMMON_DTYPE_ACCESS_H
#define OPREG_COMMON_DTYPE_ACCESS_H

#include "common/dtype_convert.h"
#include "opreg/tensor.h"

#include <math.h>
#include <stdint.h>

/* Round a double once to float: round to odd, so that a second rounding to
 * a narrower format (24 > 8 + 2 significand bits) is a correct rounding. */
static inline float opreg__f64_to_f32_odd(double d) {
    float f = (float)d;
    uint32_t u;
    if (isnan(d) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    u = opreg__f32_bits(f) | 1u;
    return opreg__f32_from_bits(u);
}

/* @p v truncated toward zero and clamped to [@p lo, @p hi]; NaN is 0. */
static inline double opreg__int_clamp(double v, double lo, double hi) {
    if (isnan(v)) return 0.0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Element @p i of a buffer of dtype @p dt, as a double (exact; 0 for a
 * value that is not an opreg dtype). */
static inline double opreg__ld(const void *p, int dt, int64_t i) {
    switch (dt) {
    case OPREG_DTYPE_F32:
        return ((const float *)p)[i];
    case OPREG_DTYPE_F64:
        return ((const double *)p)[i];
    case OPREG_DTYPE_F16:
        return opreg__f16_to_f32(((const uint16_t *)p)[i]);
    case OPREG_DTYPE_BF16:
        return opreg__bf16_to_f32(((const uint16_t *)p)[i]);
    case OPREG_DTYPE_F8_E4M3FN:
        return opreg__e4m3fn_to_f32(((const uint8_t *)p)[i]);
    case OPREG_DTYPE_F8_E5M2:
        return opreg__e5m2_to_f32(((const uint8_t *)p)[i]);
    case OPREG_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case OPREG_DTYPE_U8:
        return ((const uint8_t *)p)[i];
    case OPREG_DTYPE_BOOL:
        return ((const uint8_t *)p)[i] != 0;
    case OPREG_DTYPE_I16:
        return ((const int16_t *)p)[i];
    case OPREG_DTYPE_I32:
        return ((const int32_t *)p)[i];
    case OPREG_DTYPE_I64:
        return (double)((const int64_t *)p)[i];
    default:
        return 0.0;
    }
}

/* Store @p v into element @p i of a buffer of dtype @p dt, rounded or
 * clamped as the header's comment says (nothing for an unknown dtype). */
static inline void opreg__st(void *p, int dt, int64_t i, double v) {
    switch (dt) {
    case OPREG_DTYPE_F32:
        ((float *)p)[i] = (float)v;
        break;
    case OPREG_DTYPE_F64:
        ((double *)p)[i] = v;
        break;
    case OPREG_DTYPE_F16:
        ((uint16_t *)p)[i] = opreg__f32_to_f16(opreg__f64_to_f32_odd(v));
        break;
    case OPREG_DTYPE_BF16:
        ((uint16_t *)p)[i] = opreg__f32_to_bf16(opreg__f64_to_f32_odd(v));
        break;
    case OPREG_DTYPE_F8_E4M3FN:
        ((uint8_t *)p)[i] = opreg__f32_to_e4m3fn(opreg__f64_to_f32_odd(v));
        break;
    case OPREG_DTYPE_F8_E5M2:
        ((uint8_t *)p)[i] = opreg__f32_to_e5m2(opreg__f64_to_f32_odd(v));
        break;
    case OPREG_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)opreg__int_clamp(v, INT8_MIN, INT8_MAX);
        break;
    case OPREG_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)opreg__int_clamp(v, 0, UINT8_MAX);
        break;
    case OPREG_DTYPE_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    case OPREG_DTYPE_I16:
        ((int16_t *)p)[i] = (int16_t)opreg__int_clamp(v, INT16_MIN, INT16_MAX);
        break;
    case OPREG_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)opreg__int_clamp(v, INT32_MIN, INT32_MAX);
        break;
    case OPREG_DTYPE_I64:
        /* 2^63 itself is out of range: the largest double below it is the bound */
        ((int64_t *)p)[i] = (int64_t)opreg__int_clamp(v, -0x1p63, 0x1.fffffffffffffp62);
        break;
    default:
        break;
    }
}

/* @p v rounded to dtype @p dt as a store would round it, as a double. */
static inline double opreg__round_to(int dt, double v) {
    uint64_t cell = 0;
    opreg__st(&cell, dt, 0, v);
    return opreg__ld(&cell, dt, 0);
}

#endif
