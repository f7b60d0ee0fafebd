/* The vector layer of the AVX-512 paths: 16 float lanes, masked tails.
 * Included by simd_avx512.c and simd_avx512bf16.c after their target
 * pragmas; the latter defines OPREG__SIMD_BF16 to round to bf16 with
 * VCVTNEPS2BF16. That instruction rounds to nearest even like
 * common/dtype_convert.h, but flushes f32 subnormals (|x| < 2^-126) to zero
 * and keeps a NaN's sign and payload instead of giving 0x7FC0. The plain
 * AVX-512 path rounds in integer arithmetic and matches exactly. */
#ifndef OPREG_CPU_SIMD_AVX512_H
#define OPREG_CPU_SIMD_AVX512_H

#include "backends/cpu/kernels/kern_internal.h"

#include <immintrin.h>

/* Every helper is forced inline: a call would pass vectors through memory
 * and hide the constant dtype from the kernel bodies. */
#define VI static inline __attribute__((always_inline))

#define VW 16
typedef __m512 vf;

VI vf vset1(float x) {
    return _mm512_set1_ps(x);
}
VI vf vzero(void) {
    return _mm512_setzero_ps();
}
VI vf vadd(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
VI vf vsub(vf a, vf b) {
    return _mm512_sub_ps(a, b);
}
VI vf vmul(vf a, vf b) {
    return _mm512_mul_ps(a, b);
}
VI vf vdiv(vf a, vf b) {
    return _mm512_div_ps(a, b);
}
VI vf vfma(vf a, vf b, vf c) {
    return _mm512_fmadd_ps(a, b, c);
}
VI vf vmin(vf a, vf b) {
    return _mm512_min_ps(a, b);
}
VI vf vmax(vf a, vf b) {
    return _mm512_max_ps(a, b);
}
VI vf vabs(vf a) {
    return _mm512_abs_ps(a);
}
VI vf vnan_to_zero(vf a) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, a, _CMP_ORD_Q), a);
}
VI vf vrint(vf a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
VI vf vblend_neg(vf x, vf a, vf b) {
    return _mm512_mask_mov_ps(b, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), a);
}
VI vf vswap_pairs(vf a) {
    return _mm512_permute_ps(a, 0xB1);
}
VI vf vpow2i(vf n) {
    __m512i e = _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}
/* Both AVX-512 paths: gemv_simd.h's fp8 table kernels (AVX512-VBMI, which
 * gemv.c checks at run time) compile with them. */
#define OPREG__SIMD_AVX512 1

/* t - floor(t), and p * 2^floor(t) (VREDUCEPS, VSCALEFPS): exp's range
 * reduction in two instructions, with 0 and inf for |t| beyond the float
 * range instead of a clamp. simd_math.h uses them when this is defined. */
#define OPREG__SIMD_SCALEF 1
VI vf vfrac_floor(vf t) {
    return _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
VI vf vscale2(vf p, vf t) {
    return _mm512_scalef_ps(p, t);
}
/* The sum of a's lanes, halves first: lane e plus e + 8, then e plus
 * e + 4, e plus e + 2, 0 plus 1 (the order of GCC's
 * _mm512_reduce_add_ps, written out so that no compiler changes it).
 * vhsum_each keeps this order. */
VI float vhsum(vf a) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* Lane e: vhsum of the vector at v + e * VW, e < VW, the same additions in
 * the same order, the vectors transposed as they are added. */
VI vf vhsum_each(const float *v) {
    vf h[8], q[4], o[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        vf a = _mm512_loadu_ps(v + 2 * j * VW), b = _mm512_loadu_ps(v + (2 * j + 1) * VW);
        h[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        q[j] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * j], h[2 * j + 1], 0x88),
                             _mm512_shuffle_f32x4(h[2 * j], h[2 * j + 1], 0xDD));
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++)
        o[j] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * j], q[2 * j + 1], 0x44),
                             _mm512_shuffle_ps(q[2 * j], q[2 * j + 1], 0xEE));
    /* lane 4 * l + t now holds vector 4 * t + l's sum */
    vf r = _mm512_add_ps(_mm512_shuffle_ps(o[0], o[1], 0x88), _mm512_shuffle_ps(o[0], o[1], 0xDD));
    return _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}
