/* What the oneDNN GEMM kernels accept. First the op's own checks from
 * ops/check (the one source of truth that the Meta and Reference kernels
 * share, so every backend refuses bad input with the same status and
 * message), then host memory, then the configurations this implementation
 * covers. A configuration the op allows but oneDNN's path does not cover
 * (f16 linear, fp8 operands, f16 out, padded rows) is refused with
 * OPREG_ERR_UNSUPPORTED; the CPU key runs the portable kernel for those. */
#include "backends/cpu/onednn/onednn.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"

static bool is_dtype(const opreg_tensor *t, opreg_dtype a, opreg_dtype b) {
    int dt = opreg__dtype_of(t);
    return dt == (int)a || dt == (int)b;
}

bool opreg__onednn_linear_covers(const opreg_tensor *input) {
    return is_dtype(input, OPREG_DTYPE_F32, OPREG_DTYPE_BF16);
}

/* oneDNN is handed a [M,K] row-major with leading dimension K and b [K,N]
 * column-major with leading dimension K: a stride of a size-1 dim does not
 * matter. */
bool opreg__onednn_scaled_mm_covers(const opreg_tensor *out, const opreg_tensor *a,
                                    const opreg_tensor *b) {
    int64_t k = a->shape[1];
    return is_dtype(a, OPREG_DTYPE_I8, OPREG_DTYPE_I8) &&
           is_dtype(out, OPREG_DTYPE_F32, OPREG_DTYPE_BF16) &&
           (a->shape[0] <= 1 || opreg__stride(a, 0) == k) &&
           (b->shape[1] <= 1 || opreg__stride(b, 1) == k);
}

opreg_status opreg__onednn_check_linear(const opreg_tensor *out, const opreg_tensor *input,
                                        const opreg_tensor *weight, const opreg_tensor *bias) {
    OPREG__TRY(opreg__check_linear_out(out, input, weight, bias));
    /* The checks above put every tensor on input's device. */
    OPREG__TRY(opreg__chk_cpu("_C::linear", "input", input));
    if (!opreg__onednn_linear_covers(input))
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "_C::linear: the oneDNN kernel takes f32 or bf16, not %s",
                           opreg_dtype_name((opreg_dtype)opreg__dtype_of(input)));
    return OPREG_OK;
}

opreg_status opreg__onednn_check_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                           const opreg_tensor *b, const opreg_tensor *a_scales,
                                           const opreg_tensor *b_scales, const opreg_tensor *bias) {
    OPREG__TRY(opreg__check_cutlass_scaled_mm(out, a, b, a_scales, b_scales, bias));
    OPREG__TRY(opreg__chk_cpu("_C::cutlass_scaled_mm", "out", out));
    if (!opreg__onednn_scaled_mm_covers(out, a, b))
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "_C::cutlass_scaled_mm: the oneDNN kernel takes int8 a and b with "
                           "leading dimension K and f32 or bf16 out");
    return OPREG_OK;
}
