/* Decode-sized GEMMs on the vector layer: a few input rows against every
 * weight row, for _C::linear (f32, f16, bf16) and _C::cutlass_scaled_mm
 * (int8, fp8 e4m3fn). Each weight row is a dot product along k with each
 * input row, so one pass over the weights, in order, does the whole call:
 * the weights stream from memory once and the few input rows stay in the
 * caches.
 *
 * A tile is up to VGEMV_ROWS input rows by OPREG__GEMV_COLS weight rows, its
 * sums in registers; the weight vectors loaded for one step of k serve
 * every input row of the tile. The tiles of one group of columns run one
 * after the other, so the weight rows are read from memory by the first
 * and from the L1 or L2 cache by the others.
 *
 * Sums: f32 for the float types (bf16 pairs through vdot_bf16x2, whose
 * AVX512-BF16 form rounds each addition and reads subnormals as zero: see
 * simd_avx512.h), int32 for int8 (exact while k < 2^17, as CUTLASS), f32
 * for fp8 (products of two e4m3 values are exact in f32). The order of the
 * additions differs from ops/ref's: lanes, then a tree over the lanes. */
#ifndef OPREG_CPU_GEMV_SIMD_H
#define OPREG_CPU_GEMV_SIMD_H

/* Largest tile in input rows over all paths (arrays are sized for it). */
#define GEMV_MAX_ROWS 4

/* VW values of dtype dt (F32, F16 or F8_E4M3FN) at p as floats; _n: the first n. */
AI vf gemv_load(int dt, const void *p) {
    return dt == OPREG_DTYPE_F8_E4M3FN ? vload_e4m3(p) : vload(dt, p);
}
AI vf gemv_load_n(int dt, const void *p, int64_t n) {
    return dt == OPREG_DTYPE_F8_E4M3FN ? vload_e4m3_n(p, n) : vload_n(dt, p, n);
}

AI size_t gemv_es(int dt) {
    return dt == OPREG_DTYPE_F32 ? 4 : dt == OPREG_DTYPE_F8_E4M3FN ? 1 : 2;
}

/* One tile of f32, f16 or fp8 data, VW values of k a step: input rows
 * [i0, i0 + mt), weight rows [j0, j0 + nr). @p scaled: cutlass_scaled_mm's
 * epilogue, else linear's. */
