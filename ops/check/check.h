/* The argument checks of the op catalogue: one function per op, shared by
 * the Meta functions, the reference kernels and the fast kernels, so that
 * every backend refuses the same inputs with the same status and message.
 *
 * opreg__check_<op>() looks only at metadata (dtype, rank, sizes, strides,
 * devices, NULL data, overlap) and works on Meta tensors.
 * opreg__check_<op>_data() also reads index tensors (slots, blocks,
 * positions, expert ids), which must be in host memory; kernels that can
 * read them call it before writing anything. Neither writes to a tensor.
 *
 * Where the checks run (the one statement of this contract): the kernel
 * registered under a key checks the call once, before anything below it
 * runs, and what it calls takes checked arguments and checks nothing
 * again. Meta's kernel is opreg__check_<op>() (linear's also gives the
 * result's shape). Reference's (ops/register/kernels_ref.c) and CPU's
 * (backends/cpu/register.c, every provider) run it, the host-memory check
 * and opreg__check_<op>_data() where the op has one. CUDA's (backends/cuda/
 * register.c) runs it and the device checks. Below them, on checked
 * arguments: the reference kernels (ops/ref/), the SIMD and portable CPU
 * kernels, oneDNN's primitives, the CUDA launchers. A test that calls a
 * reference kernel directly runs the checks first (tests/ops/ops_test.h). */
#ifndef OPREG_OPS_CHECK_H
#define OPREG_OPS_CHECK_H

#include "opreg/tensor.h"

/* ---- norms ---- */
opreg_status opreg__check_rms_norm(const opreg_tensor *out, const opreg_tensor *input,
                                   const opreg_tensor *weight, double epsilon);
opreg_status opreg__check_fused_add_rms_norm(const opreg_tensor *input,
                                             const opreg_tensor *residual,
                                             const opreg_tensor *weight, double epsilon);

