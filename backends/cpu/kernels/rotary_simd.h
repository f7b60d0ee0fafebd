/* rotary_embedding on the vector layer, in place on query and key.
 * NeoX rotates the halves [x | y] of the first rot_dim elements of each
 * head, so x, y, cos and sin are all contiguous vectors. GPT-J rotates
 * interleaved pairs (x0 y0 x1 y1 ...): per token the cache row is expanded
 * once to cc = (c0 c0 c1 c1 ...) and ss = (-s0 s0 -s1 s1 ...), and then
 * e' = e * cc + swap_pairs(e) * ss for every head. */
#ifndef OPREG_CPU_ROTARY_SIMD_H
#define OPREG_CPU_ROTARY_SIMD_H

/* GPT-J rows longer than this take the portable path (see rotary.c). */
#define ROPE_MAX_ROT 1024

AI void neox_head(int dt, void *e, const void *cs, int64_t half) {
    int64_t i = 0;
    for (; i < half; i += VW) {
        int64_t m = half - i < VW ? half - i : VW;
        void *px = opreg__cpu_at_mut(dt, e, i), *py = opreg__cpu_at_mut(dt, e, half + i);
        vf x, y, c, s;
        if (m == VW) {
            x = vload(dt, px);
            y = vload(dt, py);
            c = vload(dt, opreg__cpu_at(dt, cs, i));
            s = vload(dt, opreg__cpu_at(dt, cs, half + i));
            vstore(dt, px, vsub(vmul(x, c), vmul(y, s)));
            vstore(dt, py, vfma(x, s, vmul(y, c)));
        } else {
            x = vload_n(dt, px, m);
            y = vload_n(dt, py, m);
            c = vload_n(dt, opreg__cpu_at(dt, cs, i), m);
            s = vload_n(dt, opreg__cpu_at(dt, cs, half + i), m);
            vstore_n(dt, px, vsub(vmul(x, c), vmul(y, s)), m);
            vstore_n(dt, py, vfma(x, s, vmul(y, c)), m);
        }
    }
}

AI void gptj_head(int dt, void *e, const float *cc, const float *ss, int64_t rot) {
    int64_t i = 0;
    for (; i + VW <= rot; i += VW) {
        void *p = opreg__cpu_at_mut(dt, e, i);
        vf v = vload(dt, p);
        vf c = vload(OPREG_DTYPE_F32, cc + i), s = vload(OPREG_DTYPE_F32, ss + i);
        vstore(dt, p, vfma(vswap_pairs(v), s, vmul(v, c)));
    }
    if (i < rot) {
        void *p = opreg__cpu_at_mut(dt, e, i);
        vf v = vload_n(dt, p, rot - i);
        vf c = vload_n(OPREG_DTYPE_F32, cc + i, rot - i);
        vf s = vload_n(OPREG_DTYPE_F32, ss + i, rot - i);
        vstore_n(dt, p, vfma(vswap_pairs(v), s, vmul(v, c)), rot - i);
    }
}

AI void rope_heads(int dt, const struct opreg__rope_args *a, void *base, int64_t stride,
                   int64_t heads, int64_t t, const void *cs, const float *cc, const float *ss) {
    if (heads <= 0) return; /* no heads: base may be NULL */
    void *row = opreg__cpu_at_mut(dt, base, t * stride);
    for (int64_t h = 0; h < heads; h++) {
        void *e = opreg__cpu_at_mut(dt, row, h * a->head_size);
        if (a->neox)
            neox_head(dt, e, cs, a->rot_dim / 2);
        else
            gptj_head(dt, e, cc, ss, a->rot_dim);
    }
}

AI void rope_tokens(int dt, const struct opreg__rope_args *a, int64_t t0, int64_t t1) {
    float cc[ROPE_MAX_ROT], ss[ROPE_MAX_ROT];
    int64_t half = a->rot_dim / 2;
    for (int64_t t = t0; t < t1; t++) {
        int64_t row = a->pos[t] + (a->offsets ? a->offsets[t] : 0);
        const void *cs = opreg__cpu_at(dt, a->cache, row * a->rot_dim);
        if (!a->neox)
            for (int64_t i = 0; i < half; i++) {
                float c = opreg__cpu_ld(dt, cs, i), s = opreg__cpu_ld(dt, cs, half + i);
                cc[2 * i] = cc[2 * i + 1] = c;
                ss[2 * i] = -s;
                ss[2 * i + 1] = s;
            }
        rope_heads(dt, a, a->q, a->q_stride, a->nq, t, cs, cc, ss);
        if (a->k) rope_heads(dt, a, a->k, a->k_stride, a->nk, t, cs, cc, ss);
    }
}

/* The dtype, switched once per call: each case inlines the body with it as
 * a constant. */
static void rotary_range(const void *args, int64_t t0, int64_t t1) {
    const struct opreg__rope_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        rope_tokens(OPREG_DTYPE_F32, a, t0, t1);
        break;
    case OPREG_DTYPE_BF16:
        rope_tokens(OPREG_DTYPE_BF16, a, t0, t1);
        break;
    default:
        rope_tokens(OPREG_DTYPE_F16, a, t0, t1);
        break;
    }
}

#endif
