/* The loops around oneDNN: bf16 <-> f32 and cutlass_scaled_mm's epilogue.
 * Each has a portable loop and an AVX2+FMA one chosen at run time; both do
 * the same IEEE operations in the same order (int32 -> f32 rounds to
 * nearest even either way, fmaf is exact-then-round either way), so results
 * are bit-identical whichever runs. The memory-bound loops go at the speed
 * of memory on any AVX2 CPU; AVX-512 would not move more bytes. */
#include "backends/cpu/onednn/onednn_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_DISPATCH 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; NaN becomes 0x7FC0, as c10::BFloat16 does. */
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* The accumulator of column n: one int32, or the sum of the two halves of
 * a split GEMM (scaled_mm.c). The sum is exact whenever the true dot
 * product fits in int32; beyond that it wraps, like the AVX2 lane add and
 * like a single int32 GEMM would (unsigned, so that it is not UB). */
static inline int32_t acc_at(const opreg__mm_epilogue *e, const int32_t *acc, size_t n) {
    return e->split ? (int32_t)((uint32_t)acc[n] + (uint32_t)acc[e->split + n]) : acc[n];
}

/* The sum of column n as a float: int32 sums round to nearest even, f32
 * sums are taken as they are. */
static inline float sum_at(const opreg__mm_epilogue *e, const int32_t *acc, size_t n) {
    float f;
    if (!e->acc_f32) return (float)acc_at(e, acc, n);
    memcpy(&f, acc + n, sizeof f);
    return f;
}

/* e4m3fn to f32: the code's exponent and mantissa placed as an f32's, with
 * the subnormals' value computed (m * 2^-9, exact). */
static inline float e4m3_to_f32(uint8_t c) {
    uint32_t e = (c >> 3) & 15u, m = c & 7u, u;
    float f;
    if (e == 15u && m == 7u) return NAN;
    if (e == 0)
        f = (float)m * 0.001953125f;
    else {
        u = ((e + 120u) << 23) | (m << 20);
        memcpy(&f, &u, sizeof f);
    }
    return (c & 0x80u) ? -f : f;
}

static inline float epilogue_one(const opreg__mm_epilogue *e, float acc, size_t n, bool bias_bf16) {
    float t = acc * e->b_scales[e->per_col ? n : 0];
    float b;
    if (!e->bias) return e->a_scale * t;
    b = bias_bf16 ? bf16_to_f32(((const uint16_t *)e->bias)[n]) : ((const float *)e->bias)[n];
    return fmaf(e->a_scale, t, b);
}

#ifdef HAVE_X86_DISPATCH
static bool have_avx2_fma(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

__attribute__((target("avx2,fma"))) static inline __m256 load_bf16x8(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* Eight floats to bf16 bits in the low 16 of each 32-bit lane. */
__attribute__((target("avx2,fma"))) static inline __m256i round_bf16x8(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
}

/* Store eight rounded values (lanes of round_bf16x8) as 8 bf16. */
__attribute__((target("avx2,fma"))) static inline void store_bf16x8(uint16_t *p, __m256i r) {
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(packed));
}

/* Eight e4m3fn codes as floats: the codes' bits placed as f16 bits are
 * 2^-8 times their value, subnormals included (F16C widens exactly). */
__attribute__((target("avx2,fma,f16c"))) static inline __m256 load_e4m3x8(const uint8_t *p) {
    __m128i c = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p));
    __m128i mag = _mm_and_si128(c, _mm_set1_epi16(0x7F));
    __m128i h = _mm_or_si128(_mm_slli_epi16(mag, 7),
                             _mm_slli_epi16(_mm_and_si128(c, _mm_set1_epi16(0x80)), 8));
    __m256i nan = _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F)));
    __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    return _mm256_blendv_ps(f, _mm256_set1_ps(NAN), _mm256_castsi256_ps(nan));
}

__attribute__((target("avx2,fma,f16c"))) static void
e4m3_to_f32_avx2(float *dst, const uint8_t *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load_e4m3x8(src + i));
    for (; i < n; i++)
        dst[i] = e4m3_to_f32(src[i]);
}

/* The floats of e4m3fn codes have at most 4 significant bits: their bf16
 * is their top half, with no rounding (a NaN keeps a NaN's bits). */
__attribute__((target("avx2,fma,f16c"))) static void
e4m3_to_bf16_avx2(uint16_t *dst, const uint8_t *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        store_bf16x8(dst + i, _mm256_srli_epi32(_mm256_castps_si256(load_e4m3x8(src + i)), 16));
    for (; i < n; i++)
        dst[i] = f32_to_bf16(e4m3_to_f32(src[i]));
}

