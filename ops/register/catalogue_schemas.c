/* The op catalogue's schemas: the vLLM ops under their vLLM names and
 * schemas, written as vLLM wrote them (runs of spaces included, where C string
 * concatenation left them), so that a schema can be copied over unchanged;
 * plus opreg's own `linear`, an op that returns a tensor. The one source of
 * the ops' signatures: the definitions (catalogue.c) parse them at run
 * time, and gen_args.c reads them at build time to write the argument
 * lists the kernels are called with (catalogue_args.h). Data only, so the
 * generator links it without the library. */
#include "ops/register/catalogue.h"

const char *const opreg__catalogue_schemas[] = {
    "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()",
    "fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()",
    "silu_and_mul(Tensor! out, Tensor input) -> ()",
    "gelu_and_mul(Tensor! out, Tensor input) -> ()",
    "gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()",
    "gelu_new(Tensor! out, Tensor input) -> ()",
    "gelu_fast(Tensor! out, Tensor input) -> ()",
    "gelu_quick(Tensor! out, Tensor input) -> ()",
    "rotary_embedding(Tensor positions, Tensor! query,                 Tensor! key, int"
    " head_size,                 Tensor cos_sin_cache, bool is_neox) -> ()",
    "batched_rotary_embedding(Tensor positions, Tensor! query,                        "
    " Tensor! key, int head_size,                         Tensor cos_sin_cache, bool"
    " is_neox,                         int rot_dim,                         Tensor"
    " cos_sin_cache_offsets) -> ()",
    "reshape_and_cache(Tensor key, Tensor value,                  Tensor! key_cache, Tensor!"
    " value_cache,                  Tensor slot_mapping,                  str"
    " kv_cache_dtype,                  float kv_scale) -> ()",
    "reshape_and_cache_flash(Tensor key, Tensor value,                        Tensor!"
    " key_cache,                        Tensor! value_cache,                        Tensor"
    " slot_mapping,                        str kv_cache_dtype) -> ()",
    "copy_blocks(Tensor[]! key_caches, Tensor[]! value_caches, Tensor block_mapping) -> ()",
    "swap_blocks(Tensor src, Tensor! dst, Tensor block_mapping) -> ()",
    "static_scaled_fp8_quant(Tensor! out, Tensor input, Tensor scale) -> ()",
    "dynamic_scaled_fp8_quant(Tensor! out, Tensor input, Tensor! scale) -> ()",
    "static_scaled_int8_quant(Tensor! out, Tensor input, Tensor scale) -> ()",
    "dynamic_scaled_int8_quant(Tensor! out, Tensor input, Tensor! scale) -> ()",
    "moe_align_block_size(Tensor topk_ids, int num_experts,                     int"
    " block_size, Tensor! sorted_token_ids,                     Tensor! experts_ids,        "
    "             Tensor! num_tokens_post_pad) -> ()",
    "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! token_expert_indices,"
    " Tensor gating_output) -> ()",
    "paged_attention_v1(    Tensor! out, Tensor query, Tensor key_cache,    Tensor"
    " value_cache, int num_kv_heads, float scale,    Tensor block_tables, Tensor seq_lens,"
    " int block_size,    int max_seq_len, Tensor? alibi_slopes,    str kv_cache_dtype, float"
    " kv_scale, int tp_rank,    int blocksparse_local_blocks,    int"
    " blocksparse_vert_stride, int blocksparse_block_size,    int"
    " blocksparse_head_sliding_step) -> ()",
    "cutlass_scaled_mm(Tensor! out, Tensor a,                  Tensor b, Tensor a_scales,   "
    "               Tensor b_scales, Tensor? bias) -> ()",
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    NULL,
};
