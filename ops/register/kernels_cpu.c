/* The CPU key. Each kernel runs the op's checks (the same functions as Meta
 * and Reference, so every backend refuses the same inputs), then calls the
 * fast kernels of backends/cpu: SIMD paths chosen at run time, rows over
 * threads, oneDNN for the GEMMs. The ops without a fast kernel yet (see
 * docs/ops.md) run their portable reference kernel on this key. */
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/onednn/onednn.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"
#include "ops/register/catalogue.h"

/* Short names for the argument accessors. */
#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T
#define IV OPREG__ARG_I
#define FV OPREG__ARG_F
#define BV OPREG__ARG_B
#define SV OPREG__ARG_S

/* Rows of a checked tensor whose last dim is contiguous and whose leading
 * dims collapse (opreg__chk_rows): count, width and stride in elements. */
typedef struct rows {
    int64_t n, width, stride;
} rows;

static rows rows_of(const opreg_tensor *t) {
    rows r;
    r.width = t->ndim ? t->shape[t->ndim - 1] : 1;
    r.n = r.width ? opreg__numel(t) / r.width : 0;
    r.stride = opreg__row_stride(t); /* dims of size 1 have no stride that matters */
    return r;
}

/* Dispatch on a float dtype to the f32/f16/bf16 variant of a kernel. */
#define BY_DTYPE(dt, call_f32, call_f16, call_bf16)                                                \
    do {                                                                                           \
        switch (dt) {                                                                              \
        case OPREG_DTYPE_F32:                                                                      \
            call_f32;                                                                              \
            break;                                                                                 \
        case OPREG_DTYPE_F16:                                                                      \
            call_f16;                                                                              \
            break;                                                                                 \
        case OPREG_DTYPE_BF16:                                                                     \
            call_bf16;                                                                             \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

/* Each op's shared checks, as the catalogue table unpacks its arguments. */
#define CHECK_FN(op, arglist)                                                                      \
    __attribute__((unused)) static opreg_status check_##op(const opreg_value *args) {              \
        return opreg__check_##op arglist;                                                          \
    }
OPREG__CATALOGUE_OPS(CHECK_FN)
#undef CHECK_FN

/* Each op's portable reference kernel as a kernel of this key, cpu_ref_<op>:
 * registered for the ops below that have no fast kernel, and called by the
 * fast kernels for the arguments they do not cover. */
#define REF_ON_CPU(op, arglist) OPREG__TABLE_KERNEL_SOME(cpu_ref, opreg__ref_, op, arglist)
OPREG__CATALOGUE_OPS(REF_ON_CPU)
#undef REF_ON_CPU

/* CPU_KERNEL(op, i, "name") { body }: the kernel cpu_<op> runs the op's
 * shared checks, refuses argument i ("name") unless it is in host memory (a
 * Meta tensor passes the checks but has no data), then runs the body, which
 * reads `args` and may assume both. */
#define CPU_KERNEL(op, host_arg, host_name)                                                        \
    static opreg_status fast_##op(const opreg_value *args);                                        \
    static opreg_status cpu_##op(void *context, const opreg_op *o, const opreg_value *args,        \
                                 opreg_value *rets) {                                              \
        (void)context, (void)o, (void)rets;                                                        \
        OPREG__TRY(check_##op(args));                                                              \
        OPREG__TRY(opreg__chk_cpu("_C::" #op, host_name, OPREG__ARG_T(host_arg)));                 \
        return fast_##op(args);                                                                    \
    }                                                                                              \
    static opreg_status fast_##op(const opreg_value *args)

/* ---- norms ------------------------------------------------------------------------ */

CPU_KERNEL(rms_norm, 1, "input") {
    const opreg_tensor *out = TS(0), *in = TS(1), *w = TS(2);
    rows ro = rows_of(out), ri = rows_of(in);
    float eps = (float)FV(3);
#define RMS(sfx, T)                                                                                \
    opreg__cpu_rms_norm_##sfx((T *)opreg__ptr(out), ro.stride, (const T *)opreg__ptr(in),          \
                              ri.stride, (const T *)opreg__ptr(w), ri.n, ri.width, eps)
    BY_DTYPE(opreg__dtype_of(in), RMS(f32, float), RMS(f16, uint16_t), RMS(bf16, uint16_t));
#undef RMS
    return OPREG_OK;
}

CPU_KERNEL(fused_add_rms_norm, 0, "input") {
    const opreg_tensor *in = TS(0), *res = TS(1), *w = TS(2);
    rows ri = rows_of(in), rr = rows_of(res);
    float eps = (float)FV(3);
#define FUSED(sfx, T)                                                                              \
    opreg__cpu_fused_add_rms_norm_##sfx((T *)opreg__ptr(in), ri.stride, (T *)opreg__ptr(res),      \
                                        rr.stride, (const T *)opreg__ptr(w), ri.n, ri.width, eps)
    BY_DTYPE(opreg__dtype_of(in), FUSED(f32, float), FUSED(f16, uint16_t), FUSED(bf16, uint16_t));
#undef FUSED
    return OPREG_OK;
}

/* ---- activations ------------------------------------------------------------------- */

/* Gated activations: input rows [x | y] of 2d, out rows of d. */
#define GATED(op)                                                                                  \
    CPU_KERNEL(op, 1, "input") {                                                                   \
        const opreg_tensor *out = TS(0), *in = TS(1);                                              \
        rows ro = rows_of(out), ri = rows_of(in);                                                  \
        BY_DTYPE(                                                                                  \
            opreg__dtype_of(in),                                                                   \
            opreg__cpu_##op##_f32((float *)opreg__ptr(out), ro.stride,                             \
                                  (const float *)opreg__ptr(in), ri.stride, ri.n, ro.width),       \
            opreg__cpu_##op##_f16((uint16_t *)opreg__ptr(out), ro.stride,                          \
                                  (const uint16_t *)opreg__ptr(in), ri.stride, ri.n, ro.width),    \
            opreg__cpu_##op##_bf16((uint16_t *)opreg__ptr(out), ro.stride,                         \
                                   (const uint16_t *)opreg__ptr(in), ri.stride, ri.n, ro.width));  \
        return OPREG_OK;                                                                           \
    }
