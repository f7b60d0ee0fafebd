/* Helpers for the op tests: CPU tensors from a pool, fills, snapshots of
 * every buffer, and the bad-input matrix: mutate one argument of a valid
 * call, then check the status, the message and that no byte changed. */
#ifndef OPREG_TESTS_OPS_TEST_H
#define OPREG_TESTS_OPS_TEST_H

#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"
#include "test.h"

#include <math.h>

#define TT_MAX 32

typedef struct tt_slot {
    DLTensor t;
    int64_t shape[OPREG__MAX_DIMS];
    int64_t strides[OPREG__MAX_DIMS];
    void *buf;
    size_t bytes;
    void *snap;
} tt_slot;

static tt_slot tt_pool[TT_MAX];
static int tt_count;

static inline DLDataType tt_dl(opreg_dtype dt) {
    return opreg_dtype_to_dlpack(dt);
}

/* A zeroed contiguous CPU tensor with @p extra spare bytes after its data. */
static inline DLTensor *tt_new_extra(opreg_dtype dt, int ndim, const int64_t *shape, size_t extra) {
    tt_slot *s = &tt_pool[tt_count++];
    int64_t n = 1;
    memset(s, 0, sizeof *s);
    for (int d = 0; d < ndim; d++) {
        s->shape[d] = shape[d];
        n *= shape[d];
    }
    s->bytes = (size_t)n * opreg_dtype_size(dt) + extra;
    s->buf = calloc(1, s->bytes + 1);
    s->t.data = s->buf;
    s->t.device.device_type = kDLCPU;
    s->t.ndim = ndim;
    s->t.dtype = tt_dl(dt);
    s->t.shape = s->shape;
    s->t.strides = NULL;
    return &s->t;
}

static inline DLTensor *tt_new(opreg_dtype dt, int ndim, const int64_t *shape) {
    return tt_new_extra(dt, ndim, shape, 0);
}

#define TT(dt, ...)                                                                                \
    tt_new(OPREG_DTYPE_##dt, (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)),          \
           (int64_t[]){ __VA_ARGS__ })

static inline tt_slot *tt_slot_of(const DLTensor *t) {
    return (tt_slot *)(uintptr_t)t;
}

/* Give @p t explicit strides (elements). */
static inline void tt_set_strides(DLTensor *t, const int64_t *strides) {
    tt_slot *s = tt_slot_of(t);
    for (int d = 0; d < t->ndim; d++)
        s->strides[d] = strides[d];
    t->strides = s->strides;
}

static inline void tt_free_all(void) {
    for (int i = 0; i < tt_count; i++) {
        free(tt_pool[i].buf);
        free(tt_pool[i].snap);
    }
    tt_count = 0;
}

static inline int tt_dt(const DLTensor *t) {
    return opreg__dtype_of(t);
}
static inline double tt_get(const DLTensor *t, int64_t i) {
    return opreg__ld(opreg__ptr(t), tt_dt(t), i);
}
/* Store @p v as common/dtype_access.h does: floats rounded once, ints
 * truncated and clamped. */
static inline void tt_set(DLTensor *t, int64_t i, double v) {
    opreg__st(opreg__ptr(t), tt_dt(t), i, v);
}

static uint64_t tt_rng = 88172645463325252ull;
static inline double tt_rand(double lo, double hi) {
    tt_rng ^= tt_rng << 13;
    tt_rng ^= tt_rng >> 7;
    tt_rng ^= tt_rng << 17;
    return lo + (hi - lo) * (double)(tt_rng >> 11) * 0x1p-53;
}

/* Fill the whole buffer (numel elements from the start) with uniform values. */
static inline void tt_fill(DLTensor *t, double lo, double hi) {
    tt_slot *s = tt_slot_of(t);
    int64_t n = (int64_t)(s->bytes / opreg_dtype_size((opreg_dtype)tt_dt(t)));
    for (int64_t i = 0; i < n; i++)
        tt_set(t, i, tt_rand(lo, hi));
}

static inline void tt_snapshot(void) {
    for (int i = 0; i < tt_count; i++) {
        free(tt_pool[i].snap);
        tt_pool[i].snap = malloc(tt_pool[i].bytes + 1);
        memcpy(tt_pool[i].snap, tt_pool[i].buf, tt_pool[i].bytes);
    }
}

