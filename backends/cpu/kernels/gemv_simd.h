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
 * and from the L1 or L2 cache by the others. With more input rows than a
 * tile holds, the panel kernels below take the call instead: they block k
 * so that the tiles find both operands in L1.
 *
 * Sums: f32 for the float types (bf16 pairs through vdot_bf16x2, whose
 * AVX512-BF16 form rounds each addition and reads subnormals as zero: see
 * simd_avx512.h), int32 for int8 (exact while k < 2^17, as CUTLASS), f32
 * for fp8 (products of two e4m3 values are exact in f32, and so are those
 * of the weights' 256th that gemv_fp8_tile multiplies). The order of the
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

/* How far ahead in its row, in bytes, a tile fetches each weight row,
 * where the tile does much for each weight it loads. From memory the fp8
 * pairs tile runs far below its rate from L2 (Zen 5, one core, M = 1:
 * 23.5 GB/s against 90, where int8's tile streams at 41): the widening
 * puts five instructions behind every load, which holds fewer loads in
 * flight. The fetch ahead wins a part back: both cores, N = 14336,
 * K = 4096, fp8 M = 1 32-34 -> 33.5-35.5 GB/s, M = 4 28.5-30.7 ->
 * 32.4-34.3, about the same at 512 and 1024 bytes, and into L2 instead of
 * L1 no better; copying each block of the rows to an L1 buffer first was
 * slower (25 and 21 GB/s). int8 from 3 rows: M = 4 34-35 -> 35-37; at 1
 * and 2 rows it gained nothing, and at 1 cost up to a tenth (so did bf16
 * and f32 at 1 row: 44-51 -> 40-45 GB/s). A fetch past the weights' end
 * is a hint, never a fault.
 *
 * Near a row's end the fetch goes to the head of the same row of the next
 * group (gemv_tile_ahead): the next tile starts nr new streams at once,
 * and the hardware prefetcher takes a few misses on each before it runs
 * ahead, a cost paid every K bytes. Until 2026-12-06 the fetch ran on
 * into the next row of the same group, already being read, so only one
 * of the next tile's rows was fetched ahead. Both cores, weights from
 * memory, machine D, rounds alternating with the build before: fp8
 * M = 4, K = 4096, 34-35.5 -> 36-40.5 GB/s; M = 2 33-34 -> 37.5; bf16
 * M = 4 (now fetched too, from 3 rows as int8) 30-38 -> 37-40.
 *
 * The float, int8 and fp8 (FMA) tiles fetch from opreg__gemv_args.fetch_rows
 * input rows on: 3, or 1 on Intel CPUs, where the fetch pays at every
 * height (gemv.c, opreg__cpu_gemv_fetch_rows). */
#define GEMV_TILE_AHEAD 2048

/* The line a tile fetches in weight row @p r of its @p nr (@p ws bytes
 * apart, @p k long) while it reads offset @p p: GEMV_TILE_AHEAD bytes on,
 * or, once that passes the row's end, as far into the same row of the
 * next group of nr rows, which the next tile reads from its start. */
AI const char *gemv_tile_ahead(const void *w, size_t ws, int r, int nr, int64_t p, int64_t k) {
    int64_t q = p + GEMV_TILE_AHEAD;
    if (q >= k) {
        q -= k;
        r += nr;
    }
    return (const char *)w + (size_t)r * ws + q;
}

/* One tile of f32 or f16 data (linear), VW values of k a step: input rows
 * [i0, i0 + mt), weight rows [j0, j0 + nr). */
AI void gemv_lanes_tile(int dt, const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0,
                        int nr) {
    size_t es = gemv_es(dt);
    const char *x = (const char *)a->in + (size_t)(i0 * a->in_stride) * es;
    const char *w = (const char *)a->w + (size_t)(j0 * a->w_stride) * es;
    size_t xs = (size_t)a->in_stride * es, ws = (size_t)a->w_stride * es;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
    int64_t p = 0, k = a->k;
    bool fetch = mt >= a->fetch_rows;
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (; p + VW <= k; p += VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            if (fetch)
                _mm_prefetch(gemv_tile_ahead(w, ws, r, nr, p * (int64_t)es, k * (int64_t)es),
                             _MM_HINT_T0);
            wv[r] = gemv_load(dt, w + r * ws + (size_t)p * es);
        }
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
        for (int r = 0; r < nr; r++)
            opreg__gemv_linear_out(dt, a, i0 + i, j0 + r, vhsum(acc[i][r]));
}

/* One tile of bf16 data (linear), 2 * VW values of k a step as pairs. */
AI void gemv_pairs_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr) {
    const uint16_t *x = (const uint16_t *)a->in + i0 * a->in_stride;
    const uint16_t *w = (const uint16_t *)a->w + j0 * a->w_stride;
    int64_t xs = a->in_stride, ws = a->w_stride, p = 0, k = a->k;
    bool fetch = mt >= a->fetch_rows;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (; p + 2 * VW <= k; p += 2 * VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            if (fetch)
                _mm_prefetch(gemv_tile_ahead(w, (size_t)ws * 2, r, nr, p * 2, k * 2), _MM_HINT_T0);
            wv[r] = vload_bits(w + r * ws + p);
        }
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

/* fp8 weights, in gemv_fp8_tile and the panels: the NaN codes among the
 * 4 * VW codes of a row at p, the first k - p of them when fewer (see
 * vseen_add), taken at every fourth step of VW. */
AI vseen gemv_seen(vseen seen, const uint8_t *p, int64_t n) {
    return n >= 4 * VW ? vseen_add(seen, p) : vseen_add_n(seen, p, n);
}

/* A sum of a 256th of the products (vwiden_e4m3_256) as the sum of the
 * products: times 256, exactly (every product of two e4m3 values over 256
 * is a normal float, and no sum of them overflows); NaN where the weight
 * row holds a NaN code. */
AI float gemv_e4m3_sum(float sum, vseen seen) {
    return vseen_nan(seen) ? NAN : sum * 256.0f;
}

/* One tile of fp8 (cutlass_scaled_mm): the input rows as f32 in
 * opreg__gemv_args.packed, in the panels' blocks of k (gemv_pack, zeros
 * past k), the weights widened as they stream by vwiden_e4m3_256, 2 * VW
 * values of k a step, FMAs. */
AI void gemv_fp8_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr) {
    const float *xb = (const float *)a->packed + i0 * OPREG__GEMV_KB;
    int64_t xs = a->m * OPREG__GEMV_KB; /* from one block to the next */
    const uint8_t *w = (const uint8_t *)a->w + j0 * a->w_stride;
    size_t ws = (size_t)a->w_stride;
    int64_t p = 0, k = a->k;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS], wh[OPREG__GEMV_COLS];
    vseen seen[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        seen[r] = vseen_zero();
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++)
            acc[i][r] = vzero();
    }
    bool fetch = mt >= a->fetch_rows;
    /* 2 * VW values a step (both within one block of x); the last step's
     * codes past k read as zeros, and x is zero there */
    for (; p < k; p += 2 * VW) {
        if (fetch && p % 64 == 0) {
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                _mm_prefetch(gemv_tile_ahead(w, ws, r, nr, p, k), _MM_HINT_T0);
        }
        if (p % (4 * VW) == 0) {
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                seen[r] = gemv_seen(seen[r], w + r * ws + p, k - p);
        }
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            vwiden_e4m3_256(w + r * ws + p, k - p, &wv[r], &wh[r]);
        const float *x = xb + p / OPREG__GEMV_KB * xs + p % OPREG__GEMV_KB;
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload(OPREG_DTYPE_F32, x + i * OPREG__GEMV_KB);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vfma(xv, wv[r], acc[i][r]);
        }
        /* the second half as a loop of its own: folding the two into one
         * loop over the halves measured slower at M = 4 (GCC 12) */
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload(OPREG_DTYPE_F32, x + i * OPREG__GEMV_KB + VW);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vfma(xv, wh[r], acc[i][r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, gemv_e4m3_sum(vhsum(acc[i][r]), seen[r]));
}

#ifdef OPREG__SIMD_BF16
/* VPDPBUSD: @p acc plus, in each int32 lane, the four products of @p u's
 * bytes (uint8) by @p s's (int8). In assembly, because GCC 12 copies
 * every accumulator to another register and back around each
 * _mm512_dpbusd_epi32 of an unrolled tile (its int32 vector type is not
 * __m512i's), two moves for each product: the int8 panel's tile ran 6.0
 * of them a nanosecond on Zen 5 where VDPBF16PS's ran 8.7. */
