/* The argument checks that every op's check is built from. Each failure sets
 * a message "<op>: argument '<arg>': <reason>" and returns its status. */
#include "common/dtype_list.h"
#include "ops/ops_internal.h"
#include "opreg/backend.h"

#include <inttypes.h>
#include <stdio.h>

/* By DLPack code and log2(bits / 8); -1 (OPREG__DT_NONE) where opreg has
 * no dtype. Built from common/dtype_list.h at compile time: cell i (code
 * i / 4, log2(bits / 8) i % 4) sums 1 + the dtype of the row that has that
 * code and size, 0 for each other row. */
#define DL_LOG2_BYTES(bits)                                                                        \
    ((bits) == 8 ? 0 : (bits) == 16 ? 1 : (bits) == 32 ? 2 : (bits) == 64 ? 3 : -1)
#define DL_CELL_TERM(i, D, CODE, BITS, NAME, TORCH, ALIAS)                                         \
    +((CODE)*4 + DL_LOG2_BYTES(BITS) == (i) ? OPREG_DTYPE_##D + 1 : 0)
#define DL_CELL(i) (OPREG__DTYPE_LIST(DL_CELL_TERM, i) - 1)
#define DL_ROW(c)                                                                                  \
    { DL_CELL(4 * (c)), DL_CELL(4 * (c) + 1), DL_CELL(4 * (c) + 2), DL_CELL(4 * (c) + 3) }
const int8_t opreg__dtype_table[16][4] = {
    DL_ROW(0), DL_ROW(1), DL_ROW(2),  DL_ROW(3),  DL_ROW(4),  DL_ROW(5),  DL_ROW(6),  DL_ROW(7),
    DL_ROW(8), DL_ROW(9), DL_ROW(10), DL_ROW(11), DL_ROW(12), DL_ROW(13), DL_ROW(14), DL_ROW(15),
};
/* Every dtype has a cell: a code below 16 and 1, 2, 4 or 8 bytes. */
#define DL_CELL_CHECK(arg, D, CODE, BITS, NAME, TORCH, ALIAS)                                      \
    _Static_assert((CODE) < 16 && DL_LOG2_BYTES(BITS) >= 0, "no cell for OPREG_DTYPE_" #D);
OPREG__DTYPE_LIST(DL_CELL_CHECK, 0)

static const char *dtype_name(int dt) {
    const char *n = dt == OPREG__DT_NONE ? NULL : opreg_dtype_name((opreg_dtype)dt);
    return n ? n : "unknown";
}

/* "f16, f32 or bf16" for a dtype set; bits that name no dtype (the "any"
 * set) are left out. */
static void dtype_set_text(uint32_t set, char *buf, size_t cap) {
    size_t len = 0;
    int count = 0, total = 0;
    buf[0] = '\0';
    for (int d = 0; d < 32; d++)
        if (!opreg_dtype_name((opreg_dtype)d)) set &= ~(1u << d);
    for (int d = 0; d < 32; d++)
        if (set & (1u << d)) total++;
    for (int d = 0; d < 32 && len < cap; d++) {
        if (!(set & (1u << d))) continue;
        count++;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s",
                                count == 1 ? "" : (count == total ? " or " : ", "), dtype_name(d));
    }
}

/* The element count, and the span the strides reach, fit in int64_t bytes
 * (16 bytes an element at most), so that no later product overflows: no
 * buffer is that large, so such a tensor cannot be real. */
static opreg_status chk_extent(const char *op, const char *arg, const opreg_tensor *t) {
    int64_t n = 1, span = 0, part;
    for (int d = 0; d < t->ndim; d++)
        if (__builtin_mul_overflow(n, t->shape[d], &n) || n > INT64_MAX / 16)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': its sizes multiply past 2^63 bytes", op, arg);
    if (n == 0 || !t->strides) return OPREG_OK;
    for (int d = 0; d < t->ndim; d++) {
        int64_t s = t->strides[d] < 0 ? -(t->strides[d] + 1) : t->strides[d]; /* |s| - (s < 0) */
        if (__builtin_mul_overflow(t->shape[d] - 1, s, &part) ||
            __builtin_add_overflow(span, part, &span) || span > INT64_MAX / 32)
            return opreg__fail(
                OPREG_ERR_SHAPE,
                "%s: argument '%s': its strides reach past 2^63 bytes (stride %" PRId64
                " in dim %d)",
                op, arg, t->strides[d], d);
    }
    return OPREG_OK;
}

opreg_status opreg__chk_tensor(const char *op, const char *arg, const opreg_tensor *t,
                               uint32_t dtypes, int ndim) {
    int dt;
    if (!t)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s': tensor is NULL", op,
                           arg);
    if (t->ndim < 0 || t->ndim > OPREG__MAX_DIMS || (t->ndim > 0 && !t->shape))
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': invalid rank %d or no shape", op,
                           arg, t->ndim);
    if (ndim >= 0 && t->ndim != ndim)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': expected rank %d, got %d", op, arg,
                           ndim, t->ndim);
    if (ndim == -2 && t->ndim < 1)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': expected rank >= 1, got 0", op,
                           arg);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': negative size %" PRId64 " in dim %d", op, arg,
                               t->shape[d], d);
    OPREG__TRY(chk_extent(op, arg, t));
    dt = opreg__dtype_of(t);
    if (dt == OPREG__DT_NONE || dt >= 32 || !(dtypes & (1u << dt))) {
        char want[256];
        dtype_set_text(dtypes, want, sizeof want);
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': expected dtype %s, got %s", op, arg,
                           want, dtype_name(dt));
    }
    if (!opreg__is_meta(t) && !t->data && opreg__numel(t) > 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s': data is NULL", op, arg);
    return OPREG_OK;
}

