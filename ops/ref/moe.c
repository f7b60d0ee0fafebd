/* Reference MoE routing (§3.6). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

#include <stdlib.h>

/* moe_align_block_size counts each expert's ids in a table, one entry an
 * expert, while num_experts is at most MOE_DENSE_SLACK entries past twice
 * the ids. Past that (2^31 - 1 experts for a dozen ids would be 16 GiB of
 * table and 2^31 steps) the ids are renamed to their ranks among the
 * experts present (a sorted copy), the table has one entry for each, and
 * the blocks' experts are named back after. Either way memory and time
 * follow the ids, not num_experts. */
#define MOE_DENSE_SLACK 65536

/* The op over @p rows experts, every one of the @p n ids (dtype @p dt)
 * below it: a table of counts, one entry an expert. */
static opreg_status moe_align_dense(const void *ids, int dt, int64_t n, int64_t rows,
                                    int64_t block_size, int32_t *sorted, int32_t *experts,
                                    int32_t *post_pad) {
    int64_t *start = calloc((size_t)rows + 1, sizeof *start);
    if (!start)
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "_C::moe_align_block_size: out of memory");
    /* start[e + 1] = count of e, then the padded exclusive cumsum */
    for (int64_t i = 0; i < n; i++)
        start[opreg__ld_index(ids, dt, i) + 1]++;
    for (int64_t e = 0; e < rows; e++)
        start[e + 1] = start[e] + (start[e + 1] + block_size - 1) / block_size * block_size;
    for (int64_t e = 0; e < rows; e++)
        for (int64_t b = start[e] / block_size; b < start[e + 1] / block_size; b++)
            experts[b] = (int32_t)e;
    *post_pad = (int32_t)start[rows];
    /* stable: flat index order within each expert; start[e] walks forward */
    for (int64_t i = 0; i < n; i++)
        sorted[start[opreg__ld_index(ids, dt, i)]++] = (int32_t)i;
    free(start);
    return OPREG_OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The place of expert @p e among the @p rows experts @p present
 * (ascending, e among them). */
static int64_t moe_rank(const int64_t *present, int64_t rows, int64_t e) {
    int64_t lo = 0, hi = rows - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (present[mid] < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int opreg__moe_align_dense(int64_t n, int64_t num_experts) {
    return num_experts <= 2 * n + MOE_DENSE_SLACK;
}

int64_t opreg__moe_rank_ids(const void *ids, int dt, int64_t n, int64_t *present, int64_t *ranks) {
    int64_t rows = 0;
    for (int64_t i = 0; i < n; i++)
        present[i] = opreg__ld_index(ids, dt, i);
    qsort(present, (size_t)n, sizeof *present, cmp_i64);
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || present[i] != present[rows - 1]) present[rows++] = present[i];
    for (int64_t i = 0; i < n; i++)
        ranks[i] = moe_rank(present, rows, opreg__ld_index(ids, dt, i));
    return rows;
}

opreg_status opreg__ref_moe_align_block_size(const opreg_tensor *topk_ids, int64_t num_experts,
                                             int64_t block_size,
                                             const opreg_tensor *sorted_token_ids,
                                             const opreg_tensor *experts_ids,
                                             const opreg_tensor *num_tokens_post_pad) {
    const char *op = "_C::moe_align_block_size";
    int dt = opreg__dtype_of(topk_ids);
    const void *ids = opreg__ptr(topk_ids);
    int64_t n = opreg__numel(topk_ids), rows, *present, *ranks;
    int32_t *sorted = opreg__ptr(sorted_token_ids), *experts = opreg__ptr(experts_ids);
    int32_t *post_pad = opreg__ptr(num_tokens_post_pad);
    /* the checks hold every id below num_experts */
    if (opreg__moe_align_dense(n, num_experts))
        return moe_align_dense(ids, dt, n, num_experts, block_size, sorted, experts, post_pad);
    present = malloc(((size_t)n + 1) * sizeof *present); /* + 1: n may be 0 */
    ranks = malloc(((size_t)n + 1) * sizeof *ranks);
    if (!present || !ranks) {
        free(present);
        free(ranks);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    rows = opreg__moe_rank_ids(ids, dt, n, present, ranks);
    opreg_status st =
        moe_align_dense(ranks, OPREG_DTYPE_I64, n, rows, block_size, sorted, experts, post_pad);
    for (int64_t b = 0; st == OPREG_OK && b < *post_pad / block_size; b++)
        experts[b] = (int32_t)present[experts[b]];
    free(present);
    free(ranks);
    return st;
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