AI void gemv_lanes_tile(int dt, int scaled, const struct opreg__gemv_args *a, int64_t i0, int mt,
                        int64_t j0, int nr) {
    size_t es = gemv_es(dt);
    const char *x = (const char *)a->in + (size_t)(i0 * a->in_stride) * es;
    const char *w = (const char *)a->w + (size_t)(j0 * a->w_stride) * es;
    size_t xs = (size_t)a->in_stride * es, ws = (size_t)a->w_stride * es;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
    int64_t p = 0, k = a->k;
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (; p + VW <= k; p += VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = gemv_load(dt, w + r * ws + (size_t)p * es);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = gemv_load(dt, x + i * xs + (size_t)p * es);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vfma(xv, wv[r], acc[i][r]);
        }
    }
    if (p < k) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = gemv_load_n(dt, w + r * ws + (size_t)p * es, k - p);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = gemv_load_n(dt, x + i * xs + (size_t)p * es, k - p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vfma(xv, wv[r], acc[i][r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            if (scaled)
                opreg__gemv_scaled_out(a, i0 + i, j0 + r, vhsum(acc[i][r]));
            else
                opreg__gemv_linear_out(dt, a, i0 + i, j0 + r, vhsum(acc[i][r]));
        }
}

/* One tile of bf16 data (linear), 2 * VW values of k a step as pairs. */
AI void gemv_pairs_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr) {
    const uint16_t *x = (const uint16_t *)a->in + i0 * a->in_stride;
    const uint16_t *w = (const uint16_t *)a->w + j0 * a->w_stride;
    int64_t xs = a->in_stride, ws = a->w_stride, p = 0, k = a->k;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (; p + 2 * VW <= k; p += 2 * VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vload_bits(w + r * ws + p);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload_bits(x + i * xs + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_bf16x2(acc[i][r], xv, wv[r]);
        }
    }
    if (p < k) {
        int64_t bytes = (k - p) * 2;
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vload_bits_n(w + r * ws + p, bytes);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload_bits_n(x + i * xs + p, bytes);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_bf16x2(acc[i][r], xv, wv[r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            opreg__gemv_linear_out(OPREG_DTYPE_BF16, a, i0 + i, j0 + r, vhsum(acc[i][r]));
}

/* One tile of int8 data (cutlass_scaled_mm), 2 * VW values of k a step
 * widened to int16, int32 sums. */
AI void gemv_i8_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr) {
    const int8_t *x = (const int8_t *)a->in + i0 * a->in_stride;
    const int8_t *w = (const int8_t *)a->w + j0 * a->w_stride;
    int64_t xs = a->in_stride, ws = a->w_stride, p = 0, k = a->k;
    vint acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vizero();
    for (; p + 2 * VW <= k; p += 2 * VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vwiden_i8(w + r * ws + p);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vint xv = vwiden_i8(x + i * xs + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_i16(acc[i][r], xv, wv[r]);
        }
    }
    if (p < k) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vwiden_i8_n(w + r * ws + p, k - p);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vint xv = vwiden_i8_n(x + i * xs + p, k - p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_i16(acc[i][r], xv, wv[r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, (float)vihsum(acc[i][r]));
}

/* Tile kinds, constants once inlined. */
enum { GEMV_LINEAR_LANES, GEMV_LINEAR_PAIRS, GEMV_INT8, GEMV_FP8 };

AI void gemv_tile(int kind, int dt, const struct opreg__gemv_args *a, int64_t i0, int mt,
                  int64_t j0, int nr) {
    if (kind == GEMV_LINEAR_PAIRS)
        gemv_pairs_tile(a, i0, mt, j0, nr);
    else if (kind == GEMV_INT8)
        gemv_i8_tile(a, i0, mt, j0, nr);
    else
        gemv_lanes_tile(dt, kind == GEMV_FP8, a, i0, mt, j0, nr);
}

/* Every input row against weight rows [j0, j0 + nr): full tiles, then the
 * rows left over, each tile size a constant. */
AI void gemv_rows(int kind, int dt, const struct opreg__gemv_args *a, int64_t j0, int nr) {
    int64_t i = 0;
    for (; i + VGEMV_ROWS <= a->m; i += VGEMV_ROWS)
        gemv_tile(kind, dt, a, i, VGEMV_ROWS, j0, nr);
    switch (a->m - i) {
    case 3:
        gemv_tile(kind, dt, a, i, 3, j0, nr);
        break;
    case 2:
        gemv_tile(kind, dt, a, i, 2, j0, nr);
        break;
    case 1:
        gemv_tile(kind, dt, a, i, 1, j0, nr);
        break;
    default:
        break;
    }
}

/* Column groups [c0, c1): OPREG__GEMV_COLS weight rows at a time, the last
 * few one by one. */
AI void gemv_groups(int kind, int dt, const struct opreg__gemv_args *a, int64_t c0, int64_t c1) {
    int64_t j = c0 * OPREG__GEMV_COLS, end = c1 * OPREG__GEMV_COLS;
    if (end > a->n) end = a->n;
    for (; j + OPREG__GEMV_COLS <= end; j += OPREG__GEMV_COLS)
        gemv_rows(kind, dt, a, j, OPREG__GEMV_COLS);
    for (; j < end; j++)
        gemv_rows(kind, dt, a, j, 1);
}

static void gemv_linear_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        gemv_groups(GEMV_LINEAR_LANES, OPREG_DTYPE_F32, a, c0, c1);
        break;
    case OPREG_DTYPE_BF16:
        gemv_groups(GEMV_LINEAR_PAIRS, OPREG_DTYPE_BF16, a, c0, c1);
        break;
    default:
        gemv_groups(GEMV_LINEAR_LANES, OPREG_DTYPE_F16, a, c0, c1);
        break;
    }
}

static void gemv_int8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_groups(GEMV_INT8, OPREG_DTYPE_I8, args, c0, c1);
}

static void gemv_fp8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_groups(GEMV_FP8, OPREG_DTYPE_F8_E4M3FN, args, c0, c1);
}

#ifdef OPREG__SIMD_BF16
/* ---- the packed kernels: AVX512-VNNI and AVX512-BF16 ----------------------- */

/* int8 with VPDPBUSD (uint8 x int8 -> int32, 4 products a lane): the input
 * rows come packed as x + 128 (uint8), so each sum is x.w + 128 * sum(w);
 * the tile that @p sums says computes sum(w) of its weight rows in the same
 * pass (a VPDPBUSD by ones) into cs[], the others take it from there. The
 * int32 lanes wrap, and the sums are exact once 128 * sum(w) is taken off
 * whenever x.w fits int32 (k < 2^17). */
