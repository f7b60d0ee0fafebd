/* Fast CPU inner kernels of the memory-bound ops, on raw pointers.
 *
 * The callers (the registry wiring) have already checked every argument:
 * dtypes, shapes, non-NULL data, contiguity within a row. Strides are in
 * elements, between consecutive rows. Nothing here allocates, fails or
 * prints. Each float op takes f32, f16 and bf16 data (f16/bf16 as
 * uint16_t bit patterns), computing in f32 with the roundings of
 * docs ops-reference.md (§3): the same arithmetic as ops/ref, so the two
 * agree within a few ulp of f32 and, after rounding, within 1 ulp of T.
 *
 * Each call runs the instruction-set path its caller names, capped at the
 * best that cpuid finds: AVX-512 (with AVX512-BF16 conversions),
 * AVX2+FMA+F16C, or portable C. Rows are spread over OpenMP threads once the call moves
 * enough bytes to pay for waking them. */
#ifndef OPREG_CPU_KERNELS_H
#define OPREG_CPU_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

/* ---- instruction-set paths ------------------------------------------------ */

enum opreg__cpu_isa {
    OPREG__ISA_PORTABLE = 0,
    OPREG__ISA_AVX2 = 1,        /* AVX2 + FMA + F16C */
    OPREG__ISA_AVX512 = 2,      /* AVX-512 F/BW/VL/DQ */
    OPREG__ISA_AVX512_BF16 = 3, /* the above plus AVX512-BF16 and AVX512-VNNI */
};

/* The best path this CPU can run (cpuid, read once). */
int opreg__cpu_isa_detected(void);
/* The path the kernels use now: min(detected, limit). */
int opreg__cpu_isa(void);
/* Cap the path (tests force the lower ones); returns the previous cap.
 * Not for use while kernels run on other threads. */
int opreg__cpu_set_isa_limit(int isa);
/* "portable", "avx2", "avx512", "avx512_bf16". */
const char *opreg__cpu_isa_name(int isa);

/* Whether a call that writes @p out_bytes to memory it does not read should
 * write them with streaming (non-temporal) stores: when the output is too
 * large to be found in the last-level cache by its consumer anyway, plain
 * stores first read every line they write (write-allocate), a third more
 * traffic for an op that reads one byte per byte written. */
int opreg__cpu_stream(int64_t out_bytes);
/* Set the output size from which opreg__cpu_stream() says yes (0: the
 * default, half the last-level cache); returns the previous setting. Tests
 * force it low to run the streaming paths on small tensors. Not for use
 * while kernels run on other threads. */
int64_t opreg__cpu_set_stream_bytes(int64_t bytes);

/* ---- float kernels: one entry per op, on path @p isa and dtype @p dt -------

 * The providers of the CPU key (backends/cpu/register.c) call these with the
 * path they stand for, the kernels' own tests with each path in turn; @p isa
 * above what the CPU has runs the best it has. @p dt is the opreg_dtype of
 * the float tensors (F32, F16 or BF16), whose data are float or uint16_t bit
 * patterns. Each entry switches on @p dt once, in the path's range function. */

enum opreg__cpu_act {
    OPREG__ACT_SILU,
    OPREG__ACT_GELU,
    OPREG__ACT_GELU_TANH,
    OPREG__ACT_GELU_NEW,
    OPREG__ACT_GELU_FAST,
    OPREG__ACT_GELU_QUICK,
};

/* rms_norm: out = (T)((T)(x * r) * w), r = 1/sqrt(sum(x^2)/hidden + eps). */
void opreg__cpu_rms_norm(int isa, int dt, void *out, int64_t out_stride, const void *in,
                         int64_t in_stride, const void *w, int64_t rows, int64_t hidden, float eps);
/* fused_add_rms_norm, both in place: res = (T)(in + res), then in =
 * rms_norm(res). */
void opreg__cpu_fused_add_rms_norm(int isa, int dt, void *in, int64_t in_stride, void *res,
                                   int64_t res_stride, const void *w, int64_t rows, int64_t hidden,
                                   float eps);
/* Gated (@p kind SILU, GELU, GELU_TANH): input rows [x | y] of 2*d, out rows
 * of d: out = (T)((T)act(x) * y). */
void opreg__cpu_gated(int isa, int kind, int dt, void *out, int64_t out_stride, const void *in,
                      int64_t in_stride, int64_t rows, int64_t d);
/* Elementwise (@p kind GELU_NEW, GELU_FAST, GELU_QUICK): out[i] =
 * (T)act(in[i]) over n elements. */
