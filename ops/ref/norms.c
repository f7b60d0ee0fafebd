/* Reference rms_norm and fused_add_rms_norm. As the CUDA kernel (§3.1):
 * r = 1/sqrt(sum(x^2)/H + eps), out = (T)((T)(x*r) * w), with the sum and
 * products in double. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

/* One row: reads x (n elements) fully, then writes out. */
static void norm_row(void *out, const void *x, const void *w, int dt, int64_t n, double eps) {
    double ss = 0.0, r;
    for (int64_t i = 0; i < n; i++) {
        double v = opreg__ld(x, dt, i);
        ss += v * v;
    }
    r = 1.0 / sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; i++) {
        double xr = opreg__round_to(dt, opreg__ld(x, dt, i) * r);
        opreg__st(out, dt, i, xr * opreg__ld(w, dt, i));
    }
}

opreg_status opreg__ref_rms_norm(const opreg_tensor *out, const opreg_tensor *input,
                                 const opreg_tensor *weight, double epsilon) {
    int dt;
    int64_t rows, h, in_stride;
    size_t es;
    dt = opreg__dtype_of(input);
    es = opreg__dtype_bytes(dt);
    h = input->shape[input->ndim - 1];
    rows = opreg__rows(input);
    in_stride = opreg__row_stride(input);
    if (h == 0) return OPREG_OK;
    for (int64_t r = 0; r < rows; r++)
        norm_row((char *)opreg__ptr(out) + (size_t)(r * h) * es,
                 (const char *)opreg__ptr(input) + (size_t)(r * in_stride) * es, opreg__ptr(weight),
                 dt, h, epsilon);
    return OPREG_OK;
}

opreg_status opreg__ref_fused_add_rms_norm(const opreg_tensor *input, const opreg_tensor *residual,
                                           const opreg_tensor *weight, double epsilon) {
    int dt;
    int64_t rows, h, in_stride;
    size_t es;
    dt = opreg__dtype_of(input);
    es = opreg__dtype_bytes(dt);
    h = input->shape[input->ndim - 1];
    rows = opreg__rows(input);
    in_stride = opreg__row_stride(input);
    if (h == 0) return OPREG_OK;
    for (int64_t r = 0; r < rows; r++) {
        char *x = (char *)opreg__ptr(input) + (size_t)(r * in_stride) * es;
        char *res = (char *)opreg__ptr(residual) + (size_t)(r * h) * es;
        /* z = (T)(x + residual) goes to residual; the norm reads the rounded z. */
        for (int64_t i = 0; i < h; i++)
            opreg__st(res, dt, i, opreg__ld(x, dt, i) + opreg__ld(res, dt, i));
        norm_row(x, res, opreg__ptr(weight), dt, h, epsilon);
    }
    return OPREG_OK;
}
