/* Which calls the oneDNN GEMM kernels cover, for arguments that passed the
 * op's checks: the CPU key's oneDNN providers ask this before they accept a
 * call. A configuration the op allows but oneDNN's path does not cover (f16
 * linear, f16 out, padded int8 rows) runs the next provider. */
#include "backends/cpu/onednn/onednn.h"
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
    if (!is_dtype(out, OPREG_DTYPE_F32, OPREG_DTYPE_BF16)) return false;
    if (is_dtype(a, OPREG_DTYPE_F8_E4M3FN, OPREG_DTYPE_F8_E4M3FN)) return true; /* copied dense */
    return is_dtype(a, OPREG_DTYPE_I8, OPREG_DTYPE_I8) &&
           (a->shape[0] <= 1 || opreg__stride(a, 0) == k) &&
           (b->shape[1] <= 1 || opreg__stride(b, 1) == k);
}
