/* Shared by the oneDNN kernel files: the matmul primitive cache, the
 * per-thread stream and scratch buffer, and the conversion loops. */
#ifndef OPREG_BACKENDS_CPU_ONEDNN_INTERNAL_H
#define OPREG_BACKENDS_CPU_ONEDNN_INTERNAL_H

#include "backends/cpu/onednn/onednn.h"
#include "common/internal.h"

#include <oneapi/dnnl/dnnl.h>

/* What a matmul primitive is specialised for. Weights are always [K, N]
 * column-major (tag "ba"): linear's [N, K] row-major weight and
 * cutlass_scaled_mm's b are both that layout, so neither is copied. Scale
 * values are not part of the key: the primitives take none (scaled_mm.c). */
typedef struct opreg__mm_key {
    dnnl_data_type_t src, wei, bias, dst; /* bias dnnl_data_type_undef: none */
    int64_t m, n, k;
    int threads; /* the OpenMP team's width; set by opreg__mm_acquire */
} opreg__mm_key;

typedef struct opreg__mm_prim opreg__mm_prim;

/* Look up or create the primitive for @p key; the caller holds a reference
 * until opreg__mm_release(). ::OPREG_ERR_UNSUPPORTED when oneDNN has no
 * implementation for it on this CPU (remembered, so asking again is cheap). */
opreg_status opreg__mm_acquire(const opreg__mm_key *key, opreg__mm_prim **out);
void opreg__mm_release(opreg__mm_prim *prim);

/* oneDNN's name for the implementation, e.g. "gemm:jit". */
const char *opreg__mm_impl(const opreg__mm_prim *prim);

/* Bytes of scratchpad oneDNN asked for @p prim; each execution passes a
 * buffer of the calling thread that size (0: none). */
size_t opreg__mm_scratchpad_bytes(const opreg__mm_prim *prim);

/* Run on this thread's stream and wait. @p bias may be NULL when the key has
 * none. Pointers are to the first elements of the key's layouts. */
opreg_status opreg__mm_execute(const opreg__mm_prim *prim, const void *src, const void *wei,
                               const void *bias, void *dst);

/* This thread's scratch buffer of at least @p bytes, 64-byte aligned. It is
 * reused by the next call on the thread and freed when the thread exits. */
opreg_status opreg__onednn_scratch(size_t bytes, void **out);

/* Set the last error for a failed oneDNN call and map the status. */
opreg_status opreg__dnnl_fail(dnnl_status_t st, const char *what);

/* ---- conversion loops (convert.c); AVX2 where the CPU has it ---- */
void opreg__bf16_to_f32_n(float *dst, const uint16_t *src, size_t n);
void opreg__f32_to_bf16_n(uint16_t *dst, const float *src, size_t n);

/* cutlass_scaled_mm's epilogue over one row of int32 accumulators:
 * v = fmaf(a_s, (float)acc[n] * b_s[n or 0], bias[n] or 0), stored as f32
 * (@p out_f32) or rounded to bf16 (@p out_bf16; exactly one is non-NULL).
 * @p acc may alias @p out_f32. bias is f32 or bf16 matching the output. */
typedef struct opreg__mm_epilogue {
    float a_scale;
    const float *b_scales; /* n of them, or one when per_col is false */
    bool per_col;
    const void *bias; /* NULL: none */
    size_t split;     /* 0, or N: the accumulator is acc[n] + acc[N + n] */
    bool acc_f32;     /* acc holds f32 sums (fp8's bf16 GEMM), not int32 */
} opreg__mm_epilogue;
/* e4m3fn codes to bf16 or f32, exactly (e4m3fn's values are a subset of
 * both); the NaN codes 0x7F and 0xFF give NaN. */
void opreg__e4m3_to_bf16_n(uint16_t *dst, const uint8_t *src, size_t n);
void opreg__e4m3_to_f32_n(float *dst, const uint8_t *src, size_t n);
void opreg__mm_epilogue_row(const opreg__mm_epilogue *e, const int32_t *acc, float *out_f32,
                            uint16_t *out_bf16, size_t n);

#endif
