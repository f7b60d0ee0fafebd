/* Checks of the activations: the gated ones (input [..., 2d] -> out [..., d])
 * and the elementwise gelus (out and input of the same shape). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

static opreg_status check_gated(const char *op, const opreg_tensor *out,
                                const opreg_tensor *input) {
    int n;
    OPREG__TRY(opreg__chk_tensor(op, "input", input, OPREG__DTS_FLOAT, -2));
    OPREG__TRY(opreg__chk_contig(op, "input", input));
    n = input->ndim;
    if (input->shape[n - 1] % 2 != 0)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument 'input': last dim must be even, got %lld",
                           op, (long long)input->shape[n - 1]);
    OPREG__TRY(opreg__chk_tensor(op, "out", out, OPREG__DTS_FLOAT, n));
    OPREG__TRY(opreg__chk_same_dtype(op, "out", out, "input", input));
    for (int d = 0; d + 1 < n; d++)
        OPREG__TRY(opreg__chk_size(op, "out", out, d, input->shape[d]));
    OPREG__TRY(opreg__chk_size(op, "out", out, n - 1, input->shape[n - 1] / 2));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "out", out, "input", input));
    return opreg__chk_no_overlap(op, "out", out, "input", input);
}

static opreg_status check_elementwise(const char *op, const opreg_tensor *out,
                                      const opreg_tensor *input) {
    OPREG__TRY(opreg__chk_tensor(op, "input", input, OPREG__DTS_FLOAT, -1));
    OPREG__TRY(opreg__chk_contig(op, "input", input));
    OPREG__TRY(opreg__chk_tensor(op, "out", out, OPREG__DTS_FLOAT, -1));
    OPREG__TRY(opreg__chk_same_dtype(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_same_shape(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "out", out, "input", input));
    /* elementwise: in place is fine, a shifted overlap is not */
    return opreg__chk_no_partial_overlap(op, "out", out, "input", input);
}

opreg_status opreg__check_silu_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return check_gated("_C::silu_and_mul", out, input);
}
opreg_status opreg__check_gelu_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return check_gated("_C::gelu_and_mul", out, input);
}
opreg_status opreg__check_gelu_tanh_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return check_gated("_C::gelu_tanh_and_mul", out, input);
}
opreg_status opreg__check_gelu_new(const opreg_tensor *out, const opreg_tensor *input) {
    return check_elementwise("_C::gelu_new", out, input);
}
opreg_status opreg__check_gelu_fast(const opreg_tensor *out, const opreg_tensor *input) {
    return check_elementwise("_C::gelu_fast", out, input);
}
opreg_status opreg__check_gelu_quick(const opreg_tensor *out, const opreg_tensor *input) {
    return check_elementwise("_C::gelu_quick", out, input);
}
