/* Exact scalar conversions between float and the narrow float formats:
 * bfloat16, IEEE half, float8 e4m3fn and float8 e5m2 (OCP FP8), stored as
 * raw bits. Every narrow value is exactly a float, so narrow -> float is
 * exact; float -> narrow rounds to nearest, ties to even.
 *
 * Overflow and NaN, matching PyTorch (c10) where the op uses c10's casts:
 *   bf16      overflow -> +-inf;  NaN -> 0x7FC0 (sign dropped, as c10::BFloat16)
 *   f16       overflow -> +-inf;  NaN -> 0x7E00 | sign (as c10::Half)
 *   e4m3fn    no inf: |x| > 464 (i.e. rounds past 448), +-inf and NaN -> NaN,
 *             0x7F | sign (as c10::Float8_e4m3fn, which does not saturate;
 *             ops that need saturation clamp first)
 *   e5m2      overflow (|x| >= 61440) -> +-inf (0x7C | sign); NaN -> 0x7F | sign
 * The *_sat variants follow CUDA's __nv_cvt_float_to_fp8(..., __NV_SATFINITE):
 * overflow and +-inf go to the largest finite value of that sign (448,
 * 57344) and NaN goes to 0x7F. The fp8 KV cache uses them.
 *
 * All functions are static inline and usable from CUDA (OPREG_HD). */
#ifndef OPREG_COMMON_DTYPE_CONVERT_H
#define OPREG_COMMON_DTYPE_CONVERT_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define OPREG_HD __host__ __device__
#else
#define OPREG_HD
#endif

static inline OPREG_HD uint32_t opreg__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline OPREG_HD float opreg__f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- bfloat16 ------------------------------------------------------------ */

static inline OPREG_HD float opreg__bf16_to_f32(uint16_t h) {
    return opreg__f32_from_bits((uint32_t)h << 16);
}

static inline OPREG_HD uint16_t opreg__f32_to_bf16(float f) {
    uint32_t u = opreg__f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- IEEE half ------------------------------------------------------------ */

static inline OPREG_HD float opreg__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) return opreg__f32_from_bits(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) {
        /* subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return opreg__f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Round the magnitude bits @p a (a finite float, not NaN) to a format with
 * @p mbits mantissa bits and exponent bias @p bias; returns the code without
 * sign, where a result of (emax+1) << mbits means "overflowed". */
static inline OPREG_HD uint32_t opreg__round_mag(uint32_t a, int mbits, int bias) {
    int e = (int)(a >> 23) - 127; /* unbiased exponent of a normal float */
    int emin = 1 - bias;          /* smallest normal exponent of the target */
    if (a == 0) return 0;
    if (a < 0x00800000u) e = -127; /* float subnormal: far below any target */
    if (e >= emin) {
        int drop = 23 - mbits;
        uint32_t m = a & 0x7FFFFFu;
        uint32_t code = ((uint32_t)(e + bias) << mbits) | (m >> drop);
        uint32_t rest = m & ((1u << drop) - 1u);
        uint32_t half = 1u << (drop - 1);
        if (rest > half || (rest == half && (code & 1u))) code++; /* carries into exp */
        return code;
    }
    /* target subnormal: value = q * 2^(emin - mbits), q < 2^mbits */
    {
        int shift = 23 - mbits + (emin - e); /* bits of the 24-bit significand to drop */
        uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
        uint32_t q, rest, half;
        if (a < 0x00800000u || shift > 25) return 0; /* below half the smallest subnormal */
        q = sig >> shift;
        rest = sig & ((1u << shift) - 1u);
        half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1u))) q++; /* may become the smallest normal */
        return q;
    }
}

static inline OPREG_HD uint16_t opreg__f32_to_f16(float f) {
    uint32_t u = opreg__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t code;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    if (a == 0x7F800000u) return (uint16_t)(sign | 0x7C00u);
    code = opreg__round_mag(a, 10, 15);
    if (code >= 0x7C00u) code = 0x7C00u;
    return (uint16_t)(sign | code);
}

/* ---- float8 e4m3fn: bias 7, no inf, NaN = S.1111.111, max 448 -------------- */

static inline OPREG_HD float opreg__e4m3fn_to_f32(uint8_t v) {
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t exp = (v >> 3) & 0xFu;
    uint32_t mant = v & 0x7u;
    if ((v & 0x7Fu) == 0x7Fu) return opreg__f32_from_bits(sign | 0x7FC00000u);
    if (exp == 0) {
        float x = (float)mant * (1.0f / 512.0f); /* mant * 2^-9 */
        return sign ? -x : x;
    }
    return opreg__f32_from_bits(sign | ((exp + 120u) << 23) | (mant << 20));
}

static inline OPREG_HD uint8_t opreg__f32_to_e4m3fn(float f) {
    uint32_t u = opreg__f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t code;
    if (a >= 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
    code = opreg__round_mag(a, 3, 7);
    if (code > 0x7Eu) code = 0x7Fu; /* rounded past 448: NaN, as c10 */
    return (uint8_t)(sign | code);
}

static inline OPREG_HD uint8_t opreg__f32_to_e4m3fn_sat(float f) {
    uint32_t u = opreg__f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t code;
    if (a > 0x7F800000u) return 0x7Fu;
    if (a == 0x7F800000u) return (uint8_t)(sign | 0x7Eu);
    code = opreg__round_mag(a, 3, 7);
    if (code > 0x7Eu) code = 0x7Eu;
    return (uint8_t)(sign | code);
}

/* ---- float8 e5m2: bias 15, IEEE-like (inf, NaN), max 57344 ----------------- */

static inline OPREG_HD float opreg__e5m2_to_f32(uint8_t v) {
    return opreg__f16_to_f32((uint16_t)((uint16_t)v << 8));
}

static inline OPREG_HD uint8_t opreg__f32_to_e5m2(float f) {
    uint32_t u = opreg__f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t code;
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);
    if (a == 0x7F800000u) return (uint8_t)(sign | 0x7Cu);
    code = opreg__round_mag(a, 2, 15);
    if (code > 0x7Cu) code = 0x7Cu;
    return (uint8_t)(sign | code);
}

static inline OPREG_HD uint8_t opreg__f32_to_e5m2_sat(float f) {
    uint32_t u = opreg__f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t code;
    if (a > 0x7F800000u) return 0x7Fu;
    if (a == 0x7F800000u) return (uint8_t)(sign | 0x7Bu);
    code = opreg__round_mag(a, 2, 15);
    if (code > 0x7Bu) code = 0x7Bu;
    return (uint8_t)(sign | code);
}

#endif