/* Index of the first buffer that changed since tt_snapshot(), or -1. */
static inline int tt_changed(void) {
    for (int i = 0; i < tt_count; i++)
        if (memcmp(tt_pool[i].snap, tt_pool[i].buf, tt_pool[i].bytes) != 0) return i;
    return -1;
}

/* Relative/absolute closeness for dtype tolerances. */
static inline int tt_close(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ulp-ish tolerance of a float dtype, for comparing two roundings. */
static inline double tt_rtol(int dt) {
    return dt == OPREG_DTYPE_F32 ? 1e-5 : dt == OPREG_DTYPE_F16 ? 2e-3 : 1.6e-2;
}

/* Bad-input matrix: after SETUP() and a mutation, CALL must refuse with
 * status ST and a message naming NEEDLE, writing nothing. Counts cases. */
static int bad_cases;
#define EXPECT_REFUSED(st, needle, call)                                                           \
    do {                                                                                           \
        opreg_status st_;                                                                          \
        int ch_;                                                                                   \
        tt_snapshot();                                                                             \
        st_ = (call);                                                                              \
        ch_ = tt_changed();                                                                        \
        bad_cases++;                                                                               \
        if (st_ != (st)) {                                                                         \
            TEST_FAIL_AT("case '%s': status %s, want %s (%s)", needle, opreg_status_name(st_),     \
                         opreg_status_name(st), opreg_last_error());                               \
            return;                                                                                \
        }                                                                                          \
        CHECK_CONTAINS(opreg_last_error(), needle);                                                \
        if (ch_ >= 0) {                                                                            \
            TEST_FAIL_AT("case '%s': buffer %d written by a refused call", needle, ch_);           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* A Meta twin: same shape/dtype, no data; for checking that checks accept Meta. */
static inline void tt_to_meta(DLTensor *t) {
    t->device.device_type = OPREG_DEVICE_META;
    t->data = NULL;
}

/* The whole reference op, as the Reference key runs it: the op's check, the
 * host-memory check, the data check where the op has one, then the
 * reference kernel (which takes checked arguments). */
#define TT_CHECKED(op, ...) OPREG__TRY(opreg__check_##op(__VA_ARGS__))
#define TT_HOST(op, arg, t) OPREG__TRY(opreg__chk_cpu("_C::" #op, arg, t))

static inline opreg_status checked_rms_norm(const opreg_tensor *out, const opreg_tensor *input,
                                            const opreg_tensor *weight, double epsilon) {
    TT_CHECKED(rms_norm, out, input, weight, epsilon);
    TT_HOST(rms_norm, "input", input);
    return opreg__ref_rms_norm(out, input, weight, epsilon);
}

static inline opreg_status checked_fused_add_rms_norm(const opreg_tensor *input,
                                                      const opreg_tensor *residual,
                                                      const opreg_tensor *weight, double epsilon) {
    TT_CHECKED(fused_add_rms_norm, input, residual, weight, epsilon);
    TT_HOST(fused_add_rms_norm, "input", input);
    return opreg__ref_fused_add_rms_norm(input, residual, weight, epsilon);
}

/* The activations and quantisations: (out, input[, scale]), host input. */
#define TT_UNARY(op)                                                                               \
    static inline opreg_status checked_##op(const opreg_tensor *out, const opreg_tensor *input) {  \
        TT_CHECKED(op, out, input);                                                                \
        TT_HOST(op, "input", input);                                                               \
        return opreg__ref_##op(out, input);                                                        \
    }
TT_UNARY(silu_and_mul)
TT_UNARY(gelu_and_mul)
TT_UNARY(gelu_tanh_and_mul)
TT_UNARY(gelu_new)
TT_UNARY(gelu_fast)
TT_UNARY(gelu_quick)
#undef TT_UNARY

#define TT_QUANT(op)                                                                               \
    static inline opreg_status checked_##op(const opreg_tensor *out, const opreg_tensor *input,    \
                                            const opreg_tensor *scale) {                           \
        TT_CHECKED(op, out, input, scale);                                                         \
        TT_HOST(op, "input", input);                                                               \
        return opreg__ref_##op(out, input, scale);                                                 \
    }
TT_QUANT(static_scaled_fp8_quant)
TT_QUANT(dynamic_scaled_fp8_quant)
TT_QUANT(static_scaled_int8_quant)
TT_QUANT(dynamic_scaled_int8_quant)
#undef TT_QUANT

static inline opreg_status checked_rotary_embedding(const opreg_tensor *positions,
                                                    const opreg_tensor *query,
                                                    const opreg_tensor *key, int64_t head_size,
                                                    const opreg_tensor *cos_sin_cache,
                                                    bool is_neox) {
    TT_CHECKED(rotary_embedding, positions, query, key, head_size, cos_sin_cache, is_neox);
    TT_HOST(rotary_embedding, "query", query);
    OPREG__TRY(opreg__check_rotary_embedding_data(positions, cos_sin_cache));
    return opreg__ref_rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox);
}

