/* Decode-sized GEMMs: entry points and the portable path. The SIMD paths
 * are in gemv_simd.h; cpu_kernels.h says what each entry computes. The
 * output columns are the unit spread over threads: each thread streams its
 * own contiguous part of the weights. */
#include "backends/cpu/kernels/kern_internal.h"

static float ld_float(int dt, const void *p, int64_t i) {
    if (dt == OPREG_DTYPE_F8_E4M3FN) return opreg__e4m3fn_to_f32(((const uint8_t *)p)[i]);
    return opreg__cpu_ld(dt, p, i);
}

/* The float types (linear) and fp8 (cutlass_scaled_mm): f32 sums. */
static void gemv_float_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t end = c1 * OPREG__GEMV_COLS < a->n ? c1 * OPREG__GEMV_COLS : a->n;
    for (int64_t j = c0 * OPREG__GEMV_COLS; j < end; j++)
        for (int64_t i = 0; i < a->m; i++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < a->k; p++)
                acc += ld_float(a->dt, a->in, i * a->in_stride + p) *
                       ld_float(a->dt, a->w, j * a->w_stride + p);
            if (a->dt == OPREG_DTYPE_F8_E4M3FN)
                opreg__gemv_scaled_out(a, i, j, acc);
            else
                opreg__gemv_linear_out(a->dt, a, i, j, acc);
        }
}

/* int8: exact integer sums. */
static void gemv_int8_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t end = c1 * OPREG__GEMV_COLS < a->n ? c1 * OPREG__GEMV_COLS : a->n;
    for (int64_t j = c0 * OPREG__GEMV_COLS; j < end; j++)
        for (int64_t i = 0; i < a->m; i++) {
            const int8_t *x = (const int8_t *)a->in + i * a->in_stride;
            const int8_t *w = (const int8_t *)a->w + j * a->w_stride;
            int64_t acc = 0;
            for (int64_t p = 0; p < a->k; p++)
                acc += (int64_t)x[p] * w[p];
            opreg__gemv_scaled_out(a, i, j, (float)acc);
        }
}

static int64_t groups(int64_t n) {
    return (n + OPREG__GEMV_COLS - 1) / OPREG__GEMV_COLS;
}

static size_t elem_bytes(int dt) {
    return dt == OPREG_DTYPE_F32 ? 4 : dt == OPREG_DTYPE_I8 || dt == OPREG_DTYPE_F8_E4M3FN ? 1 : 2;
}

void opreg__cpu_gemv_linear(int isa, int dt, void *out, const void *in, const void *w,
                            const void *bias, int64_t m, int64_t n, int64_t k) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__gemv_args a = {
        .out = out,
        .in = in,
        .w = w,
        .bias = bias,
        .m = m,
        .n = n,
        .k = k,
        .in_stride = k,
        .w_stride = k,
        .dt = dt,
        .out_dt = dt,
    };
    if (m == 0) return;
    opreg__cpu_parallel(s ? s->gemv_linear : gemv_float_portable, &a, groups(n),
                        n * k * (int64_t)elem_bytes(dt));
}

void opreg__cpu_gemv_scaled_mm(int isa, int dt, int out_dt, void *out, const void *a_data,
                               int64_t a_stride, const void *b, int64_t b_stride,
                               const float *a_scales, bool per_token, const float *b_scales,
                               bool per_channel, const void *bias, int64_t m, int64_t n,
                               int64_t k) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__gemv_args a = {
        .out = out,
        .in = a_data,
        .w = b,
        .bias = bias,
        .a_scales = a_scales,
        .b_scales = b_scales,
        .m = m,
        .n = n,
        .k = k,
        .in_stride = a_stride,
        .w_stride = b_stride,
        .dt = dt,
        .out_dt = out_dt,
        .per_token = per_token,
        .per_channel = per_channel,
    };
    opreg__cpu_range_fn fn;
    if (m == 0) return;
    if (dt == OPREG_DTYPE_I8)
        fn = s ? s->gemv_int8 : gemv_int8_portable;
    else
        fn = s ? s->gemv_fp8 : gemv_float_portable;
    opreg__cpu_parallel(fn, &a, groups(n), n * k);
}