AI void gemv_u8_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr,
                     int sums, int32_t *cs) {
    const uint8_t *x = (const uint8_t *)a->packed + i0 * a->k;
    const int8_t *w = (const int8_t *)a->w + j0 * a->w_stride;
    int64_t ws = a->w_stride, k = a->k, p = 0;
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS], cv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        cv[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++)
            acc[i][r] = _mm512_setzero_si512();
    }
    for (; p + 64 <= k; p += 64) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            wv[r] = _mm512_loadu_si512(w + r * ws + p);
            if (sums) cv[r] = _mm512_dpbusd_epi32(cv[r], ones, wv[r]);
        }
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            __m512i xv = _mm512_loadu_si512(x + i * k + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = _mm512_dpbusd_epi32(acc[i][r], xv, wv[r]);
        }
    }
    if (p < k) {
        __mmask64 tail = (__mmask64)((1ull << (k - p)) - 1u);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            wv[r] = _mm512_maskz_loadu_epi8(tail, w + r * ws + p);
            if (sums) cv[r] = _mm512_dpbusd_epi32(cv[r], ones, wv[r]);
        }
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            __m512i xv = _mm512_maskz_loadu_epi8(tail, x + i * k + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = _mm512_dpbusd_epi32(acc[i][r], xv, wv[r]);
        }
    }
    if (sums) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            cs[r] = _mm512_reduce_add_epi32(cv[r]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            uint32_t d = (uint32_t)_mm512_reduce_add_epi32(acc[i][r]) - 128u * (uint32_t)cs[r];
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, (float)(int32_t)d);
        }
}

AI void gemv_u8_rows(const struct opreg__gemv_args *a, int64_t j0, int nr) {
    int32_t cs[OPREG__GEMV_COLS];
    int64_t i = VGEMV_ROWS, m = a->m;
    switch (m < VGEMV_ROWS ? m : VGEMV_ROWS) {
    case 3:
        gemv_u8_tile(a, 0, 3, j0, nr, 1, cs);
        return;
    case 2:
        gemv_u8_tile(a, 0, 2, j0, nr, 1, cs);
        return;
    case 1:
        gemv_u8_tile(a, 0, 1, j0, nr, 1, cs);
        return;
    default:
        gemv_u8_tile(a, 0, VGEMV_ROWS, j0, nr, 1, cs);
        break;
    }
    for (; i + VGEMV_ROWS <= m; i += VGEMV_ROWS)
        gemv_u8_tile(a, i, VGEMV_ROWS, j0, nr, 0, cs);
    switch (m - i) {
    case 3:
        gemv_u8_tile(a, i, 3, j0, nr, 0, cs);
        break;
    case 2:
        gemv_u8_tile(a, i, 2, j0, nr, 0, cs);
        break;
    case 1:
        gemv_u8_tile(a, i, 1, j0, nr, 0, cs);
        break;
    default:
        break;
    }
}

static void gemv_int8_u8_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t j = c0 * OPREG__GEMV_COLS, end = c1 * OPREG__GEMV_COLS;
    if (end > a->n) end = a->n;
    for (; j + OPREG__GEMV_COLS <= end; j += OPREG__GEMV_COLS)
        gemv_u8_rows(a, j, OPREG__GEMV_COLS);
    for (; j < end; j++)
        gemv_u8_rows(a, j, 1);
}

/* 32 e4m3fn codes as 32 bf16 values, exactly: the magnitude (7 bits)
 * through the 128-entry table t (4 vectors, two VPERMT2W of 64 entries
 * each and a blend on bit 6), and the sign moved from bit 7 to bit 15. */
AI __m512i e4m3_to_bf16(__m256i codes, const __m512i *t) {
    __m512i c = _mm512_cvtepu8_epi16(codes);
    __m512i lo = _mm512_permutex2var_epi16(t[0], c, t[1]);
    __m512i hi = _mm512_permutex2var_epi16(t[2], c, t[3]);
    __m512i v = _mm512_mask_mov_epi16(lo, _mm512_test_epi16_mask(c, _mm512_set1_epi16(0x40)), hi);
    /* v | (c << 8 & 0x8000) */
    return _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(c, 8), _mm512_set1_epi16((short)0x8000),
                                     0xF8);
}

/* 32 values of k of weight row r from p: widened from e4m3 as they stream
 * (@p wide 0; the first @p n only when n < 32), or read from the rows that
 * gemv_e4m3_widen put in @p wb (@p wide 1), kp values apart. */
AI vf gemv_e4m3_w(const struct opreg__gemv_args *a, const __m512i *t, const uint16_t *wb,
                  int64_t kp, int wide, const uint8_t *w, int r, int64_t p, int64_t n) {
    if (wide) return _mm512_loadu_ps(wb + r * kp + p);
    const uint8_t *q = w + r * a->w_stride + p;
    __m256i codes = n < 32 ? _mm256_maskz_loadu_epi8((__mmask32)((1u << n) - 1u), q)
                           : _mm256_loadu_si256((const __m256i *)q);
    return _mm512_castsi512_ps(e4m3_to_bf16(codes, t));
}