static inline opreg_status
checked_batched_rotary_embedding(const opreg_tensor *positions, const opreg_tensor *query,
                                 const opreg_tensor *key, int64_t head_size,
                                 const opreg_tensor *cos_sin_cache, bool is_neox, int64_t rot_dim,
                                 const opreg_tensor *cos_sin_cache_offsets) {
    TT_CHECKED(batched_rotary_embedding, positions, query, key, head_size, cos_sin_cache, is_neox,
               rot_dim, cos_sin_cache_offsets);
    TT_HOST(batched_rotary_embedding, "query", query);
    OPREG__TRY(opreg__check_batched_rotary_embedding_data(positions, cos_sin_cache,
                                                          cos_sin_cache_offsets));
    return opreg__ref_batched_rotary_embedding(positions, query, key, head_size, cos_sin_cache,
                                               is_neox, rot_dim, cos_sin_cache_offsets);
}

static inline opreg_status checked_reshape_and_cache(const opreg_tensor *key,
                                                     const opreg_tensor *value,
                                                     const opreg_tensor *key_cache,
                                                     const opreg_tensor *value_cache,
                                                     const opreg_tensor *slot_mapping,
                                                     const char *kv_cache_dtype, double kv_scale) {
    TT_CHECKED(reshape_and_cache, key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
               kv_scale);
    TT_HOST(reshape_and_cache, "key", key);
    OPREG__TRY(opreg__check_reshape_and_cache_data(key_cache, slot_mapping));
    return opreg__ref_reshape_and_cache(key, value, key_cache, value_cache, slot_mapping,
                                        kv_cache_dtype, kv_scale);
}

static inline opreg_status
checked_reshape_and_cache_flash(const opreg_tensor *key, const opreg_tensor *value,
                                const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                                const opreg_tensor *slot_mapping, const char *kv_cache_dtype) {
    TT_CHECKED(reshape_and_cache_flash, key, value, key_cache, value_cache, slot_mapping,
               kv_cache_dtype);
    TT_HOST(reshape_and_cache_flash, "key", key);
    OPREG__TRY(opreg__check_reshape_and_cache_flash_data(key_cache, slot_mapping));
    return opreg__ref_reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                                              kv_cache_dtype);
}

static inline opreg_status checked_copy_blocks(const opreg_tensor *const *key_caches,
                                               size_t num_key_caches,
                                               const opreg_tensor *const *value_caches,
                                               size_t num_value_caches,
                                               const opreg_tensor *block_mapping) {
    TT_CHECKED(copy_blocks, key_caches, num_key_caches, value_caches, num_value_caches,
               block_mapping);
    TT_HOST(copy_blocks, "block_mapping", block_mapping);
    OPREG__TRY(
        opreg__check_copy_blocks_data(key_caches, value_caches, num_key_caches, block_mapping));
    return opreg__ref_copy_blocks(key_caches, num_key_caches, value_caches, num_value_caches,
                                  block_mapping);
}

