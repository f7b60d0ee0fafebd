/* Helpers for the op tests: CPU tensors from a pool, fills, snapshots of
 * every buffer, and the bad-input matrix: mutate one argument of a valid
 * call, then check the status, the message and that no byte changed. */
#ifndef OPREG_TESTS_OPS_TEST_H
#define OPREG_TESTS_OPS_TEST_H

#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"
#include "test.h"

#include <math.h>

#define TT_MAX 32

typedef struct tt_slot {
    DLTensor t;
    int64_t shape[OPREG__MAX_DIMS];
    int64_t strides[OPREG__MAX_DIMS];
    void *buf;
    size_t bytes;
    void *snap;
} tt_slot;

static tt_slot tt_pool[TT_MAX];
static int tt_count;

static inline DLDataType tt_dl(opreg_dtype dt) {
    return opreg_dtype_to_dlpack(dt);
}

/* A zeroed contiguous CPU tensor with @p extra spare bytes after its data. */
static inline DLTensor *tt_new_extra(opreg_dtype dt, int ndim, const int64_t *shape, size_t extra) {
    tt_slot *s = &tt_pool[tt_count++];
    int64_t n = 1;
    memset(s, 0, sizeof *s);
    for (int d = 0; d < ndim; d++) {
        s->shape[d] = shape[d];
        n *= shape[d];
    }
    s->bytes = (size_t)n * opreg_dtype_size(dt) + extra;
    s->buf = calloc(1, s->bytes + 1);
    s->t.data = s->buf;
    s->t.device.device_type = kDLCPU;
    s->t.ndim = ndim;
    s->t.dtype = tt_dl(dt);
    s->t.shape = s->shape;
    s->t.strides = NULL;
    return &s->t;
}

static inline DLTensor *tt_new(opreg_dtype dt, int ndim, const int64_t *shape) {
    return tt_new_extra(dt, ndim, shape, 0);
}

#define TT(dt, ...)                                                                                \
    tt_new(OPREG_DTYPE_##dt, (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)),          \
           (int64_t[]){ __VA_ARGS__ })

static inline tt_slot *tt_slot_of(const DLTensor *t) {
    return (tt_slot *)(uintptr_t)t;
}

/* Give @p t explicit strides (elements). */
static inline void tt_set_strides(DLTensor *t, const int64_t *strides) {
    tt_slot *s = tt_slot_of(t);
    for (int d = 0; d < t->ndim; d++)
        s->strides[d] = strides[d];
    t->strides = s->strides;
}

static inline void tt_free_all(void) {
    for (int i = 0; i < tt_count; i++) {
        free(tt_pool[i].buf);
        free(tt_pool[i].snap);
    }
    tt_count = 0;
}

static inline int tt_dt(const DLTensor *t) {
    return opreg__dtype_of(t);
}
static inline double tt_get(const DLTensor *t, int64_t i) {
    return opreg__ld(opreg__ptr(t), tt_dt(t), i);
}
/* Store @p v (rounded for float dtypes, truncated for ints). */
static inline void tt_set(DLTensor *t, int64_t i, double v) {
    void *p = opreg__ptr(t);
    switch (tt_dt(t)) {
    case OPREG_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case OPREG_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case OPREG_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case OPREG_DTYPE_I64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    default:
        opreg__st(p, tt_dt(t), i, v);
    }
}

static uint64_t tt_rng = 88172645463325252ull;
static inline double tt_rand(double lo, double hi) {
    tt_rng ^= tt_rng << 13;
    tt_rng ^= tt_rng >> 7;
    tt_rng ^= tt_rng << 17;
    return lo + (hi - lo) * (double)(tt_rng >> 11) * 0x1p-53;
}

/* Fill the whole buffer (numel elements from the start) with uniform values. */
static inline void tt_fill(DLTensor *t, double lo, double hi) {
    tt_slot *s = tt_slot_of(t);
    int64_t n = (int64_t)(s->bytes / opreg_dtype_size((opreg_dtype)tt_dt(t)));
    for (int64_t i = 0; i < n; i++)
        tt_set(t, i, tt_rand(lo, hi));
}

static inline void tt_snapshot(void) {
    for (int i = 0; i < tt_count; i++) {
        free(tt_pool[i].snap);
        tt_pool[i].snap = malloc(tt_pool[i].bytes + 1);
        memcpy(tt_pool[i].snap, tt_pool[i].buf, tt_pool[i].bytes);
    }
}

/* Index of the first buffer that changed since tt_snapshot(), or -1. */
static inline int tt_changed(void) {
    for (int i = 0; i < tt_count; i++)
        if (memcmp(tt_pool[i].snap, tt_pool[i].buf, tt_pool[i].bytes) != 0) return i;
    return -1;
}

/* Relative/absolute closeness for dtype tolerances. */
static inline int tt_close(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ulp-ish tolerance of a float dtype, for comparing two roundings. */
static inline double tt_rtol(int dt) {
    return dt == OPREG_DTYPE_F32 ? 1e-5 : dt == OPREG_DTYPE_F16 ? 2e-3 : 1.6e-2;
}

/* Bad-input matrix: after SETUP() and a mutation, CALL must refuse with
 * status ST and a message naming NEEDLE, writing nothing. Counts cases. */
static int bad_cases;
#define EXPECT_REFUSED(st, needle, call)                                                           \
    do {                                                                                           \
        opreg_status st_;                                                                          \
        int ch_;                                                                                   \
        tt_snapshot();                                                                             \
        st_ = (call);                                                                              \
        ch_ = tt_changed();                                                                        \
        bad_cases++;                                                                               \
        if (st_ != (st)) {                                                                         \
            TEST_FAIL_AT("case '%s': status %s, want %s (%s)", needle, opreg_status_name(st_),     \
                         opreg_status_name(st), opreg_last_error());                               \
            return;                                                                                \
        }                                                                                          \
        CHECK_CONTAINS(opreg_last_error(), needle);                                                \
        if (ch_ >= 0) {                                                                            \
            TEST_FAIL_AT("case '%s': buffer %d written by a refused call", needle, ch_);           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* A Meta twin: same shape/dtype, no data; for checking that checks accept Meta. */
static inline void tt_to_meta(DLTensor *t) {
    t->device.device_type = OPREG_DEVICE_META;
    t->data = NULL;
}

#define DT(x) tt_dl(OPREG_DTYPE_##x)

#endif
