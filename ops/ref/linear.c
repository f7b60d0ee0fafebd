/* Reference linear: result = input . weight^T + bias, in double, rounded once. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

opreg_status opreg__ref_linear(const opreg_tensor *out, const opreg_tensor *input,
                               const opreg_tensor *weight, const opreg_tensor *bias) {
    int dt;
    int64_t rows, k, n;
    dt = opreg__dtype_of(input);
    k = input->shape[input->ndim - 1];
    n = weight->shape[0];
    rows = opreg__rows(input);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double acc = bias ? opreg__ld(opreg__ptr(bias), dt, j) : 0.0;
            for (int64_t p = 0; p < k; p++)
                acc += opreg__ld(opreg__ptr(input), dt, r * k + p) *
                       opreg__ld(opreg__ptr(weight), dt, j * k + p);
            opreg__st(opreg__ptr(out), dt, r * n + j, acc);
        }
    return OPREG_OK;
}
