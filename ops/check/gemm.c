/* Checks of cutlass_scaled_mm: out [M,N] = a_scales * (a [M,K] . b [K,N]) *
 * b_scales + bias, with a row-major and b column-major as CUTLASS wants. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>

static opreg_status check_scales(const char *op, const char *arg, const opreg_tensor *t,
                                 int64_t per, const opreg_tensor *out) {
    OPREG__TRY(opreg__chk_tensor(op, arg, t, OPREG__DTS(F32), -1));
    OPREG__TRY(opreg__chk_contig(op, arg, t));
    if (opreg__numel(t) != 1 && opreg__numel(t) != per)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': expected 1 (per tensor) or %" PRId64
                           " elements, got %" PRId64,
                           op, arg, per, opreg__numel(t));
    OPREG__TRY(opreg__chk_same_device(op, arg, t, "out", out));
    return opreg__chk_no_overlap(op, "out", out, arg, t);
}

opreg_status opreg__check_cutlass_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                            const opreg_tensor *b, const opreg_tensor *a_scales,
                                            const opreg_tensor *b_scales,
                                            const opreg_tensor *bias) {
    const char *op = "_C::cutlass_scaled_mm";
    int64_t m, n;
    OPREG__TRY(opreg__chk_tensor(op, "a", a, OPREG__DTS(I8) | OPREG__DTS(F8_E4M3FN), 2));
    if (a->shape[1] > 1 && opreg__stride(a, 1) != 1)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument 'a': must be row-major (stride(1) == 1)",
                           op);
    OPREG__TRY(opreg__chk_tensor(op, "b", b, OPREG__DTS(I8) | OPREG__DTS(F8_E4M3FN), 2));
    OPREG__TRY(opreg__chk_same_dtype(op, "b", b, "a", a));
    OPREG__TRY(opreg__chk_size(op, "b", b, 0, a->shape[1]));
    if (b->shape[0] > 1 && opreg__stride(b, 0) != 1)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'b': must be column-major (stride(0) == 1)", op);
    m = a->shape[0];
    n = b->shape[1];
    OPREG__TRY(
        opreg__chk_tensor(op, "out", out, OPREG__DTS(F32) | OPREG__DTS(BF16) | OPREG__DTS(F16), 2));
    OPREG__TRY(opreg__chk_size(op, "out", out, 0, m));
    OPREG__TRY(opreg__chk_size(op, "out", out, 1, n));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "a", a, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "b", b, "out", out));
    OPREG__TRY(opreg__chk_no_overlap(op, "out", out, "a", a));
    OPREG__TRY(opreg__chk_no_overlap(op, "out", out, "b", b));
    OPREG__TRY(check_scales(op, "a_scales", a_scales, m, out));
    OPREG__TRY(check_scales(op, "b_scales", b_scales, n, out));
    if (bias) {
        OPREG__TRY(opreg__chk_tensor(op, "bias", bias, OPREG__DTS_ANY, 1));
        OPREG__TRY(opreg__chk_same_dtype(op, "bias", bias, "out", out));
        OPREG__TRY(opreg__chk_size(op, "bias", bias, 0, n));
        OPREG__TRY(opreg__chk_contig(op, "bias", bias));
        OPREG__TRY(opreg__chk_same_device(op, "bias", bias, "out", out));
        OPREG__TRY(opreg__chk_no_overlap(op, "out", out, "bias", bias));
    }
    return OPREG_OK;
}