GATED(silu_and_mul)
GATED(gelu_and_mul)
GATED(gelu_tanh_and_mul)
#undef GATED

/* Elementwise activations, row by row (rows may be strided). */
#define ELEMENTWISE(op)                                                                            \
    CPU_KERNEL(op, 1, "input") {                                                                   \
        const opreg_tensor *out = TS(0), *in = TS(1);                                              \
        rows ro = rows_of(out), ri = rows_of(in);                                                  \
        int dt = opreg__dtype_of(in);                                                              \
        size_t es = opreg__dtype_bytes(dt);                                                        \
        bool flat = ro.stride == ro.width && ri.stride == ri.width;                                \
        int64_t n = flat ? ri.n * ri.width : ri.width, nrows = flat ? 1 : ri.n;                    \
        if (n == 0) return OPREG_OK; /* no address to form: data may be NULL */                    \
        for (int64_t r = 0; r < nrows; r++) {                                                      \
            void *po = (char *)opreg__ptr(out) + (size_t)(r * ro.stride) * es;                     \
            const void *pi = (const char *)opreg__ptr(in) + (size_t)(r * ri.stride) * es;          \
            BY_DTYPE(dt, opreg__cpu_##op##_f32(po, pi, n), opreg__cpu_##op##_f16(po, pi, n),       \
                     opreg__cpu_##op##_bf16(po, pi, n));                                           \
        }                                                                                          \
        return OPREG_OK;                                                                           \
    }
ELEMENTWISE(gelu_new)
ELEMENTWISE(gelu_fast)
ELEMENTWISE(gelu_quick)
#undef ELEMENTWISE

/* ---- rotary --------------------------------------------------------------------------- */

static opreg_status rotary(const opreg_value *args, const opreg_tensor *offsets) {
    const opreg_tensor *pos = TS(0), *q = TS(1), *k = TS(2), *cache = TS(4);
    int64_t head_size = IV(3), tokens = opreg__numel(pos);
    int64_t rot_dim = cache->shape[1];
    int64_t q_row = tokens ? opreg__numel(q) / tokens : 0;
    int64_t k_row = tokens ? opreg__numel(k) / tokens : 0;
    const int64_t *p = opreg__ptr(pos);
    const int64_t *off = offsets ? opreg__ptr(offsets) : NULL;
#define ROT(sfx, T)                                                                                \
    opreg__cpu_rotary_embedding_##sfx(                                                             \
        p, off, tokens, (T *)opreg__ptr(q), opreg__rotary_token_stride(q, pos), q_row / head_size, \
        (T *)opreg__ptr(k), opreg__rotary_token_stride(k, pos), k_row / head_size, head_size,      \
        (const T *)opreg__ptr(cache), rot_dim, BV(5))
    BY_DTYPE(opreg__dtype_of(q), ROT(f32, float), ROT(f16, uint16_t), ROT(bf16, uint16_t));
#undef ROT
    return OPREG_OK;
}