AI __m512i gemv_dpbusd(__m512i acc, __m512i u, __m512i s) {
    __asm__("vpdpbusd {%2, %1, %0|%0, %1, %2}" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

/* int8 with VPDPBUSD (uint8 x int8 -> int32, 4 products a lane): each
 * weight vector becomes uint8 as w + 128 by one XOR as it is loaded, the
 * input rows stay as they are (int8), so each sum is x.w + 128 * sum(x),
 * and the row sums sum(x) that opreg__gemv_args.packed holds take the
 * second term back. An XOR a weight vector is all the correction costs,
 * where sum(w) would cost a VPDPBUSD per 64 weights on the port the
 * products need. The int32 lanes wrap, and the sums come out exact
 * whenever x.w fits int32 (k < 2^17). Past k the weights load as zeros,
 * 128 after the XOR, against input values that load as zeros too. */
AI void gemv_u8_tile(const struct opreg__gemv_args *a, int64_t i0, int mt, int64_t j0, int nr) {
    const int8_t *x = (const int8_t *)a->in + i0 * a->in_stride;
    const int8_t *w = (const int8_t *)a->w + j0 * a->w_stride;
    const uint32_t *xsum = (const uint32_t *)a->packed + i0;
    int64_t ws = a->w_stride, xs = a->in_stride, k = a->k, p = 0;
    bool fetch = mt >= a->fetch_rows;
    const __m512i flip = _mm512_set1_epi8(-128);
    __m512i acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++)
            acc[i][r] = _mm512_setzero_si512();
    for (; p + 64 <= k; p += 64) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            if (fetch) _mm_prefetch(gemv_tile_ahead(w, (size_t)ws, r, nr, p, k), _MM_HINT_T0);
            wv[r] = _mm512_xor_si512(_mm512_loadu_si512(w + r * ws + p), flip);
        }
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            __m512i xv = _mm512_loadu_si512(x + i * xs + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = gemv_dpbusd(acc[i][r], wv[r], xv);
        }
    }
    if (p < k) {
        __mmask64 tail = (__mmask64)((1ull << (k - p)) - 1u);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, w + r * ws + p), flip);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            __m512i xv = _mm512_maskz_loadu_epi8(tail, x + i * xs + p);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = gemv_dpbusd(acc[i][r], wv[r], xv);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            uint32_t d = (uint32_t)_mm512_reduce_add_epi32(acc[i][r]) - 128u * xsum[i];
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, (float)(int32_t)d);
        }
}

/* Each input row's sum into @p dst (uint32, wrapping as the sums of
 * VPDPBUSD do): sum(x), which the int8 tiles and panels take back as
 * 128 * sum(x) for flipping the weights; VPDPBUSD by ones, 64 values a
 * step. */
static void gemv_sums_s8(const struct opreg__gemv_args *a, uint32_t *dst) {
    for (int64_t i = 0; i < a->m; i++) {
        const int8_t *x = (const int8_t *)a->in + i * a->in_stride;
        __m512i sum = _mm512_setzero_si512();
        for (int64_t p = 0; p < a->k; p += 64) {
            __mmask64 live =
                a->k - p >= 64 ? ~(__mmask64)0 : (__mmask64)((1ull << (a->k - p)) - 1u);
            sum = gemv_dpbusd(sum, _mm512_set1_epi8(1), _mm512_maskz_loadu_epi8(live, x + p));
        }
        dst[i] = (uint32_t)_mm512_reduce_add_epi32(sum);
    }
}
#endif

/* Tile kinds, constants once inlined. */
enum { GEMV_LINEAR_LANES, GEMV_LINEAR_PAIRS, GEMV_INT8, GEMV_INT8_U8, GEMV_FP8 };

AI void gemv_tile(int kind, int dt, const struct opreg__gemv_args *a, int64_t i0, int mt,
                  int64_t j0, int nr) {
    if (kind == GEMV_LINEAR_PAIRS)
        gemv_pairs_tile(a, i0, mt, j0, nr);
    else if (kind == GEMV_INT8)
        gemv_i8_tile(a, i0, mt, j0, nr);
#ifdef OPREG__SIMD_BF16
    else if (kind == GEMV_INT8_U8)
        gemv_u8_tile(a, i0, mt, j0, nr);
#endif
    else if (kind == GEMV_FP8)
        gemv_fp8_tile(a, i0, mt, j0, nr);
    else
        gemv_lanes_tile(dt, a, i0, mt, j0, nr);
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

static void gemv_int8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_groups(GEMV_INT8, OPREG_DTYPE_I8, args, c0, c1);
}

static void gemv_fp8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_groups(GEMV_FP8, OPREG_DTYPE_F8_E4M3FN, args, c0, c1);
}

#ifdef OPREG__SIMD_BF16
/* int8 by gemv_u8_tile, on the input rows' sums in opreg__gemv_args.packed. */
static void gemv_int8_u8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_groups(GEMV_INT8_U8, OPREG_DTYPE_I8, args, c0, c1);
}
#endif

/* ---- more input rows than a tile: the weights from L1 ------------------ */

/* Past one tile of input rows, the tiles above read each group's weight
 * rows again, and every input row for every group, from L2: at 16 rows
 * that traffic, not the arithmetic, sets the pace (f32 at a sixth of the
 * FMA peak). The panel kernels take OPREG__GEMV_PANEL weight rows at a
 * time and k in blocks of OPREG__GEMV_KB: a block of the weight rows is
 * widened to f32 once into a buffer, the input rows' block comes from the
 * copy gemv_pack made, and every tile runs over the two from L1. Each
 * tile's sums wait in memory between blocks, so every lane adds its
 * products in the order of gemv_lanes_tile, and f32 results are the same
 * as there. Products are FMAs of widened values: exact for bf16, f16 and
 * e4m3 operands, where VDPBF16PS would round each pair's addition. */

/* The panel kernels fetch ahead the weight rows' block of a later one
 * than they multiply, a row's lines before each tile, so that the loads of
 * the weights overlap the arithmetic (struct gemv_fetch). Measured on f32
 * at M = 16, N = 14336, K = 4096: 12.0 ms against 16.7 without, where the
 * widening pass waited on every load. The panels that copy each block
 * fetch GEMV_AHEAD_COPY blocks ahead into L2 (into L1 made no difference
 * there, and a 32 KiB L1 already holds their buffers and sums; one block
 * ahead: fp8 M = 8 34 -> 29 GB/s on Zen 5). Blocks the tiles multiply
 * where they lie (bf16 pairs, f32, int8) come GEMV_AHEAD_L1 block ahead
 * into L1, which then holds less of what the tiles do not read yet: on Zen
 * 5 (48 KiB L1), two threads, M = 16, N = 14336, K = 4096, two blocks ahead
 * into L2 -> into L1: bf16 30-35 -> 37.5-38.6 GB/s; two blocks -> one:
 * int8 34.9 -> 38.2, bf16 38.5 -> 39.7, f32 35.5 -> 36.7. The f32 and
 * bf16 panels fetch GEMV_AHEAD_FAR blocks ahead into L2 as well (f32
 * 36.7 -> 39.5, bf16 36.7 -> 38.9; int8 38.2 -> 35.7 with it in one
 * sitting, level in another, so int8 does not). */
#define GEMV_AHEAD_COPY 2
#define GEMV_AHEAD_L1   1
#define GEMV_AHEAD_FAR  3

/* The input rows as f32 for the panel kernels: block b of k, row i at
 * dst + (b * m + i) * OPREG__GEMV_KB, zeros past k. */
static void gemv_pack(const struct opreg__gemv_args *a, float *dst) {
    size_t es = gemv_es(a->dt);
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KB)
        for (int64_t i = 0; i < a->m; i++) {
            const char *src = (const char *)a->in + (size_t)(i * a->in_stride + p0) * es;
            int64_t kb = a->k - p0;
            for (int64_t q = 0; q < OPREG__GEMV_KB; q += VW, dst += VW) {
                vf v = kb - q >= VW ? gemv_load(a->dt, src + (size_t)q * es)
                       : kb > q     ? gemv_load_n(a->dt, src + (size_t)q * es, kb - q)
                                    : vzero();
                vstore(OPREG_DTYPE_F32, dst, v);
            }
        }
}

