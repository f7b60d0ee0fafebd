/* Helpers of the CPU kernel tests: dtype loads and stores through double,
 * seeded random data, per-dtype tolerances, and the loop over every ISA path
 * this CPU can run (each kernel entry takes the path to run). */
#ifndef OPREG_TEST_KERN_TEST_H
#define OPREG_TEST_KERN_TEST_H

#include "backends/cpu/kernels/cpu_kernels.h"
#include "opreg/tensor.h"
#include "common/dtype_access.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>

static const int kt_float_dtypes[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };

/* Every path up to the detected one; a failure names the path. */
#define KT_FOR_EACH_ISA(isa) for (int isa = 0; isa <= opreg__cpu_isa_detected(); isa++)

static inline const char *kt_dt_name(int dt) {
    return dt == OPREG_DTYPE_F32 ? "f32" : dt == OPREG_DTYPE_F16 ? "f16" : "bf16";
}

static inline size_t kt_es(int dt) {
    return dt == OPREG_DTYPE_F32 ? 4 : 2;
}

/* Loads, stores and roundings are common/dtype_access.h's, in the
 * argument order these tests read best (dtype first). */
static inline double kt_ld(int dt, const void *p, int64_t i) {
    return opreg__ld(p, dt, i);
}

/* Stores handle only the three dtypes of these tests' buffers (kt_es's
 * sizes), rounded as opreg__st rounds: with opreg__st inlined, GCC -O3
 * follows its eight-byte branches into these buffers and warns. */
static inline void kt_st(int dt, void *p, int64_t i, double v) {
    if (dt == OPREG_DTYPE_F32) {
        ((float *)p)[i] = (float)v;
    } else {
        float f = opreg__f64_to_f32_odd(v);
        ((uint16_t *)p)[i] = dt == OPREG_DTYPE_BF16 ? opreg__f32_to_bf16(f) : opreg__f32_to_f16(f);
    }
}

static inline double kt_round(int dt, double v) {
    return opreg__round_to(dt, v);
}

static uint64_t kt_rng_state = 0x9E3779B97F4A7C15ull;

static inline double kt_uniform(double lo, double hi) {
    kt_rng_state ^= kt_rng_state << 13;
    kt_rng_state ^= kt_rng_state >> 7;
    kt_rng_state ^= kt_rng_state << 17;
    return lo + (hi - lo) * (double)(kt_rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static inline void *kt_fill(int dt, int64_t n, double lo, double hi) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * kt_es(dt));
    for (int64_t i = 0; i < n; i++)
        kt_st(dt, p, i, kt_uniform(lo, hi));
    return p;
}

static inline void *kt_copy(int dt, const void *src, int64_t n) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * kt_es(dt));
    memcpy(p, src, (size_t)n * kt_es(dt));
    return p;
}

/* Relative tolerance: two units in the last place of T for the narrow
 * types (the kernels round an f32 result whose last bits may differ from
 * the double reference's, and some ops round twice), and ~100 f32 ulp for
 * f32 (summation order, polynomial exp/erf). */
static inline double kt_rtol(int dt) {
    return dt == OPREG_DTYPE_F32 ? 1e-5 : dt == OPREG_DTYPE_F16 ? 1.0 / 512 : 1.0 / 64;
}

/* Compare n results with a double reference: |got - want| <= rtol * (|want|
 * + scale). @p scale is the magnitude an absolute error is measured
 * against (e.g. the operands of a cancelling sum). Prints the first miss. */
static inline bool kt_check_close(const char *what, int isa, int dt, const void *got,
                                  const double *want, int64_t n, double scale) {
    double rtol = kt_rtol(dt);
    for (int64_t i = 0; i < n; i++) {
        double g = kt_ld(dt, got, i), w = want[i];
        if (isnan(w) ? !isnan(g) : !(fabs(g - w) <= rtol * (fabs(w) + scale))) {
            fprintf(stderr, "%s [%s, %s] element %" PRId64 " of %" PRId64 ": got %.9g want %.9g\n",
                    what, opreg__cpu_isa_name(isa), kt_dt_name(dt), i, n, g, w);
            return false;
        }
    }
    return true;
}

static inline bool kt_check_bytes(const char *what, int isa, const void *got, const void *want,
                                  size_t n) {
    const unsigned char *g = got, *w = want;
    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i]) {
            fprintf(stderr, "%s [%s] byte %zu of %zu: got 0x%02x want 0x%02x\n", what,
                    opreg__cpu_isa_name(isa), i, n, g[i], w[i]);
            return false;
        }
    return true;
}

/* Print which paths run here and which this CPU cannot check. */
static inline void kt_report_isas(const char *file) {
    int d = opreg__cpu_isa_detected();
    for (int isa = 0; isa <= OPREG__ISA_AVX512_BF16; isa++)
        printf("%s: path %-11s %s\n", file, opreg__cpu_isa_name(isa),
               isa <= d ? "tested" : "NOT CHECKABLE on this CPU");
}

/* Shapes: odd widths (vector tails), 1 row, long rows, and enough bytes to
 * be spread over threads. */
struct kt_shape {
    int64_t rows, width;
};
static const struct kt_shape kt_shapes[] = {
    { 1, 1 },    { 1, 7 },    { 3, 8 },     { 2, 13 },    { 4, 16 }, { 2, 31 }, { 5, 100 },
    { 1, 8192 }, { 3, 4099 }, { 96, 4096 }, { 700, 257 }, { 2, 33 }, { 1, 17 },
};
#define KT_NSHAPES (sizeof kt_shapes / sizeof kt_shapes[0])

#endif