/* Lane t: the sum of v[t * x .. t * x + x), for x = 4, 8 or 16 (a key
 * block's slices of a token, paged attention's x). The x vectors at v are
 * added in pairs of neighbouring lanes, twice, within each 128-bit lane,
 * then in pairs of 128-bit lanes until each lane holds a run; a final
 * permutation puts run t in lane t (x = 16 leaves them there already). */
VI vf vsum_runs(const float *v, int64_t x) {
    vf a[16];
    int64_t n = x;
    for (int64_t i = 0; i < n; i++)
        a[i] = _mm512_loadu_ps(v + i * VW);
    for (int level = 0; level < 2; level++, n /= 2)
        for (int64_t i = 0; i < n / 2; i++)
            a[i] = _mm512_add_ps(_mm512_shuffle_ps(a[2 * i], a[2 * i + 1], 0x88),
                                 _mm512_shuffle_ps(a[2 * i], a[2 * i + 1], 0xDD));
    /* lane 4 * l + m of a[i]: run l of input vector 4 * i + m */
    for (; n > 1; n /= 2)
        for (int64_t i = 0; i < n / 2; i++)
            a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
                                 _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xDD));
    if (x == 4)
        return _mm512_permutexvar_ps(
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), a[0]);
    if (x == 8)
        return _mm512_permutexvar_ps(
            _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), a[0]);
    return a[0];
}
/* dst[t] for t < n (a multiple of VW): the sum of run t of v, runs of x
 * as vsum_runs takes them. One loop for each x, so that vsum_runs sees a
 * constant and keeps its x vectors in registers. */
VI void vsum_runs_n(float *dst, const float *v, int64_t x, int64_t n) {
    if (x == 4)
        for (int64_t t = 0; t < n; t += VW)
            _mm512_storeu_ps(dst + t, vsum_runs(v + t * 4, 4));
    else if (x == 8)
        for (int64_t t = 0; t < n; t += VW)
            _mm512_storeu_ps(dst + t, vsum_runs(v + t * 8, 8));
    else
        for (int64_t t = 0; t < n; t += VW)
            _mm512_storeu_ps(dst + t, vsum_runs(v + t * 16, 16));
}
VI float vhmax(vf a) {
    return _mm512_reduce_max_ps(a);
}

VI __mmask16 tail_mask(int64_t n) {
    return (__mmask16)((1u << n) - 1u);
}

/* bf16 rounded in integer arithmetic, exactly as common/dtype_convert.h. */
VI __m256i bf16_pack_exact(vf v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_set1_epi32(0x7FC0));
    return _mm512_cvtepi32_epi16(r);
}

VI __m256i bf16_pack(vf v) {
#ifdef OPREG__SIMD_BF16
    return (__m256i)_mm512_cvtneps_pbh(v);
#else
    return bf16_pack_exact(v);
#endif
}

VI __m256i f16_pack(vf v) {
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* bf16 words 0..15 of h into the high halves of 32-bit lanes, zeros below:
 * one word permute (VPERMW) instead of a widening move and a shift. */
VI __m512i bf16_spread(__m512i h) {
    const __m512i idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0,
                                         6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    return _mm512_maskz_permutexvar_epi16((__mmask32)0xAAAAAAAAu, idx, h);
}

VI vf widen(int dt, __m256i h) {
    if (dt == OPREG_DTYPE_BF16) return _mm512_castsi512_ps(bf16_spread(_mm512_castsi256_si512(h)));
    return _mm512_cvtph_ps(h);
}

VI vf vload(int dt, const void *p) {
    if (dt == OPREG_DTYPE_F32) return _mm512_loadu_ps(p);
    return widen(dt, _mm256_loadu_si256((const __m256i *)p));
}

VI vf vload_n(int dt, const void *p, int64_t n) {
    if (dt == OPREG_DTYPE_F32) return _mm512_maskz_loadu_ps(tail_mask(n), p);
    return widen(dt, _mm256_maskz_loadu_epi16(tail_mask(n), p));
}

VI __m256i narrow(int dt, vf v) {
    return dt == OPREG_DTYPE_BF16 ? bf16_pack(v) : f16_pack(v);
}

VI void vstore(int dt, void *p, vf v) {
    if (dt == OPREG_DTYPE_F32)
        _mm512_storeu_ps(p, v);
    else
        _mm256_storeu_si256((__m256i *)p, narrow(dt, v));
}

VI void vstore_n(int dt, void *p, vf v, int64_t n) {
    if (dt == OPREG_DTYPE_F32)
        _mm512_mask_storeu_ps(p, tail_mask(n), v);
    else
        _mm256_mask_storeu_epi16(p, tail_mask(n), narrow(dt, v));
}

/* vstore_n rounding bf16 as opreg__cpu_st does on every path (for kernels
 * whose results must not depend on which of their loops produced them). */
VI void vstore_exact_n(int dt, void *p, vf v, int64_t n) {
    if (dt == OPREG_DTYPE_BF16)
        _mm256_mask_storeu_epi16(p, tail_mask(n), bf16_pack_exact(v));
    else
        vstore_n(dt, p, v, n);
}

/* Streaming (non-temporal) stores: a full vector to p aligned to VW
 * elements; 4 * VW int8 values (lanes holding integers in [-128, 127]) to
 * p aligned to 64 bytes. vfence() orders them before a thread's work is
 * handed back. */
VI void vstream(int dt, void *p, vf v) {
    if (dt == OPREG_DTYPE_F32)
        _mm512_stream_ps(p, v);
    else
        _mm256_stream_si256((__m256i *)p, narrow(dt, v));
}

VI void vstream_i8x4(int8_t *p, vf a, vf b, vf c, vf d) {
    __m512i r = _mm512_castsi128_si512(_mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(a)));
    r = _mm512_inserti32x4(r, _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(b)), 1);
    r = _mm512_inserti32x4(r, _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(c)), 2);
    r = _mm512_inserti32x4(r, _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(d)), 3);
    _mm512_stream_si512((__m512i *)p, r);
}

