/* exp, the normal CDF and the activations on the vector layer (vf, VW) of whichever
 * simd_*.h was included first. f32 accuracy is a few ulp: the activations
 * round to T afterwards, and f32 tests allow ~1e-5 relative.
 *
 * The tanh-based gelus use 0.5x(1 + tanh(u)) = x * sigmoid(2u) = x / (1 +
 * e^-2u), which equals them exactly in real arithmetic and, unlike 1 + tanh,
 * does not cancel for negative x. */
#ifndef OPREG_CPU_SIMD_MATH_H
#define OPREG_CPU_SIMD_MATH_H

/* Kernel bodies are always_inline helpers called with constant dtypes, so
 * each dtype gets its own loop with the conversions inlined. */
#define AI VI __attribute__((always_inline))

/* Expands a body over the three dtypes with constant arguments. */
#define PER_DTYPE(dt, CALL)                                                                        \
    do {                                                                                           \
        if ((dt) == OPREG_DTYPE_F32) {                                                             \
            const int dt_ = OPREG_DTYPE_F32;                                                       \
            CALL;                                                                                  \
        } else if ((dt) == OPREG_DTYPE_BF16) {                                                     \
            const int dt_ = OPREG_DTYPE_BF16;                                                      \
            CALL;                                                                                  \
        } else {                                                                                   \
            const int dt_ = OPREG_DTYPE_F16;                                                       \
            CALL;                                                                                  \
        }                                                                                          \
    } while (0)

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

/* Cephes expf: e^x = 2^n * e^r, |r| <= ln2/2, degree-6 polynomial for e^r.
 * The clamp keeps 2^n a normal float (n in [-126, 127]); outside it the
 * result saturates near 0 or 3.4e38, which every caller tolerates. */
VI vf vexp(vf x) {
    vf n, r, p;
    x = vmin(vmax(x, vset1(-87.0f)), vset1(88.0f));
    n = vrint(vmul(x, vset1(1.44269504088896341f)));
    r = vfma(n, vset1(-0.693359375f), x);
    r = vfma(n, vset1(2.12194440e-4f), r);
    p = vset1(1.9875691500e-4f);
    p = vfma(p, r, vset1(1.3981999507e-3f));
    p = vfma(p, r, vset1(8.3334519073e-3f));
    p = vfma(p, r, vset1(4.1665795894e-2f));
    p = vfma(p, r, vset1(1.6666665459e-1f));
    p = vfma(p, r, vset1(5.0000001201e-1f));
    p = vfma(p, vmul(r, r), vadd(r, vset1(1.0f)));
    return vmul(p, vpow2i(n));
}

/* x / (1 + e^(-a)) */
VI vf vx_sigmoid(vf x, vf a) {
    return vdiv(x, vadd(vset1(1.0f), vexp(vsub(vzero(), a))));
}

/* The normal CDF Phi(x) = 0.5 erfc(-x/sqrt2), with erfc from Numerical
 * Recipes' erfcc (relative error < 1.2e-7 for z >= 0): for x < 0 it is
 * 0.5 erfc(|z|) directly, so gelu keeps its relative accuracy in the left
 * tail where 1 + erf(z) would cancel; for x >= 0, 1 - 0.5 erfc(z). */
VI vf vphi(vf x) {
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
    h = vmul(vmul(vset1(0.5f), t), vexp(vsub(p, vmul(z, z)))); /* 0.5 erfc(|z|) */
    return vblend_neg(x, h, vsub(vset1(1.0f), h));
}

AI vf vact(int act, vf x) {
    switch (act) {
    case OPREG__ACT_SILU:
        return vx_sigmoid(x, x);
    case OPREG__ACT_GELU:
        return vmul(x, vphi(x));
    case OPREG__ACT_GELU_TANH: {
        /* 2 * sqrt(2/pi) * (x + 0.044715 x^3) */
        vf x3 = vmul(vmul(x, x), x);
        return vx_sigmoid(x, vmul(vset1(1.5957691216057308f), vfma(vset1(0.044715f), x3, x)));
    }
    case OPREG__ACT_GELU_NEW: {
        vf x3 = vmul(vmul(x, x), x);
        return vx_sigmoid(x, vmul(vset1(2.0f * 0.79788456f), vfma(vset1(0.044715f), x3, x)));
    }
    case OPREG__ACT_GELU_FAST: {
        vf inner = vfma(vmul(vset1(0.044715f), x), x, vset1(1.0f));
        return vx_sigmoid(x, vmul(vmul(vset1(2.0f * 0.79788456f), x), inner));
    }
    default:
        return vx_sigmoid(x, vmul(vset1(1.702f), x));
    }
}

#endif
