/* The activations: entry points and the portable path (libm's expf, erff,
 * erfcf). Gated ops round act(x) to T before the product with y, as the
 * CUDA kernels and ops/ref do: out = (T)((T)act(x) * y). */
#include "backends/cpu/kernels/kern_internal.h"

/* As simd_math.h: 0.5x(1 + tanh(u)) is computed as x / (1 + e^-2u), and
 * 0.5x(1 + erf(z)) as 0.5x erfc(-z), which do not cancel for negative x. */
static float act(int kind, float x) {
    switch (kind) {
    case OPREG__ACT_SILU:
        return x / (1.0f + expf(-x));
    case OPREG__ACT_GELU:
        return 0.5f * x * erfcf(x * -0.70710678118654752f);
    case OPREG__ACT_GELU_TANH:
        return x / (1.0f + expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
    case OPREG__ACT_GELU_NEW:
        return x / (1.0f + expf(-2.0f * 0.79788456f * (x + 0.044715f * x * x * x)));
    case OPREG__ACT_GELU_FAST:
        return x / (1.0f + expf(-2.0f * 0.79788456f * x * (1.0f + 0.044715f * x * x)));
    default:
        return x / (1.0f + expf(-1.702f * x));
    }
}

static void gated_portable(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__act_args *a = args;
    int dt = a->dt;
    for (int64_t r = r0; r < r1; r++) {
        const void *in = opreg__cpu_at(dt, a->in, r * a->in_stride);
        void *out = opreg__cpu_at_mut(dt, a->out, r * a->out_stride);
        for (int64_t i = 0; i < a->d; i++) {
            float g = opreg__cpu_round(dt, act(a->act, opreg__cpu_ld(dt, in, i)));
            opreg__cpu_st(dt, out, i, g * opreg__cpu_ld(dt, in, a->d + i));
        }
    }
}

static void elementwise_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__act_args *a = args;
    int64_t end = c1 * OPREG__CPU_CHUNK < a->n ? c1 * OPREG__CPU_CHUNK : a->n;
    for (int64_t i = c0 * OPREG__CPU_CHUNK; i < end; i++)
        opreg__cpu_st(a->dt, a->out, i, act(a->act, opreg__cpu_ld(a->dt, a->in, i)));
}

/* The bytes a call moves, as opreg__cpu_parallel weighs them, times the
 * arithmetic's share: the erf-based gelu does about three times silu's
 * work a value (Zen 5, one thread, 16 tokens of 4096, bf16: 27.4 us
 * against 9.3), so at 16 tokens it pays for a second thread (27.4 -> 14.4
 * us) where the others, near the memory's pace, do not. */
static int64_t act_bytes(int kind, int64_t bytes) {
    return kind == OPREG__ACT_GELU ? 3 * bytes : bytes;
}

void opreg__cpu_gated(int isa, int kind, int dt, void *out, int64_t out_stride, const void *in,
                      int64_t in_stride, int64_t rows, int64_t d) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__act_args a = { .out = out,
                                 .in = in,
                                 .out_stride = out_stride,
                                 .in_stride = in_stride,
                                 .d = d,
                                 .act = kind,
                                 .dt = dt,
                                 .nt = opreg__cpu_stream(rows * d * (int64_t)opreg__cpu_es(dt)) };
    if (d <= 0) return;
    opreg__cpu_parallel(s ? s->gated : gated_portable, &a, rows,
                        act_bytes(kind, 3 * rows * d * (int64_t)opreg__cpu_es(dt)));
}

void opreg__cpu_elementwise(int isa, int kind, int dt, void *out, const void *in, int64_t n) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__act_args a = { .out = out,
                                 .in = in,
                                 .n = n,
                                 .act = kind,
                                 .dt = dt,
                                 .nt = opreg__cpu_stream(n * (int64_t)opreg__cpu_es(dt)) };
    opreg__cpu_parallel(s ? s->elementwise : elementwise_portable, &a,
                        (n + OPREG__CPU_CHUNK - 1) / OPREG__CPU_CHUNK,
                        act_bytes(kind, 2 * n * (int64_t)opreg__cpu_es(dt)));
}