/* One tile over one block: input rows at x (OPREG__GEMV_KB floats apart)
 * and weight rows at w (@p wrs floats apart), kv values of each, the sums
 * of input row i and weight row r kept at acc + (i * OPREG__GEMV_PANEL +
 * r) * VW. */
AI void gemv_panel_tile(const float *x, const float *w, size_t wrs, float *acc, int64_t kv, int mt,
                        int nr, int first) {
    vf s[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            s[i][r] =
                first ? vzero() : vload(OPREG_DTYPE_F32, acc + (i * OPREG__GEMV_PANEL + r) * VW);
    for (int64_t q = 0; q < kv; q += VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vload(OPREG_DTYPE_F32, w + r * wrs + q);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload(OPREG_DTYPE_F32, x + i * OPREG__GEMV_KB + q);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                s[i][r] = vfma(xv, wv[r], s[i][r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            vstore(OPREG_DTYPE_F32, acc + (i * OPREG__GEMV_PANEL + r) * VW, s[i][r]);
}

/* The lines of [p, p + bytes), into L1 with @p l1, else into L2. */
AI void gemv_prefetch(const char *p, int64_t bytes, int l1) {
    for (int64_t q = 0; q < bytes; q += 64)
        if (l1)
            _mm_prefetch(p + q, _MM_HINT_T0);
        else
            _mm_prefetch(p + q, _MM_HINT_T1);
}

#ifdef OPREG__SIMD_BF16
/* The int8 panel kernel's pieces (gemv_u8_panel below). The sums of the
 * lanes of v[0..15] in lanes 0..15 (the int32 lanes wrap, as the sums they
 * stand for do): a transpose in four rounds of adds. */
AI __m512i gemv_hsum16(const __m512i *v) {
    __m512i s[8], u[4], w[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        s[j] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * j], v[2 * j + 1]),
                                _mm512_unpackhi_epi32(v[2 * j], v[2 * j + 1]));
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        u[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(s[2 * j], s[2 * j + 1]),
                                _mm512_unpackhi_epi64(s[2 * j], s[2 * j + 1]));
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++)
        w[j] = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2 * j], u[2 * j + 1], 0x88),
                                _mm512_shuffle_i32x4(u[2 * j], u[2 * j + 1], 0xDD));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], 0x88),
                            _mm512_shuffle_i32x4(w[0], w[1], 0xDD));
}

