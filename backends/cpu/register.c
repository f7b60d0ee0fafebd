/* The CPU key of the op catalogue, as ordered providers (include/opreg/
 * provider.h): for linear and cutlass_scaled_mm with a few rows, gemv (one
 * pass over the weights); oneDNN where it covers the call, then the SIMD paths from
 * the widest this CPU has (avx512_bf16, avx512, avx2), then portable C.
 * A SIMD provider declines when the CPU lacks its instructions or
 * OPREG_CPU_ISA caps the paths below it; paged attention's also decline
 * sizes past their stack buffers, which the `reference` provider takes.
 *
 * Every provider's kernel is cpu_kernel(): the op's checks (the same
 * functions as the Meta and Reference keys, so every backend refuses the
 * same inputs), host memory, then the provider's `run`, which takes checked
 * arguments. That is the one place the contract is kept. */
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/onednn/onednn.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"
#include "catalogue_args.h"
#include "ops/register/catalogue.h"

#include <stdarg.h>
#include <stdio.h>

/* Short names for the argument accessors. */
#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T
#define IV OPREG__ARG_I
#define FV OPREG__ARG_F
#define BV OPREG__ARG_B
#define SV OPREG__ARG_S

/* Each op's shared checks, as the catalogue table unpacks its arguments. */
#define CHECK_FN(op, arglist)                                                                      \
    __attribute__((unused)) static opreg_status check_##op(const opreg_value *args) {              \
        return opreg__check_##op arglist;                                                          \
    }
OPREG__CATALOGUE_OPS(CHECK_FN)
#undef CHECK_FN

/* linear is outside the table (its check can also give the result's
 * shape). Here, as for every op, it runs once, before the host-memory check
 * and the providers, which then take checked arguments. */
static opreg_status check_linear(const opreg_value *args) {
    return opreg__check_linear(TS(0), TS(1), OT(2), NULL, NULL, NULL);
}

struct cpu_provider;

/* Each op's portable reference kernel, on checked arguments. */
#define REF_RUN(op, arglist)                                                                       \
    __attribute__((unused)) static opreg_status ref_##op(                                          \
        const opreg_value *args, opreg_value *rets, const struct cpu_provider *p) {                \
        (void)rets, (void)p;                                                                       \
        return opreg__ref_##op arglist;                                                            \
    }
OPREG__CATALOGUE_OPS(REF_RUN)
#undef REF_RUN

/* A provider of the CPU key: the context of cpu_kernel and of its predicate. */
struct cpu_provider {
    const char *op;        /* "_C::rms_norm", for messages */
    const char *host_name; /* the argument that must be in host memory */
    int host_arg;
    opreg_status (*check)(const opreg_value *args);
    /* The op's data check (ops/register/data_checks.c), after the host
     * check; NULL when the op has none. */
    opreg_status (*data)(const opreg_value *args);
    /* The kernel on checked arguments, given this provider for its isa and act. */
    opreg_status (*run)(const opreg_value *args, opreg_value *rets, const struct cpu_provider *p);
    int isa; /* the path it stands for (OPREG__ISA_*) */
    int act; /* the activation ops' OPREG__ACT_*; 0 for the others */
    /* Whether run takes these arguments, beyond the ISA; NULL: all. */
    bool (*covers)(const opreg_value *args, char *why, size_t cap);
};

static opreg_status cpu_kernel(void *context, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)op;
    const struct cpu_provider *p = context;
    if (p->check) OPREG__TRY(p->check(args));
    if (p->host_name) OPREG__TRY(opreg__chk_cpu(p->op, p->host_name, TS(p->host_arg)));
    if (p->data) OPREG__TRY(p->data(args));
    return p->run(args, rets, p);
}

/* A predicate's refusal: false, with the reason written only when someone
 * asks (the chain's own calls pass no buffer, so a declining provider on
 * the hot path formats nothing). */
