/* exp, the normal CDF and the activations on the vector layer (vf, VW) of whichever
 * simd_*.h was included first. f32 accuracy is a few ulp: the activations
 * round to T afterwards, and f32 tests allow ~1e-5 relative.
 *
 * The tanh-based gelus use 0.5x(1 + tanh(u)) = x * sigmoid(2u) = x / (1 +
 * e^-2u), which equals them exactly in real arithmetic and, unlike 1 + tanh,
 * does not cancel for negative x. */
#ifndef OPREG_CPU_SIMD_MATH_H
#define OPREG_CPU_SIMD_MATH_H

/* Kernel bodies are always_inline helpers; each *_simd.h ends in range
 * functions that switch the dtype once and call them with it as a
 * constant, so each dtype gets its own loop with the conversions inlined. */
#define AI VI __attribute__((always_inline))

/* How many leading elements of a span at p (n elements of es bytes) to
 * store plainly so that the rest starts aligned to @p align bytes for
 * streaming stores; n when p is not even element-aligned. */
VI int64_t stream_head(const void *p, size_t es, size_t align, int64_t n) {
    size_t mis = (size_t)((uintptr_t)p & (align - 1));
    if (mis == 0) return 0;
    if (mis % es) return n;
    int64_t h = (int64_t)((align - mis) / es);
    return h < n ? h : n;
}

/* A full vector to p: a streaming store when nt (p aligned for it), else a
 * plain one. */
VI void vput(int dt, int nt, void *p, vf v) {
    if (nt)
        vstream(dt, p, v);
    else
        vstore(dt, p, v);
}

/* log2(e) as the float nearest it and the rest. */
#define OPREG__LOG2E_HI 1.44269502162933349609375f
#define OPREG__LOG2E_LO 1.925963033500011e-8f

/* 2^f for f in [0, 1] (and a hair beyond), fits evaluated in f32: degree 6
 * with relative error below 1e-7 when precise, else degree 5, below 2e-7. */
VI vf vpow2_unit(vf f, int precise) {
    vf p;
    if (precise) {
        p = vset1(2.1745804406236857e-4f);
        p = vfma(p, f, vset1(1.2423592852428555e-3f));
        p = vfma(p, f, vset1(9.681044146418571e-3f));
        p = vfma(p, f, vset1(5.548194423317909e-2f));
        p = vfma(p, f, vset1(2.402302473783493e-1f));
        p = vfma(p, f, vset1(6.931469440460205e-1f));
        return vfma(p, f, vset1(1.0f));
    }
    p = vset1(1.8825543811544776e-3f);
    p = vfma(p, f, vset1(8.973401039838791e-3f));
    p = vfma(p, f, vset1(5.584392324090004e-2f));
    p = vfma(p, f, vset1(2.401455193758011e-1f));
    p = vfma(p, f, vset1(6.93154513835907e-1f));
    return vfma(p, f, vset1(9.999998807907104e-1f));
}

#ifdef OPREG__SIMD_SCALEF
/* e^(s x), s = +1 or -1, as 2^t with t = s x log2(e): 2^(t - floor t) by
 * the polynomial, scaled by 2^floor(t), which also gives 0 and inf (and NaN
 * stays NaN) outside the float range. When precise (f32 results), t's
 * rounding error, up to 4e-6 relative to e^x at |x| = 87, is carried in a
 * second float; narrow dtypes, which keep 8 or 11 bits, skip that and take
 * the shorter polynomial. */
VI vf vexp_s(vf x, float s, int precise) {
    if (!precise) {
        vf t = vmul(x, vset1(s * OPREG__LOG2E_HI));
        return vscale2(vpow2_unit(vfrac_floor(t), 0), t);
    }
    /* e^104 and e^-104 are already inf and 0 in float; the clamp keeps the
     * error term finite. */
    x = vmin(vmax(x, vset1(-104.0f)), vset1(104.0f));
    vf t = vmul(x, vset1(s * OPREG__LOG2E_HI));
    vf lo = vfma(x, vset1(s * OPREG__LOG2E_HI), vsub(vzero(), t)); /* exact: x * hi - t */
    lo = vfma(x, vset1(s * OPREG__LOG2E_LO), lo);
    return vscale2(vpow2_unit(vadd(vfrac_floor(t), lo), 1), t);
}
#else
/* Cephes expf: e^x = 2^n * e^r, |r| <= ln2/2, degree-6 polynomial for e^r.
 * The clamp keeps 2^n a normal float (n in [-126, 127]); below it the
 * result stays near 1e-38, which every caller tolerates, and above 88.72,
 * where float overflows, it is inf, as libm's: x * sigmoid(x) of -inf is
 * then NaN, as the reference's and the AVX-512 path's. */
