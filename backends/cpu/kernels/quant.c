/* int8 and fp8 quantisation: entry points and the portable path, bit-exact
 * with ops/ref (the spec's float arithmetic step for step, §3.5). The
 * per-tensor amax of the dynamic fp8 op is a parallel maximum per unit,
 * then a serial one over the units (max is exact in any order). */
#include "backends/cpu/kernels/kern_internal.h"

#define MAX_UNITS 256

static int8_t to_int8(float q) {
    if (isnan(q)) return 0;
    q = nearbyintf(q); /* the default rounding mode: to nearest, ties to even */
    return q > 127.0f ? 127 : q < -128.0f ? -128 : (int8_t)q;
}

static uint8_t to_fp8(float q) {
    return opreg__f32_to_e4m3fn(fmaxf(-448.0f, fminf(q, 448.0f)));
}

static int64_t chunk_end(const struct opreg__quant_args *a, int64_t c1) {
    return c1 * OPREG__CPU_CHUNK < a->n ? c1 * OPREG__CPU_CHUNK : a->n;
}

static void int8_static_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    for (int64_t i = c0 * OPREG__CPU_CHUNK; i < chunk_end(a, c1); i++)
        ((int8_t *)a->out)[i] = to_int8(opreg__cpu_ld(a->dt, a->in, i) / a->scale);
}

static void fp8_static_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    float inv = 1.0f / a->scale;
    for (int64_t i = c0 * OPREG__CPU_CHUNK; i < chunk_end(a, c1); i++)
        ((uint8_t *)a->out)[i] = to_fp8(opreg__cpu_ld(a->dt, a->in, i) * inv);
}

/* Units of a->hidden elements; unit u's maximum goes to partial[u]. */
static void amax_portable(const void *args, int64_t u0, int64_t u1) {
    const struct opreg__quant_args *a = args;
    for (int64_t u = u0; u < u1; u++) {
        int64_t end = (u + 1) * a->hidden < a->n ? (u + 1) * a->hidden : a->n;
        float m = 0.0f;
        for (int64_t i = u * a->hidden; i < end; i++)
            m = fmaxf(m, fabsf(opreg__cpu_ld(a->dt, a->in, i)));
        a->partial[u] = m;
    }
}

static void int8_dynamic_portable(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__quant_args *a = args;
    for (int64_t r = r0; r < r1; r++) {
        const void *x = opreg__cpu_at(a->dt, a->in, r * a->in_stride);
        int8_t *o = (int8_t *)a->out + r * a->hidden;
        float amax = 0.0f, mult;
        for (int64_t i = 0; i < a->hidden; i++)
            amax = fmaxf(amax, fabsf(opreg__cpu_ld(a->dt, x, i)));
        mult = 127.0f / amax;
        for (int64_t i = 0; i < a->hidden; i++)
            o[i] = to_int8(opreg__cpu_ld(a->dt, x, i) * mult);
        a->scales[r] = amax / 127.0f;
    }
}

static int64_t chunks(int64_t n) {
    return (n + OPREG__CPU_CHUNK - 1) / OPREG__CPU_CHUNK;
}

void opreg__cpu_int8_static(int isa, int dt, int8_t *out, const void *in, int64_t n, float scale) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__quant_args a = {
        .out = out, .in = in, .n = n, .scale = scale, .dt = dt, .nt = opreg__cpu_stream(n)
    };
    opreg__cpu_parallel(s ? s->int8_static : int8_static_portable, &a, chunks(n),
                        n * (int64_t)(opreg__cpu_es(dt) + 1));
}

void opreg__cpu_int8_dynamic(int isa, int dt, int8_t *out, float *scales, const void *in,
                             int64_t in_stride, int64_t rows, int64_t hidden) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__quant_args a = {
        .out = out,
        .scales = scales,
        .in = in,
        .in_stride = in_stride,
        .hidden = hidden,
        .dt = dt,
        .nt = opreg__cpu_stream(rows * hidden),
    };
    opreg__cpu_parallel(s ? s->int8_dynamic : int8_dynamic_portable, &a, rows,
                        rows * hidden * (int64_t)(opreg__cpu_es(dt) + 1));
}

void opreg__cpu_fp8_static(int isa, int dt, uint8_t *out, const void *in, int64_t n, float scale) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__quant_args a = { .out = out, .in = in, .n = n, .scale = scale, .dt = dt };
    opreg__cpu_parallel(s ? s->fp8_static : fp8_static_portable, &a, chunks(n),
                        n * (int64_t)(opreg__cpu_es(dt) + 1));
}

void opreg__cpu_fp8_dynamic(int isa, int dt, uint8_t *out, float *scale, const void *in,
                            int64_t n) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    /* At most MAX_UNITS units of at least a chunk each, so the per-unit
     * maxima fit on the stack whatever n is. */
    float partial[MAX_UNITS], amax = 0.0f;
    int64_t unit = (n + MAX_UNITS - 1) / MAX_UNITS, units;
    struct opreg__quant_args a = { .in = in, .n = n, .partial = partial, .dt = dt };
    if (unit < OPREG__CPU_CHUNK) unit = OPREG__CPU_CHUNK;
    units = (n + unit - 1) / unit;
    a.hidden = unit;
    opreg__cpu_parallel(s ? s->amax : amax_portable, &a, units, n * (int64_t)opreg__cpu_es(dt));
    for (int64_t u = 0; u < units; u++)
        amax = fmaxf(amax, partial[u]);
    *scale = fmaxf(*scale, amax / 448.0f);
    opreg__cpu_fp8_static(isa, dt, out, in, n, *scale);
}
