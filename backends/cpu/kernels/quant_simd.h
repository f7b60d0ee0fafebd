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

/* m <= VW elements at i as int8 values in float lanes: x / f when by_div
 * (static: a true division, as CUDA), else x * f (dynamic). */
AI vf int8_q(int dt, const void *in, int64_t i, int64_t m, int by_div, vf f) {
    vf x = m == VW ? vload(dt, opreg__cpu_at(dt, in, i)) : vload_n(dt, opreg__cpu_at(dt, in, i), m);
    return to_int8_range(by_div ? vdiv(x, f) : vmul(x, f));
}

/* int8 outputs [i, end); when nt, groups of 4 * VW go out with streaming
 * stores once out + i is aligned for them, and the same elements of the
 * row at @p next (if not NULL) are prefetched meanwhile (rows of dynamic
 * quantisation, whose second pass over a row reads only the caches: as
 * rms_norm's, norms_simd.h). */
AI void int8_span(int dt, int nt, int by_div, int8_t *out, const void *in, int64_t i, int64_t end,
                  float f, const void *next) {
    vf vfac = vset1(f);
    if (nt) {
        int64_t h = i + stream_head(out + i, 1, 4 * VW, end - i);
        for (; i + VW <= h; i += VW)
            vstore_i8(out + i, int8_q(dt, in, i, VW, by_div, vfac), VW);
        if (i < h) {
            vstore_i8(out + i, int8_q(dt, in, i, h - i, by_div, vfac), h - i);
            i = h;
        }
        for (; i + 4 * VW <= end; i += 4 * VW) {
            if (next) opreg__cpu_prefetch(opreg__cpu_at(dt, next, i), 4 * VW * opreg__cpu_es(dt));
            vstream_i8x4(out + i, int8_q(dt, in, i, VW, by_div, vfac),
                         int8_q(dt, in, i + VW, VW, by_div, vfac),
                         int8_q(dt, in, i + 2 * VW, VW, by_div, vfac),
                         int8_q(dt, in, i + 3 * VW, VW, by_div, vfac));
        }
    }
    for (; i + VW <= end; i += VW)
        vstore_i8(out + i, int8_q(dt, in, i, VW, by_div, vfac), VW);
    if (i < end) vstore_i8(out + i, int8_q(dt, in, i, end - i, by_div, vfac), end - i);
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

/* The range functions switch the dtype once per call; each case inlines
 * the body with it (and the store kind) as constants. */
AI void int8_static_chunks(int dt, const struct opreg__quant_args *a, int64_t c0, int64_t c1) {
    int64_t i = c0 * OPREG__CPU_CHUNK, end = chunk_end(a, c1);
    if (a->nt) {
        int8_span(dt, 1, 1, a->out, a->in, i, end, a->scale, NULL);
        vfence();
    } else {
        int8_span(dt, 0, 1, a->out, a->in, i, end, a->scale, NULL);
    }
}

static void int8_static_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        int8_static_chunks(OPREG_DTYPE_F32, a, c0, c1);
        break;
    case OPREG_DTYPE_BF16:
        int8_static_chunks(OPREG_DTYPE_BF16, a, c0, c1);
        break;
    default:
        int8_static_chunks(OPREG_DTYPE_F16, a, c0, c1);
        break;
    }
}

AI void fp8_static_chunks(int dt, const struct opreg__quant_args *a, int64_t c0, int64_t c1) {
    fp8_static_span(dt, a->out, a->in, c0 * OPREG__CPU_CHUNK, chunk_end(a, c1), 1.0f / a->scale);
}

static void fp8_static_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__quant_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        fp8_static_chunks(OPREG_DTYPE_F32, a, c0, c1);
        break;
    case OPREG_DTYPE_BF16:
        fp8_static_chunks(OPREG_DTYPE_BF16, a, c0, c1);
        break;
    default:
        fp8_static_chunks(OPREG_DTYPE_F16, a, c0, c1);
        break;
    }
}

/* Units of a->hidden elements; unit u's maximum goes to partial[u]. */
AI void amax_units(int dt, const struct opreg__quant_args *a, int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
        int64_t end = (u + 1) * a->hidden < a->n ? (u + 1) * a->hidden : a->n;
        a->partial[u] = amax_span(dt, a->in, u * a->hidden, end);
    }
}

static void amax_range(const void *args, int64_t u0, int64_t u1) {
    const struct opreg__quant_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        amax_units(OPREG_DTYPE_F32, a, u0, u1);
        break;
    case OPREG_DTYPE_BF16:
        amax_units(OPREG_DTYPE_BF16, a, u0, u1);
        break;
    default:
        amax_units(OPREG_DTYPE_F16, a, u0, u1);
        break;
    }
}

AI void int8_dynamic_rows(int dt, const struct opreg__quant_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const void *x = opreg__cpu_at(dt, a->in, r * a->in_stride);
        int8_t *o = (int8_t *)a->out + r * a->hidden;
        float amax = amax_span(dt, x, 0, a->hidden);
        if (a->nt) {
            const void *next = r + 1 < r1 ? opreg__cpu_at(dt, x, a->in_stride) : NULL;
            int8_span(dt, 1, 0, o, x, 0, a->hidden, 127.0f / amax, next);
        } else {
            int8_span(dt, 0, 0, o, x, 0, a->hidden, 127.0f / amax, NULL);
        }
        a->scales[r] = amax / 127.0f;
    }
    if (a->nt) vfence();
}

static void int8_dynamic_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__quant_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        int8_dynamic_rows(OPREG_DTYPE_F32, a, r0, r1);
        break;
    case OPREG_DTYPE_BF16:
        int8_dynamic_rows(OPREG_DTYPE_BF16, a, r0, r1);
        break;
    default:
        int8_dynamic_rows(OPREG_DTYPE_F16, a, r0, r1);
        break;
    }
}

#endif