CPU_KERNEL(rotary_embedding, 1, "query") {
    OPREG__TRY(opreg__check_rotary_embedding_data(TS(0), TS(4)));
    return rotary(args, NULL);
}

CPU_KERNEL(batched_rotary_embedding, 1, "query") {
    OPREG__TRY(opreg__check_batched_rotary_embedding_data(TS(0), TS(4), TS(7)));
    return rotary(args, TS(7));
}

/* ---- quantisation ---------------------------------------------------------------------- */

static float scalar_f32(const opreg_tensor *t) {
    return *(const float *)opreg__ptr(t);
}

static opreg_status static_quant(const opreg_value *args, bool fp8) {
    const opreg_tensor *out = TS(0), *in = TS(1);
    int64_t n = opreg__numel(in);
    float s = scalar_f32(TS(2));
    void *po = opreg__ptr(out);
    const void *pi = opreg__ptr(in);
    if (fp8)
        BY_DTYPE(opreg__dtype_of(in), opreg__cpu_static_scaled_fp8_quant_f32(po, pi, n, s),
                 opreg__cpu_static_scaled_fp8_quant_f16(po, pi, n, s),
                 opreg__cpu_static_scaled_fp8_quant_bf16(po, pi, n, s));
    else
        BY_DTYPE(opreg__dtype_of(in), opreg__cpu_static_scaled_int8_quant_f32(po, pi, n, s),
                 opreg__cpu_static_scaled_int8_quant_f16(po, pi, n, s),
                 opreg__cpu_static_scaled_int8_quant_bf16(po, pi, n, s));
    return OPREG_OK;
}

CPU_KERNEL(static_scaled_int8_quant, 1, "input") {
    return static_quant(args, false);
}

CPU_KERNEL(static_scaled_fp8_quant, 1, "input") {
    return static_quant(args, true);
}

CPU_KERNEL(dynamic_scaled_int8_quant, 1, "input") {
    const opreg_tensor *out = TS(0), *in = TS(1), *scale = TS(2);
    rows ri = rows_of(in);
    int8_t *po = opreg__ptr(out);
    float *ps = opreg__ptr(scale);
    const void *pi = opreg__ptr(in);
    BY_DTYPE(opreg__dtype_of(in),
             opreg__cpu_dynamic_scaled_int8_quant_f32(po, ps, pi, ri.stride, ri.n, ri.width),
             opreg__cpu_dynamic_scaled_int8_quant_f16(po, ps, pi, ri.stride, ri.n, ri.width),
             opreg__cpu_dynamic_scaled_int8_quant_bf16(po, ps, pi, ri.stride, ri.n, ri.width));
    return OPREG_OK;
}

