/* The vector layer of the AVX2+FMA+F16C path: 8 float lanes. Included only
 * by simd_avx2.c, after its target pragma; simd_avx512.h offers the same
 * names, so the *_simd.h kernel bodies compile against either.
 *
 * Narrow dtypes convert exactly as common/dtype_convert.h: bf16 rounds to
 * nearest even with NaN -> 0x7FC0 (integer arithmetic), f16 through F16C. */
#ifndef OPREG_CPU_SIMD_AVX2_H
#define OPREG_CPU_SIMD_AVX2_H

#include "backends/cpu/kernels/kern_internal.h"

#include <immintrin.h>

/* Every helper is forced inline: a call would pass vectors through memory
 * and hide the constant dtype from the kernel bodies. */
#define VI static inline __attribute__((always_inline))
#include <string.h>

#define VW 8
typedef __m256 vf;

VI vf vset1(float x) {
    return _mm256_set1_ps(x);
}
VI vf vzero(void) {
    return _mm256_setzero_ps();
}
VI vf vadd(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
VI vf vsub(vf a, vf b) {
    return _mm256_sub_ps(a, b);
}
VI vf vmul(vf a, vf b) {
    return _mm256_mul_ps(a, b);
}
VI vf vdiv(vf a, vf b) {
    return _mm256_div_ps(a, b);
}
/* a * b + c */
VI vf vfma(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
/* min/max return the second operand when either is NaN (as minps). */
VI vf vmin(vf a, vf b) {
    return _mm256_min_ps(a, b);
}
VI vf vmax(vf a, vf b) {
    return _mm256_max_ps(a, b);
}
VI vf vabs(vf a) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a);
}
VI vf vnan_to_zero(vf a) {
    return _mm256_and_ps(a, _mm256_cmp_ps(a, a, _CMP_ORD_Q));
}
VI vf vrint(vf a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
VI vf vfloor(vf a) {
    return _mm256_floor_ps(a);
}
/* Lanes of a where x < 0, else of b. */
VI vf vblend_neg(vf x, vf a, vf b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}
VI vf vswap_pairs(vf a) {
    return _mm256_permute_ps(a, 0xB1);
}
/* 2^n for integral n in [-126, 127]. */
VI vf vpow2i(vf n) {
    __m256i e = _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}
/* The sum of a's lanes, halves first: lane e plus e + 4, then e plus
 * e + 2, then 0 plus 1. vhsum_each keeps this order. */
VI float vhsum(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* Lane e: vhsum of the vector at v + e * VW, e < VW, the same additions in
 * the same order, the vectors transposed as they are added. */
VI vf vhsum_each(const float *v) {
    vf h[4], q[2];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        vf a = _mm256_loadu_ps(v + 2 * j * VW), b = _mm256_loadu_ps(v + (2 * j + 1) * VW);
        h[j] =
            _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
    }
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++)
        q[j] = _mm256_add_ps(_mm256_shuffle_ps(h[2 * j], h[2 * j + 1], 0x44),
                             _mm256_shuffle_ps(h[2 * j], h[2 * j + 1], 0xEE));
    /* lane 4 * l + t now holds vector 2 * t + l's sum */
    vf r = _mm256_add_ps(_mm256_shuffle_ps(q[0], q[1], 0x88), _mm256_shuffle_ps(q[0], q[1], 0xDD));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
/* Lane t: the sum of v[t * x .. t * x + x), for x = 4, 8 or 16 (a key
 * block's slices of a token, paged attention's x). A run of 16 is two
 * vectors, added first; then the vectors at v are added in pairs of
 * neighbouring lanes, twice, within each 128-bit lane, and for runs of 8
 * the two 128-bit lanes; x = 4 ends with a permutation that puts run t in
 * lane t. */
VI vf vsum_runs(const float *v, int64_t x) {
    vf a[8];
    int64_t n = x > VW ? VW : x;
    for (int64_t i = 0; i < n; i++)
        a[i] = x > VW ? _mm256_add_ps(_mm256_loadu_ps(v + 2 * i * VW),
                                      _mm256_loadu_ps(v + (2 * i + 1) * VW))
                      : _mm256_loadu_ps(v + i * VW);
    for (int level = 0; level < 2; level++, n /= 2)
        for (int64_t i = 0; i < n / 2; i++)
            a[i] = _mm256_add_ps(_mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0x88),
                                 _mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0xDD));
    /* lane 4 * l + m of a[i]: run l of input vector 4 * i + m */
    if (n == 2)
        return _mm256_add_ps(_mm256_permute2f128_ps(a[0], a[1], 0x20),
                             _mm256_permute2f128_ps(a[0], a[1], 0x31));
    return _mm256_permutevar8x32_ps(a[0], _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
/* dst[t] for t < n (a multiple of VW): the sum of run t of v, runs of x
 * as vsum_runs takes them. Here x stays a variable: with it constant in
 * each loop (as the AVX-512 header has it) paged attention measured
 * slower on AVX2 (2 x 512 and 16 x 2048 tokens). */
VI void vsum_runs_n(float *dst, const float *v, int64_t x, int64_t n) {
    for (int64_t t = 0; t < n; t += VW)
        _mm256_storeu_ps(dst + t, vsum_runs(v + t * x, x));
}
VI float vhmax(vf a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

VI __m128i bf16_pack(vf v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    r = _mm256_srli_epi32(r, 16);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), _mm256_castps_si256(nan));
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* VW elements of dtype dt at p, as floats. */
VI vf vload(int dt, const void *p) {
    if (dt == OPREG_DTYPE_F32) return _mm256_loadu_ps((const float *)p);
    if (dt == OPREG_DTYPE_BF16)
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* v as VW bf16 or f16 values. */
VI __m128i narrow(int dt, vf v) {
    if (dt == OPREG_DTYPE_BF16) return bf16_pack(v);
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

VI void vstore(int dt, void *p, vf v) {
    if (dt == OPREG_DTYPE_F32)
        _mm256_storeu_ps((float *)p, v);
    else
        _mm_storeu_si128((__m128i *)p, narrow(dt, v));
}

/* Streaming (non-temporal) stores: a full vector to p aligned to VW
 * elements; 4 * VW int8 values (lanes holding integers in [-128, 127]) to
 * p aligned to 32 bytes. vfence() orders them before a thread's work is
 * handed back. */
VI void vstream(int dt, void *p, vf v) {
    if (dt == OPREG_DTYPE_F32)
        _mm256_stream_ps((float *)p, v);
    else
        _mm_stream_si128((__m128i *)p, narrow(dt, v));
}

VI void vstream_i8x4(int8_t *p, vf a, vf b, vf c, vf d) {
    /* packs work per 128-bit lane: [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7] */
    __m256i ab = _mm256_packs_epi32(_mm256_cvttps_epi32(a), _mm256_cvttps_epi32(b));
    __m256i cd = _mm256_packs_epi32(_mm256_cvttps_epi32(c), _mm256_cvttps_epi32(d));
    __m256i r = _mm256_packs_epi16(ab, cd);
    r = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_stream_si256((__m256i *)p, r);
}

VI void vfence(void) {
    _mm_sfence();
}

/* n < VW elements; the other lanes read as 0. A bounce buffer: AVX2 has no
 * 16-bit masked loads, and tails are rare. */
VI vf vload_n(int dt, const void *p, int64_t n) {
    unsigned char buf[32] = { 0 };
    memcpy(buf, p, (size_t)n * opreg__cpu_es(dt));
    return vload(dt, buf);
}

VI void vstore_n(int dt, void *p, vf v, int64_t n) {
    unsigned char buf[32];
    vstore(dt, buf, v);
    memcpy(p, buf, (size_t)n * opreg__cpu_es(dt));
}

/* vstore_n, rounded as opreg__cpu_st (which vstore_n already is here). */
VI void vstore_exact_n(int dt, void *p, vf v, int64_t n) {
    vstore_n(dt, p, v, n);
}

/* (T)v in float. bf16 stays in 32-bit lanes: round the low half away
 * instead of packing and widening again. */
VI vf vround_dt(int dt, vf v) {
    if (dt == OPREG_DTYPE_F32) return v;
    if (dt == OPREG_DTYPE_BF16) {
        __m256i u = _mm256_castps_si256(v);
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
        __m256 q = _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xFFFF0000u)));
        return _mm256_blendv_ps(q, _mm256_set1_ps(NAN), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* Bytes from int32 lanes holding values that fit (the caller clamped). */
VI void store_bytes(void *p, __m256i v, int64_t n) {
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    __m128i b = _mm_packus_epi16(_mm_and_si128(w, _mm_set1_epi16(0xFF)), w);
    if (n == VW)
        _mm_storel_epi64((__m128i *)p, b);
    else
        memcpy(p, &b, (size_t)n);
}

/* v holds integers in [-128, 127]. */
VI void vstore_i8(int8_t *p, vf v, int64_t n) {
    store_bytes(p, _mm256_cvttps_epi32(v), n);
}

/* e4m3fn codes of v, finite and within [-448, 448]: normal values round the
 * mantissa to 3 bits in integer arithmetic (a carry moves into the
 * exponent); below 2^-6 the step is 2^-9, so rint(|v| * 512) is the code. */
VI void vstore_e4m3(uint8_t *p, vf v, int64_t n) {
    __m256 a = vabs(v);
    __m256i u = _mm256_castps_si256(a);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 20), _mm256_set1_epi32(1));
    __m256i nrm = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFFF)));
    __m256i sub = _mm256_cvttps_epi32(vrint(_mm256_mul_ps(a, _mm256_set1_ps(512.0f))));
    __m256 tiny = _mm256_cmp_ps(a, _mm256_set1_ps(0.015625f), _CMP_LT_OQ);
    __m256i sign =
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 24), _mm256_set1_epi32(0x80));
    nrm = _mm256_sub_epi32(_mm256_srli_epi32(nrm, 20), _mm256_set1_epi32(120 << 3));
    nrm = _mm256_blendv_epi8(nrm, sub, _mm256_castps_si256(tiny));
    store_bytes(p, _mm256_or_si256(nrm, sign), n);
}