AI void gemv_u8_panel_tile(const int8_t *x, const int8_t *w, size_t wrs, __m512i *acc, int64_t kv,
                           int mt, int nr, int first) {
    const __m512i flip = _mm512_set1_epi8(-128);
    __m512i s[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            s[i][r] =
                first ? _mm512_setzero_si512() : _mm512_load_si512(acc + i * OPREG__GEMV_PANEL + r);
    for (int64_t q = 0; q < kv; q += 64) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = _mm512_xor_si512(_mm512_loadu_si512(w + r * wrs + q), flip);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            __m512i xv = _mm512_load_si512(x + i * OPREG__GEMV_KB8 + q);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                s[i][r] = gemv_dpbusd(s[i][r], wv[r], xv);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            _mm512_store_si512(acc + i * OPREG__GEMV_PANEL + r, s[i][r]);
}

/* The bf16 pairs panel's tile: input rows at x (OPREG__GEMV_KBP values
 * apart, zeros past k) and weight rows at w (@p ws bytes apart), kb values
 * of each, the last step's weights past kb read as zeros; sums as
 * gemv_panel_tile's. Each lane's pairs come in gemv_pairs_tile's order. */
AI void gemv_pairs_panel_tile(const uint16_t *x, const void *w, size_t ws, float *acc, int64_t kb,
                              int mt, int nr, int first) {
    const char *wp = w;
    vf s[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wv[OPREG__GEMV_COLS];
    int64_t q = 0;
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            s[i][r] =
                first ? vzero() : vload(OPREG_DTYPE_F32, acc + (i * OPREG__GEMV_PANEL + r) * VW);
    for (; q + 2 * VW <= kb; q += 2 * VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vload_bits(wp + r * ws + (size_t)q * 2);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload_bits(x + i * OPREG__GEMV_KBP + q);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                s[i][r] = vdot_bf16x2(s[i][r], xv, wv[r]);
        }
    }
    if (q < kb) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = vload_bits_n(wp + r * ws + (size_t)q * 2, (kb - q) * 2);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload_bits(x + i * OPREG__GEMV_KBP + q);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                s[i][r] = vdot_bf16x2(s[i][r], xv, wv[r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            vstore(OPREG_DTYPE_F32, acc + (i * OPREG__GEMV_PANEL + r) * VW, s[i][r]);
}

#endif

/* The panel kernels' tiles (gemv_any_panel_tile). */
enum { GEMV_PANEL_F32, GEMV_PANEL_U8, GEMV_PANEL_PAIRS };

/* One tile of the panel kernels at input row i: f32 (gemv_panel_tile), or
 * the int8 one (gemv_u8_panel_tile) or the bf16 pairs one
 * (gemv_pairs_panel_tile, both on AVX512-BF16 only, the latter's weight
 * rows @p ws bytes apart); in the @p first block the sums start from zero
 * instead of memory. */
AI void gemv_any_panel_tile(int kind, int first, const void *x, const void *w, size_t wrs,
                            void *acc, int64_t i, int64_t kv, int mt, int nr) {
#ifdef OPREG__SIMD_BF16
    if (kind == GEMV_PANEL_U8) {
        gemv_u8_panel_tile((const int8_t *)x + i * OPREG__GEMV_KB8, w, wrs,
                           (__m512i *)acc + i * OPREG__GEMV_PANEL, kv, mt, nr, first);
        return;
    }
    if (kind == GEMV_PANEL_PAIRS) {
        gemv_pairs_panel_tile((const uint16_t *)x + i * OPREG__GEMV_KBP, w, wrs,
                              (float *)acc + i * OPREG__GEMV_PANEL * VW, kv, mt, nr, first);
        return;
    }
#else
    (void)kind;
#endif
    gemv_panel_tile((const float *)x + i * OPREG__GEMV_KB, w, wrs / sizeof(float),
                    (float *)acc + i * OPREG__GEMV_PANEL * VW, kv, mt, nr, first);
}

/* What a panel fetches while it multiplies a block (gemv_fetch_at):
 * @p bytes of each weight row from @p near (rows @p ws apart), into L1
 * with @p l1, else into L2; and @p far_bytes of each from @p far, into L2.
 * NULL for none. */
struct gemv_fetch {
    const char *near, *far;
    size_t ws;
    int64_t bytes, far_bytes;
    int l1;
};

/* The lines that @p f fetches of weight row @p r of the panel. */
AI void gemv_fetch_row(const struct gemv_fetch *f, int r) {
    if (f->near) gemv_prefetch(f->near + r * f->ws, f->bytes, f->l1);
    if (f->far) gemv_prefetch(f->far + r * f->ws, f->far_bytes, 0);
}

/* Every input row of one block against @p nr weight rows at @p w (@p wrs
 * bytes apart: a buffer's, or the rows' own where they lie), weight rows
 * [r0, r0 + nr) of the blocks that @p f names fetched a row before each
 * tile. */
AI void gemv_panel_rows(int kind, int first, const void *x, const void *w, size_t wrs, void *acc,
                        int64_t m, int64_t kv, int nr, const struct gemv_fetch *f, int r0) {
    int64_t i = 0;
    int t = 0;
    for (; i + VGEMV_ROWS <= m; i += VGEMV_ROWS, t++) {
        if (t < nr) gemv_fetch_row(f, r0 + t);
        gemv_any_panel_tile(kind, first, x, w, wrs, acc, i, kv, VGEMV_ROWS, nr);
    }
    for (; t < nr; t++)
        gemv_fetch_row(f, r0 + t);
    switch (m - i) {
    case 3:
        gemv_any_panel_tile(kind, first, x, w, wrs, acc, i, kv, 3, nr);
        break;
    case 2:
        gemv_any_panel_tile(kind, first, x, w, wrs, acc, i, kv, 2, nr);
        break;
    case 1:
        gemv_any_panel_tile(kind, first, x, w, wrs, acc, i, kv, 1, nr);
        break;
    default:
        break;
    }
}

/* One block of a panel: every input row (at @p x) against @p nc weight
 * rows at @p w, @p wrs bytes apart, kv values of k, each group of
 * OPREG__GEMV_COLS rows a call of gemv_panel_rows, then the rows left one
 * by one; their sums are VW floats (a vector) apart in @p acc. The weights
 * that @p f names are fetched meanwhile. */
AI void gemv_panel_block(int kind, int first, const void *x, const char *w, size_t wrs, void *acc,
                         int64_t m, int64_t kv, int nc, const struct gemv_fetch *f) {
    float *sums = acc;
    int c = 0;
    for (; c + OPREG__GEMV_COLS <= nc; c += OPREG__GEMV_COLS)
        gemv_panel_rows(kind, first, x, w + c * wrs, wrs, sums + c * VW, m, kv, OPREG__GEMV_COLS, f,
                        c);
    for (; c < nc; c++)
        gemv_panel_rows(kind, first, x, w + c * wrs, wrs, sums + c * VW, m, kv, 1, f, c);
}

/* A panel's sums (m * OPREG__GEMV_PANEL vectors at @p acc) before its
 * first block: the tiles of that block start the sums of its @p nc weight
 * rows from zero themselves; those of the missing rows are zeroed here. */
AI void gemv_panel_zero(void *acc, int64_t m, int nc) {
    for (int64_t e = 0; nc < OPREG__GEMV_PANEL && e < m * OPREG__GEMV_PANEL * VW; e += VW)
        vstore(OPREG_DTYPE_F32, (float *)acc + e, vzero());
}

/* Where the panel kernels fetch ahead, for the weight rows at @p w (@p ws
 * bytes apart) in the block at p0: the block @p ahead blocks (of @p kblk
 * values of @p es bytes) later, or past k, with @p next, the block as far
 * into the next panel's rows, so that a panel's first blocks do not wait
 * on memory; *bytes: that block's bytes of each row, 0 (and NULL) for
 * none. */
AI const char *gemv_ahead(const char *w, size_t ws, int64_t k, int64_t p0, int64_t kblk, size_t es,
                          int ahead, int next, int64_t *bytes) {
    int64_t at = p0 + ahead * kblk;
    if (at >= k && next) {
        at -= (k + kblk - 1) / kblk * kblk;
        w += OPREG__GEMV_PANEL * ws;
    }
    *bytes = at < k ? (k - at < kblk ? k - at : kblk) * (int64_t)es : 0;
    return *bytes ? w + at * (int64_t)es : NULL;
}

/* What a panel fetches while it multiplies the block at p0 of the weight
 * rows at @p w, as gemv_ahead: the next block into L1 where the tiles read
 * the weights where they lie (@p l1), else a later one into L2; with @p
 * far, one further still into L2 as well. */
AI struct gemv_fetch gemv_fetch_at(const char *w, size_t ws, int64_t k, int64_t p0, int64_t kblk,
                                   size_t es, int next, int l1, int far) {
    struct gemv_fetch f = { .ws = ws, .l1 = l1 };
    f.near =
        gemv_ahead(w, ws, k, p0, kblk, es, l1 ? GEMV_AHEAD_L1 : GEMV_AHEAD_COPY, next, &f.bytes);
    f.far = far ? gemv_ahead(w, ws, k, p0, kblk, es, GEMV_AHEAD_FAR, next, &f.far_bytes) : NULL;
    return f;
}

/* cutlass_scaled_mm's outputs (i, j0) to (i, j0 + n - 1), n <= VW, from
 * their sums in @p acc: opreg__gemv_scaled_out a vector at a time, the
 * same operations in the same order and one rounding to out_dt. */
AI void gemv_scaled_outv(const struct opreg__gemv_args *a, int64_t i, int64_t j0, int n, vf acc) {
    size_t os = opreg__cpu_es(a->out_dt);
    vf t = vmul(acc, a->per_channel ? vload_n(OPREG_DTYPE_F32, a->b_scales + j0, n)
                                    : vset1(a->b_scales[0]));
    vf s = vset1(a->a_scales[a->per_token ? i : 0]);
    vf v = a->bias ? vfma(s, t, vload_n(a->out_dt, (const char *)a->bias + (size_t)j0 * os, n))
                   : vmul(s, t);
    vstore_exact_n(a->out_dt, (char *)a->out + (size_t)(i * a->n + j0) * os, v, n);
}

/* linear's outputs (i, j0) to (i, j0 + n - 1), n <= VW, from their sums
 * in @p acc: as opreg__gemv_linear_out, a vector at a time. */
AI void gemv_linear_outv(int dt, const struct opreg__gemv_args *a, int64_t i, int64_t j0, int n,
                         vf acc) {
    size_t es = opreg__cpu_es(dt);
    if (a->bias) acc = vadd(acc, vload_n(dt, (const char *)a->bias + (size_t)j0 * es, n));
    vstore_exact_n(dt, (char *)a->out + (size_t)(i * a->n + j0) * es, acc, n);
}

/* A panel's outputs, input rows [0, m) by weight rows [j0, j0 + nc), from
 * their sums in @p acc (OPREG__GEMV_PANEL vectors an input row), each
 * times its weight row's factor in @p times where given: linear's in
 * dtype @p dt, or cutlass_scaled_mm's where dt is fp8. */
AI void gemv_panel_out(int dt, const struct opreg__gemv_args *a, const float *acc, int64_t j0,
                       int nc, const float *times) {
    for (int64_t i = 0; i < a->m; i++)
        for (int r = 0; r < nc; r += VW) {
            int n = nc - r < VW ? nc - r : VW;
            vf sum = vhsum_each(acc + (i * OPREG__GEMV_PANEL + r) * VW);
            if (times) sum = vmul(sum, vload(OPREG_DTYPE_F32, times + r));
            if (dt == OPREG_DTYPE_F8_E4M3FN)
                gemv_scaled_outv(a, i, j0 + r, n, sum);
            else
                gemv_linear_outv(dt, a, i, j0 + r, n, sum);
        }
}

/* Weight rows [j0, j0 + nc), nc <= OPREG__GEMV_PANEL, against every input
 * row: block by block, then the sums out. @p wb holds a block of the
 * widened rows, @p acc the sums. f32 blocks of whole vectors are
 * multiplied where they lie, fetched ahead into L1 (gemv_panel_rows):
 * M = 16 on Zen 5 from L3 38-40 -> 43-46 GB/s, from memory 2-3% faster. */
AI void gemv_panel(int dt, const struct opreg__gemv_args *a, float *wb, float *acc, int64_t j0,
                   int nc, int next) {
    size_t es = gemv_es(dt), ws = (size_t)a->w_stride * es;
    const char *w = (const char *)a->w + (size_t)j0 * ws;
    const float *x = a->packed;
    int64_t m = a->m;
    vseen seen[OPREG__GEMV_PANEL];
    for (int r = 0; r < OPREG__GEMV_PANEL; r++)
        seen[r] = vseen_zero();
    gemv_panel_zero(acc, m, nc);
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KB, x += m * OPREG__GEMV_KB) {
        int64_t kb = a->k - p0 < OPREG__GEMV_KB ? a->k - p0 : OPREG__GEMV_KB;
        int64_t kv = (kb + VW - 1) / VW * VW;
        int inplace = dt == OPREG_DTYPE_F32 && kb == kv;
        for (int r = 0; r < nc && !inplace; r++) {
            const char *src = w + r * ws + (size_t)p0 * es;
            /* fp8: a 256th of the weights, 2 * VW a step as gemv_fp8_tile
             * (zeros past kv, still inside the row's buffer) */
            for (int64_t q = 0; dt == OPREG_DTYPE_F8_E4M3FN && q < kv; q += 2 * VW) {
                const uint8_t *cp = (const uint8_t *)src + q;
                vf lo, hi;
                if (q % (4 * VW) == 0) seen[r] = gemv_seen(seen[r], cp, kb - q);
                vwiden_e4m3_256(cp, kb - q, &lo, &hi);
                vstore(OPREG_DTYPE_F32, wb + r * OPREG__GEMV_KB + q, lo);
                vstore(OPREG_DTYPE_F32, wb + r * OPREG__GEMV_KB + q + VW, hi);
            }
            for (int64_t q = 0; dt != OPREG_DTYPE_F8_E4M3FN && q < kv; q += VW)
                vstore(OPREG_DTYPE_F32, wb + r * OPREG__GEMV_KB + q,
                       kb - q >= VW ? gemv_load(dt, src + (size_t)q * es)
                                    : gemv_load_n(dt, src + (size_t)q * es, kb - q));
        }
        int f32 = dt == OPREG_DTYPE_F32;
        struct gemv_fetch f = gemv_fetch_at(w, ws, a->k, p0, OPREG__GEMV_KB, es, next, f32, f32);
        gemv_panel_block(GEMV_PANEL_F32, p0 == 0, x,
                         inplace ? w + (size_t)p0 * es : (const char *)wb,
                         inplace ? ws : OPREG__GEMV_KB * sizeof(float), acc, m, kv, nc, &f);
    }
    /* fp8: each sum times 256, or NaN for a weight row with a NaN code */
    float times[OPREG__GEMV_PANEL];
    for (int r = 0; dt == OPREG_DTYPE_F8_E4M3FN && r < OPREG__GEMV_PANEL; r++)
        times[r] = gemv_e4m3_sum(1.0f, seen[r]);
    gemv_panel_out(dt, a, acc, j0, nc, dt == OPREG_DTYPE_F8_E4M3FN ? times : NULL);
}

/* The panel kernels' range functions take panels [c0, c1) of
 * OPREG__GEMV_PANEL columns (gemv.c sizes its tasks so), so that no task
 * holds a part of one: each panel reads every input row from L2 once, for
 * as many weight rows as it has. In column groups: */
#define GEMV_PANEL_GROUPS (OPREG__GEMV_PANEL / OPREG__GEMV_COLS)

/* Panels [c0, c1); without memory for the buffers, the tiles above. */
AI void gemv_panels(int kind, int dt, const struct opreg__gemv_args *a, int64_t c0, int64_t c1) {
    int64_t j = c0 * OPREG__GEMV_PANEL, end = c1 * OPREG__GEMV_PANEL;
    size_t wbn = (size_t)OPREG__GEMV_PANEL * OPREG__GEMV_KB,
           accn = (size_t)a->m * OPREG__GEMV_PANEL * VW;
    float *wb = aligned_alloc(64, (wbn + accn) * sizeof(float));
    if (!wb) {
        gemv_groups(kind, dt, a, c0 * GEMV_PANEL_GROUPS, c1 * GEMV_PANEL_GROUPS);
        return;
    }
    if (end > a->n) end = a->n;
    for (; j < end; j += OPREG__GEMV_PANEL)
        gemv_panel(dt, a, wb, wb + wbn, j,
                   end - j < OPREG__GEMV_PANEL ? (int)(end - j) : OPREG__GEMV_PANEL,
                   j + 2 * OPREG__GEMV_PANEL <= end);
    free(wb);
}

/* linear over column groups [c0, c1): through the tiles, or the panels
 * (@p panel), each with the call's dtype a constant. */
AI void gemv_linear_cols(int panel, const struct opreg__gemv_args *a, int64_t c0, int64_t c1) {
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        panel ? gemv_panels(GEMV_LINEAR_LANES, OPREG_DTYPE_F32, a, c0, c1)
              : gemv_groups(GEMV_LINEAR_LANES, OPREG_DTYPE_F32, a, c0, c1);
        break;
    case OPREG_DTYPE_BF16:
        panel ? gemv_panels(GEMV_LINEAR_PAIRS, OPREG_DTYPE_BF16, a, c0, c1)
              : gemv_groups(GEMV_LINEAR_PAIRS, OPREG_DTYPE_BF16, a, c0, c1);
        break;
    default:
        panel ? gemv_panels(GEMV_LINEAR_LANES, OPREG_DTYPE_F16, a, c0, c1)
              : gemv_groups(GEMV_LINEAR_LANES, OPREG_DTYPE_F16, a, c0, c1);
        break;
    }
}

static void gemv_linear_range(const void *args, int64_t c0, int64_t c1) {
    gemv_linear_cols(0, args, c0, c1);
}

static void gemv_panel_linear_range(const void *args, int64_t c0, int64_t c1) {
    gemv_linear_cols(1, args, c0, c1);
}

static void gemv_panel_fp8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_panels(GEMV_FP8, OPREG_DTYPE_F8_E4M3FN, args, c0, c1);
}

