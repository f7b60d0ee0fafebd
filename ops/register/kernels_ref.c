/* The Reference key: each op's portable reference kernel (ops/ref/), behind
 * the op's checks. Chosen with opreg_call_boxed_key().
 *
 * The reference kernels take checked arguments (ops/check/check.h states
 * the contract); the one kernel registered here for every op runs the
 * op's check, the host-memory check (the reference reads and writes
 * through plain pointers), the op's data check where it has one, and then
 * the reference kernel. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"
#include "catalogue_args.h"
#include "ops/register/catalogue.h"

#define TS OPREG__ARG_T

/* Each op's shared check and its reference kernel, as the catalogue table
 * unpacks its arguments. */
#define ADAPTERS(op, arglist)                                                                      \
    static opreg_status check_##op(const opreg_value *args) {                                      \
        return opreg__check_##op arglist;                                                          \
    }                                                                                              \
    static opreg_status run_##op(const opreg_value *args) {                                        \
        return opreg__ref_##op arglist;                                                            \
    }
OPREG__CATALOGUE_OPS(ADAPTERS)
#undef ADAPTERS

/* What the Reference kernel of one op runs, in order. */
struct ref_op {
    const char *name;      /* "rms_norm": the name it is registered under */
    const char *qualname;  /* "_C::rms_norm": the name messages give */
    const char *host_name; /* the argument that must be in host memory */
    int host_arg;          /* its position in the schema */
    opreg_status (*check)(const opreg_value *args);
    opreg_status (*data)(const opreg_value *args); /* NULL: the op has none */
    opreg_status (*run)(const opreg_value *args);
};

/* The kernel of every op in the table below. @p context is its struct ref_op. */
static opreg_status ref_kernel(void *context, const opreg_op *o, const opreg_value *args,
                               opreg_value *rets) {
    const struct ref_op *r = context;
    (void)o, (void)rets;
    OPREG__TRY(r->check(args));
    OPREG__TRY(opreg__chk_cpu(r->qualname, r->host_name, TS(r->host_arg)));
    if (r->data) OPREG__TRY(r->data(args));
    return r->run(args);
}

/* An op without a data check, and one with (opreg__data_check_<op>). */
#define OP(op, arg, arg_name)                                                                      \
    { #op, "_C::" #op, arg_name, arg, check_##op, NULL, run_##op }
#define OP_DATA(op, arg, arg_name)                                                                 \
    { #op, "_C::" #op, arg_name, arg, check_##op, opreg__data_check_##op, run_##op }

static struct ref_op ref_ops[] = {
    OP(rms_norm, 1, "input"),
    OP(fused_add_rms_norm, 0, "input"),
    OP(silu_and_mul, 1, "input"),
    OP(gelu_and_mul, 1, "input"),
    OP(gelu_tanh_and_mul, 1, "input"),
    OP(gelu_new, 1, "input"),
    OP(gelu_fast, 1, "input"),
    OP(gelu_quick, 1, "input"),
    OP_DATA(rotary_embedding, 1, "query"),
    OP_DATA(batched_rotary_embedding, 1, "query"),
    OP_DATA(reshape_and_cache, 0, "key"),
    OP_DATA(reshape_and_cache_flash, 0, "key"),
    OP_DATA(copy_blocks, 2, "block_mapping"),
    OP_DATA(swap_blocks, 0, "src"),
    OP(static_scaled_fp8_quant, 1, "input"),
    OP(dynamic_scaled_fp8_quant, 1, "input"),
    OP(static_scaled_int8_quant, 1, "input"),
    OP(dynamic_scaled_int8_quant, 1, "input"),
    OP_DATA(moe_align_block_size, 0, "topk_ids"),
    OP(topk_softmax, 3, "gating_output"),
    OP_DATA(paged_attention_v1, 1, "query"),
    OP(cutlass_scaled_mm, 0, "out"),
};

#undef OP
#undef OP_DATA

/* linear's result is allocated from its check (opreg__linear_into_new runs
 * it), then written once the input is known to be in host memory. */
static opreg_status ref_linear_on_host(const opreg_tensor *out, const opreg_tensor *input,
                                       const opreg_tensor *weight, const opreg_tensor *bias) {
    OPREG__TRY(opreg__chk_cpu("_C::linear", "input", input));
    return opreg__ref_linear(out, input, weight, bias);
}

static opreg_status ref_linear(void *context, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)context;
    (void)op;
    return opreg__linear_into_new(rets, args, TS(0)->device, ref_linear_on_host);
}

OPREG_LIBRARY_IMPL(_C, REFERENCE, m) {
    for (size_t i = 0; i < sizeof ref_ops / sizeof ref_ops[0]; i++)
        OPREG_IMPL(m, ref_ops[i].name, ref_kernel, &ref_ops[i]);
    OPREG_IMPL(m, "linear", ref_linear, NULL);
}