/* ---- activations ---- */
opreg_status opreg__check_silu_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__check_gelu_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__check_gelu_tanh_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__check_gelu_new(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__check_gelu_fast(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__check_gelu_quick(const opreg_tensor *out, const opreg_tensor *input);

/* ---- rotary ---- */
/* query and key take a token stride (a slice of a fused QKV projection);
 * each token's heads are dense. The stride between two tokens of a checked
 * query or key, in elements. */
int64_t opreg__rotary_token_stride(const opreg_tensor *qk, const opreg_tensor *positions);
opreg_status opreg__check_rotary_embedding(const opreg_tensor *positions, const opreg_tensor *query,
                                           const opreg_tensor *key, int64_t head_size,
                                           const opreg_tensor *cos_sin_cache, bool is_neox);
opreg_status opreg__check_rotary_embedding_data(const opreg_tensor *positions,
                                                const opreg_tensor *cos_sin_cache);
opreg_status opreg__check_batched_rotary_embedding(const opreg_tensor *positions,
                                                   const opreg_tensor *query,
                                                   const opreg_tensor *key, int64_t head_size,
                                                   const opreg_tensor *cos_sin_cache, bool is_neox,
                                                   int64_t rot_dim,
                                                   const opreg_tensor *cos_sin_cache_offsets);
opreg_status opreg__check_batched_rotary_embedding_data(const opreg_tensor *positions,
                                                        const opreg_tensor *cos_sin_cache,
                                                        const opreg_tensor *cos_sin_cache_offsets);

/* ---- KV cache ---- */
/* kv_cache_dtype: 0 "auto", 1 "fp8" or "fp8_e4m3", 2 "fp8_e5m2", -1 unknown. */
int opreg__kv_cache_kind(const char *kv_cache_dtype);
opreg_status opreg__check_reshape_and_cache(const opreg_tensor *key, const opreg_tensor *value,
                                            const opreg_tensor *key_cache,
                                            const opreg_tensor *value_cache,
                                            const opreg_tensor *slot_mapping,
                                            const char *kv_cache_dtype, double kv_scale);
opreg_status opreg__check_reshape_and_cache_data(const opreg_tensor *key_cache,
                                                 const opreg_tensor *slot_mapping);
opreg_status
opreg__check_reshape_and_cache_flash(const opreg_tensor *key, const opreg_tensor *value,
                                     const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                                     const opreg_tensor *slot_mapping, const char *kv_cache_dtype);
opreg_status opreg__check_reshape_and_cache_flash_data(const opreg_tensor *key_cache,
                                                       const opreg_tensor *slot_mapping);
opreg_status opreg__check_copy_blocks(const opreg_tensor *const *key_caches, size_t num_key_caches,
                                      const opreg_tensor *const *value_caches,
                                      size_t num_value_caches, const opreg_tensor *block_mapping);
opreg_status opreg__check_copy_blocks_data(const opreg_tensor *const *key_caches,
                                           const opreg_tensor *const *value_caches,
                                           size_t num_layers, const opreg_tensor *block_mapping);
opreg_status opreg__check_swap_blocks(const opreg_tensor *src, const opreg_tensor *dst,
                                      const opreg_tensor *block_mapping);
opreg_status opreg__check_swap_blocks_data(const opreg_tensor *src, const opreg_tensor *dst,
                                           const opreg_tensor *block_mapping);

/* ---- quantisation ---- */
opreg_status opreg__check_static_scaled_fp8_quant(const opreg_tensor *out,
                                                  const opreg_tensor *input,
                                                  const opreg_tensor *scale);
opreg_status opreg__check_dynamic_scaled_fp8_quant(const opreg_tensor *out,
                                                   const opreg_tensor *input,
                                                   const opreg_tensor *scale);
opreg_status opreg__check_static_scaled_int8_quant(const opreg_tensor *out,
                                                   const opreg_tensor *input,
                                                   const opreg_tensor *scale);
opreg_status opreg__check_dynamic_scaled_int8_quant(const opreg_tensor *out,
                                                    const opreg_tensor *input,
                                                    const opreg_tensor *scale);

/* ---- MoE ---- */
/* Capacity of sorted_token_ids: numel(topk_ids) + E * (block_size - 1). */
int64_t opreg__moe_align_capacity(int64_t numel, int64_t num_experts, int64_t block_size);
opreg_status opreg__check_moe_align_block_size(const opreg_tensor *topk_ids, int64_t num_experts,
                                               int64_t block_size,
                                               const opreg_tensor *sorted_token_ids,
                                               const opreg_tensor *experts_ids,
                                               const opreg_tensor *num_tokens_post_pad);
opreg_status opreg__check_moe_align_block_size_data(const opreg_tensor *topk_ids,
                                                    int64_t num_experts);
opreg_status opreg__check_topk_softmax(const opreg_tensor *topk_weights,
                                       const opreg_tensor *topk_indices,
                                       const opreg_tensor *token_expert_indices,
                                       const opreg_tensor *gating_output);

/* ---- attention ---- */
opreg_status opreg__check_paged_attention_v1(
    const opreg_tensor *out, const opreg_tensor *query, const opreg_tensor *key_cache,
    const opreg_tensor *value_cache, int64_t num_kv_heads, double scale,
    const opreg_tensor *block_tables, const opreg_tensor *seq_lens, int64_t block_size,
    int64_t max_seq_len, const opreg_tensor *alibi_slopes, const char *kv_cache_dtype,
    double kv_scale, int64_t tp_rank, int64_t blocksparse_local_blocks,
    int64_t blocksparse_vert_stride, int64_t blocksparse_block_size,
    int64_t blocksparse_head_sliding_step);
opreg_status opreg__check_paged_attention_v1_data(const opreg_tensor *key_cache,
                                                  const opreg_tensor *block_tables,
                                                  const opreg_tensor *seq_lens, int64_t block_size,
                                                  int64_t max_seq_len);

/* ---- GEMM ---- */
opreg_status opreg__check_cutlass_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                            const opreg_tensor *b, const opreg_tensor *a_scales,
                                            const opreg_tensor *b_scales, const opreg_tensor *bias);
/* linear: checks the inputs and gives the shape and dtype of the result
 * (input.shape[:-1] + [N], input's dtype); *out_ndim <= 16. */
opreg_status opreg__check_linear(const opreg_tensor *input, const opreg_tensor *weight,
                                 const opreg_tensor *bias, int *out_ndim, int64_t *out_shape,
                                 opreg_dtype *out_dtype);
/* linear with a caller-provided result tensor (what the reference writes). */
opreg_status opreg__check_linear_out(const opreg_tensor *out, const opreg_tensor *input,
                                     const opreg_tensor *weight, const opreg_tensor *bias);

#endif
