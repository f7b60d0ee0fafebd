/* int8 and fp8 (e4m3fn) quantisation on the vector layer, §3.5 of
 * ops-reference.md, bit for bit:
 *   static int8   sat(rne(x / scale)), a true division as CUDA (and ops/ref);
 *   dynamic int8  sat(rne(x * (127 / amax))) per row, scale = amax / 127;
 *   fp8           e4m3fn(min(max(x * (1/scale), -448), 448)).
 * NaN gives int8 0 (cvt.rni.sat) and fp8 +448 (fminf then fmaxf), and
 * amax ignores NaN (fmaxf): the operand orders of vmin/vmax below give
 * exactly those. Clamping before rounding equals rounding then saturating. */
#ifndef OPREG_CPU_QUANT_SIMD_H
#define OPREG_CPU_QUANT_SIMD_H

AI vf to_int8_range(vf q) {
    return vrint(vmin(vmax(vnan_to_zero(q), vset1(-128.0f)), vset1(127.0f)));
}

AI vf fp8_clamp(vf q) {
    /* minps(q, 448) is 448 for a NaN q, as fminf(q, 448) */
    return vmax(vmin(q, vset1(448.0f)), vset1(-448.0f));
}

AI void int8_static_span(int dt, int8_t *out, const void *in, int64_t i, int64_t end, float s) {
    vf vs = vset1(s);
    for (; i + VW <= end; i += VW)
        vstore_i8(out + i, to_int8_range(vdiv(vload(dt, opreg__cpu_at(dt, in, i)), vs)), VW);
    if (i < end)
        vstore_i8(out + i, to_int8_range(vdiv(vload_n(dt, opreg__cpu_at(dt, in, i), end - i), vs)),
                  end - i);
}

AI void fp8_static_span(int dt, uint8_t *out, const void *in, int64_t i, int64_t end, float inv) {
    vf vi = vset1(inv);
    for (; i + VW <= end; i += VW)
        vstore_e4m3(out + i, fp8_clamp(vmul(vload(dt, opreg__cpu_at(dt, in, i)), vi)), VW);
    if (i < end)
        vstore_e4m3(out + i, fp8_clamp(vmul(vload_n(dt, opreg__cpu_at(dt, in, i), end - i), vi)),
                    end - i);
}

/* max |x| over [i, end); 0 when all are NaN or the span is empty. */
AI float amax_span(int dt, const void *in, int64_t i, int64_t end) {
    vf m0 = vzero(), m1 = vzero();
    for (; i + 2 * VW <= end; i += 2 * VW) {
        m0 = vmax(vabs(vload(dt, opreg__cpu_at(dt, in, i))), m0);
        m1 = vmax(vabs(vload(dt, opreg__cpu_at(dt, in, i + VW))), m1);
    }
    for (; i < end; i += VW) {
        int64_t m = end - i < VW ? end - i : VW;
        m0 = vmax(vabs(vload_n(dt, opreg__cpu_at(dt, in, i), m)), m0);
    }
    return vhmax(vmax(m0, m1));
}

AI int64_t chunk_end(const struct opreg__quant_args *a, int64_t c1) {
    return c1 * OPREG__CPU_CHUNK < a->n ? c1 * OPREG__CPU_CHUNK : a->n;
}

static void int8_static_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    PER_DTYPE(a->dt, int8_static_span(dt_, a->out, a->in, c0 * OPREG__CPU_CHUNK, chunk_end(a, c1),
                                      a->scale));
}

static void fp8_static_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    PER_DTYPE(a->dt, fp8_static_span(dt_, a->out, a->in, c0 * OPREG__CPU_CHUNK, chunk_end(a, c1),
                                     1.0f / a->scale));
}

/* Units of a->hidden elements; unit u's maximum goes to partial[u]. */
static void amax_range(const void *args, int64_t u0, int64_t u1) {
    const struct opreg__quant_args *a = args;
    for (int64_t u = u0; u < u1; u++) {
        int64_t end = (u + 1) * a->hidden < a->n ? (u + 1) * a->hidden : a->n;
        PER_DTYPE(a->dt, a->partial[u] = amax_span(dt_, a->in, u * a->hidden, end));
    }
}

AI void int8_dynamic_rows(int dt, const struct opreg__quant_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const void *x = opreg__cpu_at(dt, a->in, r * a->in_stride);
        int8_t *o = (int8_t *)a->out + r * a->hidden;
        float amax = amax_span(dt, x, 0, a->hidden);
        vf mult = vset1(127.0f / amax);
        int64_t i = 0;
        for (; i + VW <= a->hidden; i += VW)
            vstore_i8(o + i, to_int8_range(vmul(vload(dt, opreg__cpu_at(dt, x, i)), mult)), VW);
        if (i < a->hidden)
            vstore_i8(
                o + i,
                to_int8_range(vmul(vload_n(dt, opreg__cpu_at(dt, x, i), a->hidden - i), mult)),
                a->hidden - i);
        a->scales[r] = amax / 127.0f;
    }
}

static void int8_dynamic_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__quant_args *a = args;
    PER_DTYPE(a->dt, int8_dynamic_rows(dt_, a, r0, r1));
}

#endif