#ifdef OPREG__SIMD_BF16
/* ---- the packed kernels: AVX512-VNNI and AVX512-BF16 ----------------------- */

/* int8 past one tile of input rows: the panel scheme above with VPDPBUSD
 * and gemv_u8_tile's operands: each weight vector flipped to w + 128 (the
 * unsigned operand) as it loads, the input rows signed, so that the
 * weights are multiplied where they lie; each sum is then x.w + 128 *
 * sum(x), and sum(x) is taken once a call. The input rows come packed once
 * in blocks of OPREG__GEMV_KB8 values of k, zeros past k, their sums
 * (uint32, wrapping) after the blocks (gemv_pack_u8). The flips cost a
 * quarter of an instruction per product at 16 rows (each weight vector
 * loads once per four input rows), which other ports than VPDPBUSD's
 * take: Zen 5, one core, M = 16, K = 4096, weights in L3 23.6 -> 25.8
 * GB/s against a sixteenth more products from a packed row of ones that
 * gave sum(w) instead (and copying each block as w + 128 cost the panel
 * about a quarter of its rate). A last block shorter than a vector is
 * copied, zero-padded, so that nothing past k is read (its padding flips
 * to 128, times the input rows' zeros). int32 sums in memory between
 * blocks; they wrap and come out exact as gemv_u8_tile's. */
static void gemv_pack_u8(const struct opreg__gemv_args *a, uint8_t *dst) {
    gemv_sums_s8(a, (uint32_t *)(void *)(dst + opreg__gemv_u8_blocks_bytes(a)));
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KB8)
        for (int64_t i = 0; i < a->m; i++, dst += OPREG__GEMV_KB8) {
            int64_t kb = a->k - p0 < OPREG__GEMV_KB8 ? a->k - p0 : OPREG__GEMV_KB8;
            for (int64_t q = 0; q < OPREG__GEMV_KB8; q += 64) {
                int64_t n = kb - q < 0 ? 0 : kb - q > 64 ? 64 : kb - q;
                __mmask64 live = n == 64 ? ~(__mmask64)0 : (__mmask64)((1ull << n) - 1u);
                /* zeros past k, whose products are then 0 */
                _mm512_store_si512(dst + q,
                                   _mm512_maskz_loadu_epi8(live, (const uint8_t *)a->in +
                                                                     i * a->in_stride + p0 + q));
            }
        }
}

/* Weight rows [j0, j0 + nc) against every input row. @p wb holds a last
 * short block of the weight rows, @p acc the sums (64-byte aligned). */
AI void gemv_u8_panel(const struct opreg__gemv_args *a, int8_t *wb, __m512i *acc, int64_t j0,
                      int nc, int next) {
    const int8_t *w = (const int8_t *)a->w + j0 * a->w_stride;
    const uint8_t *x = a->packed;
    size_t ws = (size_t)a->w_stride;
    int64_t m = a->m;
    const uint32_t *xsum = (const uint32_t *)(const void *)(x + opreg__gemv_u8_blocks_bytes(a));
    gemv_panel_zero(acc, m, nc);
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KB8, x += m * OPREG__GEMV_KB8) {
        int64_t kb = a->k - p0 < OPREG__GEMV_KB8 ? a->k - p0 : OPREG__GEMV_KB8;
        int64_t kv = (kb + 63) / 64 * 64;
        int inplace = kb == kv;
        struct gemv_fetch f =
            gemv_fetch_at((const char *)w, ws, a->k, p0, OPREG__GEMV_KB8, 1, next, 1, 0);
        for (int r = 0; r < nc && !inplace; r++)
            for (int64_t q = 0; q < kv; q += 64) {
                __mmask64 live =
                    kb - q >= 64 ? ~(__mmask64)0 : (__mmask64)((1ull << (kb - q)) - 1u);
                _mm512_store_si512(wb + r * OPREG__GEMV_KB8 + q,
                                   _mm512_maskz_loadu_epi8(live, w + r * ws + p0 + q));
            }
        gemv_panel_block(GEMV_PANEL_U8, p0 == 0, x,
                         inplace ? (const char *)w + p0 : (const char *)wb,
                         inplace ? ws : OPREG__GEMV_KB8, acc, m, kv, nc, &f);
    }
    for (int64_t i = 0; i < m; i++) {
        __m512i d = _mm512_sub_epi32(gemv_hsum16(acc + i * OPREG__GEMV_PANEL),
                                     _mm512_set1_epi32((int)(128u * xsum[i])));
        gemv_scaled_outv(a, i, j0, nc, _mm512_cvtepi32_ps(d));
    }
}

