/* Reference cutlass_scaled_mm: the int8 dot product is exact (int64), fp8
 * products are exact in double; out = a_s * (acc * b_s) + bias, rounded once. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

opreg_status opreg__ref_cutlass_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                          const opreg_tensor *b, const opreg_tensor *a_scales,
                                          const opreg_tensor *b_scales, const opreg_tensor *bias) {
    int in_dt, out_dt;
    int64_t m, n, k, as0, bs1;
    const float *sa, *sb;
    in_dt = opreg__dtype_of(a);
    out_dt = opreg__dtype_of(out);
    m = a->shape[0];
    k = a->shape[1];
    n = b->shape[1];
    as0 = opreg__stride(a, 0);
    bs1 = opreg__stride(b, 1);
    sa = opreg__ptr(a_scales);
    sb = opreg__ptr(b_scales);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0, v;
            if (in_dt == OPREG_DTYPE_I8) {
                const int8_t *pa = (const int8_t *)opreg__ptr(a) + i * as0;
                const int8_t *pb = (const int8_t *)opreg__ptr(b) + j * bs1;
                int64_t iacc = 0;
                for (int64_t p = 0; p < k; p++)
                    iacc += (int64_t)pa[p] * pb[p];
                acc = (double)iacc;
            } else {
                for (int64_t p = 0; p < k; p++)
                    acc += opreg__ld(opreg__ptr(a), in_dt, i * as0 + p) *
                           opreg__ld(opreg__ptr(b), in_dt, j * bs1 + p);
            }
            v = (double)sa[opreg__numel(a_scales) == 1 ? 0 : i] *
                (acc * (double)sb[opreg__numel(b_scales) == 1 ? 0 : j]);
            if (bias) v += opreg__ld(opreg__ptr(bias), out_dt, j);
            opreg__st(opreg__ptr(out), out_dt, i * n + j, v);
        }
    return OPREG_OK;
}
