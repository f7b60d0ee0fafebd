/* The Reference key: each op's portable reference kernel (ops/ref/), which
 * runs the op's checks first. Chosen with opreg_call_boxed_key(). */
#include "ops/register/catalogue.h"
#include "ops/ref/ref.h"

/* Short names for the argument accessors. */
#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T
#define IV OPREG__ARG_I
#define FV OPREG__ARG_F
#define BV OPREG__ARG_B
#define SV OPREG__ARG_S

OPREG__KERNEL(ref_rms_norm, opreg__ref_rms_norm(TS(0), TS(1), TS(2), FV(3)))
OPREG__KERNEL(ref_fused_add_rms_norm, opreg__ref_fused_add_rms_norm(TS(0), TS(1), TS(2), FV(3)))
#define UNARY(op) OPREG__KERNEL(ref_##op, opreg__ref_##op(TS(0), TS(1)))
OPREG__CATALOGUE_UNARY_OPS(UNARY)
#undef UNARY
OPREG__KERNEL(ref_rotary_embedding,
              opreg__ref_rotary_embedding(TS(0), TS(1), TS(2), IV(3), TS(4), BV(5)))
OPREG__KERNEL(ref_batched_rotary_embedding,
              opreg__ref_batched_rotary_embedding(TS(0), TS(1), TS(2), IV(3), TS(4), BV(5), IV(6),
                                                  TS(7)))
OPREG__KERNEL(ref_reshape_and_cache,
              opreg__ref_reshape_and_cache(TS(0), TS(1), TS(2), TS(3), TS(4), SV(5), FV(6)))
OPREG__KERNEL(ref_reshape_and_cache_flash,
              opreg__ref_reshape_and_cache_flash(TS(0), TS(1), TS(2), TS(3), TS(4), SV(5)))
OPREG__KERNEL(ref_copy_blocks,
              opreg__ref_copy_blocks(OPREG__ARG_TL(0), OPREG__ARG_TL_LEN(0), OPREG__ARG_TL(1),
                                     OPREG__ARG_TL_LEN(1), TS(2)))
OPREG__KERNEL(ref_swap_blocks, opreg__ref_swap_blocks(TS(0), TS(1), TS(2)))
OPREG__KERNEL(ref_static_scaled_fp8_quant, opreg__ref_static_scaled_fp8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(ref_dynamic_scaled_fp8_quant,
              opreg__ref_dynamic_scaled_fp8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(ref_static_scaled_int8_quant,
              opreg__ref_static_scaled_int8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(ref_dynamic_scaled_int8_quant,
              opreg__ref_dynamic_scaled_int8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(ref_moe_align_block_size,
              opreg__ref_moe_align_block_size(TS(0), IV(1), IV(2), TS(3), TS(4), TS(5)))
OPREG__KERNEL(ref_topk_softmax, opreg__ref_topk_softmax(TS(0), TS(1), TS(2), TS(3)))
OPREG__KERNEL(ref_paged_attention_v1,
              opreg__ref_paged_attention_v1(TS(0), TS(1), TS(2), TS(3), IV(4), FV(5), TS(6), TS(7),
                                            IV(8), IV(9), OT(10), SV(11), FV(12), IV(13), IV(14),
                                            IV(15), IV(16), IV(17)))
OPREG__KERNEL(ref_cutlass_scaled_mm,
              opreg__ref_cutlass_scaled_mm(TS(0), TS(1), TS(2), TS(3), TS(4), OT(5)))

static opreg_status ref_linear(void *context, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)context;
    (void)op;
    return opreg__linear_into_new(rets, args, TS(0)->device, opreg__ref_linear);
}

OPREG_LIBRARY_IMPL(_C, REFERENCE, m) {
    OPREG_IMPL(m, "rms_norm", ref_rms_norm, NULL);
    OPREG_IMPL(m, "fused_add_rms_norm", ref_fused_add_rms_norm, NULL);
#define UNARY(op) OPREG_IMPL(m, #op, ref_##op, NULL);
    OPREG__CATALOGUE_UNARY_OPS(UNARY)
#undef UNARY
    OPREG_IMPL(m, "rotary_embedding", ref_rotary_embedding, NULL);
    OPREG_IMPL(m, "batched_rotary_embedding", ref_batched_rotary_embedding, NULL);
    OPREG_IMPL(m, "reshape_and_cache", ref_reshape_and_cache, NULL);
    OPREG_IMPL(m, "reshape_and_cache_flash", ref_reshape_and_cache_flash, NULL);
    OPREG_IMPL(m, "copy_blocks", ref_copy_blocks, NULL);
    OPREG_IMPL(m, "swap_blocks", ref_swap_blocks, NULL);
    OPREG_IMPL(m, "static_scaled_fp8_quant", ref_static_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_fp8_quant", ref_dynamic_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "static_scaled_int8_quant", ref_static_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_int8_quant", ref_dynamic_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "moe_align_block_size", ref_moe_align_block_size, NULL);
    OPREG_IMPL(m, "topk_softmax", ref_topk_softmax, NULL);
    OPREG_IMPL(m, "paged_attention_v1", ref_paged_attention_v1, NULL);
    OPREG_IMPL(m, "cutlass_scaled_mm", ref_cutlass_scaled_mm, NULL);
    OPREG_IMPL(m, "linear", ref_linear, NULL);
}
