/* Reference MoE routing (§3.6). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

#include <stdlib.h>

opreg_status opreg__ref_moe_align_block_size(const opreg_tensor *topk_ids, int64_t num_experts,
                                             int64_t block_size,
                                             const opreg_tensor *sorted_token_ids,
                                             const opreg_tensor *experts_ids,
                                             const opreg_tensor *num_tokens_post_pad) {
    const char *op = "_C::moe_align_block_size";
    int dt;
    int64_t n, *start;
    int32_t *sorted, *experts;
    start = calloc((size_t)num_experts + 1, sizeof *start);
    if (!start) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    dt = opreg__dtype_of(topk_ids);
    n = opreg__numel(topk_ids);
    sorted = opreg__ptr(sorted_token_ids);
    experts = opreg__ptr(experts_ids);
    /* start[e + 1] = count of e, then the padded exclusive cumsum */
    for (int64_t i = 0; i < n; i++)
        start[opreg__ld_index(opreg__ptr(topk_ids), dt, i) + 1]++;
    for (int64_t e = 0; e < num_experts; e++)
        start[e + 1] = start[e] + (start[e + 1] + block_size - 1) / block_size * block_size;
    for (int64_t e = 0; e < num_experts; e++)
        for (int64_t b = start[e] / block_size; b < start[e + 1] / block_size; b++)
            experts[b] = (int32_t)e;
    *(int32_t *)opreg__ptr(num_tokens_post_pad) = (int32_t)start[num_experts];
    /* stable: flat index order within each expert; start[e] walks forward */
    for (int64_t i = 0; i < n; i++)
        sorted[start[opreg__ld_index(opreg__ptr(topk_ids), dt, i)]++] = (int32_t)i;
    free(start);
    return OPREG_OK;
}

opreg_status opreg__ref_topk_softmax(const opreg_tensor *topk_weights,
                                     const opreg_tensor *topk_indices,
                                     const opreg_tensor *token_expert_indices,
                                     const opreg_tensor *gating_output) {
    const char *op = "_C::topk_softmax";
    int dt;
    int64_t t_count, e_count, k_count;
    double *logit;
    unsigned char *taken;
    dt = opreg__dtype_of(gating_output);
    t_count = gating_output->shape[0];
    e_count = gating_output->shape[1];
    k_count = topk_weights->shape[1];
    logit = malloc(((size_t)e_count + 1) * sizeof *logit);
    taken = malloc((size_t)e_count + 1);
    if (!logit || !taken) {
        free(logit);
        free(taken);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    for (int64_t t = 0; t < t_count; t++) {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t e = 0; e < e_count; e++) {
            logit[e] = opreg__ld(opreg__ptr(gating_output), dt, t * e_count + e);
            if (logit[e] > mx) mx = logit[e];
            taken[e] = 0;
        }
        for (int64_t e = 0; e < e_count; e++)
            sum += exp(logit[e] - mx);
        for (int64_t k = 0; k < k_count; k++) {
            int64_t best = -1;
            /* softmax is monotonic: rank by logit; strict > keeps the lower id on ties */
            for (int64_t e = 0; e < e_count; e++)
                if (!taken[e] && (best < 0 || logit[e] > logit[best])) best = e;
            taken[best] = 1;
            ((float *)opreg__ptr(topk_weights))[t * k_count + k] =
                (float)(exp(logit[best] - mx) / sum);
            ((int32_t *)opreg__ptr(topk_indices))[t * k_count + k] = (int32_t)best;
            ((int32_t *)opreg__ptr(token_expert_indices))[t * k_count + k] =
                (int32_t)(k * t_count + t);
        }
    }
    free(logit);
    free(taken);
    return OPREG_OK;
}