/* ---- the GEMV helpers (gemv_simd.h) -------------------------------------- */

/* Input rows one GEMV tile holds in registers: 2 rows of 4 columns are 8
 * accumulators, with the 4 weight vectors and an input vector within the
 * 16 registers. */
#define VGEMV_ROWS 2

typedef __m256i vint;

/* VW 32-bit lanes of raw bits at p (2 * VW bf16 values as pairs). */
VI vf vload_bits(const void *p) {
    return _mm256_loadu_ps((const float *)p);
}
/* @p bytes < 4 * VW bytes at p; the rest of the lanes are zero. */
VI vf vload_bits_n(const void *p, int64_t bytes) {
    unsigned char buf[32] = { 0 };
    memcpy(buf, p, (size_t)bytes);
    return _mm256_loadu_ps((const float *)buf);
}

/* acc + x.even * w.even + x.odd * w.odd, the lanes of x and w being bf16
 * pairs: each half widens exactly (a shift or a mask) into an FMA. */
VI vf vdot_bf16x2(vf acc, vf x, vf w) {
    const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256i xi = _mm256_castps_si256(x), wi = _mm256_castps_si256(w);
    acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(xi, 16)),
                          _mm256_castsi256_ps(_mm256_slli_epi32(wi, 16)), acc);
    return _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(xi, hi)),
                           _mm256_castsi256_ps(_mm256_and_si256(wi, hi)), acc);
}

