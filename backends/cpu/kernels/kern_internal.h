/* Shared by the CPU kernel files: the argument blocks that a family's entry
 * point fills once per call, the per-path tables of row-range functions, the
 * thread spreader and scalar dtype helpers for the portable path. */
#ifndef OPREG_CPU_KERN_INTERNAL_H
#define OPREG_CPU_KERN_INTERNAL_H

#include "backends/cpu/kernels/cpu_kernels.h"
#include "opreg/tensor.h"
#include "common/dtype_convert.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Elementwise ops and per-tensor quant are cut into chunks of this many
 * elements, the unit handed to a thread. */
#define OPREG__CPU_CHUNK 8192

/* rms_norm writes out from in; fused_add writes res (z) and out (= in). */
struct opreg__norm_args {
    void *out;
    const void *in;
    void *res;
    const void *w;
    int64_t out_stride, in_stride, res_stride, hidden;
    float eps;
    int dt;
    int nt; /* rms_norm: streaming stores for out (opreg__cpu_stream) */
};

/* Gated: rows of d outputs. Elementwise: n elements in chunks. */
struct opreg__act_args {
    void *out;
    const void *in;
    int64_t out_stride, in_stride, d, n;
    int act, dt;
    int nt; /* streaming stores for out (opreg__cpu_stream) */
};

struct opreg__rope_args {
    const int64_t *pos, *offsets;
    void *q, *k;
    const void *cache;
    int64_t q_stride, k_stride, nq, nk, head_size, rot_dim;
    int neox, dt;
};

/* Static quant: n elements in chunks. Dynamic int8: rows of hidden.
 * amax: one partial maximum per chunk into partial[]. */
struct opreg__quant_args {
    void *out;
    float *scales;
    float *partial;
    const void *in;
    int64_t n, in_stride, hidden;
    float scale;
    int dt;
    int nt; /* int8: streaming stores for out (opreg__cpu_stream) */
};

/* paged_attention_v1: work item r is sequence r / hkv, KV head r % hkv.
 * fp8 caches (kind 1 e4m3fn, 2 e5m2) decode through a table of code *
 * kv_scale on the portable path; the SIMD paths widen codes exactly in
 * registers and put kv_scale on the logits and the output. kind 0 caches
 * are in dt, the query's dtype. */
struct opreg__pa_args {
    void *out;
    const void *q, *kc, *vc;
    const int32_t *bt, *len;
    const float *alibi;
    int64_t hq, hkv, d, x, bs, max_blocks;
    int64_t kblk, vblk; /* block strides of the caches, elements */
    int64_t q_stride;   /* from one sequence's query to the next, elements */
    float scale;
    float kv_scale; /* fp8 caches: the factor on a code's value */
    int dt, kind;
    /* bf16 keys multiplied as pairs where they lie (vdot_bf16x2), not
     * widened first: attention.c chooses, attention_simd.h says how */
    bool pairs;
};

/* A GEMV (gemv.c): out [m, n] from m input rows of k elements, a->in_stride
 * apart, and n weight rows of k elements, a->w_stride apart; one work item
 * is OPREG__GEMV_COLS output columns. linear: dt is F32, F16 or BF16 for
 * in, w, bias and out. cutlass_scaled_mm: dt is I8 or F8_E4M3FN for in
 * (a) and w (b's columns), out and bias in out_dt, a_scales one per row
 * when per_token, b_scales one per column when per_channel. */
struct opreg__gemv_args {
    void *out;
    const void *in, *w, *bias;
    const float *a_scales, *b_scales;
    int64_t m, n, k, in_stride, w_stride;
    int dt, out_dt;
    int per_token, per_channel;
    /* The input rows converted once per call: for gemv_int8_u8, each
     * row's sum (m uint32 values, wrapping); for gemv_fp8 and the panel
     * kernels, f32 in blocks of k (gemv_pack in gemv_simd.h; int8 panels:
     * gemv_pack_u8). */
    const void *packed;
    /* Tiles of this many input rows or more fetch their weights ahead
     * (gemv_tile_ahead): opreg__cpu_gemv_fetch_rows(). */
    int fetch_rows;
};

#define OPREG__GEMV_COLS 4
/* The panel kernels: weight rows widened together, and values of k a block. */
#define OPREG__GEMV_PANEL (4 * OPREG__GEMV_COLS)
#define OPREG__GEMV_KB    128
#define OPREG__GEMV_KB8   512 /* int8 values of k a block */
#define OPREG__GEMV_KBP   256 /* bf16 pairs panel: values of k a block */

/* The bytes of the int8 panels' packed input rows (gemv_pack_u8) up to
 * the rows' sums that follow them: the blocks of k of every row, the last
 * block padded. */
static inline int64_t opreg__gemv_u8_blocks_bytes(const struct opreg__gemv_args *a) {
    return (a->k + OPREG__GEMV_KB8 - 1) / OPREG__GEMV_KB8 * OPREG__GEMV_KB8 * a->m;
}

/* The portable paged_attention_v1 over items [r0, r1). */
void opreg__cpu_pa_portable_range(const void *args, int64_t r0, int64_t r1);

