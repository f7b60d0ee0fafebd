/* Checks of the fp8 and int8 quantisation ops (§3.5). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>

static opreg_status check_quant(const char *op, const opreg_tensor *out, const opreg_tensor *input,
                                const opreg_tensor *scale, uint32_t out_dtype, int per_token) {
    OPREG__TRY(opreg__chk_tensor(op, "input", input, OPREG__DTS_FLOAT, per_token ? -2 : -1));
    OPREG__TRY(opreg__chk_contig(op, "input", input));
    OPREG__TRY(opreg__chk_tensor(op, "out", out, out_dtype, input->ndim));
    OPREG__TRY(opreg__chk_same_shape(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_contig(op, "out", out));
    OPREG__TRY(opreg__chk_same_device(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_tensor(op, "scale", scale, OPREG__DTS(F32), -1));
    OPREG__TRY(opreg__chk_contig(op, "scale", scale));
    OPREG__TRY(opreg__chk_same_device(op, "scale", scale, "input", input));
    if (per_token) {
        if (opreg__numel(scale) != opreg__rows(input))
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument 'scale': expected one scale per token (%" PRId64
                               "), got %" PRId64 " elements",
                               op, opreg__rows(input), opreg__numel(scale));
    } else if (opreg__numel(scale) != 1) {
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'scale': expected one element (per tensor), got %" PRId64,
                           op, opreg__numel(scale));
    }
    OPREG__TRY(opreg__chk_no_overlap(op, "out", out, "input", input));
    OPREG__TRY(opreg__chk_no_overlap(op, "out", out, "scale", scale));
    return opreg__chk_no_overlap(op, "scale", scale, "input", input);
}

opreg_status opreg__check_static_scaled_fp8_quant(const opreg_tensor *out,
                                                  const opreg_tensor *input,
                                                  const opreg_tensor *scale) {
    return check_quant("_C::static_scaled_fp8_quant", out, input, scale, OPREG__DTS(F8_E4M3FN), 0);
}
opreg_status opreg__check_dynamic_scaled_fp8_quant(const opreg_tensor *out,
                                                   const opreg_tensor *input,
                                                   const opreg_tensor *scale) {
    return check_quant("_C::dynamic_scaled_fp8_quant", out, input, scale, OPREG__DTS(F8_E4M3FN), 0);
}
opreg_status opreg__check_static_scaled_int8_quant(const opreg_tensor *out,
                                                   const opreg_tensor *input,
                                                   const opreg_tensor *scale) {
    return check_quant("_C::static_scaled_int8_quant", out, input, scale, OPREG__DTS(I8), 0);
}
opreg_status opreg__check_dynamic_scaled_int8_quant(const opreg_tensor *out,
                                                    const opreg_tensor *input,
                                                    const opreg_tensor *scale) {
    return check_quant("_C::dynamic_scaled_int8_quant", out, input, scale, OPREG__DTS(I8), 1);
}