void opreg__cpu_elementwise(int isa, int kind, int dt, void *out, const void *in, int64_t n);
/* Rotary embedding in place on q [tokens, nq*head_size] and k [tokens,
 * nk*head_size] (k may be NULL). Token t uses cache row pos[t] (+ offsets[t]
 * when offsets is not NULL: the batched op). cache rows are [cos
 * 0..rot_dim/2 | sin 0..rot_dim/2], in @p dt. */
void opreg__cpu_rotary(int isa, int dt, const int64_t *pos, const int64_t *offsets, int64_t tokens,
                       void *q, int64_t q_stride, int64_t nq, void *k, int64_t k_stride, int64_t nk,
                       int64_t head_size, const void *cache, int64_t rot_dim, bool neox);
/* int8: static out = sat(rne(x / scale)); dynamic per row: scales[r] =
 * amax/127, out = sat(rne(x * (127/amax))); NaN gives 0.
 * fp8 e4m3fn: static out = e4m3fn(clamp(x * (1/scale), -448, 448));
 * dynamic: *scale = max(*scale, amax/448) (the caller zeroes it), then
 * static. */
void opreg__cpu_int8_static(int isa, int dt, int8_t *out, const void *in, int64_t n, float scale);
void opreg__cpu_int8_dynamic(int isa, int dt, int8_t *out, float *scales, const void *in,
                             int64_t in_stride, int64_t rows, int64_t hidden);
void opreg__cpu_fp8_static(int isa, int dt, uint8_t *out, const void *in, int64_t n, float scale);
void opreg__cpu_fp8_dynamic(int isa, int dt, uint8_t *out, float *scale, const void *in, int64_t n);

/* ---- decode-sized GEMMs (gemv.c) ------------------------------------------- */

/* The most input rows for which the CPU key's "gemv" provider takes linear
 * and cutlass_scaled_mm: past it oneDNN's blocked GEMMs are faster (the
 * measurement is in docs/performance.md). */
#define OPREG__CPU_GEMV_MAX_ROWS 16

/* linear: out [m, n] = in [m, k] . w [n, k]^T + bias [n] (bias may be
 * NULL), all dense in @p dt (F32, F16 or BF16), f32 sums rounded once. */
void opreg__cpu_gemv_linear(int isa, int dt, void *out, const void *in, const void *w,
                            const void *bias, int64_t m, int64_t n, int64_t k);
/* Whether bf16 linear past one tile of rows and fp8 cutlass_scaled_mm run
 * on VDPBF16PS (the pairs kernels) instead of FMAs: on the avx512_bf16 path
 * where VDPBF16PS runs at least half as many instructions a second as FMA,
 * timed on first use; OPREG_CPU_VDPBF16PS=0 or 1 decides instead. fp8
 * also needs AVX512-VBMI. paged_attention_v1 on that path multiplies bf16
 * keys by VDPBF16PS under the same choice. */
int opreg__cpu_gemv_pairs(void);
/* The choices opreg__cpu_set_gemv_pairs takes and returns: the FMA (and
 * split) kernels everywhere, or the pairs kernels wherever they apply. */
#define OPREG__GEMV_PAIRS_OFF 0
#define OPREG__GEMV_PAIRS_ON  1
/* Force that choice (-1: decide again on next use); returns the previous
 * value. For tests, not while kernels run on other threads. */
int opreg__cpu_set_gemv_pairs(int on);
/* Whether a GEMV of @p m input rows of dtype @p dt (BF16 linear or
 * F8_E4M3FN cutlass_scaled_mm) on path @p isa runs the pairs kernels. */
bool opreg__cpu_gemv_takes_pairs(int isa, int dt, int64_t m);
/* Whether fp8 cutlass_scaled_mm calls that the pairs kernels do not take
 * run the split kernels (on either AVX-512 path, with AVX512-VBMI: fp8
 * widened through a table, then FMAs) or, with @p on 0, the FMA kernels
 * that widen by conversions (as the avx2 path and CPUs without VBMI do).
 * On by default; returns the previous value. For tests, not while kernels
 * run on other threads. */
int opreg__cpu_set_gemv_split(int on);
/* Whether the CPU has AVX512-VBMI (cpuid, read once). */
bool opreg__cpu_has_vbmi(void);
/* Whether the CPU's vendor is Intel (cpuid, read once). */
bool opreg__cpu_is_intel(void);
/* The fewest input rows at which the GEMV tiles fetch their weights ahead
 * of the hardware's prefetcher: 1 on Intel CPUs, 3 elsewhere (measured:
 * gemv.c). */
int opreg__cpu_gemv_fetch_rows(void);

