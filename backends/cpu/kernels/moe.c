/* topk_softmax (ops-reference.md §3.6): per token, the k largest of the
 * softmax of its gating logits, with their experts, as ops/ref computes
 * them: experts ranked by logit (softmax is monotonic), the lower expert
 * first among equal logits, weights exp(l - max) / sum.
 *
 * One pass per token keeps the k best so far in order, so a logit that
 * does not beat the k-th costs one comparison (ops/ref scans every expert
 * k times), and the sum is taken in float (ops/ref: double), well inside
 * f32's tolerance. On a SIMD path the max and the sum of a row of up to
 * CHUNK finite logits come from its softmax_stats (moe_simd.h): one expf
 * per expert took most of a call (64 experts, top 8, one core of Zen 5,
 * f32: 4.8 -> 1.6 ns a logit when the same 256 tokens come every call,
 * 8.8 -> 5.9 with fresh logits, where the ranking's branches mispredict). A row holding a NaN is
 * ranked as ops/ref ranks it (a NaN compares false with everything), by its k scans. The logits are
 * converted to float a chunk at a time on the stack (a row of up to CHUNK experts once): nothing is
 * allocated. Threads split the tokens. */
#include "backends/cpu/kernels/kern_internal.h"

#include <math.h>
#include <string.h>

/* Logits converted to float at a time (on the stack). */
#define CHUNK 256

struct topk_args {
    float *weights;
    int32_t *indices, *token_expert;
    const void *gating;
    int64_t tokens, experts, k;
    int dt;
    /* the path's softmax_stats, NULL on portable C */
    bool (*stats)(const float *l, int64_t n, float *mx, float *sum);
};

static float logit(const struct topk_args *a, int64_t t, int64_t e) {
    return opreg__cpu_ld(a->dt, a->gating, t * a->experts + e);
}

/* ops/ref's ranking, for a row with a NaN: k scans, each taking the first
 * expert not yet taken that no later one beats. */
static void rank_by_scans(const struct topk_args *a, int64_t t, int32_t *ids) {
    for (int64_t k = 0; k < a->k; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < a->experts; e++) {
            bool taken = false;
            for (int64_t j = 0; j < k; j++)
                taken |= ids[j] == e;
            if (!taken && (best < 0 || logit(a, t, e) > logit(a, t, best))) best = e;
        }
        ids[k] = (int32_t)best;
    }
}

/* Logits e0 .. e0 + n of row t as floats: @p buf, loaded now, unless the
 * whole row is there already (@p whole). */
static const float *chunk(const struct topk_args *a, int64_t t, int64_t e0, int64_t n, float *buf,
                          bool whole) {
    if (whole) return buf + e0;
    /* one loop per dtype: opreg__cpu_ld's test of the dtype per logit cost
     * 7% of a call at 256 tokens of 64 experts */
    const char *row =
        (const char *)a->gating + (size_t)(t * a->experts + e0) * opreg__cpu_es(a->dt);
    if (a->dt == OPREG_DTYPE_F32) {
        memcpy(buf, row, (size_t)n * sizeof *buf);
    } else if (a->dt == OPREG_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i++)
            buf[i] = opreg__bf16_to_f32(((const uint16_t *)(const void *)row)[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            buf[i] = opreg__f16_to_f32(((const uint16_t *)(const void *)row)[i]);
    }
    return buf;
}

/* Logits e0 .. e0 + cnt (at l) into the k best so far (*n of them, in
 * ids and best[], best first; the lower expert first among equal ones). */
static void rank_chunk(const float *l, int64_t e0, int64_t cnt, int64_t k, int32_t *ids,
                       float *best, int64_t *n) {
    for (int64_t i = 0; i < cnt; i++) {
        float v = l[i];
        if (*n == k && !(v > best[k - 1])) continue;
        int64_t p = *n < k ? (*n)++ : k - 1; /* the free slot: the end */
        while (p > 0 && v > best[p - 1]) {
            ids[p] = ids[p - 1];
            best[p] = best[p - 1];
            p--;
        }
        ids[p] = (int32_t)(e0 + i);
        best[p] = v;
    }
}

/* Row t's experts ranked into @p ids and their logits into @p w, best
 * first, and the softmax's max and sum, one logit at a time. */
static void rank_row(const struct topk_args *a, int64_t t, float *buf, int32_t *ids, float *w,
                     float *max, float *total) {
    bool whole = a->experts <= CHUNK, nan = false;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t e0 = 0; e0 < a->experts; e0 += CHUNK) {
        int64_t cnt = a->experts - e0 < CHUNK ? a->experts - e0 : CHUNK;
        const float *l = chunk(a, t, e0, cnt, buf, false);
        for (int64_t i = 0; i < cnt; i++) {
            mx = l[i] > mx ? l[i] : mx;
            nan |= l[i] != l[i];
        }
    }
    for (int64_t e0 = 0; e0 < a->experts; e0 += CHUNK) {
        int64_t cnt = a->experts - e0 < CHUNK ? a->experts - e0 : CHUNK;
        const float *l = chunk(a, t, e0, cnt, buf, whole);
        for (int64_t i = 0; i < cnt; i++)
            sum += expf(l[i] - mx);
    }
    if (nan) {
        rank_by_scans(a, t, ids);
        for (int64_t k = 0; k < a->k; k++)
            w[k] = logit(a, t, ids[k]);
    } else {
        int64_t n = 0;
        for (int64_t e0 = 0; e0 < a->experts; e0 += CHUNK) {
            int64_t cnt = a->experts - e0 < CHUNK ? a->experts - e0 : CHUNK;
            rank_chunk(chunk(a, t, e0, cnt, buf, whole), e0, cnt, a->k, ids, w, &n);
        }
    }
    *max = mx;
    *total = sum;
}

static void topk_range(const void *args, int64_t t0, int64_t t1) {
    const struct topk_args *a = args;
    float buf[CHUNK];
    for (int64_t t = t0; t < t1; t++) {
        int32_t *ids = a->indices + t * a->k;
        float *w = a->weights + t * a->k; /* the ranked logits, then the weights */
        float mx, sum;
        int64_t n = 0;
        if (a->stats && a->experts <= CHUNK &&
            a->stats(chunk(a, t, 0, a->experts, buf, false), a->experts, &mx, &sum))
            rank_chunk(buf, 0, a->experts, a->k, ids, w, &n);
        else
            rank_row(a, t, buf, ids, w, &mx, &sum);
        for (int64_t k = 0; k < a->k; k++) {
            w[k] = expf(w[k] - mx) / sum;
            a->token_expert[t * a->k + k] = (int32_t)(k * a->tokens + t);
        }
    }
}

void opreg__cpu_topk_softmax(int isa, float *weights, int32_t *indices, int32_t *token_expert,
                             const void *gating, int dt, int64_t tokens, int64_t experts,
                             int64_t k) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct topk_args a = { weights, indices, token_expert,
                           gating,  tokens,  experts,
                           k,       dt,      s ? s->softmax_stats : NULL };
    if (tokens == 0 || k == 0) return;
    /* About 6-10 ns of work per logit where the ranking's branches do not
     * learn the logits (fresh ones each call: Zen 5, 2048 tokens of 64
     * experts, 5.9 ns on a SIMD path, 8.8 on portable C; 1.6 and 4.8 when
     * the same 256 tokens come every call), weighed as the bytes a
     * memory-bound op would move in that time, to decide when threads
     * pay. */
    opreg__cpu_parallel(topk_range, &a, tokens, tokens * experts * 256);
}
