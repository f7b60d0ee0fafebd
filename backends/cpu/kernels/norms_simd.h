/* rms_norm and fused_add_rms_norm on the vector layer. Included once by each
 * SIMD path's file, after simd_<isa>.h. A row is read from memory once: the
 * second pass finds it in L1/L2 (a 8192-element f32 row is 32 KiB). When
 * rms_norm streams (a call larger than half the L3), its second pass over
 * a row also prefetches the next row of the range: that pass reads only
 * the caches, and without it the memory would idle through it (on two
 * cores of Zen 5, bf16 1.07-1.24 -> 1.16-1.33 of the triad, f32 1.01-1.56
 * -> 1.25-1.67: docs/performance.md).
 *
 * The helpers are always_inline; the range functions at the end switch the
 * dtype once and call them with it as a constant, so every dtype gets its
 * own loop with the conversions inlined and no branch per element. */
#ifndef OPREG_CPU_NORMS_SIMD_H
#define OPREG_CPU_NORMS_SIMD_H

/* Sum of squares of n elements; four accumulators hide the FMA latency. */
AI float sum_squares(int dt, const void *x, int64_t n) {
    vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
    int64_t i = 0;
    for (; i + 4 * VW <= n; i += 4 * VW) {
        vf v0 = vload(dt, opreg__cpu_at(dt, x, i));
        vf v1 = vload(dt, opreg__cpu_at(dt, x, i + VW));
        vf v2 = vload(dt, opreg__cpu_at(dt, x, i + 2 * VW));
        vf v3 = vload(dt, opreg__cpu_at(dt, x, i + 3 * VW));
        a0 = vfma(v0, v0, a0);
        a1 = vfma(v1, v1, a1);
        a2 = vfma(v2, v2, a2);
        a3 = vfma(v3, v3, a3);
    }
    for (; i + VW <= n; i += VW) {
        vf v = vload(dt, opreg__cpu_at(dt, x, i));
        a0 = vfma(v, v, a0);
    }
    if (i < n) {
        vf v = vload_n(dt, opreg__cpu_at(dt, x, i), n - i);
        a1 = vfma(v, v, a1);
    }
    return vhsum(vadd(vadd(a0, a1), vadd(a2, a3)));
}

/* out = (T)((T)(x * r) * w) over [i, end): full vectors, then one masked
 * tail; streaming stores when nt (out + i is then aligned for them), and
 * then the same elements of the row at next (if not NULL) prefetched. */
AI void scale_span(int dt, int nt, void *out, const void *x, const void *w, vf vr, int64_t i,
                   int64_t end, const void *next) {
    for (; i + VW <= end; i += VW) {
        if (nt && next) opreg__cpu_prefetch(opreg__cpu_at(dt, next, i), VW * opreg__cpu_es(dt));
        vf t = vround_dt(dt, vmul(vload(dt, opreg__cpu_at(dt, x, i)), vr));
        vput(dt, nt, opreg__cpu_at_mut(dt, out, i), vmul(t, vload(dt, opreg__cpu_at(dt, w, i))));
    }
    if (i < end) {
        vf t = vround_dt(dt, vmul(vload_n(dt, opreg__cpu_at(dt, x, i), end - i), vr));
        vf o = vmul(t, vload_n(dt, opreg__cpu_at(dt, w, i), end - i));
        vstore_n(dt, opreg__cpu_at_mut(dt, out, i), o, end - i);
    }
}

AI void scale_row(int dt, int nt, void *out, const void *x, const void *w, int64_t n, float r,
                  const void *next) {
    size_t es = opreg__cpu_es(dt);
    int64_t h = nt ? stream_head(out, es, VW * es, n) : 0;
    if (h > 0) scale_span(dt, 0, out, x, w, vset1(r), 0, h, NULL);
    if (h < n) scale_span(dt, nt, out, x, w, vset1(r), h, n, next);
}

/* The store kind is chosen per row with a constant, so that each kind has
 * its own loop (vput's branch folds away). */
AI void rms_norm_rows(int dt, const struct opreg__norm_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const void *x = opreg__cpu_at(dt, a->in, r * a->in_stride);
        void *out = opreg__cpu_at_mut(dt, a->out, r * a->out_stride);
        float ss = sum_squares(dt, x, a->hidden);
        float rs = 1.0f / sqrtf(ss / (float)a->hidden + a->eps);
        if (a->nt) {
            const void *next = r + 1 < r1 ? opreg__cpu_at(dt, x, a->in_stride) : NULL;
            scale_row(dt, 1, out, x, a->w, a->hidden, rs, next);
        } else {
            scale_row(dt, 0, out, x, a->w, a->hidden, rs, NULL);
        }
    }
    if (a->nt) vfence();
}

/* z = (T)(x + res) into res, returning sum(z^2) of the rounded z. */
AI float add_residual(int dt, const void *x, void *res, int64_t n) {
    vf a0 = vzero(), a1 = vzero();
    int64_t i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        void *p0 = opreg__cpu_at_mut(dt, res, i), *p1 = opreg__cpu_at_mut(dt, res, i + VW);
        vf z0 = vadd(vload(dt, opreg__cpu_at(dt, x, i)), vload(dt, p0));
        vf z1 = vadd(vload(dt, opreg__cpu_at(dt, x, i + VW)), vload(dt, p1));
        z0 = vround_dt(dt, z0);
        z1 = vround_dt(dt, z1);
        vstore(dt, p0, z0);
        vstore(dt, p1, z1);
        a0 = vfma(z0, z0, a0);
        a1 = vfma(z1, z1, a1);
    }
    for (; i < n; i += VW) {
        int64_t m = n - i < VW ? n - i : VW;
        void *p = opreg__cpu_at_mut(dt, res, i);
        vf z = vround_dt(dt, vadd(vload_n(dt, opreg__cpu_at(dt, x, i), m), vload_n(dt, p, m)));
        vstore_n(dt, p, z, m);
        a0 = vfma(z, z, a0);
    }
    return vhsum(vadd(a0, a1));
}

AI void fused_add_rows(int dt, const struct opreg__norm_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        void *x = opreg__cpu_at_mut(dt, a->out, r * a->out_stride);
        void *res = opreg__cpu_at_mut(dt, a->res, r * a->res_stride);
        float ss = add_residual(dt, x, res, a->hidden);
        float rs = 1.0f / sqrtf(ss / (float)a->hidden + a->eps);
        scale_row(dt, 0, x, res, a->w, a->hidden, rs, NULL);
    }
}

static void rms_norm_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__norm_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        rms_norm_rows(OPREG_DTYPE_F32, a, r0, r1);
        break;
    case OPREG_DTYPE_BF16:
        rms_norm_rows(OPREG_DTYPE_BF16, a, r0, r1);
        break;
    default:
        rms_norm_rows(OPREG_DTYPE_F16, a, r0, r1);
        break;
    }
}

static void fused_add_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__norm_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        fused_add_rows(OPREG_DTYPE_F32, a, r0, r1);
        break;
    case OPREG_DTYPE_BF16:
        fused_add_rows(OPREG_DTYPE_BF16, a, r0, r1);
        break;
    default:
        fused_add_rows(OPREG_DTYPE_F16, a, r0, r1);
        break;
    }
}

#endif
