/* The OpenCL C kernels of the opreg OpenCL backend. This file is embedded
 * into the plugin as a string at build time and compiled for each device on
 * first use. Each op has one kernel per storage dtype (suffix _f32, _f16,
 * _bf16): f16 through vload_half/vstore_half (core OpenCL, no cl_khr_fp16
 * needed), bf16 as ushort with exact round-to-nearest-even conversion.
 * Arithmetic is in double where the device has it (the reference computes in
 * double), else in float. Offsets and strides are in elements. */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* ---- conversions ---------------------------------------------------------- */

inline float bf16_to_f32(ushort h) {
    return as_float((uint)h << 16);
}

inline ushort f32_to_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

/* Round the magnitude bits a (finite) to mbits mantissa bits, bias `bias`;
 * as common/dtype_convert.h. */
inline uint round_mag(uint a, int mbits, int bias) {
    int e = (int)(a >> 23) - 127;
    int emin = 1 - bias;
    if (a == 0u) return 0u;
    if (a < 0x00800000u) e = -127;
    if (e >= emin) {
        int drop = 23 - mbits;
        uint m = a & 0x7FFFFFu;
        uint code = ((uint)(e + bias) << mbits) | (m >> drop);
        uint rest = m & ((1u << drop) - 1u);
        uint hf = 1u << (drop - 1);
        if (rest > hf || (rest == hf && (code & 1u))) code++;
        return code;
    }
    {
        int shift = 23 - mbits + (emin - e);
        uint sig = (a & 0x7FFFFFu) | 0x800000u;
        uint q, rest, hf;
        if (a < 0x00800000u || shift > 25) return 0u;
        q = sig >> shift;
        rest = sig & ((1u << shift) - 1u);
        hf = 1u << (shift - 1);
        if (rest > hf || (rest == hf && (q & 1u))) q++;
        return q;
    }
}

/* float -> e4m3fn, no saturation (as c10): past 448 and NaN give NaN. */
inline uchar f32_to_e4m3fn(float f) {
    uint u = as_uint(f);
    uchar sign = (uchar)((u >> 24) & 0x80u);
    uint a = u & 0x7FFFFFFFu;
    uint code;
    if (a >= 0x7F800000u) return (uchar)(sign | 0x7Fu);
    code = round_mag(a, 3, 7);
    if (code > 0x7Eu) code = 0x7Fu;
    return (uchar)(sign | code);
}

/* Saturating casts (CUDA's __NV_SATFINITE), for the fp8 KV cache. */
inline uchar f32_to_e4m3fn_sat(float f) {
    uint u = as_uint(f);
    uchar sign = (uchar)((u >> 24) & 0x80u);
    uint a = u & 0x7FFFFFFFu;
    uint code;
    if (a > 0x7F800000u) return (uchar)0x7Fu;
    if (a == 0x7F800000u) return (uchar)(sign | 0x7Eu);
    code = round_mag(a, 3, 7);
    if (code > 0x7Eu) code = 0x7Eu;
    return (uchar)(sign | code);
}

inline uchar f32_to_e5m2_sat(float f) {
    uint u = as_uint(f);
    uchar sign = (uchar)((u >> 24) & 0x80u);
    uint a = u & 0x7FFFFFFFu;
    uint code;
    if (a > 0x7F800000u) return (uchar)0x7Fu;
    if (a == 0x7F800000u) return (uchar)(sign | 0x7Bu);
    code = round_mag(a, 2, 15);
    if (code > 0x7Bu) code = 0x7Bu;
    return (uchar)(sign | code);
}

/* rne(x) saturated to int8; NaN -> 0 (PTX cvt.rni.sat.s8.f32). */
inline char to_int8(float x) {
    float r;
    if (isnan(x)) return (char)0;
    r = rint(x);
    if (r > 127.0f) return (char)127;
    if (r < -128.0f) return (char)-128;
    return (char)(int)r;
}

/* ---- storage types: load as float, store from float ------------------------- */

#define LD_f32(p, i)     ((p)[i])
#define ST_f32(p, i, v)  ((p)[i] = (v))
#define LD_f16(p, i)     vload_half((i), (p))
#define ST_f16(p, i, v)  vstore_half_rte((v), (i), (p))
#define LD_bf16(p, i)    bf16_to_f32((p)[i])
#define ST_bf16(p, i, v) ((p)[i] = f32_to_bf16(v))

#define T_f32  float
#define T_f16  half
#define T_bf16 ushort