opreg_status opreg__chk_size(const char *op, const char *arg, const opreg_tensor *t, int dim,
                             int64_t expect) {
    int d = dim < 0 ? t->ndim + dim : dim;
    if (d < 0 || d >= t->ndim || t->shape[d] != expect)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': expected size %" PRId64 " in dim %d, got %" PRId64,
                           op, arg, expect, d, d >= 0 && d < t->ndim ? t->shape[d] : (int64_t)-1);
    return OPREG_OK;
}

/* Strides are irrelevant where a tensor has no element (as in PyTorch, a
 * size-0 tensor is contiguous whatever its strides), and along a dimension
 * of size 1: the stride checks below skip both. */
opreg_status opreg__chk_contig(const char *op, const char *arg, const opreg_tensor *t) {
    int64_t expect = 1;
    if (!t->strides || opreg__numel(t) == 0) return OPREG_OK;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': must be contiguous (stride %" PRId64
                               " in dim %d, expected %" PRId64 ")",
                               op, arg, t->strides[d], d, expect);
        expect *= t->shape[d];
    }
    return OPREG_OK;
}

/* Leading dims of size 1 have no stride that matters: the rows step along
 * the innermost leading dim of size > 1, and each outer one of size > 1
 * steps over all the rows inside it. */
opreg_status opreg__chk_rows(const char *op, const char *arg, const opreg_tensor *t) {
    int n = t->ndim, inner = -1;
    int64_t below = 1; /* rows inside the dim being checked */
    if (!t->strides || n == 0 || opreg__numel(t) == 0) return OPREG_OK;
    if (t->shape[n - 1] > 1 && t->strides[n - 1] != 1)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': last dim must have stride 1, got %" PRId64, op, arg,
                           t->strides[n - 1]);
    for (int d = n - 2; d >= 0; d--) {
        if (t->shape[d] <= 1) continue;
        if (inner < 0) {
            inner = d;
        } else if (t->strides[d] != t->strides[inner] * below) {
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': leading dims must collapse "
                               "into rows (stride %" PRId64 " in dim %d)",
                               op, arg, t->strides[d], d);
        }
        below *= t->shape[d];
    }
    if (inner >= 0 && t->strides[inner] < t->shape[n - 1])
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': rows overlap (row stride %" PRId64 " < %" PRId64 ")",
                           op, arg, t->strides[inner], t->shape[n - 1]);
    return OPREG_OK;
}