VI vint vizero(void) {
    return _mm256_setzero_si256();
}
/* 2 * VW int8 values at p as int16 lanes; _n: the first n < 2 * VW, zeros after. */
VI vint vwiden_i8(const int8_t *p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}
VI vint vwiden_i8_n(const int8_t *p, int64_t n) {
    unsigned char buf[16] = { 0 };
    memcpy(buf, p, (size_t)n);
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)buf));
}
/* acc + the pairwise products of int16 lanes, in int32 lanes (exact for
 * int8 values: |x * w| <= 2^14). */
VI vint vdot_i16(vint acc, vint x, vint w) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w));
}
VI int32_t vihsum(vint a) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* e4m3fn codes as f16 bits, times 2^8 in float: exact for every code, the
 * f16 exponent field being 8 above e4m3's bias and its subnormals below
 * e4m3's. The codes 0x7F and 0xFF are NaN. */
VI vf e4m3_widen(__m128i c) {
    __m128i mag = _mm_and_si128(c, _mm_set1_epi16(0x7F));
    __m128i h = _mm_or_si128(_mm_slli_epi16(mag, 7),
                             _mm_slli_epi16(_mm_and_si128(c, _mm_set1_epi16(0x80)), 8));
    __m256i nan = _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F)));
    vf f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    return _mm256_blendv_ps(f, _mm256_set1_ps(NAN), _mm256_castsi256_ps(nan));
}
/* The NaN codes among 4 * VW codes at p (_n: the first n < 4 * VW): the
 * low 7 bits' largest kept a byte at a time in seen; vseen_nan: whether
 * any was 0x7F. */