CPU_KERNEL(dynamic_scaled_fp8_quant, 1, "input") {
    const opreg_tensor *out = TS(0), *in = TS(1), *scale = TS(2);
    int64_t n = opreg__numel(in);
    uint8_t *po = opreg__ptr(out);
    float *ps = opreg__ptr(scale);
    const void *pi = opreg__ptr(in);
    BY_DTYPE(opreg__dtype_of(in), opreg__cpu_dynamic_scaled_fp8_quant_f32(po, ps, pi, n),
             opreg__cpu_dynamic_scaled_fp8_quant_f16(po, ps, pi, n),
             opreg__cpu_dynamic_scaled_fp8_quant_bf16(po, ps, pi, n));
    return OPREG_OK;
}

/* ---- KV cache ------------------------------------------------------------------------- */

CPU_KERNEL(reshape_and_cache, 0, "key") {
    const opreg_tensor *key = TS(0), *value = TS(1), *kc = TS(2), *vc = TS(3), *slots = TS(4);
    OPREG__TRY(opreg__check_reshape_and_cache_data(kc, slots));
    int64_t tokens = opreg__numel(slots);
    opreg__cpu_reshape_and_cache_generic(
        opreg__ptr(key), opreg__stride(key, 0), opreg__ptr(value), opreg__stride(value, 0),
        opreg__ptr(kc), opreg__block_stride(kc), opreg__ptr(vc), opreg__block_stride(vc),
        opreg__ptr(slots), tokens, key->shape[1], key->shape[2], kc->shape[3], kc->shape[4],
        opreg__dtype_of(key), opreg__kv_cache_kind(SV(5)), (float)FV(6));
    return OPREG_OK;
}

CPU_KERNEL(reshape_and_cache_flash, 0, "key") {
    const opreg_tensor *key = TS(0), *value = TS(1), *kc = TS(2), *vc = TS(3), *slots = TS(4);
    OPREG__TRY(opreg__check_reshape_and_cache_flash_data(kc, slots));
    int64_t tokens = opreg__numel(slots);
    opreg__cpu_reshape_and_cache_flash_generic(
        opreg__ptr(key), opreg__stride(key, 0), opreg__ptr(value), opreg__stride(value, 0),
        opreg__ptr(kc), opreg__block_stride(kc), opreg__ptr(vc), opreg__block_stride(vc),
        opreg__ptr(slots), tokens, key->shape[1], key->shape[2], kc->shape[1], opreg__dtype_of(key),
        opreg__kv_cache_kind(SV(5)), 1.0f);
    return OPREG_OK;
}

/* ---- attention ------------------------------------------------------------------------ */

/* Head and block sizes past the fast kernel's stack buffers run the
 * portable kernel. */
CPU_KERNEL(paged_attention_v1, 1, "query") {
    const opreg_tensor *out = TS(0), *q = TS(1), *kc = TS(2), *vc = TS(3), *bt = TS(6),
                       *lens = TS(7), *alibi = OT(10);
    int64_t bs = IV(8);
    if (q->shape[2] > OPREG__CPU_PA_MAX_HEAD || bs > OPREG__CPU_PA_MAX_BLOCK)
        return cpu_ref_paged_attention_v1(NULL, NULL, args, NULL);
    OPREG__TRY(opreg__check_paged_attention_v1_data(kc, bt, lens, bs, IV(9)));
    opreg__cpu_paged_attention_v1(opreg__ptr(out), opreg__ptr(q), opreg__stride(q, 0),
                                  opreg__ptr(kc), opreg__ptr(vc), opreg__ptr(bt), opreg__ptr(lens),
                                  alibi ? opreg__ptr(alibi) : NULL, q->shape[0], q->shape[1], IV(4),
                                  q->shape[2], kc->shape[4], bs, opreg__block_stride(kc),
                                  opreg__block_stride(vc), bt->shape[1], (float)FV(5),
                                  opreg__dtype_of(q), opreg__kv_cache_kind(SV(11)), (float)FV(12));
    return OPREG_OK;
}

