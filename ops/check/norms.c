/* Checks of rms_norm and fused_add_rms_norm (ops-reference.md §3.1, §3.2). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

static opreg_status check_weight(const char *op, const opreg_tensor *x, const char *xname,
                                 const opreg_tensor *weight) {
    OPREG__TRY(opreg__chk_tensor(op, "weight", weight, OPREG__DTS_FLOAT, 1));
    OPREG__TRY(opreg__chk_same_dtype(op, "weight", weight, xname, x));
    OPREG__TRY(opreg__chk_size(op, "weight", weight, 0, x->shape[x->ndim - 1]));
    OPREG__TRY(opreg__chk_contig(op, "weight", weight));
    return opreg__chk_same_device(op, "weight", weight, xname, x);
}

opreg_status opreg__check_rms_norm(const opreg_tensor *out, const opreg_tensor *input,
                                   const opreg_tensor *weight, double epsilon) {
    const char *op = "_C::rms_norm";
    OPREG__TRY(opreg__chk_tensor(op, "input", input, OPREG__DTS_FLOAT, -2));
    OPREG__TRY(opreg__chk_rows(op, "input", input));
    OPREG__TRY(opreg__chk_tensor(op, "out", out, OPREG__DTS_FLOAT, -2));
    OPREG__TRY(opreg__chk_same_dtype(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_same_shape(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "out", out, "input", input));
    OPREG__TRY(check_weight(op, input, "input", weight));
    if (!(epsilon >= 0.0))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument 'epsilon': must be >= 0", op);
    /* Each row is read whole before it is written: out may alias input. */
    OPREG__TRY(opreg__chk_no_partial_overlap(op, "out", out, "input", input));
    return opreg__chk_no_overlap(op, "out", out, "weight", weight);
}

opreg_status opreg__check_fused_add_rms_norm(const opreg_tensor *input,
                                             const opreg_tensor *residual,
                                             const opreg_tensor *weight, double epsilon) {
    const char *op = "_C::fused_add_rms_norm";
    OPREG__TRY(opreg__chk_tensor(op, "input", input, OPREG__DTS_FLOAT, -2));
    /* input may be a slice of a wider tensor (rows strided), as in vLLM */
    OPREG__TRY(opreg__chk_rows(op, "input", input));
    OPREG__TRY(opreg__chk_tensor(op, "residual", residual, OPREG__DTS_FLOAT, -2));
    OPREG__TRY(opreg__chk_same_dtype(op, "residual", residual, "input", input));
    OPREG__TRY(opreg__chk_same_shape(op, "residual", residual, "input", input));
    OPREG__TRY(opreg__chk_contig(op, "residual", residual));
    OPREG__TRY(opreg__chk_same_device(op, "residual", residual, "input", input));
    OPREG__TRY(check_weight(op, input, "input", weight));
    if (!(epsilon >= 0.0))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument 'epsilon': must be >= 0", op);
    OPREG__TRY(opreg__chk_no_overlap(op, "input", input, "residual", residual));
    OPREG__TRY(opreg__chk_no_overlap(op, "input", input, "weight", weight));
    return opreg__chk_no_overlap(op, "residual", residual, "weight", weight);
}
