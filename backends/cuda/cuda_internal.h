/* The CUDA backend's internals, shared by its C files (the backend table,
 * the registration) and its .cu files (the kernels). Plain C types only, so
 * both compilers read it; the launchers are C functions (extern "C").
 *
 * Each launcher enqueues its kernels on @p stream (a cudaStream_t) of the
 * current device and returns without waiting. The caller (register.c) has
 * run the op's shared checks and made the tensors' device current. Dtypes
 * are opreg_dtype values. Every CUDA call's status is checked; a failure is
 * an opreg status with CUDA's error text in the last error. Not installed. */
#ifndef OPREG_BACKENDS_CUDA_INTERNAL_H
#define OPREG_BACKENDS_CUDA_INTERNAL_H

#include "opreg/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backend.c ---- */

/* The CUDA backend's table, attached to OPREG_KEY_CUDA by
 * builtins/builtins.c. Available with a driver and at least one device. */
extern const opreg_backend opreg__cuda_backend;

/* The opreg status of a CUDA error code (a cudaError_t): OPREG_OK for
 * cudaSuccess; OPREG_ERR_OUT_OF_MEMORY for an allocation failure; otherwise
 * OPREG_ERR_DEVICE. The message reads "<op>: <call>: <CUDA's text> (<name>)". */
opreg_status opreg__cuda_status(int err, const char *op, const char *call);

/* After a kernel launch: cudaGetLastError() as a status. */
opreg_status opreg__cuda_launched(const char *op, const char *kernel);

/* An internal error: a launcher met a dtype that the checks let through
 * but that it has no variant for. */
opreg_status opreg__cuda_bad_dtype(const char *op, int dt);

/* Stream-ordered scratch memory on the current device (cudaMallocAsync),
 * released with opreg__cuda_scratch_free() on the same stream. */
opreg_status opreg__cuda_scratch(void **out, size_t bytes, void *stream, const char *op);
opreg_status opreg__cuda_scratch_free(void *ptr, void *stream, const char *op);

/* @p bytes from @p src to @p dst, either on the host or the device (the
 * driver tells which), on @p stream, waited for: the kernels queued before
 * it have run and the copy is done when it returns. The caller has made
 * the stream's device current. */
opreg_status opreg__cuda_copy_waited(void *dst, const void *src, size_t bytes, void *stream,
                                     const char *op);

/* Make @p device current; *prev receives the device that was (restore it
 * with opreg__cuda_leave). */
opreg_status opreg__cuda_enter(int device, int *prev, const char *op);
void opreg__cuda_leave(int device, int prev);

/* The calling thread's current stream of @p device, as api.c keeps it. */
void *opreg__cuda_current_stream(int device);

/* ---- launchers, one .cu file each ---- */

/* Norms. Rows of h elements; input rows in_stride apart, out contiguous. */
opreg_status opreg__cuda_rms_norm(void *out, const void *in, int64_t in_stride, const void *weight,
                                  int64_t rows, int64_t h, float eps, int dt, void *stream);
opreg_status opreg__cuda_fused_add_rms_norm(void *in, int64_t in_stride, void *residual,
                                            const void *weight, int64_t rows, int64_t h, float eps,
                                            int dt, void *stream);

/* Gated activations: input rows [x | y] of 2d, out rows of d (contiguous). */
opreg_status opreg__cuda_silu_and_mul(void *out, const void *in, int64_t rows, int64_t d, int dt,
                                      void *stream);
opreg_status opreg__cuda_gelu_and_mul(void *out, const void *in, int64_t rows, int64_t d, int dt,
                                      void *stream);
opreg_status opreg__cuda_gelu_tanh_and_mul(void *out, const void *in, int64_t rows, int64_t d,
                                           int dt, void *stream);
/* Elementwise activations over n contiguous elements (out may be in). */
opreg_status opreg__cuda_gelu_new(void *out, const void *in, int64_t n, int dt, void *stream);
opreg_status opreg__cuda_gelu_fast(void *out, const void *in, int64_t n, int dt, void *stream);
opreg_status opreg__cuda_gelu_quick(void *out, const void *in, int64_t n, int dt, void *stream);

/* Rotary embedding, in place. q_row/k_row: elements of one token, dense;
 * q_stride/k_stride: elements from one token to the next; a token whose
 * cache row (pos + offset) is outside 0..cache_rows-1 is left as it is. */
typedef struct opreg__cuda_rotary_args {
    const int64_t *positions, *offsets; /* offsets: NULL unless batched */
    int64_t tokens, q_row, k_row, q_stride, k_stride, head_size, rot_dim, cache_rows;
    void *query, *key;
    const void *cache;
    int is_neox, dt;
} opreg__cuda_rotary_args;
opreg_status opreg__cuda_rotary_embedding(const opreg__cuda_rotary_args *a, void *stream);
opreg_status opreg__cuda_batched_rotary_embedding(const opreg__cuda_rotary_args *a, void *stream);

/* KV cache. kind: 0 auto (copy), 1 fp8 e4m3, 2 fp8 e5m2. Slots < 0 are
 * padding; slots >= num_slots are skipped (see docs/cuda.md). */
