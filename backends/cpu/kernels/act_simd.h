/* The activations on the vector layer: gated rows (out = (T)((T)act(x) * y)
 * for input rows [x | y]) and elementwise chunks (out = (T)act(x)).
 * Included once by each SIMD path's file, after simd_math.h. */
#ifndef OPREG_CPU_ACT_SIMD_H
#define OPREG_CPU_ACT_SIMD_H

/* How far ahead of the loads the activations prefetch their inputs when
 * the call streams (its data then come from memory): 2 KiB. Each vector
 * costs tens of instructions (exp, divide, rounding), so the core reads
 * its input more slowly than a copy would, and the hardware prefetcher,
 * which keeps pace with the loads, does not keep enough lines in flight:
 * silu_and_mul on bf16 ran at 0.63-0.78 of the triad on two cores of Zen 5,
 * and at 1.01-1.21 with this (docs/performance.md). */
#define ACT_AHEAD 2048

/* Prefetches the lines of the @p bytes at p + ACT_AHEAD (bytes is a
 * constant in each kernel body). */
AI void act_prefetch(const void *p, size_t bytes) {
    opreg__cpu_prefetch((const char *)p + ACT_AHEAD, bytes);
}

/* Outputs [i, end) of a gated row: full vectors, then one masked tail;
 * streaming stores, and the inputs prefetched, when nt (out + i is then
 * aligned for them). */
AI void gated_span(int dt, int act, int nt, void *out, const void *in, int64_t d, int64_t i,
                   int64_t end) {
    const int precise = dt == OPREG_DTYPE_F32;
    const size_t step = 2 * VW * opreg__cpu_es(dt);
    /* Two vectors a step: each is one long dependency chain (exp, divide,
     * rounding), and side by side in program order they overlap without
     * relying on the out-of-order window alone. */
    for (; i + 2 * VW <= end; i += 2 * VW) {
        if (nt) {
            act_prefetch(opreg__cpu_at(dt, in, i), step);
            act_prefetch(opreg__cpu_at(dt, in, d + i), step);
        }
        vf x0 = vload(dt, opreg__cpu_at(dt, in, i)), x1 = vload(dt, opreg__cpu_at(dt, in, i + VW));
        vf y0 = vload(dt, opreg__cpu_at(dt, in, d + i));
        vf y1 = vload(dt, opreg__cpu_at(dt, in, d + i + VW));
        vf o0 = vmul(vround_dt(dt, vact(act, precise, x0)), y0);
        vf o1 = vmul(vround_dt(dt, vact(act, precise, x1)), y1);
        vput(dt, nt, opreg__cpu_at_mut(dt, out, i), o0);
        vput(dt, nt, opreg__cpu_at_mut(dt, out, i + VW), o1);
    }
    for (; i + VW <= end; i += VW) {
        vf x = vload(dt, opreg__cpu_at(dt, in, i)), y = vload(dt, opreg__cpu_at(dt, in, d + i));
        vput(dt, nt, opreg__cpu_at_mut(dt, out, i), vmul(vround_dt(dt, vact(act, precise, x)), y));
    }
    if (i < end) {
        vf x = vload_n(dt, opreg__cpu_at(dt, in, i), end - i);
        vf y = vload_n(dt, opreg__cpu_at(dt, in, d + i), end - i);
        vstore_n(dt, opreg__cpu_at_mut(dt, out, i), vmul(vround_dt(dt, vact(act, precise, x)), y),
                 end - i);
    }
}

/* With streaming stores, a row's unaligned head is stored plainly. */
AI void gated_rows(int dt, int act, const struct opreg__act_args *a, int64_t r0, int64_t r1) {
    size_t es = opreg__cpu_es(dt);
    for (int64_t r = r0; r < r1; r++) {
        void *out = opreg__cpu_at_mut(dt, a->out, r * a->out_stride);
        const void *in = opreg__cpu_at(dt, a->in, r * a->in_stride);
        int64_t h = a->nt ? stream_head(out, es, VW * es, a->d) : 0;
        if (h > 0) gated_span(dt, act, 0, out, in, a->d, 0, h);
        if (h < a->d) {
            if (a->nt)
                gated_span(dt, act, 1, out, in, a->d, h, a->d);
            else
                gated_span(dt, act, 0, out, in, a->d, h, a->d);
        }
    }
    if (a->nt) vfence();
}