static inline opreg_status checked_swap_blocks(const opreg_tensor *src, const opreg_tensor *dst,
                                               const opreg_tensor *block_mapping) {
    TT_CHECKED(swap_blocks, src, dst, block_mapping);
    TT_HOST(swap_blocks, "src", src);
    TT_HOST(swap_blocks, "dst", dst);
    OPREG__TRY(opreg__check_swap_blocks_data(src, dst, block_mapping));
    return opreg__ref_swap_blocks(src, dst, block_mapping);
}

static inline opreg_status checked_moe_align_block_size(const opreg_tensor *topk_ids,
                                                        int64_t num_experts, int64_t block_size,
                                                        const opreg_tensor *sorted_token_ids,
                                                        const opreg_tensor *experts_ids,
                                                        const opreg_tensor *num_tokens_post_pad) {
    TT_CHECKED(moe_align_block_size, topk_ids, num_experts, block_size, sorted_token_ids,
               experts_ids, num_tokens_post_pad);
    TT_HOST(moe_align_block_size, "topk_ids", topk_ids);
    OPREG__TRY(opreg__check_moe_align_block_size_data(topk_ids, num_experts));
    return opreg__ref_moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids,
                                           experts_ids, num_tokens_post_pad);
}

static inline opreg_status checked_topk_softmax(const opreg_tensor *topk_weights,
                                                const opreg_tensor *topk_indices,
                                                const opreg_tensor *token_expert_indices,
                                                const opreg_tensor *gating_output) {
    TT_CHECKED(topk_softmax, topk_weights, topk_indices, token_expert_indices, gating_output);
    TT_HOST(topk_softmax, "gating_output", gating_output);
    return opreg__ref_topk_softmax(topk_weights, topk_indices, token_expert_indices, gating_output);
}

static inline opreg_status
checked_paged_attention_v1(const opreg_tensor *out, const opreg_tensor *query,
                           const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                           int64_t num_kv_heads, double scale, const opreg_tensor *block_tables,
                           const opreg_tensor *seq_lens, int64_t block_size, int64_t max_seq_len,
                           const opreg_tensor *alibi_slopes, const char *kv_cache_dtype,
                           double kv_scale, int64_t tp_rank, int64_t blocksparse_local_blocks,
                           int64_t blocksparse_vert_stride, int64_t blocksparse_block_size,
                           int64_t blocksparse_head_sliding_step) {
    TT_CHECKED(paged_attention_v1, out, query, key_cache, value_cache, num_kv_heads, scale,
               block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype,
               kv_scale, tp_rank, blocksparse_local_blocks, blocksparse_vert_stride,
               blocksparse_block_size, blocksparse_head_sliding_step);
    TT_HOST(paged_attention_v1, "query", query);
    OPREG__TRY(opreg__check_paged_attention_v1_data(key_cache, block_tables, seq_lens, block_size,
                                                    max_seq_len));
    return opreg__ref_paged_attention_v1(
        out, query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens, block_size,
        max_seq_len, alibi_slopes, kv_cache_dtype, kv_scale, tp_rank, blocksparse_local_blocks,
        blocksparse_vert_stride, blocksparse_block_size, blocksparse_head_sliding_step);
}

static inline opreg_status checked_cutlass_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                                     const opreg_tensor *b,
                                                     const opreg_tensor *a_scales,
                                                     const opreg_tensor *b_scales,
                                                     const opreg_tensor *bias) {
    TT_CHECKED(cutlass_scaled_mm, out, a, b, a_scales, b_scales, bias);
    TT_HOST(cutlass_scaled_mm, "out", out);
    return opreg__ref_cutlass_scaled_mm(out, a, b, a_scales, b_scales, bias);
}

/* linear into a caller's result: opreg__check_linear_out stands for the
 * check of the registered kernel, which allocates the result itself. */
static inline opreg_status checked_linear(const opreg_tensor *out, const opreg_tensor *input,
                                          const opreg_tensor *weight, const opreg_tensor *bias) {
    OPREG__TRY(opreg__check_linear_out(out, input, weight, bias));
    TT_HOST(linear, "input", input);
    return opreg__ref_linear(out, input, weight, bias);
}

#undef TT_CHECKED
#undef TT_HOST

#define DT(x) tt_dl(OPREG_DTYPE_##x)

#endif
