/* rms_norm and fused_add_rms_norm: the entry points and the portable path.
 * Arithmetic as ops-reference.md §3.1/§3.2 (CUDA's order): the sum of
 * squares in f32, r = 1/sqrt(sum/H + eps), out = (T)((T)(x*r) * w); the
 * fused op first stores z = (T)(input + residual) and normalises that. */
#include "backends/cpu/kernels/kern_internal.h"

static void scale_row(int dt, void *out, const void *x, const void *w, int64_t n, float r) {
    for (int64_t i = 0; i < n; i++)
        opreg__cpu_st(dt, out, i,
                      opreg__cpu_round(dt, opreg__cpu_ld(dt, x, i) * r) * opreg__cpu_ld(dt, w, i));
}

static void rms_norm_portable(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__norm_args *a = args;
    int dt = a->dt;
    for (int64_t r = r0; r < r1; r++) {
        const void *x = opreg__cpu_at(dt, a->in, r * a->in_stride);
        float ss = 0.0f;
        for (int64_t i = 0; i < a->hidden; i++) {
            float v = opreg__cpu_ld(dt, x, i);
            ss += v * v;
        }
        scale_row(dt, opreg__cpu_at_mut(dt, a->out, r * a->out_stride), x, a->w, a->hidden,
                  1.0f / sqrtf(ss / (float)a->hidden + a->eps));
    }
}

static void fused_add_portable(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__norm_args *a = args;
    int dt = a->dt;
    for (int64_t r = r0; r < r1; r++) {
        void *x = opreg__cpu_at_mut(dt, a->out, r * a->out_stride);
        void *res = opreg__cpu_at_mut(dt, a->res, r * a->res_stride);
        float ss = 0.0f;
        for (int64_t i = 0; i < a->hidden; i++) {
            float z = opreg__cpu_round(dt, opreg__cpu_ld(dt, x, i) + opreg__cpu_ld(dt, res, i));
            opreg__cpu_st(dt, res, i, z);
            ss += z * z;
        }
        scale_row(dt, x, res, a->w, a->hidden, 1.0f / sqrtf(ss / (float)a->hidden + a->eps));
    }
}

void opreg__cpu_rms_norm(int isa, int dt, void *out, int64_t out_stride, const void *in,
                         int64_t in_stride, const void *w, int64_t rows, int64_t hidden,
                         float eps) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__norm_args a = { .out = out,
                                  .in = in,
                                  .w = w,
                                  .out_stride = out_stride,
                                  .in_stride = in_stride,
                                  .hidden = hidden,
                                  .eps = eps,
                                  .dt = dt,
                                  .nt = opreg__cpu_stream(rows * hidden *
                                                          (int64_t)opreg__cpu_es(dt)) };
    if (hidden <= 0) return;
    opreg__cpu_parallel(s ? s->rms_norm : rms_norm_portable, &a, rows,
                        2 * rows * hidden * (int64_t)opreg__cpu_es(dt));
}

void opreg__cpu_fused_add_rms_norm(int isa, int dt, void *in, int64_t in_stride, void *res,
                                   int64_t res_stride, const void *w, int64_t rows, int64_t hidden,
                                   float eps) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__norm_args a = { .out = in,
                                  .in = in,
                                  .res = res,
                                  .w = w,
                                  .out_stride = in_stride,
                                  .in_stride = in_stride,
                                  .res_stride = res_stride,
                                  .hidden = hidden,
                                  .eps = eps,
                                  .dt = dt };
    if (hidden <= 0) return;
    opreg__cpu_parallel(s ? s->fused_add_rms_norm : fused_add_portable, &a, rows,
                        4 * rows * hidden * (int64_t)opreg__cpu_es(dt));
}