typedef struct opreg__cuda_cache_args {
    const void *key, *value;
    int64_t key_stride, value_stride; /* token strides, elements */
    void *key_cache, *value_cache;
    int64_t key_block_stride, value_block_stride; /* the caches' dim 0, elements */
    const int64_t *slots;
    int64_t tokens, heads, head_size, x, block_size, num_slots;
    int dt, kind;
    float kv_scale;
} opreg__cuda_cache_args;
opreg_status opreg__cuda_reshape_and_cache(const opreg__cuda_cache_args *a, void *stream);
opreg_status opreg__cuda_reshape_and_cache_flash(const opreg__cuda_cache_args *a, void *stream);

/* copy_blocks: every layer's key and value cache, pairs in order. */
/* Blocks are *_block_bytes long and *_block_step bytes apart. */
opreg_status opreg__cuda_copy_blocks(void *const *key_caches, void *const *value_caches,
                                     int64_t layers, const int64_t *mapping, int64_t pairs,
                                     int64_t key_block_bytes, int64_t key_block_step,
                                     int64_t value_block_bytes, int64_t value_block_step,
                                     int64_t num_blocks, void *stream);
/* swap_blocks: mapping in host memory, checked; one cudaMemcpyAsync a pair. */
opreg_status opreg__cuda_swap_blocks(void *dst, int64_t dst_step, const void *src, int64_t src_step,
                                     const int64_t *mapping, int64_t pairs, int64_t block_bytes,
                                     void *stream);

/* Quantisation over n contiguous elements; scale in device memory. */
opreg_status opreg__cuda_static_scaled_fp8_quant(void *out, const void *in, int64_t n,
                                                 const float *scale, int dt, void *stream);
opreg_status opreg__cuda_dynamic_scaled_fp8_quant(void *out, const void *in, int64_t n,
                                                  float *scale, int dt, void *stream);
opreg_status opreg__cuda_static_scaled_int8_quant(void *out, const void *in, int64_t n,
                                                  const float *scale, int dt, void *stream);
opreg_status opreg__cuda_dynamic_scaled_int8_quant(void *out, const void *in, int64_t rows,
                                                   int64_t h, float *scale, int dt, void *stream);

/* MoE. topk_ids of dtype id_dt (i32 or i64); ids outside 0..E-1 are skipped. */
opreg_status opreg__cuda_moe_align_block_size(const void *topk_ids, int id_dt, int64_t n,
                                              int64_t num_experts, int64_t block_size,
                                              int32_t *sorted, int32_t *experts, int32_t *post_pad,
                                              void *stream);
/* The same over ids already renamed on the host to their ranks among the
 * @p rows experts present: @p host holds the @p n ranks, then the @p rows
 * experts in ascending order (int32 each). They are copied to the device,
 * the kernel runs over the ranks, and experts gets the blocks' experts by
 * their names. Waits for the stream, so @p host may be freed on return. */
opreg_status opreg__cuda_moe_align_ranked(const int32_t *host, int64_t n, int64_t rows,
                                          int64_t block_size, int32_t *sorted, int32_t *experts,
                                          int32_t *post_pad, void *stream);
opreg_status opreg__cuda_topk_softmax(float *weights, int32_t *indices, int32_t *token_expert,
                                      const void *gating, int64_t tokens, int64_t experts,
                                      int64_t k, int dt, void *stream);

/* paged_attention_v1. Cache elements are of dtype dt (kind 0) or fp8 bytes. */
typedef struct opreg__cuda_attention_args {
    void *out;
    const void *query, *key_cache, *value_cache;
    const int32_t *block_tables, *seq_lens;
    const float *alibi; /* NULL: none */
    int64_t seqs, heads, kv_heads, head_size, x, block_size, max_seq_len, max_blocks, num_blocks;
    int64_t key_block_stride, value_block_stride; /* the caches' dim 0, elements */
    int64_t q_stride;                             /* query's dim 0, elements */
    float scale, kv_scale;
    int dt, kind;
} opreg__cuda_attention_args;
opreg_status opreg__cuda_paged_attention_v1(const opreg__cuda_attention_args *a, void *stream);

/* cutlass_scaled_mm: out [M,N] (out_dt) = a_s * (a [M,K] . b [K,N]) * b_s +
 * bias; a rows a_stride apart, b columns b_stride apart (K contiguous). */
typedef struct opreg__cuda_scaled_mm_args {
    void *out;
    const void *a, *b, *bias;
    const float *a_scales, *b_scales;
    int64_t m, n, k, a_stride, b_stride;
    int per_row_a, per_col_b, in_dt, out_dt;
} opreg__cuda_scaled_mm_args;
opreg_status opreg__cuda_cutlass_scaled_mm(const opreg__cuda_scaled_mm_args *a, void *stream);

/* linear: out [rows, n] = in [rows, k] . weight [n, k]^T + bias, dtype dt. */
opreg_status opreg__cuda_linear(void *out, const void *in, const void *weight, const void *bias,
                                int64_t rows, int64_t n, int64_t k, int dt, void *stream);

#ifdef __cplusplus
}
#endif

#endif