/* One block of the online softmax of one query head. In: lg[0..n) the raw
 * q.k of the block's first n tokens, the first of which is @p pos0 - 1
 * positions before the sequence's last (ALiBi's j - L + 1). Out: lg[0..bs)
 * the block's probabilities under the new running maximum *m (0 past n);
 * *sum and acc[0..d) rescaled to that maximum, and *sum plus this block. */
static inline void opreg__pa_softmax_block(float *lg, int64_t n, int64_t bs, float scale,
                                           float slope, int64_t pos0, float *m, float *sum,
                                           float *acc, int64_t d) {
    float mx = *m, rescale;
    for (int64_t off = 0; off < n; off++) {
        lg[off] = scale * lg[off] + slope * (float)(pos0 + off);
        if (lg[off] > mx) mx = lg[off];
    }
    rescale = expf(*m - mx);
    *m = mx;
    *sum *= rescale;
    for (int64_t i = 0; i < d; i++)
        acc[i] *= rescale;
    for (int64_t off = 0; off < bs; off++) {
        lg[off] = off < n ? expf(lg[off] - mx) : 0.0f;
        *sum += lg[off];
    }
}

/* This thread's kernel scratch: at least @p bytes, 64-byte aligned, owned
 * by the thread (kept between calls, grown when a call asks for more,
 * freed when the thread exits); NULL when no memory is left, and a kernel
 * then takes a path that needs none. For buffers too large for a stack: a
 * host's threads may have small ones. One user at a time: a range function
 * holds it only while it runs and calls nothing else that takes it. */
void *opreg__cpu_scratch(size_t bytes);

/* Query heads that one pass over a KV head's blocks serves. */
#define OPREG__CPU_PA_HEADS 8

/* Processes rows (or chunks) [r0, r1) of the op whose args @p a points to. */
typedef void (*opreg__cpu_range_fn)(const void *a, int64_t r0, int64_t r1);

/* The pairs kernels (gemv_simd.h): bf16 products by VDPBF16PS, for CPUs
 * that run it about as fast as FMA (gemv.c chooses, by @p rate). Input rows
 * as bf16 in blocks of OPREG__GEMV_KBP values of k, packed by pack_bf16 or
 * pack_fp8 into opreg__gemv_args.packed. */
struct opreg__gemv_pairs {
    /* bf16 linear past one tile of input rows */
    opreg__cpu_range_fn bf16;
    /* fp8 cutlass_scaled_mm, any rows; it and pack_fp8 need AVX512-VBMI */
    opreg__cpu_range_fn fp8;
    void (*pack_bf16)(const struct opreg__gemv_args *a, uint16_t *dst);
    void (*pack_fp8)(const struct opreg__gemv_args *a, uint16_t *dst);
    /* VDPBF16PS's instructions a second over VFMADD231PS's, timed now */
    double (*rate)(void);
};

/* One SIMD path, a table of range functions; the portable path has none
 * (NULL). Each *_simd.h body is written once against the vector layer (vf,
 * VW, vload, ...) and compiled once per ISA: simd_avx2.c, simd_avx512.c and
 * simd_avx512bf16.c each set their target with a pragma, include their
 * simd_<isa>.h and then the same bodies, and fill this table from them.
 * The bodies are static functions under their own names (rms_norm_range in
 * norms_simd.h), so grep and ctags find each in one place, and no macro
 * pastes a name or carries logic. This is how C compiles one body for
 * several vector widths without -m flags: target_clones would clone a
 * function, but not swap its 256-bit intrinsics for 512-bit ones. */
struct opreg__cpu_simd {
    opreg__cpu_range_fn rms_norm, fused_add_rms_norm;
    opreg__cpu_range_fn gated, elementwise;
    opreg__cpu_range_fn rotary;
    opreg__cpu_range_fn int8_static, int8_dynamic, fp8_static, amax;
    /* gemv_fp8 on the input rows that gemv_pack converted. */
    opreg__cpu_range_fn gemv_linear, gemv_int8, gemv_fp8;
    /* NULL unless the path has VPDPBUSD: gemv_int8 on the input rows in
     * opreg__gemv_args.packed. */
    opreg__cpu_range_fn gemv_int8_u8;
    /* Each input row's sum, as gemv_int8_u8 takes them (m uint32). */
    void (*gemv_sums_s8)(const struct opreg__gemv_args *a, uint32_t *dst);
    /* More input rows than gemv_tile_rows: the panel kernels, linear and
     * fp8 cutlass_scaled_mm on the rows that gemv_pack converted. */
    opreg__cpu_range_fn gemv_panel_linear, gemv_panel_fp8;
    void (*gemv_pack)(const struct opreg__gemv_args *a, float *dst);
    int gemv_tile_rows;
    /* NULL unless the path has VPDPBUSD: int8 past gemv_tile_rows, on the
     * rows that gemv_pack_u8 converted (blocks of OPREG__GEMV_KB8). */
    opreg__cpu_range_fn gemv_panel_int8;
    void (*gemv_pack_u8)(const struct opreg__gemv_args *a, uint8_t *dst);
    /* NULL unless the path has VDPBF16PS. */
    const struct opreg__gemv_pairs *gemv_pairs;
    /* NULL unless the path is AVX-512: fp8 cutlass_scaled_mm at any m by
     * FMAs on weights widened through a table (gemv_simd.h, the split
     * kernels), on the input rows that gemv_pack_fp8_split converted (f32
     * in blocks of OPREG__GEMV_KB); both need AVX512-VBMI, which gemv.c
     * checks. */
    opreg__cpu_range_fn gemv_fp8_split;
    void (*gemv_pack_fp8_split)(const struct opreg__gemv_args *a, float *dst);
    /* NULL when the call's sizes do not suit the path: see attention.c. */
    opreg__cpu_range_fn attention;
    /* topk_softmax's max and sum of e^(l - max) of a row of finite logits;
     * false for a row that is not (moe_simd.h, moe.c). */
    bool (*softmax_stats)(const float *l, int64_t n, float *mx, float *sum);
};