/* Round a float to what storage SUF holds, as a float. */
inline float rnd_f32(float v) {
    return v;
}
inline float rnd_f16(float v) {
    ushort bits;
    vstore_half_rte(v, 0, (__private half *)&bits);
    return vload_half(0, (const __private half *)&bits);
}
inline float rnd_bf16(float v) {
    return bf16_to_f32(f32_to_bf16(v));
}

/* ---- norms ------------------------------------------------------------------ */

/* One work-item a row: r = 1/sqrt(sum(x^2)/H + eps), out = (T)((T)(x*r) * w). */
#define RMS_NORM(SUF)                                                                              \
    __kernel void rms_norm_##SUF(__global T_##SUF *out, ulong out_off, __global const T_##SUF *in,  \
                                 ulong in_off, ulong in_stride, __global const T_##SUF *w,         \
                                 ulong w_off, ulong hidden, float eps) {                           \
        size_t row = get_global_id(0);                                                             \
        __global const T_##SUF *x = in + in_off + row * in_stride;                                 \
        __global T_##SUF *o = out + out_off + row * hidden;                                        \
        acc_t ss = 0;                                                                              \
        for (ulong i = 0; i < hidden; i++) {                                                       \
            acc_t v = LD_##SUF(x, i);                                                              \
            ss += v * v;                                                                           \
        }                                                                                          \
        acc_t r = (acc_t)1 / sqrt(ss / (acc_t)hidden + (acc_t)eps);                                \
        for (ulong i = 0; i < hidden; i++) {                                                       \
            float xr = rnd_##SUF((float)((acc_t)LD_##SUF(x, i) * r));                              \
            ST_##SUF(o, i, (float)((acc_t)xr * (acc_t)LD_##SUF(w, w_off + i)));                    \
        }                                                                                          \
    }

/* residual = (T)(x + residual); x = rms_norm(residual) * w. */
#define FUSED_ADD_RMS_NORM(SUF)                                                                    \
    __kernel void fused_add_rms_norm_##SUF(__global T_##SUF *in, ulong in_off, ulong in_stride,    \
                                           __global T_##SUF *res, ulong res_off,                   \
                                           __global const T_##SUF *w, ulong w_off, ulong hidden,   \
                                           float eps) {                                            \
        size_t row = get_global_id(0);                                                             \
        __global T_##SUF *x = in + in_off + row * in_stride;                                       \
        __global T_##SUF *z = res + res_off + row * hidden;                                        \
        acc_t ss = 0;                                                                              \
        for (ulong i = 0; i < hidden; i++) {                                                       \
            ST_##SUF(z, i, (float)((acc_t)LD_##SUF(x, i) + (acc_t)LD_##SUF(z, i)));                \
            acc_t v = LD_##SUF(z, i);                                                              \
            ss += v * v;                                                                           \
        }                                                                                          \
        acc_t r = (acc_t)1 / sqrt(ss / (acc_t)hidden + (acc_t)eps);                                \
        for (ulong i = 0; i < hidden; i++) {                                                       \
            float xr = rnd_##SUF((float)((acc_t)LD_##SUF(z, i) * r));                              \
            ST_##SUF(x, i, (float)((acc_t)xr * (acc_t)LD_##SUF(w, w_off + i)));                    \
        }                                                                                          \
    }

/* ---- gated activations: out = (T)((T)act(x) * y), one work-item an element ---- */

inline acc_t act_silu(acc_t x) {
    return x / ((acc_t)1 + exp(-x));
}
inline acc_t act_gelu(acc_t x) {
    return (acc_t)0.5 * x * ((acc_t)1 + erf(x * (acc_t)0.70710678118654752440));
}
inline acc_t act_gelu_tanh(acc_t x) {
    const acc_t beta = (acc_t)0.79788456080286535588; /* sqrt(2/pi) */
    return (acc_t)0.5 * x * ((acc_t)1 + tanh(beta * (x + (acc_t)0.044715 * x * x * x)));
}

#define GATED(NAME, ACT, SUF)                                                                      \
    __kernel void NAME##_##SUF(__global T_##SUF *out, ulong out_off, __global const T_##SUF *in,    \
                               ulong in_off, ulong d) {                                            \
        size_t g = get_global_id(0);                                                               \
        ulong r = g / d, i = g % d;                                                                \
        __global const T_##SUF *row = in + in_off + r * 2 * d;                                     \
        float a = rnd_##SUF((float)ACT((acc_t)LD_##SUF(row, i)));                                  \
        ST_##SUF(out + out_off, g, (float)((acc_t)a * (acc_t)LD_##SUF(row, d + i)));               \
    }

