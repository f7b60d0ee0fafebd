/* The loops around oneDNN: bf16 <-> f32 and cutlass_scaled_mm's epilogue.
 * Each has a portable loop and an AVX2+FMA one chosen at run time; both do
 * the same IEEE operations in the same order (int32 -> f32 rounds to
 * nearest even either way, fmaf is exact-then-round either way), so results
 * are bit-identical whichever runs. The memory-bound loops go at the speed
 * of memory on any AVX2 CPU; AVX-512 would not move more bytes. */
#include "backends/cpu/onednn/onednn_internal.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_DISPATCH 1
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

static inline float epilogue_one(const opreg__mm_epilogue *e, int32_t acc, size_t n,
                                 bool bias_bf16) {
    float t = (float)acc * e->b_scales[e->per_col ? n : 0];
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
        a = _mm256_cvtepi32_ps(sum);
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
        float v = epilogue_one(e, acc_at(e, acc, i), i, bias_bf16);
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
        float v = epilogue_one(e, acc_at(e, acc, i), i, out_bf16 != NULL);
        if (out_bf16)
            out_bf16[i] = f32_to_bf16(v);
        else
            out_f32[i] = v;
    }
}