typedef __m256i vseen;
VI vseen vseen_zero(void) {
    return _mm256_setzero_si256();
}
VI vseen vseen_add(vseen s, const uint8_t *p) {
    __m256i c = _mm256_loadu_si256((const __m256i *)p);
    return _mm256_max_epu8(s, _mm256_and_si256(c, _mm256_set1_epi8(0x7F)));
}
VI vseen vseen_add_n(vseen s, const uint8_t *p, int64_t n) {
    unsigned char buf[32] = { 0 };
    memcpy(buf, p, (size_t)n);
    return vseen_add(s, buf);
}
VI bool vseen_nan(vseen s) {
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(s, _mm256_set1_epi8(0x7F))) != 0;
}
/* The GEMVs' weights: 2 * VW e4m3fn codes at p (the first n, zeros after,
 * when n < 2 * VW) as floats of a 256th of their value into *lo and *hi,
 * in four integer steps for both halves and F16C: sign-extended to 16 bits
 * and shifted left by 7, a code S.EEEE.MMM has its sign on bit 15, EEEE
 * on bits 13..10 and MMM on 9..7; with bit 14 (a copy of the sign)
 * cleared that is the f16 of value / 2^8 for every code, the subnormals
 * included (f16's exponent bias is 8 above e4m3's), and VCVTPH2PS widens
 * it exactly. The NaN codes (0x7F, 0xFF) come out as +-1.875, finite: the
 * caller finds them in the codes (gemv_seen in gemv_simd.h). */
VI void vwiden_e4m3_256(const uint8_t *p, int64_t n, vf *lo, vf *hi) {
    __m128i c;
    if (n >= 2 * VW) {
        c = _mm_loadu_si128((const __m128i *)p);
    } else {
        unsigned char buf[16] = { 0 };
        memcpy(buf, p, (size_t)n);
        c = _mm_loadu_si128((const __m128i *)buf);
    }
    __m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(c), 7),
                                 _mm256_set1_epi16((short)0xBF80));
    *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}
/* VW e4m3fn codes at p as floats; _n: the first n < VW, zeros after. */
VI vf vload_e4m3(const uint8_t *p) {
    return e4m3_widen(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p)));
}
VI vf vload_e4m3_n(const uint8_t *p, int64_t n) {
    unsigned char buf[8] = { 0 };
    memcpy(buf, p, (size_t)n);
    return vload_e4m3(buf);
}

/* VW e5m2 codes at p as floats, exactly (a code is the high byte of the
 * f16 of its value); _n: the first n < VW, zeros after. */
VI vf vload_e5m2(const uint8_t *p) {
    return _mm256_cvtph_ps(
        _mm_slli_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p)), 8));
}
VI vf vload_e5m2_n(const uint8_t *p, int64_t n) {
    unsigned char buf[8] = { 0 };
    memcpy(buf, p, (size_t)n);
    return vload_e5m2(buf);
}

#endif
