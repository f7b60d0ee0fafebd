/* Portable reference kernels of the op catalogue: plain C, accumulation in
 * double, one rounding to the storage dtype where ops-reference.md has one.
 * They are the oracle the fast kernels are tested against. Each takes
 * checked arguments: the kernel registered for it (ops/register/
 * kernels_ref.c, or a CPU provider) has run the op's opreg__check_<op>(),
 * the host-memory check and opreg__check_<op>_data() where the op has one
 * (ops/check/check.h states the contract). Tensors are borrowed. */
#ifndef OPREG_OPS_REF_H
#define OPREG_OPS_REF_H

#include "opreg/tensor.h"

opreg_status opreg__ref_rms_norm(const opreg_tensor *out, const opreg_tensor *input,
                                 const opreg_tensor *weight, double epsilon);
opreg_status opreg__ref_fused_add_rms_norm(const opreg_tensor *input, const opreg_tensor *residual,
                                           const opreg_tensor *weight, double epsilon);

opreg_status opreg__ref_silu_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__ref_gelu_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__ref_gelu_tanh_and_mul(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__ref_gelu_new(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__ref_gelu_fast(const opreg_tensor *out, const opreg_tensor *input);
opreg_status opreg__ref_gelu_quick(const opreg_tensor *out, const opreg_tensor *input);

opreg_status opreg__ref_rotary_embedding(const opreg_tensor *positions, const opreg_tensor *query,
                                         const opreg_tensor *key, int64_t head_size,
                                         const opreg_tensor *cos_sin_cache, bool is_neox);
opreg_status opreg__ref_batched_rotary_embedding(const opreg_tensor *positions,
                                                 const opreg_tensor *query, const opreg_tensor *key,
                                                 int64_t head_size,
                                                 const opreg_tensor *cos_sin_cache, bool is_neox,
                                                 int64_t rot_dim,
                                                 const opreg_tensor *cos_sin_cache_offsets);

opreg_status opreg__ref_reshape_and_cache(const opreg_tensor *key, const opreg_tensor *value,
                                          const opreg_tensor *key_cache,
                                          const opreg_tensor *value_cache,
                                          const opreg_tensor *slot_mapping,
                                          const char *kv_cache_dtype, double kv_scale);
opreg_status opreg__ref_reshape_and_cache_flash(const opreg_tensor *key, const opreg_tensor *value,
                                                const opreg_tensor *key_cache,
                                                const opreg_tensor *value_cache,
                                                const opreg_tensor *slot_mapping,
                                                const char *kv_cache_dtype);
opreg_status opreg__ref_copy_blocks(const opreg_tensor *const *key_caches, size_t num_key_caches,
                                    const opreg_tensor *const *value_caches,
                                    size_t num_value_caches, const opreg_tensor *block_mapping);
opreg_status opreg__ref_swap_blocks(const opreg_tensor *src, const opreg_tensor *dst,
                                    const opreg_tensor *block_mapping);

opreg_status opreg__ref_static_scaled_fp8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                const opreg_tensor *scale);
opreg_status opreg__ref_dynamic_scaled_fp8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                 const opreg_tensor *scale);
opreg_status opreg__ref_static_scaled_int8_quant(const opreg_tensor *out, const opreg_tensor *input,
                                                 const opreg_tensor *scale);
opreg_status opreg__ref_dynamic_scaled_int8_quant(const opreg_tensor *out,
                                                  const opreg_tensor *input,
                                                  const opreg_tensor *scale);

/* moe_align_block_size's two regimes, shared with the CUDA kernel: whether
 * @p num_experts is few enough beside @p n ids for a table of counts with
 * one entry an expert (ops/ref/moe.c says where the line is), and, where it
 * is not, the renaming of the ids (dtype @p dt, in host memory) to their
 * ranks among the experts present. @p present and @p ranks are the
 * caller's, @p n entries each: @p present receives the distinct experts in
 * ascending order, @p ranks each id's place among them. Returns how many
 * experts are present. */
int opreg__moe_align_dense(int64_t n, int64_t num_experts);
int64_t opreg__moe_rank_ids(const void *ids, int dt, int64_t n, int64_t *present, int64_t *ranks);
opreg_status opreg__ref_moe_align_block_size(const opreg_tensor *topk_ids, int64_t num_experts,
                                             int64_t block_size,
                                             const opreg_tensor *sorted_token_ids,
                                             const opreg_tensor *experts_ids,
                                             const opreg_tensor *num_tokens_post_pad);
opreg_status opreg__ref_topk_softmax(const opreg_tensor *topk_weights,
                                     const opreg_tensor *topk_indices,
                                     const opreg_tensor *token_expert_indices,
                                     const opreg_tensor *gating_output);

opreg_status
opreg__ref_paged_attention_v1(const opreg_tensor *out, const opreg_tensor *query,
                              const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                              int64_t num_kv_heads, double scale, const opreg_tensor *block_tables,
                              const opreg_tensor *seq_lens, int64_t block_size, int64_t max_seq_len,
                              const opreg_tensor *alibi_slopes, const char *kv_cache_dtype,
                              double kv_scale, int64_t tp_rank, int64_t blocksparse_local_blocks,
                              int64_t blocksparse_vert_stride, int64_t blocksparse_block_size,
                              int64_t blocksparse_head_sliding_step);

opreg_status opreg__ref_cutlass_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                          const opreg_tensor *b, const opreg_tensor *a_scales,
                                          const opreg_tensor *b_scales, const opreg_tensor *bias);
/* linear into a caller-provided result (shape/dtype from opreg__check_linear,
 * or checked by opreg__check_linear_out). */
opreg_status opreg__ref_linear(const opreg_tensor *out, const opreg_tensor *input,
                               const opreg_tensor *weight, const opreg_tensor *bias);

#endif