static void gemv_panel_int8_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t j = c0 * OPREG__GEMV_PANEL, end = c1 * OPREG__GEMV_PANEL;
    size_t wbn = (size_t)OPREG__GEMV_PANEL * OPREG__GEMV_KB8,
           accn = (size_t)a->m * OPREG__GEMV_PANEL;
    int8_t *wb = aligned_alloc(64, wbn + accn * sizeof(__m512i));
    if (!wb) {
        gemv_groups(GEMV_INT8, OPREG_DTYPE_I8, a, c0 * GEMV_PANEL_GROUPS, c1 * GEMV_PANEL_GROUPS);
        return;
    }
    if (end > a->n) end = a->n;
    for (; j < end; j += OPREG__GEMV_PANEL)
        gemv_u8_panel(a, wb, (__m512i *)(void *)(wb + wbn), j,
                      end - j < OPREG__GEMV_PANEL ? (int)(end - j) : OPREG__GEMV_PANEL,
                      j + 2 * OPREG__GEMV_PANEL <= end);
    free(wb);
}

#endif

#ifdef OPREG__SIMD_AVX512
/* ---- fp8 through a table of bf16 bits: AVX512-VBMI ------------------------ */

/* Every e4m3 value is a bf16, and VPERMT2B looks 64 codes up in a table of
 * 128 entries at once: gemv_e4m3_pairs makes 64 codes bf16 pairs in five
 * instructions, where vwiden_e4m3_256 and its NaN check take about
 * eighteen, all on the two ports that also run the FMAs. A NaN code is a
 * NaN, which the products carry to the sum, so nothing is checked aside.
 * The pairs kernels (below, with AVX512-BF16) multiply the pairs by
 * VDPBF16PS. The split kernels here take the fp8 calls that the pairs
 * kernels leave (all of them on the avx512 path, and those the choice in
 * gemv.c gives the FMA kernels on the avx512_bf16 one): one more
 * instruction splits a vector of pairs into the floats of its low halves
 * or of its high halves (gemv_pair_half), nine for 64 codes, then FMAs.
 * The floats come in an order of their own (per 64 codes: the low halves
 * of *lo, their high halves, then *hi's), the input rows are packed in it
 * as floats (gemv_pack_fp8_split), and the FMAs do not mind which values
 * of k a lane holds. Each lane adds the products of a pair as
 * vdot_bf16x2 does without AVX512-BF16. Products of two e4m3 values are
 * exact; the tiles and the panels add each lane's in the same order, so a
 * row's results do not depend on how many rows the call has. Measured:
 * docs/performance.md, "fp8 through the table on the FMA kernels". */

/* The bf16 bits of each e4m3fn magnitude code 0x00-0x7F, their high bytes
 * then their low bytes, for VPERMT2B: normals are (code << 4) + 0x3C00,
 * the subnormals m * 2^-9 normal bf16s, 0x7F the NaN 0x7FC0. */
/* clang-format off */
static const uint8_t gemv_e4m3_bf16_bytes[256] __attribute__((aligned(64))) = {
    /* high bytes */
    0x00, 0x3B, 0x3B, 0x3B, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
    0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D, 0x3D,
    0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E,
    0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F,
    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
    0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
    0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42,
    0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x7F,
    /* low bytes */
    0x00, 0x00, 0x80, 0xC0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xF0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0, 0xC0,
};
/* clang-format on */

/* The functions that use VPERMT2B (AVX512-VBMI): their target adds it to
 * the path's, and gemv.c calls them only where cpuid has it. */
#ifdef OPREG__SIMD_BF16
#define GEMV_VBMI                                                                                  \
    __attribute__((target(                                                                         \
        "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,avx2,fma,f16c,avx512vbmi")))
#else
#define GEMV_VBMI                                                                                  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,avx512vbmi")))
#endif

/* The table above in four registers: high bytes 0-63, 64-127, low bytes
 * 0-63, 64-127. */
GEMV_VBMI AI void gemv_e4m3_table(__m512i tab[4]) {
    for (int t = 0; t < 4; t++)
        tab[t] = _mm512_load_si512(gemv_e4m3_bf16_bytes + 64 * t);
}

/* 64 e4m3fn codes at p (the first n, zeros after, when n < 64) as bf16
 * pairs: *lo holds codes 0-7, 16-23, 32-39 and 48-55, *hi the others, the
 * order of VPUNPCKLBW and VPUNPCKHBW, in which the input rows are packed
 * too. Two table lookups, the sign bit, two interleaves. */
GEMV_VBMI AI void gemv_e4m3_pairs(const uint8_t *p, int64_t n, const __m512i tab[4], vf *lo,
                                  vf *hi) {
    __m512i c =
        n >= 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8((__mmask64)((1ull << n) - 1u), p);
    /* VPERMT2B reads bits 0-6 of each code; bit 7, the sign, ORed in */
    __m512i h = _mm512_permutex2var_epi8(tab[0], c, tab[1]);
    __m512i l = _mm512_permutex2var_epi8(tab[2], c, tab[3]);
    h = _mm512_ternarylogic_epi32(h, c, _mm512_set1_epi8((char)0x80), 0xF8); /* h | (c & 0x80) */
    *lo = _mm512_castsi512_ps(_mm512_unpacklo_epi8(l, h));
    *hi = _mm512_castsi512_ps(_mm512_unpackhi_epi8(l, h));
}

/* The floats of the low (bf16) halves of @p v's 32-bit lanes, or with
 * @p high of the high halves. */
GEMV_VBMI AI vf gemv_pair_half(vf v, int high) {
    __m512i u = _mm512_castps_si512(v);
    return _mm512_castsi512_ps(high ? _mm512_and_si512(u, _mm512_set1_epi32(-65536))
                                    : _mm512_slli_epi32(u, 16));
}

/* 64 e4m3fn codes at p (the first n, zeros after, when n < 64) as four
 * vectors of floats in the split order. */
GEMV_VBMI AI void gemv_e4m3_split(const uint8_t *p, int64_t n, const __m512i tab[4], vf f[4]) {
    vf pr[2];
    gemv_e4m3_pairs(p, n, tab, &pr[0], &pr[1]);
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++)
        f[s] = gemv_pair_half(pr[s / 2], s % 2);
}

_Static_assert(OPREG__GEMV_KB % 64 == 0, "the split kernels widen 64 codes at a time");

/* 64 e4m3fn codes at p (the first n, zeros after; all zeros when n <= 0)
 * at @p dst as the pairs kernels lay them out (two vectors of bf16 pairs)
 * or with @p split as the split kernels do (four vectors of floats). */
GEMV_VBMI AI void gemv_e4m3_store(int split, const uint8_t *p, int64_t n, const __m512i tab[4],
                                  void *dst) {
    vf v[4] = { vzero(), vzero(), vzero(), vzero() };
    if (n > 0 && split)
        gemv_e4m3_split(p, n, tab, v);
    else if (n > 0)
        gemv_e4m3_pairs(p, n, tab, &v[0], &v[1]);
    for (int h = 0; h < (split ? 4 : 2); h++)
        vstore(OPREG_DTYPE_F32, (float *)dst + h * VW, v[h]);
}

/* The fp8 input rows for the pairs kernels (bf16 pairs in blocks of
 * OPREG__GEMV_KBP values) or with @p split the split ones (floats in
 * gemv_pack's blocks of OPREG__GEMV_KB): block b of k, row i at dst + (b
 * * m + i) * block values, zeros past k. */