/* ---- rotary embedding: one work-item a token ---------------------------------- */

#define ROTATE(SUF)                                                                                \
    inline void rotate_##SUF(__global T_##SUF *e, ulong heads, ulong head_size,                    \
                             __global const T_##SUF *cs, ulong rot_dim, int is_neox) {             \
        ulong half_ = rot_dim / 2;                                                                 \
        for (ulong h = 0; h < heads; h++) {                                                        \
            ulong base = h * head_size;                                                            \
            for (ulong i = 0; i < half_; i++) {                                                    \
                ulong xi = is_neox ? i : 2 * i, yi = is_neox ? i + half_ : 2 * i + 1;              \
                acc_t c = LD_##SUF(cs, i), s = LD_##SUF(cs, half_ + i);                            \
                acc_t x = LD_##SUF(e, base + xi), y = LD_##SUF(e, base + yi);                      \
                ST_##SUF(e, base + xi, (float)(x * c - y * s));                                    \
                ST_##SUF(e, base + yi, (float)(y * c + x * s));                                    \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    __kernel void rotary_embedding_##SUF(                                                          \
        __global const long *pos, ulong pos_off, __global T_##SUF *q, ulong q_off, ulong q_row,    \
        ulong q_step, __global T_##SUF *k, ulong k_off, ulong k_row, ulong k_step,                 \
        __global const T_##SUF *cache, ulong cache_off, ulong rot_dim, ulong head_size,            \
        int is_neox) {                                                                             \
        size_t t = get_global_id(0);                                                               \
        __global const T_##SUF *cs = cache + cache_off + (ulong)pos[pos_off + t] * rot_dim;        \
        rotate_##SUF(q + q_off + t * q_step, q_row / head_size, head_size, cs, rot_dim, is_neox);  \
        rotate_##SUF(k + k_off + t * k_step, k_row / head_size, head_size, cs, rot_dim, is_neox);  \
    }

/* ---- reshape_and_cache: one work-item an element of a token ---------------------
 * key_cache [blocks, H, D/x, bs, x], value_cache [blocks, H, D, bs], dense
 * blocks kbs and vbs elements apart (a cache may be a view); kind 0
 * copies T, 1 stores fp8 e4m3fn(v / kv_scale), 2 fp8 e5m2 (saturating). */
#define RESHAPE_AND_CACHE(SUF)                                                                     \
    inline void put_##SUF(__global uchar *cache, ulong cache_off, ulong j, float v, int kind,      \
                          float kv_scale) {                                                        \
        if (kind == 0)                                                                             \
            ST_##SUF(((__global T_##SUF *)cache) + cache_off, j, v);                               \
        else if (kind == 1)                                                                        \
            cache[cache_off + j] = f32_to_e4m3fn_sat(v / kv_scale);                                \
        else                                                                                       \
            cache[cache_off + j] = f32_to_e5m2_sat(v / kv_scale);                                  \
    }                                                                                              \
    __kernel void reshape_and_cache_##SUF(                                                         \
        __global const T_##SUF *key, ulong key_off, ulong ks, __global const T_##SUF *value,       \
        ulong value_off, ulong vs, __global uchar *key_cache, ulong kc_off,                        \
        __global uchar *value_cache, ulong vc_off, __global const long *slots, ulong slots_off,    \
        ulong H, ulong D, ulong x, ulong bs, ulong kbs, ulong vbs, int kind, float kv_scale) {     \
        size_t g = get_global_id(0);                                                               \
        ulong t = g / (H * D), src = g % (H * D), hh = src / D, i = src % D;                       \
        long slot = slots[slots_off + t];                                                          \
        if (slot < 0) return;                                                                      \
        ulong blk = (ulong)slot / bs, off = (ulong)slot % bs;                                      \
        ulong kdst = blk * kbs + ((hh * (D / x) + i / x) * bs + off) * x + i % x;                  \
        ulong vdst = blk * vbs + (hh * D + i) * bs + off;                                          \
        put_##SUF(key_cache, kc_off, kdst, LD_##SUF(key, key_off + t * ks + src), kind, kv_scale); \
        put_##SUF(value_cache, vc_off, vdst, LD_##SUF(value, value_off + t * vs + src), kind,      \
                  kv_scale);                                                                       \
    }

/* ---- quantisation ------------------------------------------------------------------
 * fp8: fp8(fmax(-448, fmin(x * (1/scale), 448))); int8 static: rne(x / scale);
 * dynamic int8 per row: rne(x * (127/amax)), scale = amax/127. */