/* cutlass_scaled_mm: @p dt I8 (int32 sums) or F8_E4M3FN (f32 sums) for a
 * [m, k], rows @p a_stride apart, and b [k, n] column-major, columns
 * @p b_stride apart; out [m, n] dense in @p out_dt (F32, F16 or BF16) and
 * bias [n] (or NULL) in it too; a_scales [m] when @p per_token, else [1];
 * b_scales [n] when @p per_channel, else [1]. out = (T)fmaf(a_s,
 * acc * b_s, bias), vLLM's CUTLASS epilogue. */
void opreg__cpu_gemv_scaled_mm(int isa, int dt, int out_dt, void *out, const void *a,
                               int64_t a_stride, const void *b, int64_t b_stride,
                               const float *a_scales, bool per_token, const float *b_scales,
                               bool per_channel, const void *bias, int64_t m, int64_t n, int64_t k);

/* ---- MoE routing ------------------------------------------------------------- */

/* topk_softmax for checked arguments, on path @p isa: gating [tokens,
 * experts] contiguous in @p dt (f32, f16 or bf16); weights (f32), indices
 * and token_expert (int32) [tokens, k] contiguous. */
void opreg__cpu_topk_softmax(int isa, float *weights, int32_t *indices, int32_t *token_expert,
                             const void *gating, int dt, int64_t tokens, int64_t experts,
                             int64_t k);

/* ---- KV cache ---------------------------------------------------------------- */

/* kv_kind: 0 = "auto" (copy element bytes), 1 = fp8 e4m3fn, 2 = fp8 e5m2
 * (the cache holds fp8(v / kv_scale), saturating), as opreg__kv_cache_kind().
 * dtype is the opreg_dtype of key/value. key/value are [tokens, heads,
 * head_size] with token strides in elements; slots < 0 are skipped.
 * reshape_and_cache: key_cache [nblk, heads, head_size/x, block_size, x],
 * value_cache [nblk, heads, head_size, block_size].
 * _flash: both caches [nblk, block_size, heads, head_size].
 * Each block is dense; blocks lie @p key_block_stride (@p value_block_stride)
 * elements apart, so a cache may be a view of a combined KV cache. */
void opreg__cpu_reshape_and_cache_generic(const void *key, int64_t key_stride, const void *value,
                                          int64_t value_stride, void *key_cache,
                                          int64_t key_block_stride, void *value_cache,
                                          int64_t value_block_stride, const int64_t *slot_mapping,
                                          int64_t tokens, int64_t heads, int64_t head_size,
                                          int64_t block_size, int64_t x, int dtype, int kv_kind,
                                          float kv_scale);
void opreg__cpu_reshape_and_cache_flash_generic(
    const void *key, int64_t key_stride, const void *value, int64_t value_stride, void *key_cache,
    int64_t key_block_stride, void *value_cache, int64_t value_block_stride,
    const int64_t *slot_mapping, int64_t tokens, int64_t heads, int64_t head_size,
    int64_t block_size, int dtype, int kv_kind, float kv_scale);

/* ---- attention -------------------------------------------------------------- */

/* The largest head_size and block_size that opreg__cpu_paged_attention_v1
 * takes (its buffers live on the stack); vLLM's sizes are all within them. */
#define OPREG__CPU_PA_MAX_HEAD  256
#define OPREG__CPU_PA_MAX_BLOCK 32

/* paged_attention_v1 (ops-reference §3.7) for checked arguments: out
 * [seqs, heads, head_size] contiguous in @p dtype, query the same shape with
 * its sequences @p q_stride elements apart (heads dense); key_cache
 * [blocks, kv_heads, head_size/x, block_size, x] and value_cache
 * [blocks, kv_heads, head_size, block_size], dense within a block, blocks
 * @p key_block_stride and @p value_block_stride elements apart, in @p dtype (kv_kind 0) or fp8
 * codes (kv_kind 1 e4m3fn, 2 e5m2) dequantised as code * kv_scale;
 * block_tables [seqs, max_blocks] and seq_lens [seqs] whose entries the
 * data check has validated; alibi_slopes [heads] or NULL. f32 arithmetic
 * with an online softmax; an empty sequence gives zeros. */
void opreg__cpu_paged_attention_v1(int isa, void *out, const void *query, int64_t q_stride,
                                   const void *key_cache, const void *value_cache,
                                   const int32_t *block_tables, const int32_t *seq_lens,
                                   const float *alibi_slopes, int64_t seqs, int64_t heads,
                                   int64_t kv_heads, int64_t head_size, int64_t x,
                                   int64_t block_size, int64_t key_block_stride,
                                   int64_t value_block_stride, int64_t max_blocks, float scale,
                                   int dtype, int kv_kind, float kv_scale);

#endif