extern const struct opreg__cpu_simd opreg__cpu_simd_avx2;
extern const struct opreg__cpu_simd opreg__cpu_simd_avx512;
extern const struct opreg__cpu_simd opreg__cpu_simd_avx512bf16;

/* The table of path @p isa (never above what the CPU has), or NULL for
 * portable C. */
const struct opreg__cpu_simd *opreg__cpu_simd_for(int isa);

/* Run fn over [0, rows), split into contiguous ranges over threads when
 * @p bytes (moved by the whole call) is large enough; else on this thread. */
void opreg__cpu_parallel(opreg__cpu_range_fn fn, const void *a, int64_t rows, int64_t bytes);

/* Asks for the cache lines of [p, p + bytes) ahead of the loads that will
 * read them: a hint, which never faults, past the data's end too. */
static inline __attribute__((always_inline)) void opreg__cpu_prefetch(const void *p, size_t bytes) {
    for (size_t q = 0; q < bytes; q += 64)
        __builtin_prefetch((const char *)p + q, 0, 3);
}

/* ---- scalar helpers for the portable path --------------------------------- */

static inline size_t opreg__cpu_es(int dt) {
    return dt == OPREG_DTYPE_F32 ? 4 : 2;
}

/* Element @p i of @p p; @p i may be negative (a negative stride). */
static inline const void *opreg__cpu_at(int dt, const void *p, int64_t i) {
    return (const char *)p + (ptrdiff_t)i * (ptrdiff_t)opreg__cpu_es(dt);
}

static inline void *opreg__cpu_at_mut(int dt, void *p, int64_t i) {
    return (char *)p + (ptrdiff_t)i * (ptrdiff_t)opreg__cpu_es(dt);
}

static inline float opreg__cpu_ld(int dt, const void *p, int64_t i) {
    if (dt == OPREG_DTYPE_F32) return ((const float *)p)[i];
    if (dt == OPREG_DTYPE_BF16) return opreg__bf16_to_f32(((const uint16_t *)p)[i]);
    return opreg__f16_to_f32(((const uint16_t *)p)[i]);
}

static inline void opreg__cpu_st(int dt, void *p, int64_t i, float v) {
    if (dt == OPREG_DTYPE_F32)
        ((float *)p)[i] = v;
    else if (dt == OPREG_DTYPE_BF16)
        ((uint16_t *)p)[i] = opreg__f32_to_bf16(v);
    else
        ((uint16_t *)p)[i] = opreg__f32_to_f16(v);
}

/* (T)v back in float: the intermediate roundings of §3. */
static inline float opreg__cpu_round(int dt, float v) {
    if (dt == OPREG_DTYPE_BF16) return opreg__bf16_to_f32(opreg__f32_to_bf16(v));
    if (dt == OPREG_DTYPE_F16) return opreg__f16_to_f32(opreg__f32_to_f16(v));
    return v;
}

/* linear's output element (i, j) from its f32 sum: plus the bias, rounded
 * once to dt. */
static inline void opreg__gemv_linear_out(int dt, const struct opreg__gemv_args *a, int64_t i,
                                          int64_t j, float acc) {
    if (a->bias) acc += opreg__cpu_ld(dt, a->bias, j);
    opreg__cpu_st(dt, a->out, i * a->n + j, acc);
}

/* cutlass_scaled_mm's output element (i, j) from its sum, in the order of
 * vLLM's CUTLASS epilogue (and of the oneDNN provider):
 * t = acc * b_scale, v = fmaf(a_scale, t, bias) (a_scale * t without one),
 * then one rounding to out_dt. */
static inline void opreg__gemv_scaled_out(const struct opreg__gemv_args *a, int64_t i, int64_t j,
                                          float acc) {
    float t = acc * a->b_scales[a->per_channel ? j : 0];
    float s = a->a_scales[a->per_token ? i : 0];
    float v = a->bias ? fmaf(s, t, opreg__cpu_ld(a->out_dt, a->bias, j)) : s * t;
    opreg__cpu_st(a->out_dt, a->out, i * a->n + j, v);
}

#endif
