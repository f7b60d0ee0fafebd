/* topk_softmax's row statistics on the vector layer (moe.c does the
 * ranking and the few weights it writes). Included once by each SIMD
 * path's file, after simd_<isa>.h and simd_math.h. */
#ifndef OPREG_CPU_MOE_SIMD_H
#define OPREG_CPU_MOE_SIMD_H

/* For the @p n logits at @p l: the largest (*mx) and the sum of e^(l - mx)
 * (*sum), and true; false, with neither written, when a logit is NaN or
 * infinite, which the caller then takes one by one as ops/ref does (x * 0
 * is 0 for every finite x, NaN for the others). The exponentials are
 * vexp_s's (within a few f32 roundings of expf) and the sum's order is
 * not the scalar loop's; every term is at most 1 and the largest is 1. */
static bool softmax_stats(const float *l, int64_t n, float *mx, float *sum) {
    vf m = vset1(-INFINITY), z = vzero(), s0 = vzero(), s1 = vzero();
    float top = -INFINITY, rest = 0.0f, tz = 0.0f;
    int64_t i = 0, end = n / VW * VW;
    for (; i < end; i += VW) {
        vf v = vload(OPREG_DTYPE_F32, l + i);
        m = vmax(m, v);
        z = vadd(z, vmul(v, vzero()));
    }
    for (; i < n; i++) {
        top = l[i] > top ? l[i] : top;
        tz += l[i] * 0.0f;
    }
    float lanes = end ? vhmax(m) : -INFINITY;
    top = lanes > top ? lanes : top;
    if (vhsum(z) + tz != 0.0f) return false;
    vf vt = vset1(top);
    for (i = 0; i + 2 * VW <= end; i += 2 * VW) {
        s0 = vadd(s0, vexp_s(vsub(vload(OPREG_DTYPE_F32, l + i), vt), 1.0f, 1));
        s1 = vadd(s1, vexp_s(vsub(vload(OPREG_DTYPE_F32, l + i + VW), vt), 1.0f, 1));
    }
    if (i < end) s0 = vadd(s0, vexp_s(vsub(vload(OPREG_DTYPE_F32, l + i), vt), 1.0f, 1));
    for (i = end; i < n; i++)
        rest += expf(l[i] - top);
    *mx = top;
    *sum = vhsum(vadd(s0, s1)) + rest;
    return true;
}

#endif