VI void vfence(void) {
    _mm_sfence();
}

VI vf vround_dt(int dt, vf v) {
    if (dt == OPREG_DTYPE_F32) return v;
#ifndef OPREG__SIMD_BF16
    if (dt == OPREG_DTYPE_BF16) {
        /* without VCVTNEPS2BF16: round the low half away in place, as
         * bf16_pack does, instead of packing and widening again */
        __m512i u = _mm512_castps_si512(v);
        __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
        r = _mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u));
        __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FC00000)));
    }
#endif
    return widen(dt, narrow(dt, v));
}

VI void vstore_i8(int8_t *p, vf v, int64_t n) {
    _mm512_mask_cvtsepi32_storeu_epi8(p, tail_mask(n), _mm512_cvttps_epi32(v));
}

/* As simd_avx2.h: integer rounding for normals, rint(|v| * 512) below 2^-6. */
VI void vstore_e4m3(uint8_t *p, vf v, int64_t n) {
    __m512 a = vabs(v);
    __m512i u = _mm512_castps_si512(a);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 20), _mm512_set1_epi32(1));
    __m512i nrm = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFFF)));
    __m512i sub = _mm512_cvttps_epi32(vrint(_mm512_mul_ps(a, _mm512_set1_ps(512.0f))));
    __mmask16 tiny = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.015625f), _CMP_LT_OQ);
    __m512i sign =
        _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(v), 24), _mm512_set1_epi32(0x80));
    nrm = _mm512_sub_epi32(_mm512_srli_epi32(nrm, 20), _mm512_set1_epi32(120 << 3));
    nrm = _mm512_mask_mov_epi32(nrm, tiny, sub);
    _mm512_mask_cvtepi32_storeu_epi8(p, tail_mask(n), _mm512_or_si512(nrm, sign));
}

/* ---- the GEMV helpers (gemv_simd.h) -------------------------------------- */

/* Input rows one GEMV tile holds in registers: 4 rows of 4 columns are 16
 * accumulators, with room for the 4 weight vectors and one input vector
 * in the 32 registers. */
#define VGEMV_ROWS 4

typedef __m512i vint;

/* VW 32-bit lanes of raw bits at p (2 * VW bf16 values as pairs). */
VI vf vload_bits(const void *p) {
    return _mm512_loadu_ps(p);
}
/* @p bytes < 4 * VW bytes at p; the rest of the lanes are zero. */
VI vf vload_bits_n(const void *p, int64_t bytes) {
    return _mm512_castsi512_ps(_mm512_maskz_loadu_epi8((__mmask64)((1ull << bytes) - 1u), p));
}

/* acc + x.even * w.even + x.odd * w.odd, the lanes of x and w being bf16
 * pairs. With AVX512-BF16 one VDPBF16PS: its products are exact, but it
 * rounds each of the two additions to nearest even, reads bf16 subnormals
 * as zero and flushes subnormal results (whatever MXCSR says). Without it,
 * each half widens exactly (a shift or a mask) into an FMA. */
