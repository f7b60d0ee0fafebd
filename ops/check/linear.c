/* Checks of opreg's own _C::linear(Tensor input, Tensor weight,
 * Tensor? bias=None) -> Tensor: input [..., K], weight [N, K], bias [N],
 * result input.shape[:-1] + [N] in input's dtype. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#define LINEAR_DTS (OPREG__DTS(F32) | OPREG__DTS(BF16) | OPREG__DTS(F16))

opreg_status opreg__check_linear(const opreg_tensor *input, const opreg_tensor *weight,
                                 const opreg_tensor *bias, int *out_ndim, int64_t *out_shape,
                                 opreg_dtype *out_dtype) {
    const char *op = "_C::linear";
    int n;
    OPREG__TRY(opreg__chk_tensor(op, "input", input, LINEAR_DTS, -2));
    OPREG__TRY(opreg__chk_contig(op, "input", input));
    n = input->ndim;
    OPREG__TRY(opreg__chk_tensor(op, "weight", weight, LINEAR_DTS, 2));
    OPREG__TRY(opreg__chk_same_dtype(op, "weight", weight, "input", input));
    OPREG__TRY(opreg__chk_size(op, "weight", weight, 1, input->shape[n - 1]));
    OPREG__TRY(opreg__chk_contig(op, "weight", weight));
    OPREG__TRY(opreg__chk_same_device(op, "weight", weight, "input", input));
    if (bias) {
        OPREG__TRY(opreg__chk_tensor(op, "bias", bias, LINEAR_DTS, 1));
        OPREG__TRY(opreg__chk_same_dtype(op, "bias", bias, "input", input));
        OPREG__TRY(opreg__chk_size(op, "bias", bias, 0, weight->shape[0]));
        OPREG__TRY(opreg__chk_contig(op, "bias", bias));
        OPREG__TRY(opreg__chk_same_device(op, "bias", bias, "input", input));
    }
    if (out_ndim) *out_ndim = n;
    if (out_shape) {
        for (int d = 0; d + 1 < n; d++)
            out_shape[d] = input->shape[d];
        out_shape[n - 1] = weight->shape[0];
    }
    if (out_dtype) *out_dtype = (opreg_dtype)opreg__dtype_of(input);
    return OPREG_OK;
}

opreg_status opreg__check_linear_out(const opreg_tensor *out, const opreg_tensor *input,
                                     const opreg_tensor *weight, const opreg_tensor *bias) {
    const char *op = "_C::linear";
    int n;
    int64_t shape[OPREG__MAX_DIMS];
    OPREG__TRY(opreg__check_linear(input, weight, bias, &n, shape, NULL));
    OPREG__TRY(opreg__chk_tensor(op, "result", out, LINEAR_DTS, n));
    OPREG__TRY(opreg__chk_same_dtype(op, "result", out, "input", input));
    for (int d = 0; d < n; d++)
        OPREG__TRY(opreg__chk_size(op, "result", out, d, shape[d]));
    OPREG__TRY(opreg__chk_contig(op, "result", out));
    OPREG__TRY(opreg__chk_same_device(op, "result", out, "input", input));
    OPREG__TRY(opreg__chk_no_overlap(op, "result", out, "input", input));
    OPREG__TRY(opreg__chk_no_overlap(op, "result", out, "weight", weight));
    if (bias) OPREG__TRY(opreg__chk_no_overlap(op, "result", out, "bias", bias));
    return OPREG_OK;
}
