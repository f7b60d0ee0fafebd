/* The Meta key: each op's checks, the same functions the reference and the
 * fast kernels run first, so a Meta call refuses exactly what a real call
 * refuses, and linear's result comes back as a Meta tensor of the right
 * shape. Checks that read index tensors (slots, blocks) need data, so Meta
 * runs only the checks on shapes, dtypes and devices. */
#include "ops/check/check.h"
#include "ops/register/catalogue.h"

/* Short names for the argument accessors. */
#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T
#define IV OPREG__ARG_I
#define FV OPREG__ARG_F
#define BV OPREG__ARG_B
#define SV OPREG__ARG_S

OPREG__KERNEL(meta_rms_norm, opreg__check_rms_norm(TS(0), TS(1), TS(2), FV(3)))
OPREG__KERNEL(meta_fused_add_rms_norm, opreg__check_fused_add_rms_norm(TS(0), TS(1), TS(2), FV(3)))
#define UNARY(op) OPREG__KERNEL(meta_##op, opreg__check_##op(TS(0), TS(1)))
OPREG__CATALOGUE_UNARY_OPS(UNARY)
#undef UNARY
OPREG__KERNEL(meta_rotary_embedding,
              opreg__check_rotary_embedding(TS(0), TS(1), TS(2), IV(3), TS(4), BV(5)))
OPREG__KERNEL(meta_batched_rotary_embedding,
              opreg__check_batched_rotary_embedding(TS(0), TS(1), TS(2), IV(3), TS(4), BV(5), IV(6),
                                                    TS(7)))
OPREG__KERNEL(meta_reshape_and_cache,
              opreg__check_reshape_and_cache(TS(0), TS(1), TS(2), TS(3), TS(4), SV(5), FV(6)))
OPREG__KERNEL(meta_reshape_and_cache_flash,
              opreg__check_reshape_and_cache_flash(TS(0), TS(1), TS(2), TS(3), TS(4), SV(5)))
OPREG__KERNEL(meta_copy_blocks,
              opreg__check_copy_blocks(OPREG__ARG_TL(0), OPREG__ARG_TL_LEN(0), OPREG__ARG_TL(1),
                                       OPREG__ARG_TL_LEN(1), TS(2)))
OPREG__KERNEL(meta_swap_blocks, opreg__check_swap_blocks(TS(0), TS(1), TS(2)))
OPREG__KERNEL(meta_static_scaled_fp8_quant,
              opreg__check_static_scaled_fp8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(meta_dynamic_scaled_fp8_quant,
              opreg__check_dynamic_scaled_fp8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(meta_static_scaled_int8_quant,
              opreg__check_static_scaled_int8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(meta_dynamic_scaled_int8_quant,
              opreg__check_dynamic_scaled_int8_quant(TS(0), TS(1), TS(2)))
OPREG__KERNEL(meta_moe_align_block_size,
              opreg__check_moe_align_block_size(TS(0), IV(1), IV(2), TS(3), TS(4), TS(5)))
OPREG__KERNEL(meta_topk_softmax, opreg__check_topk_softmax(TS(0), TS(1), TS(2), TS(3)))
OPREG__KERNEL(meta_paged_attention_v1,
              opreg__check_paged_attention_v1(TS(0), TS(1), TS(2), TS(3), IV(4), FV(5), TS(6),
                                              TS(7), IV(8), IV(9), OT(10), SV(11), FV(12), IV(13),
                                              IV(14), IV(15), IV(16), IV(17)))
OPREG__KERNEL(meta_cutlass_scaled_mm,
              opreg__check_cutlass_scaled_mm(TS(0), TS(1), TS(2), TS(3), TS(4), OT(5)))

opreg_status opreg__linear_into_new(opreg_value *rets, const opreg_value *args, DLDevice device,
                                    opreg_status (*kernel)(const opreg_tensor *out,
                                                           const opreg_tensor *input,
                                                           const opreg_tensor *weight,
                                                           const opreg_tensor *bias)) {
    int ndim;
    int64_t shape[16];
    opreg_dtype dtype;
    OPREG__TRY(opreg__check_linear(TS(0), TS(1), OT(2), &ndim, shape, &dtype));
    DLTensor *out;
    OPREG__TRY(opreg_tensor_empty(&out, device, dtype, ndim, shape));
    if (kernel) {
        opreg_status st = kernel(out, TS(0), TS(1), OT(2));
        if (st != OPREG_OK) {
            opreg_tensor_free(out);
            return st;
        }
    }
    rets[0] = opreg_tensor_value(out);
    return OPREG_OK;
}

static opreg_status meta_linear(void *context, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)context;
    (void)op;
    DLDevice meta = { OPREG_DEVICE_META, 0 };
    return opreg__linear_into_new(rets, args, meta, NULL);
}

OPREG_LIBRARY_IMPL(_C, META, m) {
    OPREG_IMPL(m, "rms_norm", meta_rms_norm, NULL);
    OPREG_IMPL(m, "fused_add_rms_norm", meta_fused_add_rms_norm, NULL);
#define UNARY(op) OPREG_IMPL(m, #op, meta_##op, NULL);
    OPREG__CATALOGUE_UNARY_OPS(UNARY)
#undef UNARY
    OPREG_IMPL(m, "rotary_embedding", meta_rotary_embedding, NULL);
    OPREG_IMPL(m, "batched_rotary_embedding", meta_batched_rotary_embedding, NULL);
    OPREG_IMPL(m, "reshape_and_cache", meta_reshape_and_cache, NULL);
    OPREG_IMPL(m, "reshape_and_cache_flash", meta_reshape_and_cache_flash, NULL);
    OPREG_IMPL(m, "copy_blocks", meta_copy_blocks, NULL);
    OPREG_IMPL(m, "swap_blocks", meta_swap_blocks, NULL);
    OPREG_IMPL(m, "static_scaled_fp8_quant", meta_static_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_fp8_quant", meta_dynamic_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "static_scaled_int8_quant", meta_static_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_int8_quant", meta_dynamic_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "moe_align_block_size", meta_moe_align_block_size, NULL);
    OPREG_IMPL(m, "topk_softmax", meta_topk_softmax, NULL);
    OPREG_IMPL(m, "paged_attention_v1", meta_paged_attention_v1, NULL);
    OPREG_IMPL(m, "cutlass_scaled_mm", meta_cutlass_scaled_mm, NULL);
    OPREG_IMPL(m, "linear", meta_linear, NULL);
}