/* Elements [i, end) of an elementwise op, as gated_span. */
AI void elementwise_span(int dt, int act, int nt, void *out, const void *in, int64_t i,
                         int64_t end) {
    const int precise = dt == OPREG_DTYPE_F32;
    for (; i + VW <= end; i += VW) {
        if (nt) act_prefetch(opreg__cpu_at(dt, in, i), VW * opreg__cpu_es(dt));
        vput(dt, nt, opreg__cpu_at_mut(dt, out, i),
             vact(act, precise, vload(dt, opreg__cpu_at(dt, in, i))));
    }
    if (i < end)
        vstore_n(dt, opreg__cpu_at_mut(dt, out, i),
                 vact(act, precise, vload_n(dt, opreg__cpu_at(dt, in, i), end - i)), end - i);
}

AI void elementwise_chunks(int dt, int act, const struct opreg__act_args *a, int64_t c0,
                           int64_t c1) {
    size_t es = opreg__cpu_es(dt);
    int64_t end = c1 * OPREG__CPU_CHUNK < a->n ? c1 * OPREG__CPU_CHUNK : a->n;
    int64_t i = c0 * OPREG__CPU_CHUNK;
    void *out = opreg__cpu_at_mut(dt, a->out, i);
    int64_t h = i + (a->nt ? stream_head(out, es, VW * es, end - i) : 0);
    if (h > i) elementwise_span(dt, act, 0, a->out, a->in, i, h);
    if (h < end) {
        if (a->nt)
            elementwise_span(dt, act, 1, a->out, a->in, h, end);
        else
            elementwise_span(dt, act, 0, a->out, a->in, h, end);
    }
    if (a->nt) vfence();
}

/* The activation, then the dtype, switched once per call: each case
 * inlines the body with both as constants, so vact()'s switch folds away
 * and every (activation, dtype) pair has its own loop. The gated ops are
 * silu, gelu and gelu_tanh, the elementwise ones the other three; any
 * other kind still computes, through the switch in vact(). */
AI void gated_act(int dt, const struct opreg__act_args *a, int64_t r0, int64_t r1) {
    switch (a->act) {
    case OPREG__ACT_SILU:
        gated_rows(dt, OPREG__ACT_SILU, a, r0, r1);
        break;
    case OPREG__ACT_GELU:
        gated_rows(dt, OPREG__ACT_GELU, a, r0, r1);
        break;
    case OPREG__ACT_GELU_TANH:
        gated_rows(dt, OPREG__ACT_GELU_TANH, a, r0, r1);
        break;
    default:
        gated_rows(dt, a->act, a, r0, r1);
        break;
    }
}

static void gated_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__act_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        gated_act(OPREG_DTYPE_F32, a, r0, r1);
        break;
    case OPREG_DTYPE_BF16:
        gated_act(OPREG_DTYPE_BF16, a, r0, r1);
        break;
    default:
        gated_act(OPREG_DTYPE_F16, a, r0, r1);
        break;
    }
}

AI void elementwise_act(int dt, const struct opreg__act_args *a, int64_t c0, int64_t c1) {
    switch (a->act) {
    case OPREG__ACT_GELU_NEW:
        elementwise_chunks(dt, OPREG__ACT_GELU_NEW, a, c0, c1);
        break;
    case OPREG__ACT_GELU_FAST:
        elementwise_chunks(dt, OPREG__ACT_GELU_FAST, a, c0, c1);
        break;
    case OPREG__ACT_GELU_QUICK:
        elementwise_chunks(dt, OPREG__ACT_GELU_QUICK, a, c0, c1);
        break;
    default:
        elementwise_chunks(dt, a->act, a, c0, c1);
        break;
    }
}

static void elementwise_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__act_args *a = args;
    switch (a->dt) {
    case OPREG_DTYPE_F32:
        elementwise_act(OPREG_DTYPE_F32, a, c0, c1);
        break;
    case OPREG_DTYPE_BF16:
        elementwise_act(OPREG_DTYPE_BF16, a, c0, c1);
        break;
    default:
        elementwise_act(OPREG_DTYPE_F16, a, c0, c1);
        break;
    }
}

#endif
