/* Reference activations, in double. Gated ops round act(x) to T before
 * multiplying by y, as the CUDA kernels do: out = (T)((T)act(x) * y). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

typedef double (*act_fn)(double);

#define SQRT1_2    0.70710678118654752440
#define SQRT2      1.41421356237309504880
#define TWO_SQRTPI 1.12837916709551257390 /* 2/sqrt(pi) */

static double silu(double x) {
    return x / (1.0 + exp(-x));
}
static double gelu_erf(double x) {
    return 0.5 * x * (1.0 + erf(x * SQRT1_2));
}
static double gelu_tanh(double x) {
    const double beta = SQRT2 * TWO_SQRTPI * 0.5; /* sqrt(2/pi) */
    return 0.5 * x * (1.0 + tanh(beta * (x + 0.044715 * x * x * x)));
}
static double gelu_new(double x) {
    return 0.5 * x * (1.0 + tanh(0.79788456 * (x + 0.044715 * x * x * x)));
}
static double gelu_fast(double x) {
    return 0.5 * x * (1.0 + tanh(0.79788456 * x * (1.0 + 0.044715 * x * x)));
}
static double gelu_quick(double x) {
    return x / (1.0 + exp(-1.702 * x));
}

static opreg_status gated(const opreg_tensor *out, const opreg_tensor *input, act_fn act) {
    int dt = opreg__dtype_of(input);
    int64_t d = input->shape[input->ndim - 1] / 2, rows = opreg__rows(input);
    const void *in = opreg__ptr(input);
    void *o = opreg__ptr(out);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < d; i++) {
            double x = opreg__ld(in, dt, r * 2 * d + i), y = opreg__ld(in, dt, r * 2 * d + d + i);
            opreg__st(o, dt, r * d + i, opreg__round_to(dt, act(x)) * y);
        }
    return OPREG_OK;
}

static opreg_status elementwise(const opreg_tensor *out, const opreg_tensor *input, act_fn act) {
    int dt = opreg__dtype_of(input);
    int64_t n = opreg__numel(input);
    const void *in = opreg__ptr(input);
    void *o = opreg__ptr(out);
    for (int64_t i = 0; i < n; i++)
        opreg__st(o, dt, i, act(opreg__ld(in, dt, i)));
    return OPREG_OK;
}

opreg_status opreg__ref_silu_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return gated(out, input, silu);
}
opreg_status opreg__ref_gelu_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return gated(out, input, gelu_erf);
}
opreg_status opreg__ref_gelu_tanh_and_mul(const opreg_tensor *out, const opreg_tensor *input) {
    return gated(out, input, gelu_tanh);
}
opreg_status opreg__ref_gelu_new(const opreg_tensor *out, const opreg_tensor *input) {
    return elementwise(out, input, gelu_new);
}
opreg_status opreg__ref_gelu_fast(const opreg_tensor *out, const opreg_tensor *input) {
    return elementwise(out, input, gelu_fast);
}
opreg_status opreg__ref_gelu_quick(const opreg_tensor *out, const opreg_tensor *input) {
    return elementwise(out, input, gelu_quick);
}