VI vf vdot_bf16x2(vf acc, vf x, vf w) {
#ifdef OPREG__SIMD_BF16
    return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
#else
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512i xi = _mm512_castps_si512(x), wi = _mm512_castps_si512(w);
    acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(xi, 16)),
                          _mm512_castsi512_ps(_mm512_slli_epi32(wi, 16)), acc);
    return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(xi, hi)),
                           _mm512_castsi512_ps(_mm512_and_si512(wi, hi)), acc);
#endif
}

VI vint vizero(void) {
    return _mm512_setzero_si512();
}
/* 2 * VW int8 values at p as int16 lanes; _n: the first n < 2 * VW, zeros after. */
VI vint vwiden_i8(const int8_t *p) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
}
VI vint vwiden_i8_n(const int8_t *p, int64_t n) {
    return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8((__mmask32)((1ull << n) - 1u), p));
}
/* acc + the pairwise products of int16 lanes, in int32 lanes (exact for
 * int8 values: |x * w| <= 2^14). */
VI vint vdot_i16(vint acc, vint x, vint w) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(x, w));
}
VI int32_t vihsum(vint a) {
    return _mm512_reduce_add_epi32(a);
}

/* e4m3fn codes as f16 bits, times 2^8 in float: exact for every code, the
 * f16 exponent field being 8 above e4m3's bias and its subnormals below
 * e4m3's. The codes 0x7F and 0xFF are NaN. */
VI vf e4m3_widen(__m256i c) {
    __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x7F)), 7),
                                _mm256_slli_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x80)), 8));
    __mmask16 nan = _mm256_cmpeq_epi16_mask(_mm256_and_si256(c, _mm256_set1_epi16(0x7F)),
                                            _mm256_set1_epi16(0x7F));
    vf f = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
    return _mm512_mask_mov_ps(f, nan, _mm512_set1_ps(NAN));
}
/* The NaN codes among 4 * VW codes at p (_n: the first n < 4 * VW): the
 * low 7 bits' largest kept a byte at a time in seen; vseen_nan: whether
 * any was 0x7F. */
typedef __m512i vseen;
VI vseen vseen_zero(void) {
    return _mm512_setzero_si512();
}
VI vseen vseen_add(vseen s, const uint8_t *p) {
    return _mm512_max_epu8(s, _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi8(0x7F)));
}
VI vseen vseen_add_n(vseen s, const uint8_t *p, int64_t n) {
    __m512i c = _mm512_maskz_loadu_epi8((__mmask64)((1ull << n) - 1u), p);
    return _mm512_max_epu8(s, _mm512_and_si512(c, _mm512_set1_epi8(0x7F)));
}
VI bool vseen_nan(vseen s) {
    return _mm512_cmpeq_epi8_mask(s, _mm512_set1_epi8(0x7F)) != 0;
}
/* The GEMVs' weights: 2 * VW e4m3fn codes at p (the first n, zeros after,
 * when n < 2 * VW) as floats of a 256th of their value into *lo and *hi,
 * see simd_avx2.h; the integer steps on one zmm for both halves. */
VI void vwiden_e4m3_256(const uint8_t *p, int64_t n, vf *lo, vf *hi) {
    __m256i c = n >= 2 * VW ? _mm256_loadu_si256((const __m256i *)p)
                            : _mm256_maskz_loadu_epi8((__mmask32)((1ull << n) - 1u), p);
    __m512i h = _mm512_and_si512(_mm512_slli_epi16(_mm512_cvtepi8_epi16(c), 7),
                                 _mm512_set1_epi16((short)0xBF80));
    *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}
/* VW e4m3fn codes at p as floats; _n: the first n < VW, zeros after. */
VI vf vload_e4m3(const uint8_t *p) {
    return e4m3_widen(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)));
}
VI vf vload_e4m3_n(const uint8_t *p, int64_t n) {
    return e4m3_widen(_mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(tail_mask(n), p)));
}

/* VW e5m2 codes at p as floats, exactly (a code is the high byte of the
 * f16 of its value); _n: the first n < VW, zeros after. */
VI vf vload_e5m2(const uint8_t *p) {
    return _mm512_cvtph_ps(
        _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)), 8));
}
VI vf vload_e5m2_n(const uint8_t *p, int64_t n) {
    return _mm512_cvtph_ps(
        _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(tail_mask(n), p)), 8));
}

#endif