#define QUANT(SUF)                                                                                 \
    __kernel void fp8_quant_##SUF(__global uchar *out, ulong out_off, __global const T_##SUF *in,  \
                                  ulong in_off, __global const float *scale, ulong scale_off) {    \
        size_t g = get_global_id(0);                                                               \
        float inv = 1.0f / scale[scale_off];                                                       \
        float x = LD_##SUF(in, in_off + g) * inv;                                                  \
        out[out_off + g] = f32_to_e4m3fn(fmax(-448.0f, fmin(x, 448.0f)));                          \
    }                                                                                              \
    /* The dynamic form's last step: quantise with the scale fp8_finish_scale */                   \
    /* left in scratch[1], and store that scale (work-item 0), so that one */                      \
    /* command writes every output and a failure before it leaves them as */                       \
    /* they were. */                                                                               \
    __kernel void fp8_quant_dyn_##SUF(__global uchar *out, ulong out_off,                          \
                                      __global const T_##SUF *in, ulong in_off,                    \
                                      __global float *scale, ulong scale_off,                      \
                                      __global const uint *scratch) {                              \
        size_t g = get_global_id(0);                                                               \
        float s = as_float(scratch[1]);                                                            \
        float x = LD_##SUF(in, in_off + g) * (1.0f / s);                                           \
        out[out_off + g] = f32_to_e4m3fn(fmax(-448.0f, fmin(x, 448.0f)));                          \
        if (g == 0) scale[scale_off] = s;                                                          \
    }                                                                                              \
    /* amax of a chunk of elements, folded into *amax_bits (non-negative floats */                 \
    /* order as their bits). */                                                                    \
    __kernel void amax_##SUF(__global const T_##SUF *in, ulong in_off, ulong n, ulong chunk,       \
                             __global volatile uint *amax_bits) {                                  \
        size_t g = get_global_id(0);                                                               \
        ulong lo = g * chunk, hi = min(n, lo + chunk);                                             \
        float m = 0.0f;                                                                            \
        for (ulong i = lo; i < hi; i++)                                                            \
            m = fmax(m, fabs(LD_##SUF(in, in_off + i)));                                           \
        atomic_max(amax_bits, as_uint(m));                                                         \
    }                                                                                              \
    __kernel void static_int8_quant_##SUF(__global char *out, ulong out_off,                       \
                                          __global const T_##SUF *in, ulong in_off,                \
                                          __global const float *scale, ulong scale_off) {          \
        size_t g = get_global_id(0);                                                               \
        out[out_off + g] = to_int8(LD_##SUF(in, in_off + g) / scale[scale_off]);                   \
    }                                                                                              \
    __kernel void dynamic_int8_quant_##SUF(__global char *out, ulong out_off,                      \
                                           __global const T_##SUF *in, ulong in_off,               \
                                           __global float *scale, ulong scale_off, ulong h) {      \
        size_t r = get_global_id(0);                                                               \
        __global const T_##SUF *x = in + in_off + r * h;                                           \
        float amax = 0.0f;                                                                         \
        for (ulong i = 0; i < h; i++)                                                              \
            amax = fmax(amax, fabs(LD_##SUF(x, i)));                                               \
        float mult = 127.0f / amax;                                                                \
        for (ulong i = 0; i < h; i++)                                                              \
            out[out_off + r * h + i] = to_int8(LD_##SUF(x, i) * mult);                             \
        scale[scale_off + r] = amax / 127.0f;                                                      \
    }

/* scratch[1] = fmax(scale, amax / 448), the dynamic fp8 scale, from the
 * amax in scratch[0] (one work-item); the scale itself is stored by
 * fp8_quant_dyn. */
__kernel void fp8_finish_scale(__global const float *scale, ulong scale_off,
                               __global uint *scratch) {
    scratch[1] = as_uint(fmax(scale[scale_off], as_float(scratch[0]) / 448.0f));
}

#define ALL(SUF)                                                                                   \
    RMS_NORM(SUF)                                                                                  \
    FUSED_ADD_RMS_NORM(SUF)                                                                        \
    GATED(silu_and_mul, act_silu, SUF)                                                             \
    GATED(gelu_and_mul, act_gelu, SUF)                                                             \
    GATED(gelu_tanh_and_mul, act_gelu_tanh, SUF)                                                   \
    ROTATE(SUF)                                                                                    \
    RESHAPE_AND_CACHE(SUF)                                                                         \
    QUANT(SUF)

ALL(f32)
ALL(f16)
ALL(bf16)