GEMV_VBMI AI void gemv_pack_fp8_vbmi(int split, const struct opreg__gemv_args *a, void *dst) {
    int64_t kblk = split ? OPREG__GEMV_KB : OPREG__GEMV_KBP;
    size_t xe = split ? sizeof(float) : sizeof(uint16_t);
    char *d = dst;
    __m512i tab[4];
    gemv_e4m3_table(tab);
    for (int64_t p0 = 0; p0 < a->k; p0 += kblk)
        for (int64_t i = 0; i < a->m; i++, d += (size_t)kblk * xe) {
            const uint8_t *src = (const uint8_t *)a->in + i * a->in_stride + p0;
            for (int64_t q = 0; q < kblk; q += 4 * VW)
                gemv_e4m3_store(split, src + q, a->k - p0 - q, tab, d + (size_t)q * xe);
        }
}

GEMV_VBMI static void gemv_pack_fp8_split(const struct opreg__gemv_args *a, float *dst) {
    gemv_pack_fp8_vbmi(1, a, dst);
}

/* fp8 weight rows [j0, j0 + nc), nc <= OPREG__GEMV_PANEL, against every
 * input row, each block widened into @p wb first (zeros past k to the next
 * 64 values, which the tiles read): bf16 pairs in blocks of
 * OPREG__GEMV_KBP for the pairs tiles, or with @p split floats in blocks
 * of OPREG__GEMV_KB for the f32 ones; @p acc holds the sums. */
GEMV_VBMI AI void gemv_fp8_panel_vbmi(int split, const struct opreg__gemv_args *a,
                                      const __m512i tab[4], char *wb, float *acc, int64_t j0,
                                      int nc, int next) {
    int64_t kblk = split ? OPREG__GEMV_KB : OPREG__GEMV_KBP;
    size_t ws = (size_t)a->w_stride, xe = split ? sizeof(float) : sizeof(uint16_t);
    const uint8_t *w = (const uint8_t *)a->w + (size_t)j0 * ws;
    const char *x = a->packed;
    gemv_panel_zero(acc, a->m, nc);
    for (int64_t p0 = 0; p0 < a->k; p0 += kblk, x += (size_t)(a->m * kblk) * xe) {
        int64_t kb = a->k - p0 < kblk ? a->k - p0 : kblk;
        struct gemv_fetch f = gemv_fetch_at((const char *)w, ws, a->k, p0, kblk, 1, next, 0, 0);
        for (int r = 0; r < nc; r++)
            for (int64_t q = 0; q < kb; q += 4 * VW)
                gemv_e4m3_store(split, w + r * ws + p0 + q, kb - q, tab,
                                wb + (size_t)(r * kblk + q) * xe);
        gemv_panel_block(split ? GEMV_PANEL_F32 : GEMV_PANEL_PAIRS, p0 == 0, x, wb,
                         (size_t)kblk * xe, acc, a->m, (kb + 4 * VW - 1) / (4 * VW) * (4 * VW), nc,
                         &f);
    }
    gemv_panel_out(OPREG_DTYPE_F8_E4M3FN, a, acc, j0, nc, NULL);
}

/* The fp8 tiles' multiplies for one step of 64 codes: input rows at @p x
 * (@p kblk values apart), the weights' pairs in @p wl and @p wh. The pairs
 * tile's two steps of VDPBF16PS, or the split tile's four of FMAs, each on
 * the floats of one half of *wl or *wh. */
GEMV_VBMI AI void gemv_pairs_steps(const char *x, int64_t kblk, const vf *wl, const vf *wh,
                                   vf acc[][OPREG__GEMV_COLS], int mt, int nr) {
    const uint16_t *xp = (const uint16_t *)(const void *)x;
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++) {
        vf xv = vload_bits(xp + i * kblk);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vdot_bf16x2(acc[i][r], xv, wl[r]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++) {
        vf xv = vload_bits(xp + i * kblk + 2 * VW);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vdot_bf16x2(acc[i][r], xv, wh[r]);
    }
}

GEMV_VBMI AI void gemv_split_steps(const char *x, int64_t kblk, const vf *wl, const vf *wh,
                                   vf acc[][OPREG__GEMV_COLS], int mt, int nr) {
#pragma GCC unroll 4
    for (int h = 0; h < 4; h++) {
        vf wv[OPREG__GEMV_COLS];
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            wv[r] = gemv_pair_half(h / 2 ? wh[r] : wl[r], h % 2);
#pragma GCC unroll 4
        for (int i = 0; i < mt; i++) {
            vf xv = vload(OPREG_DTYPE_F32, (const float *)(const void *)x + i * kblk + h * VW);
#pragma GCC unroll 4
            for (int r = 0; r < nr; r++)
                acc[i][r] = vfma(xv, wv[r], acc[i][r]);
        }
    }
}

/* One tile of fp8 for the pairs or (@p split) the split kernels (few
 * input rows, sums in registers): input rows [i0, i0 + mt) from the packed
 * blocks, weight rows [j0, j0 + nr) widened 64 codes a step, each fetched
 * GEMV_TILE_AHEAD bytes ahead. */
GEMV_VBMI AI void gemv_fp8_vbmi_tile(int split, const struct opreg__gemv_args *a,
                                     const __m512i tab[4], int64_t i0, int mt, int64_t j0, int nr) {
    int64_t kblk = split ? OPREG__GEMV_KB : OPREG__GEMV_KBP, k = a->k;
    size_t xe = split ? sizeof(float) : sizeof(uint16_t), ws = (size_t)a->w_stride;
    const char *xb = (const char *)a->packed + (size_t)(i0 * kblk) * xe;
    const uint8_t *w = (const uint8_t *)a->w + j0 * a->w_stride;
    vf acc[GEMV_MAX_ROWS][OPREG__GEMV_COLS], wl[OPREG__GEMV_COLS], wh[OPREG__GEMV_COLS];
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            acc[i][r] = vzero();
    for (int64_t p = 0; p < k; p += 4 * VW) {
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            _mm_prefetch(gemv_tile_ahead(w, ws, r, nr, p, k), _MM_HINT_T0);
            gemv_e4m3_pairs(w + r * ws + p, k - p, tab, &wl[r], &wh[r]);
        }
        /* from one block to the next: a->m rows of kblk values */
        const char *x = xb + (size_t)(p / kblk * a->m * kblk + p % kblk) * xe;
        /* the pairs: two steps of VDPBF16PS; split: four of FMAs, each on
         * the floats of one half of *wl or *wh */
        if (split)
            gemv_split_steps(x, kblk, wl, wh, acc, mt, nr);
        else
            gemv_pairs_steps(x, kblk, wl, wh, acc, mt, nr);
    }
#pragma GCC unroll 4
    for (int i = 0; i < mt; i++)
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++)
            opreg__gemv_scaled_out(a, i0 + i, j0 + r, vhsum(acc[i][r]));
}

/* Every input row against fp8 weight rows [j0, j0 + nr) by the tiles. */
GEMV_VBMI AI void gemv_fp8_vbmi_rows(int split, const struct opreg__gemv_args *a,
                                     const __m512i tab[4], int64_t j0, int nr) {
    int64_t i = 0;
    for (; i + VGEMV_ROWS <= a->m; i += VGEMV_ROWS)
        gemv_fp8_vbmi_tile(split, a, tab, i, VGEMV_ROWS, j0, nr);
    switch (a->m - i) {
    case 3:
        gemv_fp8_vbmi_tile(split, a, tab, i, 3, j0, nr);
        break;
    case 2:
        gemv_fp8_vbmi_tile(split, a, tab, i, 2, j0, nr);
        break;
    case 1:
        gemv_fp8_vbmi_tile(split, a, tab, i, 1, j0, nr);
        break;
    default:
        break;
    }
}

/* fp8 column groups [c0, c1), or panels past one tile of input rows, by
 * the pairs kernels or (@p split) the split ones. The two widened blocks
 * are the same size: OPREG__GEMV_KBP bf16 values or OPREG__GEMV_KB floats
 * a row. */