OPREG__PRINTF(3, 4)
static bool decline(char *why, size_t cap, const char *fmt, ...) {
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const char *isa_text(int isa) {
    switch (isa) {
    case OPREG__ISA_AVX2:
        return "AVX2, FMA and F16C";
    case OPREG__ISA_AVX512:
        return "AVX-512 (F, BW, VL, DQ)";
    default:
        return "AVX-512 with AVX512-BF16";
    }
}

static bool cpu_supports(void *context, const opreg_op *op, const opreg_value *args, char *why,
                         size_t cap) {
    (void)op;
    const struct cpu_provider *p = context;
    if (p->isa > OPREG__ISA_PORTABLE) {
        if (opreg__cpu_isa_detected() < p->isa) {
            decline(why, cap, "this CPU lacks %s", isa_text(p->isa));
            return false;
        }
        if (opreg__cpu_isa() < p->isa) {
            decline(why, cap, "OPREG_CPU_ISA=%s caps the CPU paths below %s",
                    opreg__cpu_isa_name(opreg__cpu_isa()), opreg__cpu_isa_name(p->isa));
            return false;
        }
    }
    return !p->covers || p->covers(args, why, cap);
}

/* Whether a predicate may read @p t's sizes: it has rank @p ndim and a shape.
 * Predicates run before the op's checks, on tensors that may be malformed;
 * they take what is not well formed, for the checks to refuse with their
 * message. */
static bool well_formed(const opreg_tensor *t, int ndim) {
    return t->ndim == ndim && t->shape;
}

/* ---- norms ------------------------------------------------------------------------ */

static opreg_status run_rms_norm(const opreg_value *args, opreg_value *rets,
                                 const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *out = TS(0), *in = TS(1), *w = TS(2);
    opreg__row_layout ro = opreg__rows_of(out), ri = opreg__rows_of(in);
    opreg__cpu_rms_norm(p->isa, opreg__dtype_of(in), opreg__ptr(out), ro.stride, opreg__ptr(in),
                        ri.stride, opreg__ptr(w), ri.n, ri.width, (float)FV(3));
    return OPREG_OK;
}

static opreg_status run_fused_add_rms_norm(const opreg_value *args, opreg_value *rets,
                                           const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *in = TS(0), *res = TS(1), *w = TS(2);
    opreg__row_layout ri = opreg__rows_of(in), rr = opreg__rows_of(res);
    opreg__cpu_fused_add_rms_norm(p->isa, opreg__dtype_of(in), opreg__ptr(in), ri.stride,
                                  opreg__ptr(res), rr.stride, opreg__ptr(w), ri.n, ri.width,
                                  (float)FV(3));
    return OPREG_OK;
}

/* ---- activations ------------------------------------------------------------------- */

/* Gated activations (p->act): input rows [x | y] of 2d, out rows of d. */
static opreg_status run_gated(const opreg_value *args, opreg_value *rets,
                              const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *out = TS(0), *in = TS(1);
    opreg__row_layout ro = opreg__rows_of(out), ri = opreg__rows_of(in);
    opreg__cpu_gated(p->isa, p->act, opreg__dtype_of(in), opreg__ptr(out), ro.stride,
                     opreg__ptr(in), ri.stride, ri.n, ro.width);
    return OPREG_OK;
}

/* Elementwise activations (p->act), row by row (rows may be strided), or in
 * one pass when both are dense. */
static opreg_status run_elementwise(const opreg_value *args, opreg_value *rets,
                                    const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *out = TS(0), *in = TS(1);
    opreg__row_layout ro = opreg__rows_of(out), ri = opreg__rows_of(in);
    int dt = opreg__dtype_of(in);
    size_t es = opreg__dtype_bytes(dt);
    bool flat = ro.stride == ro.width && ri.stride == ri.width;
    int64_t n = flat ? ri.n * ri.width : ri.width, nrows = flat ? 1 : ri.n;
    if (n == 0) return OPREG_OK; /* no address to form: data may be NULL */
    for (int64_t r = 0; r < nrows; r++)
        opreg__cpu_elementwise(p->isa, p->act, dt,
                               (char *)opreg__ptr(out) + (size_t)(r * ro.stride) * es,
                               (const char *)opreg__ptr(in) + (size_t)(r * ri.stride) * es, n);
    return OPREG_OK;
}

/* ---- rotary --------------------------------------------------------------------------- */

static opreg_status rotary(const opreg_value *args, int isa, const opreg_tensor *offsets) {
    const opreg_tensor *pos = TS(0), *q = TS(1), *k = TS(2), *cache = TS(4);
    int64_t head_size = IV(3), tokens = opreg__numel(pos);
    int64_t q_row = tokens ? opreg__numel(q) / tokens : 0;
    int64_t k_row = tokens ? opreg__numel(k) / tokens : 0;
    opreg__cpu_rotary(isa, opreg__dtype_of(q), opreg__ptr(pos),
                      offsets ? opreg__ptr(offsets) : NULL, tokens, opreg__ptr(q),
                      opreg__rotary_token_stride(q, pos), q_row / head_size, opreg__ptr(k),
                      opreg__rotary_token_stride(k, pos), k_row / head_size, head_size,
                      opreg__ptr(cache), cache->shape[1], BV(5));
    return OPREG_OK;
}

static opreg_status run_rotary_embedding(const opreg_value *args, opreg_value *rets,
                                         const struct cpu_provider *p) {
    (void)rets;
    return rotary(args, p->isa, NULL);
}

static opreg_status run_batched_rotary_embedding(const opreg_value *args, opreg_value *rets,
                                                 const struct cpu_provider *p) {
    (void)rets;
    return rotary(args, p->isa, TS(7));
}

/* ---- quantisation ---------------------------------------------------------------------- */

static float scalar_f32(const opreg_tensor *t) {
    return *(const float *)opreg__ptr(t);
}

static opreg_status run_static_scaled_int8_quant(const opreg_value *args, opreg_value *rets,
                                                 const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *in = TS(1);
    opreg__cpu_int8_static(p->isa, opreg__dtype_of(in), opreg__ptr(TS(0)), opreg__ptr(in),
                           opreg__numel(in), scalar_f32(TS(2)));
    return OPREG_OK;
}

static opreg_status run_static_scaled_fp8_quant(const opreg_value *args, opreg_value *rets,
                                                const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *in = TS(1);
    opreg__cpu_fp8_static(p->isa, opreg__dtype_of(in), opreg__ptr(TS(0)), opreg__ptr(in),
                          opreg__numel(in), scalar_f32(TS(2)));
    return OPREG_OK;
}

static opreg_status run_dynamic_scaled_int8_quant(const opreg_value *args, opreg_value *rets,
                                                  const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *in = TS(1);
    opreg__row_layout ri = opreg__rows_of(in);
    opreg__cpu_int8_dynamic(p->isa, opreg__dtype_of(in), opreg__ptr(TS(0)), opreg__ptr(TS(2)),
                            opreg__ptr(in), ri.stride, ri.n, ri.width);
    return OPREG_OK;
}

static opreg_status run_dynamic_scaled_fp8_quant(const opreg_value *args, opreg_value *rets,
                                                 const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *in = TS(1);
    opreg__cpu_fp8_dynamic(p->isa, opreg__dtype_of(in), opreg__ptr(TS(0)), opreg__ptr(TS(2)),
                           opreg__ptr(in), opreg__numel(in));
    return OPREG_OK;
}

/* ---- KV cache ------------------------------------------------------------------------- */

static opreg_status run_reshape_and_cache(const opreg_value *args, opreg_value *rets,
                                          const struct cpu_provider *p) {
    (void)rets, (void)p;
    const opreg_tensor *key = TS(0), *value = TS(1), *kc = TS(2), *vc = TS(3), *slots = TS(4);
    opreg__cpu_reshape_and_cache_generic(
        opreg__ptr(key), opreg__stride(key, 0), opreg__ptr(value), opreg__stride(value, 0),
        opreg__ptr(kc), opreg__block_stride(kc), opreg__ptr(vc), opreg__block_stride(vc),
        opreg__ptr(slots), opreg__numel(slots), key->shape[1], key->shape[2], kc->shape[3],
        kc->shape[4], opreg__dtype_of(key), opreg__kv_cache_kind(SV(5)), (float)FV(6));
    return OPREG_OK;
}

static opreg_status run_reshape_and_cache_flash(const opreg_value *args, opreg_value *rets,
                                                const struct cpu_provider *p) {
    (void)rets, (void)p;
    const opreg_tensor *key = TS(0), *value = TS(1), *kc = TS(2), *vc = TS(3), *slots = TS(4);
    opreg__cpu_reshape_and_cache_flash_generic(
        opreg__ptr(key), opreg__stride(key, 0), opreg__ptr(value), opreg__stride(value, 0),
        opreg__ptr(kc), opreg__block_stride(kc), opreg__ptr(vc), opreg__block_stride(vc),
        opreg__ptr(slots), opreg__numel(slots), key->shape[1], key->shape[2], kc->shape[1],
        opreg__dtype_of(key), opreg__kv_cache_kind(SV(5)), 1.0f);
    return OPREG_OK;
}

/* ---- MoE routing ------------------------------------------------------------------------ */

static opreg_status run_topk_softmax(const opreg_value *args, opreg_value *rets,
                                     const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *w = TS(0), *ids = TS(1), *tei = TS(2), *g = TS(3);
    opreg__cpu_topk_softmax(p->isa, opreg__ptr(w), opreg__ptr(ids), opreg__ptr(tei), opreg__ptr(g),
                            opreg__dtype_of(g), g->shape[0], g->shape[1], w->shape[1]);
    return OPREG_OK;
}

/* ---- attention ------------------------------------------------------------------------ */

static opreg_status run_paged_attention_v1(const opreg_value *args, opreg_value *rets,
                                           const struct cpu_provider *p) {
    (void)rets;
    const opreg_tensor *out = TS(0), *q = TS(1), *kc = TS(2), *vc = TS(3), *bt = TS(6),
                       *lens = TS(7), *alibi = OT(10);
    int64_t bs = IV(8);
    opreg__cpu_paged_attention_v1(p->isa, opreg__ptr(out), opreg__ptr(q), opreg__stride(q, 0),
                                  opreg__ptr(kc), opreg__ptr(vc), opreg__ptr(bt), opreg__ptr(lens),
                                  alibi ? opreg__ptr(alibi) : NULL, q->shape[0], q->shape[1], IV(4),
                                  q->shape[2], kc->shape[4], bs, opreg__block_stride(kc),
                                  opreg__block_stride(vc), bt->shape[1], (float)FV(5),
                                  opreg__dtype_of(q), opreg__kv_cache_kind(SV(11)), (float)FV(12));
    return OPREG_OK;
}

/* The fast kernel's buffers live on the stack: head and block sizes past
 * them go to the `reference` provider. Arguments are not checked yet: a
 * query that is not 3-d is taken, for the checks to refuse. */
static bool attention_covers(const opreg_value *args, char *why, size_t cap) {
    const opreg_tensor *q = TS(1);
    int64_t head = well_formed(q, 3) ? q->shape[2] : 0, block = IV(8);
    if (head > OPREG__CPU_PA_MAX_HEAD) {
        decline(why, cap, "head_size %lld is past the fast kernel's %d", (long long)head,
                OPREG__CPU_PA_MAX_HEAD);
        return false;
    }
    if (block > OPREG__CPU_PA_MAX_BLOCK) {
        decline(why, cap, "block_size %lld is past the fast kernel's %d", (long long)block,
                OPREG__CPU_PA_MAX_BLOCK);
        return false;
    }
    return true;
}

/* ---- decode-sized GEMMs (gemv) --------------------------------------------------------- */

/* The gemv kernels stream the weights once, which is what a few rows want;
 * past OPREG__CPU_GEMV_MAX_ROWS rows the arithmetic dominates and oneDNN's
 * blocked GEMMs are faster. Every layout the op's checks accept is dense
 * along k, which is all the kernels need (scaled_mm's row and column
 * strides are passed on). */
static bool gemv_rows_ok(int64_t rows, char *why, size_t cap) {
    if (rows <= OPREG__CPU_GEMV_MAX_ROWS) return true;
    decline(why, cap, "M=%lld rows: past the gemv bound of %d, where oneDNN is faster",
            (long long)rows, OPREG__CPU_GEMV_MAX_ROWS);
    return false;
}

/* Without a SIMD path the kernels are scalar C, slower than oneDNN. */
static bool gemv_isa_ok(char *why, size_t cap) {
    if (opreg__cpu_isa() > OPREG__ISA_PORTABLE) return true;
    decline(why, cap, "no SIMD path (%s): oneDNN is faster than gemv's portable C",
            opreg__cpu_isa_detected() > OPREG__ISA_PORTABLE ? "OPREG_CPU_ISA=portable"
                                                            : "this CPU lacks AVX2");
    return false;
}

static bool linear_gemv_covers(const opreg_value *args, char *why, size_t cap) {
    const opreg_tensor *in = TS(0);
    int dt;
    if (!in->shape || in->ndim < 1 || in->ndim > OPREG__MAX_DIMS)
        return true; /* for the checks to refuse */
    dt = opreg__dtype_of(in);
    if (dt != OPREG_DTYPE_F32 && dt != OPREG_DTYPE_BF16 && dt != OPREG_DTYPE_F16) {
        decline(why, cap, "gemv takes f32, f16 and bf16 operands only");
        return false;
    }
    /* The rows, as the predicate may read them: before the checks, sizes
     * may be negative or overflow; those are taken, for the checks to
     * refuse. */
    int64_t rows = 1;
    for (int d = 0; d + 1 < in->ndim; d++)
        if (in->shape[d] < 0 || __builtin_mul_overflow(rows, in->shape[d], &rows)) return true;
    return gemv_isa_ok(why, cap) && gemv_rows_ok(rows, why, cap);
}

static opreg_status gemv_linear(const opreg_tensor *out, const opreg_tensor *input,
                                const opreg_tensor *weight, const opreg_tensor *bias) {
    opreg__cpu_gemv_linear(opreg__cpu_isa(), opreg__dtype_of(input), opreg__ptr(out),
                           opreg__ptr(input), opreg__ptr(weight), bias ? opreg__ptr(bias) : NULL,
                           opreg__rows(input), weight->shape[0], weight->shape[1]);
    return OPREG_OK;
}

static opreg_status run_linear_gemv(const opreg_value *args, opreg_value *rets,
                                    const struct cpu_provider *p) {
    (void)p;
    return opreg__linear_checked_into_new(rets, args, TS(0)->device, gemv_linear);
}

static bool scaled_mm_gemv_covers(const opreg_value *args, char *why, size_t cap) {
    const opreg_tensor *a = TS(1);
    if (!well_formed(a, 2)) return true; /* for the checks to refuse */
    return gemv_isa_ok(why, cap) && gemv_rows_ok(a->shape[0], why, cap);
}

static opreg_status run_cutlass_scaled_mm_gemv(const opreg_value *args, opreg_value *rets,
                                               const struct cpu_provider *p) {
    (void)rets, (void)p;
    const opreg_tensor *out = TS(0), *a = TS(1), *b = TS(2), *as = TS(3), *bs = TS(4),
                       *bias = OT(5);
    opreg__cpu_gemv_scaled_mm(opreg__cpu_isa(), opreg__dtype_of(a), opreg__dtype_of(out),
                              opreg__ptr(out), opreg__ptr(a), opreg__stride(a, 0), opreg__ptr(b),
                              opreg__stride(b, 1), opreg__ptr(as), opreg__numel(as) != 1,
                              opreg__ptr(bs), opreg__numel(bs) != 1, bias ? opreg__ptr(bias) : NULL,
                              a->shape[0], b->shape[1], a->shape[1]);
    return OPREG_OK;
}

/* ---- GEMM (oneDNN) ------------------------------------------------------------------------ */

static opreg_status run_cutlass_scaled_mm_onednn(const opreg_value *args, opreg_value *rets,
                                                 const struct cpu_provider *p) {
    (void)rets, (void)p;
    return opreg__onednn_scaled_mm((opreg_tensor *)TS(0), TS(1), TS(2), TS(3), TS(4), OT(5));
}

static bool scaled_mm_covers(const opreg_value *args, char *why, size_t cap) {
    const opreg_tensor *out = TS(0), *a = TS(1), *b = TS(2);
    if (!well_formed(out, 2) || !well_formed(a, 2) || !well_formed(b, 2))
        return true; /* for the checks to refuse */
    if (opreg__onednn_scaled_mm_covers(out, a, b)) return true;
    decline(why, cap,
            "oneDNN takes an f32 or bf16 result, and fp8 a and b or int8 ones with a's "
            "rows and b's columns dense");
    return false;
}

static opreg_status onednn_linear(const opreg_tensor *out, const opreg_tensor *input,
                                  const opreg_tensor *weight, const opreg_tensor *bias) {
    return opreg__onednn_linear((opreg_tensor *)out, input, weight, bias);
}

static opreg_status run_linear_onednn(const opreg_value *args, opreg_value *rets,
                                      const struct cpu_provider *p) {
    (void)p;
    return opreg__linear_checked_into_new(rets, args, TS(0)->device, onednn_linear);
}

static opreg_status run_linear_portable(const opreg_value *args, opreg_value *rets,
                                        const struct cpu_provider *p) {
    (void)p;
    return opreg__linear_checked_into_new(rets, args, TS(0)->device, opreg__ref_linear);
}

static bool linear_covers(const opreg_value *args, char *why, size_t cap) {
    if (opreg__onednn_linear_covers(TS(0))) return true;
    decline(why, cap, "oneDNN takes f32 and bf16 operands only");
    return false;
}

/* ---- the providers --------------------------------------------------------------------- */

/* Priorities: gemv for a few rows, then oneDNN, the SIMD paths from the widest, then portable
 * and reference; a plugin places its own around these by name or number. */
enum {
    PRIO_GEMV = 450,
    PRIO_ONEDNN = 400,
    PRIO_AVX512_BF16 = 330,
    PRIO_AVX512 = 320,
    PRIO_AVX2 = 310,
    PRIO_PORTABLE = 200,
    PRIO_REFERENCE = 100,
};

struct cpu_entry {
    const char *name;
    int32_t priority;
    bool predicate;
    struct cpu_provider p;
};

/* One provider: its name, priority and whether it has a predicate, then
 * what cpu_kernel runs: op @p op's check, argument @p arg (@p arg_name) in
 * host memory, the op's data check @p data (NULL: none), then @p run on
 * path @p isa with activation @p act. */
#define PROVIDER(name, prio, pred, op, arg, arg_name, data, run, isa, act, covers)                 \
    {                                                                                              \
        name, prio, pred, {                                                                        \
            "_C::" #op, arg_name, arg, check_##op, data, run, isa, act, covers                     \
        }                                                                                          \
    }
/* The SIMD paths and portable C of an op whose kernel takes the ISA; @p act
 * is the activation ops' OPREG__ACT_*, 0 for the others. */
#define SIMD_PATHS(op, arg, arg_name, data, run, act, covers)                                      \
    PROVIDER("avx512_bf16", PRIO_AVX512_BF16, true, op, arg, arg_name, data, run,                  \
             OPREG__ISA_AVX512_BF16, act, covers),                                                 \
        PROVIDER("avx512", PRIO_AVX512, true, op, arg, arg_name, data, run, OPREG__ISA_AVX512,     \
                 act, covers),                                                                     \
        PROVIDER("avx2", PRIO_AVX2, true, op, arg, arg_name, data, run, OPREG__ISA_AVX2, act,      \
                 covers),                                                                          \
        PROVIDER("portable", PRIO_PORTABLE, covers != NULL, op, arg, arg_name, data, run,          \
                 OPREG__ISA_PORTABLE, act, covers)
/* One provider running @p run on every argument, after the op's check,
 * argument @p arg (@p arg_name) in host memory and the data check @p data
 * (NULL: none). */
#define ONLY(name, prio, op, arg, arg_name, data, run)                                             \
    PROVIDER(name, prio, false, op, arg, arg_name, data, run, OPREG__ISA_PORTABLE, 0, NULL)

static struct cpu_entry rms_norm_p[] = { SIMD_PATHS(rms_norm, 1, "input", NULL, run_rms_norm, 0,
                                                    NULL) };
static struct cpu_entry fused_add_rms_norm_p[] = {
    SIMD_PATHS(fused_add_rms_norm, 0, "input", NULL, run_fused_add_rms_norm, 0, NULL),
};
static struct cpu_entry silu_and_mul_p[] = {
    SIMD_PATHS(silu_and_mul, 1, "input", NULL, run_gated, OPREG__ACT_SILU, NULL),
};
static struct cpu_entry gelu_and_mul_p[] = {
    SIMD_PATHS(gelu_and_mul, 1, "input", NULL, run_gated, OPREG__ACT_GELU, NULL),
};
static struct cpu_entry gelu_tanh_and_mul_p[] = {
    SIMD_PATHS(gelu_tanh_and_mul, 1, "input", NULL, run_gated, OPREG__ACT_GELU_TANH, NULL),
};
static struct cpu_entry gelu_new_p[] = {
    SIMD_PATHS(gelu_new, 1, "input", NULL, run_elementwise, OPREG__ACT_GELU_NEW, NULL),
};
static struct cpu_entry gelu_fast_p[] = {
    SIMD_PATHS(gelu_fast, 1, "input", NULL, run_elementwise, OPREG__ACT_GELU_FAST, NULL),
};
static struct cpu_entry gelu_quick_p[] = {
    SIMD_PATHS(gelu_quick, 1, "input", NULL, run_elementwise, OPREG__ACT_GELU_QUICK, NULL),
};
static struct cpu_entry rotary_embedding_p[] = {
    SIMD_PATHS(rotary_embedding, 1, "query", opreg__data_check_rotary_embedding,
               run_rotary_embedding, 0, NULL),
};
static struct cpu_entry batched_rotary_embedding_p[] = {
    SIMD_PATHS(batched_rotary_embedding, 1, "query", opreg__data_check_batched_rotary_embedding,
               run_batched_rotary_embedding, 0, NULL),
};
static struct cpu_entry static_scaled_int8_quant_p[] = {
    SIMD_PATHS(static_scaled_int8_quant, 1, "input", NULL, run_static_scaled_int8_quant, 0, NULL),
};
static struct cpu_entry static_scaled_fp8_quant_p[] = {
    SIMD_PATHS(static_scaled_fp8_quant, 1, "input", NULL, run_static_scaled_fp8_quant, 0, NULL),
};
static struct cpu_entry dynamic_scaled_int8_quant_p[] = {
    SIMD_PATHS(dynamic_scaled_int8_quant, 1, "input", NULL, run_dynamic_scaled_int8_quant, 0, NULL),
};
static struct cpu_entry dynamic_scaled_fp8_quant_p[] = {
    SIMD_PATHS(dynamic_scaled_fp8_quant, 1, "input", NULL, run_dynamic_scaled_fp8_quant, 0, NULL),
};
static struct cpu_entry paged_attention_v1_p[] = {
    SIMD_PATHS(paged_attention_v1, 1, "query", opreg__data_check_paged_attention_v1,
               run_paged_attention_v1, 0, attention_covers),
    ONLY("reference", PRIO_REFERENCE, paged_attention_v1, 1, "query",
         opreg__data_check_paged_attention_v1, ref_paged_attention_v1),
};
static struct cpu_entry reshape_and_cache_p[] = {
    ONLY("portable", PRIO_PORTABLE, reshape_and_cache, 0, "key",
         opreg__data_check_reshape_and_cache, run_reshape_and_cache),
};
static struct cpu_entry reshape_and_cache_flash_p[] = {
    ONLY("portable", PRIO_PORTABLE, reshape_and_cache_flash, 0, "key",
         opreg__data_check_reshape_and_cache_flash, run_reshape_and_cache_flash),
};
static struct cpu_entry copy_blocks_p[] = {
    ONLY("portable", PRIO_PORTABLE, copy_blocks, 2, "block_mapping", opreg__data_check_copy_blocks,
         ref_copy_blocks),
};
static struct cpu_entry swap_blocks_p[] = {
    ONLY("portable", PRIO_PORTABLE, swap_blocks, 0, "src", opreg__data_check_swap_blocks,
         ref_swap_blocks),
};
static struct cpu_entry moe_align_block_size_p[] = {
    ONLY("portable", PRIO_PORTABLE, moe_align_block_size, 0, "topk_ids",
         opreg__data_check_moe_align_block_size, ref_moe_align_block_size),
};
static struct cpu_entry topk_softmax_p[] = {
    SIMD_PATHS(topk_softmax, 3, "gating_output", NULL, run_topk_softmax, 0, NULL),
};
static struct cpu_entry cutlass_scaled_mm_p[] = {
    PROVIDER("gemv", PRIO_GEMV, true, cutlass_scaled_mm, 1, "a", NULL, run_cutlass_scaled_mm_gemv,
             OPREG__ISA_PORTABLE, 0, scaled_mm_gemv_covers),
    PROVIDER("onednn", PRIO_ONEDNN, true, cutlass_scaled_mm, 1, "a", NULL,
             run_cutlass_scaled_mm_onednn, OPREG__ISA_PORTABLE, 0, scaled_mm_covers),
    ONLY("portable", PRIO_PORTABLE, cutlass_scaled_mm, 0, "out", NULL, ref_cutlass_scaled_mm),
};
static struct cpu_entry linear_p[] = {
    PROVIDER("gemv", PRIO_GEMV, true, linear, 0, "input", NULL, run_linear_gemv,
             OPREG__ISA_PORTABLE, 0, linear_gemv_covers),
    PROVIDER("onednn", PRIO_ONEDNN, true, linear, 0, "input", NULL, run_linear_onednn,
             OPREG__ISA_PORTABLE, 0, linear_covers),
    ONLY("portable", PRIO_PORTABLE, linear, 0, "input", NULL, run_linear_portable),
};

static void add_all(opreg_library *m, const char *op, struct cpu_entry *e, size_t n) {
    for (size_t i = 0; i < n; i++) {
        opreg_provider p = { 0 };
        p.struct_size = sizeof p;
        p.name = e[i].name;
        p.kernel.fn = cpu_kernel;
        p.kernel.context = &e[i].p;
        p.supports = e[i].predicate ? cpu_supports : NULL;
        p.place = OPREG_PROVIDER_AT_PRIORITY;
        p.priority = e[i].priority;
        opreg_library_provider(m, op, OPREG_KEY_NONE, &p); /* a failure stays in m */
    }
}

#define ADD(op) add_all(m, #op, op##_p, sizeof op##_p / sizeof op##_p[0])

OPREG_LIBRARY_IMPL(_C, CPU, m) {
    ADD(rms_norm);
    ADD(fused_add_rms_norm);
    ADD(silu_and_mul);
    ADD(gelu_and_mul);
    ADD(gelu_tanh_and_mul);
    ADD(gelu_new);
    ADD(gelu_fast);
    ADD(gelu_quick);
    ADD(rotary_embedding);
    ADD(batched_rotary_embedding);
    ADD(reshape_and_cache);
    ADD(reshape_and_cache_flash);
    ADD(copy_blocks);
    ADD(swap_blocks);
    ADD(static_scaled_fp8_quant);
    ADD(dynamic_scaled_fp8_quant);
    ADD(static_scaled_int8_quant);
    ADD(dynamic_scaled_int8_quant);
    ADD(moe_align_block_size);
    ADD(topk_softmax);
    ADD(cutlass_scaled_mm);
    ADD(linear);
    ADD(paged_attention_v1);
}