opreg_status opreg__chk_items(const char *op, const char *arg, const opreg_tensor *t,
                              const char *item) {
    int64_t expect = 1;
    if (!t->strides || t->ndim == 0 || opreg__numel(t) == 0) return OPREG_OK;
    for (int d = t->ndim - 1; d >= 1; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': each %s must be contiguous (stride %" PRId64
                               " in dim %d, expected %" PRId64 ")",
                               op, arg, item, t->strides[d], d, expect);
        expect *= t->shape[d];
    }
    if (t->shape[0] > 1 && t->strides[0] < expect)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': %ss overlap (stride %" PRId64
                           " in dim 0, less than a %s's %" PRId64 " elements)",
                           op, arg, item, t->strides[0], item, expect);
    return OPREG_OK;
}

opreg_status opreg__chk_blocks(const char *op, const char *arg, const opreg_tensor *t) {
    return opreg__chk_items(op, arg, t, "block");
}

int64_t opreg__block_numel(const opreg_tensor *t) {
    int64_t n = 1;
    for (int d = 1; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

int64_t opreg__block_stride(const opreg_tensor *t) {
    return t->strides && t->ndim > 0 && t->shape[0] > 1 ? t->strides[0] : opreg__block_numel(t);
}

int64_t opreg__rows(const opreg_tensor *t) {
    int64_t r = 1;
    for (int d = 0; d + 1 < t->ndim; d++)
        r *= t->shape[d];
    return r;
}

int64_t opreg__row_stride(const opreg_tensor *t) {
    if (t->ndim < 2) return t->ndim == 1 ? t->shape[0] : 1;
    for (int d = t->ndim - 2; d >= 0; d--)
        if (t->shape[d] > 1) return opreg__stride(t, d);
    return t->shape[t->ndim - 1]; /* one row */
}

opreg_status opreg__chk_same_dtype(const char *op, const char *arg, const opreg_tensor *t,
                                   const char *ref_arg, const opreg_tensor *ref) {
    int a = opreg__dtype_of(t), b = opreg__dtype_of(ref);
    if (a != b)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': dtype %s differs from '%s' (%s)",
                           op, arg, dtype_name(a), ref_arg, dtype_name(b));
    return OPREG_OK;
}

opreg_status opreg__chk_same_shape(const char *op, const char *arg, const opreg_tensor *t,
                                   const char *ref_arg, const opreg_tensor *ref) {
    int same = t->ndim == ref->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == ref->shape[d];
    if (!same)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': shape differs from '%s'", op, arg,
                           ref_arg);
    return OPREG_OK;
}

opreg_status opreg__chk_same_device(const char *op, const char *arg, const opreg_tensor *t,
                                    const char *ref_arg, const opreg_tensor *ref) {
    if (t->device.device_type != ref->device.device_type ||
        t->device.device_id != ref->device.device_id) {
        char a[64], b[64];
        opreg_device_format(t->device, a, sizeof a);
        opreg_device_format(ref->device, b, sizeof b);
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: argument '%s' is on %s but '%s' is on %s", op, arg, a, ref_arg, b);
    }
    return OPREG_OK;
}

/* Whether tensors of @p device hold a buffer handle in `data` rather than
 * an address (OPREG_BACKEND_DATA_IS_HANDLE, e.g. OpenCL's cl_mem). */
static int data_is_handle(DLDevice device) {
    if (device.device_type == kDLCPU || device.device_type == kDLCUDA) return 0;
    const opreg_backend *b = opreg_key_backend(opreg_key_of_device(device));
    return b && (b->flags & OPREG_BACKEND_DATA_IS_HANDLE);
}

/* [lo, hi) of the bytes a tensor's elements touch; lo == hi when empty. For
 * a handle, the range is within its buffer (from byte_offset). */
static void byte_range(const opreg_tensor *t, int handle, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t base = (handle ? 0 : (uintptr_t)t->data) + (uintptr_t)t->byte_offset;
    int64_t es = (int64_t)opreg__dtype_bytes(opreg__dtype_of(t));
    int64_t neg = 0, pos = 0;
    if (opreg__numel(t) == 0) {
        *lo = *hi = base;
        return;
    }
    if (!t->strides) { /* row-major: numel elements from base */
        *lo = base;
        *hi = base + (uintptr_t)(opreg__numel(t) * es);
        return;
    }
    for (int d = 0; d < t->ndim; d++) {
        int64_t span = (t->shape[d] - 1) * opreg__stride(t, d) * es;
        if (span < 0)
            neg += span;
        else
            pos += span;
    }
    *lo = base - (uintptr_t)(-neg);
    *hi = base + (uintptr_t)(pos + es);
}