GEMV_VBMI AI void gemv_fp8_vbmi_cols(int split, const struct opreg__gemv_args *a, int64_t c0,
                                     int64_t c1) {
    int64_t unit = a->m > VGEMV_ROWS ? OPREG__GEMV_PANEL : OPREG__GEMV_COLS;
    int64_t j = c0 * unit, end = c1 * unit;
    size_t wbn = (size_t)OPREG__GEMV_PANEL * OPREG__GEMV_KBP * sizeof(uint16_t);
    char *buf = a->m > VGEMV_ROWS
                    ? aligned_alloc(64, wbn + (size_t)a->m * OPREG__GEMV_PANEL * VW * sizeof(float))
                    : NULL;
    __m512i tab[4];
    gemv_e4m3_table(tab);
    if (end > a->n) end = a->n;
    for (; buf && j < end; j += OPREG__GEMV_PANEL)
        gemv_fp8_panel_vbmi(split, a, tab, buf, (float *)(void *)(buf + wbn), j,
                            end - j < OPREG__GEMV_PANEL ? (int)(end - j) : OPREG__GEMV_PANEL,
                            j + 2 * OPREG__GEMV_PANEL <= end);
    for (; j + OPREG__GEMV_COLS <= end; j += OPREG__GEMV_COLS)
        gemv_fp8_vbmi_rows(split, a, tab, j, OPREG__GEMV_COLS);
    for (; j < end; j++)
        gemv_fp8_vbmi_rows(split, a, tab, j, 1);
    free(buf);
}

GEMV_VBMI static void gemv_fp8_split_range(const void *args, int64_t c0, int64_t c1) {
    gemv_fp8_vbmi_cols(1, args, c0, c1);
}

#endif

#ifdef OPREG__SIMD_BF16
/* ---- the pairs kernels: VDPBF16PS where it is fast ------------------------ */

/* Where VDPBF16PS runs about as many instructions a second as FMA (Zen 4
 * and 5; gemv_pairs_rate times it, gemv.c decides), one of them does twice
 * an FMA's products, and these kernels take bf16 linear past one tile of
 * input rows and fp8 cutlass_scaled_mm at every m instead of the FMA and
 * split kernels above. bf16: the panel scheme with the weights' pairs
 * multiplied where they lie, nothing widened. fp8: the weights become bf16
 * pairs through the table above (gemv_e4m3_pairs), the input rows too,
 * once per call. The input rows come packed in blocks of
 * OPREG__GEMV_KBP values of k, row i of block b at (b * m + i) *
 * OPREG__GEMV_KBP, zeros past k (gemv_pack_pairs_bf16 and _fp8).
 *
 * Each lane adds its pairs in gemv_pairs_tile's order and the lanes are
 * added as vhsum adds them, so a row's results do not depend on how many
 * rows the call has. fp8's products are exact (VDPBF16PS reads no
 * subnormal here: the smallest e4m3 value, 2^-9, is a normal bf16) and
 * every partial sum is a multiple of 2^-18 or zero, so nothing is flushed
 * either: the sums are the FMA kernels' up to their order. NaN codes are
 * bf16 NaNs, which the products carry to the sum. */

/* The input rows for the pairs kernels: bf16 copied, fp8 through
 * gemv_e4m3_pairs (64 values a step, the blocks being a multiple). */
static void gemv_pack_pairs_bf16(const struct opreg__gemv_args *a, uint16_t *dst) {
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KBP)
        for (int64_t i = 0; i < a->m; i++, dst += OPREG__GEMV_KBP) {
            const uint16_t *src = (const uint16_t *)a->in + i * a->in_stride + p0;
            int64_t kb = a->k - p0;
            for (int64_t q = 0; q < OPREG__GEMV_KBP; q += 2 * VW)
                vstore(OPREG_DTYPE_F32, dst + q,
                       kb - q >= 2 * VW ? vload_bits(src + q)
                       : kb > q         ? vload_bits_n(src + q, (kb - q) * 2)
                                        : vzero());
        }
}

GEMV_VBMI static void gemv_pack_pairs_fp8(const struct opreg__gemv_args *a, uint16_t *dst) {
    gemv_pack_fp8_vbmi(0, a, dst);
}

/* bf16 weight rows [j0, j0 + nc), nc <= OPREG__GEMV_PANEL, against every
 * input row, multiplied where they lie; @p acc holds the sums. */
AI void gemv_pairs_panel_bf16(const struct opreg__gemv_args *a, float *acc, int64_t j0, int nc,
                              int next) {
    size_t ws = (size_t)a->w_stride * 2;
    const char *w = (const char *)a->w + (size_t)j0 * ws;
    const uint16_t *x = a->packed;
    gemv_panel_zero(acc, a->m, nc);
    for (int64_t p0 = 0; p0 < a->k; p0 += OPREG__GEMV_KBP, x += a->m * OPREG__GEMV_KBP) {
        int64_t kb = a->k - p0 < OPREG__GEMV_KBP ? a->k - p0 : OPREG__GEMV_KBP;
        struct gemv_fetch f = gemv_fetch_at(w, ws, a->k, p0, OPREG__GEMV_KBP, 2, next, 1, 1);
        gemv_panel_block(GEMV_PANEL_PAIRS, p0 == 0, x, w + (size_t)p0 * 2, ws, acc, a->m, kb, nc,
                         &f);
    }
    gemv_panel_out(OPREG_DTYPE_BF16, a, acc, j0, nc, NULL);
}

/* The pairs kernels' range functions (struct opreg__gemv_pairs): panels
 * [c0, c1) past one tile of input rows (the tiles without memory for the
 * panels' buffers), column groups [c0, c1) up to it. */
static void gemv_pairs_bf16_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t j = c0 * OPREG__GEMV_PANEL, end = c1 * OPREG__GEMV_PANEL;
    float *acc = aligned_alloc(64, (size_t)a->m * OPREG__GEMV_PANEL * VW * sizeof(float));
    if (!acc) {
        gemv_groups(GEMV_LINEAR_PAIRS, OPREG_DTYPE_BF16, a, c0 * GEMV_PANEL_GROUPS,
                    c1 * GEMV_PANEL_GROUPS);
        return;
    }
    if (end > a->n) end = a->n;
    for (; j < end; j += OPREG__GEMV_PANEL)
        gemv_pairs_panel_bf16(a, acc, j,
                              end - j < OPREG__GEMV_PANEL ? (int)(end - j) : OPREG__GEMV_PANEL,
                              j + 2 * OPREG__GEMV_PANEL <= end);
    free(acc);
}

GEMV_VBMI static void gemv_pairs_fp8_range(const void *args, int64_t c0, int64_t c1) {
    gemv_fp8_vbmi_cols(0, args, c0, c1);
}

/* TSC ticks for 1024 steps of 16 independent sums, each step one
 * VDPBF16PS (@p dot) or one VFMADD231PS a sum: enough sums to cover either
 * instruction's latency at two a cycle, so the loop runs at the issue
 * rate. The operands are hidden from the compiler, and the sums used after
 * the clock stops, so the loop is neither folded nor spilled (a barrier on
 * the sums at every step made GCC keep them on the stack, and the loop
 * then timed the store-to-load round trip: 0.85-0.93 where the rates are
 * equal). */
static uint64_t gemv_rate_ticks(int dot) {
    vf s[16], b = vset1(1.0f), c = vset1(0.5f);
    __asm__ volatile("" : "+v"(b), "+v"(c));
    for (int i = 0; i < 16; i++)
        s[i] = vset1((float)i);
    uint64_t t0 = __rdtsc();
    for (int n = 0; n < 1024; n++)
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            s[i] = dot ? _mm512_dpbf16_ps(s[i], (__m512bh)b, (__m512bh)c)
                       : _mm512_fmadd_ps(s[i], b, c);
    uint64_t t = __rdtsc() - t0;
    vf sum = s[0];
    for (int i = 1; i < 16; i++)
        sum = _mm512_add_ps(sum, s[i]);
    __asm__ volatile("" : : "v"(sum));
    return t;
}

/* VDPBF16PS's instructions a second over VFMADD231PS's on this CPU: the
 * two timed alternately, the best of five rounds each. About 25 us. */
static double gemv_pairs_rate(void) {
    uint64_t best[2] = { UINT64_MAX, UINT64_MAX };
    for (int round = 0; round < 5; round++)
        for (int dot = 0; dot < 2; dot++) {
            uint64_t t = gemv_rate_ticks(dot);
            if (t < best[dot]) best[dot] = t;
        }
    return best[1] ? (double)best[0] / (double)best[1] : 0.0;
}

static const struct opreg__gemv_pairs gemv_pairs = {
    .bf16 = gemv_pairs_bf16_range,
    .fp8 = gemv_pairs_fp8_range,
    .pack_bf16 = gemv_pack_pairs_bf16,
    .pack_fp8 = gemv_pack_pairs_fp8,
    .rate = gemv_pairs_rate,
};
#endif

#endif