__attribute__((target("avx2,fma"))) static void bf16_to_f32_avx2(float *dst, const uint16_t *src,
                                                                 size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load_bf16x8(src + i));
    for (; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

__attribute__((target("avx2,fma"))) static void f32_to_bf16_avx2(uint16_t *dst, const float *src,
                                                                 size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        store_bf16x8(dst + i, round_bf16x8(_mm256_loadu_ps(src + i)));
    for (; i < n; i++)
        dst[i] = f32_to_bf16(src[i]);
}

__attribute__((target("avx2,fma"))) static void epilogue_avx2(const opreg__mm_epilogue *e,
                                                              const int32_t *acc, float *out_f32,
                                                              uint16_t *out_bf16, size_t n) {
    const bool bias_bf16 = out_bf16 != NULL;
    const __m256 as = _mm256_set1_ps(e->a_scale);
    const __m256 bs0 = _mm256_set1_ps(e->b_scales[0]);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i sum = _mm256_loadu_si256((const __m256i *)(acc + i));
        __m256 a;
        if (e->split)
            sum = _mm256_add_epi32(sum, _mm256_loadu_si256((const __m256i *)(acc + e->split + i)));
        a = e->acc_f32 ? _mm256_castsi256_ps(sum) : _mm256_cvtepi32_ps(sum);
        __m256 t = _mm256_mul_ps(a, e->per_col ? _mm256_loadu_ps(e->b_scales + i) : bs0);
        __m256 v;
        if (!e->bias)
            v = _mm256_mul_ps(as, t);
        else if (bias_bf16)
            v = _mm256_fmadd_ps(as, t, load_bf16x8((const uint16_t *)e->bias + i));
        else
            v = _mm256_fmadd_ps(as, t, _mm256_loadu_ps((const float *)e->bias + i));
        if (out_bf16)
            store_bf16x8(out_bf16 + i, round_bf16x8(v));
        else
            _mm256_storeu_ps(out_f32 + i, v);
    }
    for (; i < n; i++) {
        float v = epilogue_one(e, sum_at(e, acc, i), i, bias_bf16);
        if (out_bf16)
            out_bf16[i] = f32_to_bf16(v);
        else
            out_f32[i] = v;
    }
}
#endif

void opreg__bf16_to_f32_n(float *dst, const uint16_t *src, size_t n) {
#ifdef HAVE_X86_DISPATCH
    if (have_avx2_fma()) {
        bf16_to_f32_avx2(dst, src, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

void opreg__f32_to_bf16_n(uint16_t *dst, const float *src, size_t n) {
#ifdef HAVE_X86_DISPATCH
    if (have_avx2_fma()) {
        f32_to_bf16_avx2(dst, src, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_bf16(src[i]);
}

/* F16C from cpuid (clang 14's __builtin_cpu_supports has no "f16c"), read
 * once: in a virtual machine cpuid traps to the hypervisor, tens of
 * microseconds a time. */
static bool have_f16c(void) {
#ifdef HAVE_X86_DISPATCH
    static _Atomic int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v < 0) {
        unsigned a, b, c, d;
        v = have_avx2_fma() && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v;
#else
    return false;
#endif
}

void opreg__e4m3_to_bf16_n(uint16_t *dst, const uint8_t *src, size_t n) {
#ifdef HAVE_X86_DISPATCH
    if (have_f16c()) {
        e4m3_to_bf16_avx2(dst, src, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_bf16(e4m3_to_f32(src[i]));
}

void opreg__e4m3_to_f32_n(float *dst, const uint8_t *src, size_t n) {
#ifdef HAVE_X86_DISPATCH
    if (have_f16c()) {
        e4m3_to_f32_avx2(dst, src, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = e4m3_to_f32(src[i]);
}

void opreg__mm_epilogue_row(const opreg__mm_epilogue *e, const int32_t *acc, float *out_f32,
                            uint16_t *out_bf16, size_t n) {
#ifdef HAVE_X86_DISPATCH
    if (have_avx2_fma()) {
        epilogue_avx2(e, acc, out_f32, out_bf16, n);
        return;
    }
#endif
    /* acc may alias out_f32: each element is read before it is written. */
    for (size_t i = 0; i < n; i++) {
        float v = epilogue_one(e, sum_at(e, acc, i), i, out_bf16 != NULL);
        if (out_bf16)
            out_bf16[i] = f32_to_bf16(v);
        else
            out_f32[i] = v;
    }
}
