/* Reference quantisation (§3.5). The arithmetic is the spec's float
 * arithmetic, step for step, so results are bit-exact expectations:
 * fp8: r = fmaxf(-448, fminf(x * (1/scale), 448)), then the e4m3fn cast (the
 *      clamp is CUDA's fmin/fmax, so a NaN product becomes +448);
 * int8: rne(x / scale) (static) or rne(x * (127/amax)) (dynamic), saturated
 *      to [-128, 127], NaN -> 0 (PTX cvt.rni.sat.s8.f32). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/quant_math.h"
#include "ops/ref/ref.h"

#define FP8_E4M3_MAX OPREG__FP8_E4M3_MAX

static void fp8_quant(const opreg_tensor *out, const opreg_tensor *input, float scale) {
    int dt = opreg__dtype_of(input);
    int64_t n = opreg__numel(input);
    float inv = 1.0f / scale;
    uint8_t *o = opreg__ptr(out);
    for (int64_t i = 0; i < n; i++) {
        o[i] = opreg__fp8_quant_one((float)opreg__ld(opreg__ptr(input), dt, i) * inv);
    }
}

opreg_status opreg__ref_static_scaled_fp8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                const opreg_tensor *scale) {
    fp8_quant(out, input, *(const float *)opreg__ptr(scale));
    return OPREG_OK;
}

opreg_status opreg__ref_dynamic_scaled_fp8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                 const opreg_tensor *scale) {
    int dt;
    int64_t n;
    float amax = 0.0f, *s;
    dt = opreg__dtype_of(input);
    n = opreg__numel(input);
    for (int64_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf((float)opreg__ld(opreg__ptr(input), dt, i)));
    /* atomicMaxFloat into the caller's (zeroed) scale */
    s = opreg__ptr(scale);
    *s = fmaxf(*s, amax / FP8_E4M3_MAX);
    fp8_quant(out, input, *s);
    return OPREG_OK;
}

opreg_status opreg__ref_static_scaled_int8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                 const opreg_tensor *scale) {
    int dt;
    int64_t n;
    float s;
    int8_t *o;
    dt = opreg__dtype_of(input);
    n = opreg__numel(input);
    s = *(const float *)opreg__ptr(scale);
    o = opreg__ptr(out);
    for (int64_t i = 0; i < n; i++)
        o[i] = opreg__int8_rne_sat((float)opreg__ld(opreg__ptr(input), dt, i) / s);
    return OPREG_OK;
}

opreg_status opreg__ref_dynamic_scaled_int8_quant(const opreg_tensor *out,
                                                  const opreg_tensor *input,
                                                  const opreg_tensor *scale) {
    int dt;
    int64_t rows, h;
    const void *in;
    int8_t *o;
    float *s;
    dt = opreg__dtype_of(input);
    rows = opreg__rows(input);
    h = input->shape[input->ndim - 1];
    in = opreg__ptr(input);
    o = opreg__ptr(out);
    s = opreg__ptr(scale);
    for (int64_t r = 0; r < rows; r++) {
        float amax = 0.0f, mult;
        for (int64_t i = 0; i < h; i++)
            amax = fmaxf(amax, fabsf((float)opreg__ld(in, dt, r * h + i)));
        mult = 127.0f / amax;
        for (int64_t i = 0; i < h; i++)
            o[r * h + i] = opreg__int8_rne_sat((float)opreg__ld(in, dt, r * h + i) * mult);
        s[r] = amax / 127.0f;
    }
    return OPREG_OK;
}