VI vf vexp(vf x0) {
    vf n, r, p, x = vmin(vmax(x0, vset1(-87.0f)), vset1(88.0f));
    n = vrint(vmul(x, vset1(OPREG__LOG2E_HI)));
    r = vfma(n, vset1(-0.693359375f), x);
    r = vfma(n, vset1(2.12194440e-4f), r);
    p = vset1(1.9875691500e-4f);
    p = vfma(p, r, vset1(1.3981999507e-3f));
    p = vfma(p, r, vset1(8.3334519073e-3f));
    p = vfma(p, r, vset1(4.1665795894e-2f));
    p = vfma(p, r, vset1(1.6666665459e-1f));
    p = vfma(p, r, vset1(5.0000001201e-1f));
    p = vfma(p, vmul(r, r), vadd(r, vset1(1.0f)));
    return vblend_neg(vsub(vset1(88.72283935546875f), x0), vset1(INFINITY), vmul(p, vpow2i(n)));
}

/* e^(s x), s = +1 or -1. f32 results take vexp; narrow ones 2^t, t = s x
 * log2(e) clamped to [-126, 128]: 2^floor(t) built in the exponent field
 * (128 gives inf), 2^(t - floor t) by the shorter fit. */
VI vf vexp_s(vf x, float s, int precise) {
    if (precise) return vexp(s < 0 ? vsub(vzero(), x) : x);
    vf t = vmin(vmax(vmul(x, vset1(s * OPREG__LOG2E_HI)), vset1(-126.0f)), vset1(128.0f));
    vf n = vfloor(t);
    return vmul(vpow2_unit(vsub(t, n), 0), vpow2i(n));
}
#endif

/* x / (1 + e^(-a)) */
VI vf vx_sigmoid(vf x, vf a, int precise) {
    return vdiv(x, vadd(vset1(1.0f), vexp_s(a, -1.0f, precise)));
}

/* The normal CDF Phi(x) = 0.5 erfc(-x/sqrt2), with erfc from Numerical
 * Recipes' erfcc (relative error < 1.2e-7 for z >= 0): for x < 0 it is
 * 0.5 erfc(|z|) directly, so gelu keeps its relative accuracy in the left
 * tail where 1 + erf(z) would cancel; for x >= 0, 1 - 0.5 erfc(z). */
VI vf vphi(vf x, int precise) {
    vf z = vmul(vabs(x), vset1(0.70710678118654752f));
    vf t = vdiv(vset1(1.0f), vfma(vset1(0.5f), z, vset1(1.0f)));
    vf p = vset1(0.17087277f), h;
    p = vfma(p, t, vset1(-0.82215223f));
    p = vfma(p, t, vset1(1.48851587f));
    p = vfma(p, t, vset1(-1.13520398f));
    p = vfma(p, t, vset1(0.27886807f));
    p = vfma(p, t, vset1(-0.18628806f));
    p = vfma(p, t, vset1(0.09678418f));
    p = vfma(p, t, vset1(0.37409196f));
    p = vfma(p, t, vset1(1.00002368f));
    p = vfma(p, t, vset1(-1.26551223f));
    h = vmul(vmul(vset1(0.5f), t), vexp_s(vsub(p, vmul(z, z)), 1.0f, precise)); /* 0.5 erfc(|z|) */
    return vblend_neg(x, h, vsub(vset1(1.0f), h));
}

/* act(x); precise for f32 results (see vexp_s). */
AI vf vact(int act, int precise, vf x) {
    switch (act) {
    case OPREG__ACT_SILU:
        return vx_sigmoid(x, x, precise);
    case OPREG__ACT_GELU:
        return vmul(x, vphi(x, precise));
    case OPREG__ACT_GELU_TANH: {
        /* 2 * sqrt(2/pi) * (x + 0.044715 x^3) */
        vf x3 = vmul(vmul(x, x), x);
        return vx_sigmoid(x, vmul(vset1(1.5957691216057308f), vfma(vset1(0.044715f), x3, x)),
                          precise);
    }
    case OPREG__ACT_GELU_NEW: {
        vf x3 = vmul(vmul(x, x), x);
        return vx_sigmoid(x, vmul(vset1(2.0f * 0.79788456f), vfma(vset1(0.044715f), x3, x)),
                          precise);
    }
    case OPREG__ACT_GELU_FAST: {
        vf inner = vfma(vmul(vset1(0.044715f), x), x, vset1(1.0f));
        return vx_sigmoid(x, vmul(vmul(vset1(2.0f * 0.79788456f), x), inner), precise);
    }
    default:
        return vx_sigmoid(x, vmul(vset1(1.702f), x), precise);
    }
}

#endif
