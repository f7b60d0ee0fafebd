/* Checks of moe_align_block_size and topk_softmax (§3.6). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>

int64_t opreg__moe_align_capacity(int64_t numel, int64_t num_experts, int64_t block_size) {
    return numel + num_experts * (block_size - 1);
}

opreg_status opreg__check_moe_align_block_size(const opreg_tensor *topk_ids, int64_t num_experts,
                                               int64_t block_size,
                                               const opreg_tensor *sorted_token_ids,
                                               const opreg_tensor *experts_ids,
                                               const opreg_tensor *num_tokens_post_pad) {
    const char *op = "_C::moe_align_block_size";
    const char *on[3] = { "sorted_token_ids", "experts_ids", "num_tokens_post_pad" };
    const opreg_tensor *o[3] = { sorted_token_ids, experts_ids, num_tokens_post_pad };
    int64_t cap, need[3];
    OPREG__TRY(opreg__chk_tensor(op, "topk_ids", topk_ids, OPREG__DTS(I32) | OPREG__DTS(I64), 2));
    OPREG__TRY(opreg__chk_contig(op, "topk_ids", topk_ids));
    if (num_experts <= 0 || num_experts > INT32_MAX)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'num_experts': must be in 1..2^31-1, got %" PRId64, op,
                           num_experts);
    if (block_size <= 0 || block_size > INT32_MAX)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'block_size': must be in 1..2^31-1, got %" PRId64, op,
                           block_size);
    cap = opreg__moe_align_capacity(opreg__numel(topk_ids), num_experts, block_size);
    need[0] = cap;
    need[1] = (cap + block_size - 1) / block_size;
    need[2] = 1;
    for (int i = 0; i < 3; i++) {
        OPREG__TRY(opreg__chk_tensor(op, on[i], o[i], OPREG__DTS(I32), -1));
        OPREG__TRY(opreg__chk_contig(op, on[i], o[i]));
        if (opreg__numel(o[i]) < need[i])
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': needs at least %" PRId64
                               " elements, has %" PRId64,
                               op, on[i], need[i], opreg__numel(o[i]));
        OPREG__TRY(opreg__chk_same_device(op, on[i], o[i], "topk_ids", topk_ids));
        OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], "topk_ids", topk_ids));
        for (int j = 0; j < i; j++)
            OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], on[j], o[j]));
    }
    if (opreg__numel(topk_ids) > INT32_MAX)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'topk_ids': too many elements for int32 ids", op);
    return OPREG_OK;
}

opreg_status opreg__check_moe_align_block_size_data(const opreg_tensor *topk_ids,
                                                    int64_t num_experts) {
    int dt = opreg__dtype_of(topk_ids);
    int64_t n = opreg__numel(topk_ids);
    for (int64_t i = 0; i < n; i++) {
        int64_t e = opreg__ld_index(opreg__ptr(topk_ids), dt, i);
        if (e < 0 || e >= num_experts)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "_C::moe_align_block_size: argument 'topk_ids': expert %" PRId64
                               " at flat index %" PRId64 " is outside 0..%" PRId64,
                               e, i, num_experts - 1);
    }
    return OPREG_OK;
}

opreg_status opreg__check_topk_softmax(const opreg_tensor *topk_weights,
                                       const opreg_tensor *topk_indices,
                                       const opreg_tensor *token_expert_indices,
                                       const opreg_tensor *gating_output) {
    const char *op = "_C::topk_softmax";
    const char *on[3] = { "topk_weights", "topk_indices", "token_expert_indices" };
    const opreg_tensor *o[3] = { topk_weights, topk_indices, token_expert_indices };
    const uint32_t dts[3] = { OPREG__DTS(F32), OPREG__DTS(I32), OPREG__DTS(I32) };
    OPREG__TRY(opreg__chk_tensor(op, "gating_output", gating_output, OPREG__DTS_FLOAT, 2));
    OPREG__TRY(opreg__chk_contig(op, "gating_output", gating_output));
    for (int i = 0; i < 3; i++) {
        OPREG__TRY(opreg__chk_tensor(op, on[i], o[i], dts[i], 2));
        OPREG__TRY(opreg__chk_size(op, on[i], o[i], 0, gating_output->shape[0]));
        if (i > 0) OPREG__TRY(opreg__chk_size(op, on[i], o[i], 1, topk_weights->shape[1]));
        OPREG__TRY(opreg__chk_contig(op, on[i], o[i]));
        OPREG__TRY(opreg__chk_same_device(op, on[i], o[i], "gating_output", gating_output));
        OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], "gating_output", gating_output));
        for (int j = 0; j < i; j++)
            OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], on[j], o[j]));
    }
    if (topk_weights->shape[1] > gating_output->shape[1])
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'topk_weights': k = %" PRId64 " exceeds the %" PRId64
                           " experts of gating_output",
                           op, topk_weights->shape[1], gating_output->shape[1]);
    return OPREG_OK;
}
