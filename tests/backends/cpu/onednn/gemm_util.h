/* Helpers of the GEMM tests: CPU tensors that own their shape and data,
 * a deterministic random source and the exact bf16 conversions of common/dtype_convert.h. */
#ifndef OPREG_TESTS_GEMM_UTIL_H
#define OPREG_TESTS_GEMM_UTIL_H

#include "common/dtype_convert.h"
#include "opreg/tensor.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A tensor with its shape and strides inside: keep it in place (t points
 * into itself), initialise with tt_init and release with tt_free. */
typedef struct tt {
    opreg_tensor t;
    int64_t shape[4];
    int64_t strides[4];
    void *buf;
    size_t bytes;
} tt;

static inline void tt_init(tt *x, opreg_dtype dt, int ndim, const int64_t *shape) {
    size_t n = 1;
    memset(x, 0, sizeof *x);
    for (int d = 0; d < ndim; d++) {
        x->shape[d] = shape[d];
        n *= (size_t)shape[d];
    }
    x->bytes = n * opreg_dtype_size(dt);
    x->buf = calloc(1, x->bytes ? x->bytes : 1);
    x->t.data = x->buf;
    x->t.device = (DLDevice){ kDLCPU, 0 };
    x->t.ndim = ndim;
    x->t.dtype = opreg_dtype_to_dlpack(dt);
    x->t.shape = x->shape;
    x->t.strides = NULL;
}

static inline void tt_2d(tt *x, opreg_dtype dt, int64_t rows, int64_t cols) {
    int64_t shape[2] = { rows, cols };
    tt_init(x, dt, 2, shape);
}

static inline void tt_1d(tt *x, opreg_dtype dt, int64_t n) {
    tt_init(x, dt, 1, &n);
}

static inline void tt_free(tt *x) {
    free(x->buf);
    x->buf = NULL;
}

static _Thread_local uint64_t gemm_rng_state = 0x9E3779B97F4A7C15ull;

static inline uint32_t rnd_u32(void) {
    gemm_rng_state ^= gemm_rng_state << 13;
    gemm_rng_state ^= gemm_rng_state >> 7;
    gemm_rng_state ^= gemm_rng_state << 17;
    return (uint32_t)(gemm_rng_state >> 16);
}

/* Uniform in [-1, 1). */
static inline float rnd_f(void) {
    return (float)(rnd_u32() % 2000001u) / 1000000.0f - 1.0f;
}

/* Element i of a f32 or bf16 tensor, as a double. */
static inline double tt_get(const tt *x, size_t i) {
    if (x->t.dtype.code == kDLBfloat) return opreg__bf16_to_f32(((const uint16_t *)x->buf)[i]);
    return ((const float *)x->buf)[i];
}

/* Fill a f32 or bf16 tensor with random values in [-scale, scale). */
static inline void tt_fill(tt *x, float scale) {
    size_t n = x->bytes / (x->t.dtype.bits / 8u);
    for (size_t i = 0; i < n; i++) {
        float v = rnd_f() * scale;
        if (x->t.dtype.code == kDLBfloat)
            ((uint16_t *)x->buf)[i] = opreg__f32_to_bf16(v);
        else
            ((float *)x->buf)[i] = v;
    }
}

#endif