/* Whether dims 1.. of @p t are dense (a block of a paged cache). */
static int dense_blocks(const opreg_tensor *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 1; d--) {
        if (t->shape[d] != 1 && opreg__stride(t, d) != expect) return 0;
        expect *= t->shape[d];
    }
    return 1;
}

/* Two caches that interleave their blocks within one buffer, as kv[:, 0]
 * and kv[:, 1] of a [num_blocks, 2, ...] cache: same block stride, dense
 * blocks, and each one's blocks fall in the other's gaps. */
static int interleaved_blocks(const opreg_tensor *a, const opreg_tensor *b, uintptr_t abase,
                              uintptr_t bbase) {
    int64_t es = (int64_t)opreg__dtype_bytes(opreg__dtype_of(a));
    if (a->ndim < 1 || b->ndim < 1 || !dense_blocks(a) || !dense_blocks(b) ||
        (int64_t)opreg__dtype_bytes(opreg__dtype_of(b)) != es)
        return 0;
    int64_t s = opreg__stride(a, 0) * es, ea = opreg__block_numel(a) * es,
            eb = opreg__block_numel(b) * es;
    if (opreg__stride(b, 0) * es != s || s <= 0 || ea > s || eb > s) return 0;
    int64_t d = (int64_t)((bbase - abase) % (uintptr_t)s); /* b's offset in a's period */
    if (bbase < abase) d = (s - (int64_t)((abase - bbase) % (uintptr_t)s)) % s;
    return d >= ea && s - d >= eb;
}

static int overlaps(const opreg_tensor *a, const opreg_tensor *b) {
    uintptr_t alo, ahi, blo, bhi;
    if (opreg__is_meta(a) || opreg__is_meta(b)) return 0;
    if (a->device.device_type != b->device.device_type ||
        a->device.device_id != b->device.device_id)
        return 0;
    int handle = data_is_handle(a->device);
    if (handle && a->data != b->data) return 0; /* different buffers */
    byte_range(a, handle, &alo, &ahi);
    byte_range(b, handle, &blo, &bhi);
    if (!(alo < ahi && blo < bhi && alo < bhi && blo < ahi)) return 0;
    uintptr_t abase = (handle ? 0 : (uintptr_t)a->data) + (uintptr_t)a->byte_offset;
    uintptr_t bbase = (handle ? 0 : (uintptr_t)b->data) + (uintptr_t)b->byte_offset;
    return !interleaved_blocks(a, b, abase, bbase);
}

opreg_status opreg__chk_no_overlap(const char *op, const char *out_arg, const opreg_tensor *out,
                                   const char *in_arg, const opreg_tensor *in) {
    if (overlaps(out, in))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s' overlaps '%s' in memory",
                           op, out_arg, in_arg);
    return OPREG_OK;
}

static int same_view(const opreg_tensor *a, const opreg_tensor *b) {
    if (opreg__ptr(a) != opreg__ptr(b) || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d] ||
            (a->shape[d] > 1 && opreg__stride(a, d) != opreg__stride(b, d)))
            return 0;
    return opreg__dtype_of(a) == opreg__dtype_of(b);
}

opreg_status opreg__chk_no_partial_overlap(const char *op, const char *out_arg,
                                           const opreg_tensor *out, const char *in_arg,
                                           const opreg_tensor *in) {
    if (overlaps(out, in) && !same_view(out, in))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument '%s' partially overlaps '%s' (only an exact alias may "
                           "run in place)",
                           op, out_arg, in_arg);
    return OPREG_OK;
}

opreg_status opreg__chk_cpu(const char *op, const char *arg, const opreg_tensor *t) {
    if (t->device.device_type != kDLCPU) {
        char a[64];
        opreg_device_format(t->device, a, sizeof a);
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "%s: argument '%s' is on %s; this kernel runs on the CPU", op, arg, a);
    }
    return OPREG_OK;
}