/* fp8 with VDPBF16PS: the input rows come packed as bf16, the weights are
 * widened as they stream, or read already widened (@p wide, a constant at
 * each call, so the inlined tile has one form or the other), 32 values of
 * k a step. Exact products (e4m3 values are bf16 values), the additions
 * rounded as vdot_bf16x2 says. */
AI void gemv_e4m3_tile(const struct opreg__gemv_args *a, const __m512i *t, const uint16_t *wb,
                       int64_t kp, int wide, int64_t i0, int mt, int64_t j0, int nr) {
    const uint16_t *x = (const uint16_t *)a->packed + i0 * a->k;
    const uint8_t *w = (const uint8_t *)a->w + j0 * a->w_stride;
    int64_t k = a->k, p = 0;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (; p + 32 <= k; p += 32) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = gemv_e4m3_w(a, t, wb, kp, wide, w, r, p, 32);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = _mm512_loadu_ps(x + i * k + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_bf16x2(acc[i][r], xv, wv[r]);
        }
    }
    if (p < k) {
        __mmask32 tail = (__mmask32)((1u << (k - p)) - 1u);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = gemv_e4m3_w(a, t, wb, kp, wide, w, r, p, k - p);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(tail, x + i * k + p));
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vdot_bf16x2(acc[i][r], xv, wv[r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, vhsum(acc[i][r]));
}

/* Widen @p nr weight rows from column j0 into @p wb (rows kp apart, the
 * tail of each past k zero), once. */
AI void gemv_e4m3_widen(const struct opreg__gemv_args *a, const __m512i *t, uint16_t *wb,
                        int64_t kp, int64_t j0, int nr) {
    const uint8_t *w = (const uint8_t *)a->w + j0 * a->w_stride;
    for (int r = 0; r < nr; r++)
        for (int64_t p = 0; p < a->k; p += 32)
            _mm512_storeu_ps(wb + r * kp + p, gemv_e4m3_w(a, t, NULL, 0, 0, w, r, p, a->k - p));
}

/* Every input row, a tile at a time, against @p nr weight rows. */
AI void gemv_e4m3_tiles(const struct opreg__gemv_args *a, const __m512i *t, const uint16_t *wb,
                        int64_t kp, int wide, int64_t j0, int nr) {
    int64_t i = 0;
    for (; i + VGEMV_ROWS <= a->m; i += VGEMV_ROWS)
        gemv_e4m3_tile(a, t, wb, kp, wide, i, VGEMV_ROWS, j0, nr);
    switch (a->m - i) {
    case 3:
        gemv_e4m3_tile(a, t, wb, kp, wide, i, 3, j0, nr);
        break;
    case 2:
        gemv_e4m3_tile(a, t, wb, kp, wide, i, 2, j0, nr);
        break;
    case 1:
        gemv_e4m3_tile(a, t, wb, kp, wide, i, 1, j0, nr);
        break;
    default:
        break;
    }
}

/* With more input rows than one tile holds and a buffer @p wb, the weight
 * rows are widened once into it and every tile reads them from there (from
 * L1 or L2), instead of each tile widening them again. */
AI void gemv_e4m3_rows(const struct opreg__gemv_args *a, const __m512i *t, uint16_t *wb, int64_t kp,
                       int64_t j0, int nr) {
    if (wb && a->m > VGEMV_ROWS) {
        gemv_e4m3_widen(a, t, wb, kp, j0, nr);
        gemv_e4m3_tiles(a, t, wb, kp, 1, j0, nr);
    } else {
        gemv_e4m3_tiles(a, t, NULL, 0, 0, j0, nr);
    }
}

static void gemv_fp8_bf16_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    __m512i t[4];
    int64_t j = c0 * OPREG__GEMV_COLS, end = c1 * OPREG__GEMV_COLS;
    int64_t kp = (a->k + 31) / 32 * 32;
    /* the widened weight rows of one group of columns: 4 x 8 KiB at k = 4096
     * (without the buffer, when it cannot be had, each tile widens them) */
    uint16_t *wb = a->m > VGEMV_ROWS ? malloc((size_t)(OPREG__GEMV_COLS * kp) * 2) : NULL;
    for (int q = 0; q < 4; q++)
        t[q] = _mm512_loadu_si512(opreg__e4m3_bf16 + 32 * q);
    if (end > a->n) end = a->n;
    for (; j + OPREG__GEMV_COLS <= end; j += OPREG__GEMV_COLS)
        gemv_e4m3_rows(a, t, wb, kp, j, OPREG__GEMV_COLS);
    for (; j < end; j++)
        gemv_e4m3_rows(a, t, wb, kp, j, 1);
    free(wb);
}
#endif

#endif