/* ---- GEMM (oneDNN) ------------------------------------------------------------------------ */

/* oneDNN where it covers the arguments (onednn.h); the portable kernel for
 * the valid rest (fp8 operands, f16 results, padded rows), so the CPU key
 * accepts exactly what the op's checks accept. */
CPU_KERNEL(cutlass_scaled_mm, 1, "a") {
    opreg_tensor *out = (opreg_tensor *)TS(0);
    if (!opreg__onednn_scaled_mm_covers(out, TS(1), TS(2)))
        return cpu_ref_cutlass_scaled_mm(NULL, NULL, args, NULL);
    return opreg__onednn_scaled_mm(out, TS(1), TS(2), TS(3), TS(4), OT(5));
}

static opreg_status onednn_linear(const opreg_tensor *out, const opreg_tensor *input,
                                  const opreg_tensor *weight, const opreg_tensor *bias) {
    if (!opreg__onednn_linear_covers(input)) return opreg__ref_linear(out, input, weight, bias);
    return opreg__onednn_linear((opreg_tensor *)out, input, weight, bias);
}

static opreg_status cpu_linear(void *context, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)context, (void)op;
    OPREG__TRY(opreg__chk_cpu("_C::linear", "input", TS(0)));
    return opreg__linear_into_new(rets, args, TS(0)->device, onednn_linear);
}

/* ---- the ops that run their reference kernel on the CPU --------------------------------- */

#define OPREG__CPU_REFERENCE_OPS(X)                                                                \
    X(copy_blocks) X(swap_blocks) X(moe_align_block_size) X(topk_softmax)

OPREG_LIBRARY_IMPL(_C, CPU, m) {
    OPREG_IMPL(m, "rms_norm", cpu_rms_norm, NULL);
    OPREG_IMPL(m, "fused_add_rms_norm", cpu_fused_add_rms_norm, NULL);
    OPREG_IMPL(m, "silu_and_mul", cpu_silu_and_mul, NULL);
    OPREG_IMPL(m, "gelu_and_mul", cpu_gelu_and_mul, NULL);
    OPREG_IMPL(m, "gelu_tanh_and_mul", cpu_gelu_tanh_and_mul, NULL);
    OPREG_IMPL(m, "gelu_new", cpu_gelu_new, NULL);
    OPREG_IMPL(m, "gelu_fast", cpu_gelu_fast, NULL);
    OPREG_IMPL(m, "gelu_quick", cpu_gelu_quick, NULL);
    OPREG_IMPL(m, "rotary_embedding", cpu_rotary_embedding, NULL);
    OPREG_IMPL(m, "batched_rotary_embedding", cpu_batched_rotary_embedding, NULL);
    OPREG_IMPL(m, "reshape_and_cache", cpu_reshape_and_cache, NULL);
    OPREG_IMPL(m, "reshape_and_cache_flash", cpu_reshape_and_cache_flash, NULL);
    OPREG_IMPL(m, "static_scaled_fp8_quant", cpu_static_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_fp8_quant", cpu_dynamic_scaled_fp8_quant, NULL);
    OPREG_IMPL(m, "static_scaled_int8_quant", cpu_static_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "dynamic_scaled_int8_quant", cpu_dynamic_scaled_int8_quant, NULL);
    OPREG_IMPL(m, "cutlass_scaled_mm", cpu_cutlass_scaled_mm, NULL);
    OPREG_IMPL(m, "linear", cpu_linear, NULL);
    OPREG_IMPL(m, "paged_attention_v1", cpu_paged_attention_v1, NULL);
#define REF_IMPL(op) OPREG_IMPL(m, #op, cpu_ref_##op, NULL);
    OPREG__CPU_REFERENCE_OPS(REF_IMPL)
#undef REF_IMPL
}
