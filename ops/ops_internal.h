/* Helpers shared by the op checks and the reference kernels: dtypes of
 * DLTensors (element loads and stores are common/dtype_access.h), and the
 * argument checks that every op's opreg__check_<op>() is built from. Not installed. */
#ifndef OPREG_OPS_INTERNAL_H
#define OPREG_OPS_INTERNAL_H

#include "common/dtype_list.h"
#include "common/internal.h"
#include "opreg/tensor.h"
#include "common/dtype_access.h"

#include <math.h>

/* Sentinel for a DLDataType that opreg has no dtype for. */
#define OPREG__DT_NONE (-1)

/* A set of dtypes, for checks: OPREG__DTS(F32) | OPREG__DTS(BF16). */
#define OPREG__DTS(d)    (1u << OPREG_DTYPE_##d)
#define OPREG__DTS_FLOAT (OPREG__DTS(F32) | OPREG__DTS(F16) | OPREG__DTS(BF16))
#define OPREG__DTS_ANY   0xFFFFFFFFu
#define OPREG__MAX_DIMS  16

extern const int8_t opreg__dtype_table[16][4];

/* The opreg dtype of a tensor, or OPREG__DT_NONE. Inline, as every check
 * asks it several times per call. */
static inline int opreg__dtype_of(const opreg_tensor *t) {
    DLDataType d = t->dtype;
    int b = d.bits == 8 ? 0 : d.bits == 16 ? 1 : d.bits == 32 ? 2 : d.bits == 64 ? 3 : -1;
    if (d.lanes != 1 || d.code >= 16 || b < 0) return OPREG__DT_NONE;
    return opreg__dtype_table[d.code][b];
}

/* Element size in bytes of an opreg dtype (0 when unknown). */
static inline size_t opreg__dtype_bytes(int dt) {
    switch (dt) {
#define OPREG__DTYPE_BYTES_CASE(arg, dtype, code, bits, name, torch, alias)                        \
    case OPREG_DTYPE_##dtype:                                                                      \
        return (bits) / 8;
        OPREG__DTYPE_LIST(OPREG__DTYPE_BYTES_CASE, 0)
#undef OPREG__DTYPE_BYTES_CASE
    default:
        return 0;
    }
}

/* Stride of dimension @p dim in elements (strides NULL = row-major). */
static inline int64_t opreg__stride(const opreg_tensor *t, int dim) {
    int64_t s = 1;
    if (t->strides) return t->strides[dim];
    for (int d = t->ndim - 1; d > dim; d--)
        s *= t->shape[d];
    return s;
}

/* numel over all dims; 1 for a 0-d tensor. */
static inline int64_t opreg__numel(const opreg_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* First element's address; NULL for a tensor without data (Meta, or
 * empty), where adding even a zero offset would be undefined. */
static inline void *opreg__ptr(const opreg_tensor *t) {
    return t->data ? (char *)t->data + t->byte_offset : NULL;
}

static inline int opreg__is_meta(const opreg_tensor *t) {
    return t->device.device_type == OPREG_DEVICE_META;
}

/* Index elements (int32 or int64) as int64. */
static inline int64_t opreg__ld_index(const void *p, int dt, int64_t i) {
    return dt == OPREG_DTYPE_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* ---- argument checks; each names op and argument in the message ----------- */

/* The tensor exists, has rank @p ndim (-1: any, -2: at least 1), sizes >= 0,
 * a dtype in @p dtypes and, unless Meta or empty, data. */
opreg_status opreg__chk_tensor(const char *op, const char *arg, const opreg_tensor *t,
                               uint32_t dtypes, int ndim);
opreg_status opreg__chk_size(const char *op, const char *arg, const opreg_tensor *t, int dim,
                             int64_t expect);
opreg_status opreg__chk_contig(const char *op, const char *arg, const opreg_tensor *t);
/* The last dim has stride 1 and the leading dims collapse into one dim of
 * rows with stride opreg__stride(t, ndim - 2). */
opreg_status opreg__chk_rows(const char *op, const char *arg, const opreg_tensor *t);
/* A paged cache [num_blocks, ...]: each block is dense (dims 1.. are
 * contiguous), and the blocks lie opreg__block_stride(t) elements apart, at
 * least a block's size, so that views such as kv[:, 0] of a combined
 * [num_blocks, 2, ...] cache are accepted. */
opreg_status opreg__chk_blocks(const char *op, const char *arg, const opreg_tensor *t);
/* The same for any [items, ...] tensor, naming the @p item ("sequence"). */
opreg_status opreg__chk_items(const char *op, const char *arg, const opreg_tensor *t,
                              const char *item);
opreg_status opreg__chk_same_dtype(const char *op, const char *arg, const opreg_tensor *t,
                                   const char *ref_arg, const opreg_tensor *ref);
opreg_status opreg__chk_same_shape(const char *op, const char *arg, const opreg_tensor *t,
                                   const char *ref_arg, const opreg_tensor *ref);
opreg_status opreg__chk_same_device(const char *op, const char *arg, const opreg_tensor *t,
                                    const char *ref_arg, const opreg_tensor *ref);
/* Refuse when the bytes of @p out and @p in overlap (never for Meta). */
opreg_status opreg__chk_no_overlap(const char *op, const char *out_arg, const opreg_tensor *out,
                                   const char *in_arg, const opreg_tensor *in);
/* Like opreg__chk_no_overlap, but an exact alias (same data, offset, shape,
 * strides) is allowed, for ops that may run in place. */
opreg_status opreg__chk_no_partial_overlap(const char *op, const char *out_arg,
                                           const opreg_tensor *out, const char *in_arg,
                                           const opreg_tensor *in);
/* Reference kernels read and write host memory: CPU tensors only. */
opreg_status opreg__chk_cpu(const char *op, const char *arg, const opreg_tensor *t);

/* Rows of a tensor checked by opreg__chk_rows: count and row stride. */
int64_t opreg__rows(const opreg_tensor *t);
int64_t opreg__row_stride(const opreg_tensor *t);

/* A tensor checked by opreg__chk_rows as the backends' kernels walk it: n
 * rows of width elements (the last dim; 1 for a 0-d tensor), stride
 * elements apart. */
typedef struct opreg__row_layout {
    int64_t n, width, stride;
} opreg__row_layout;

static inline opreg__row_layout opreg__rows_of(const opreg_tensor *t) {
    opreg__row_layout r;
    r.width = t->ndim ? t->shape[t->ndim - 1] : 1;
    r.n = r.width ? opreg__numel(t) / r.width : 0;
    r.stride = opreg__row_stride(t); /* dims of size 1 have no stride that matters */
    return r;
}

/* Elements of one block of a cache checked by opreg__chk_blocks, and the
 * distance between two blocks, in elements. */
int64_t opreg__block_numel(const opreg_tensor *t);
int64_t opreg__block_stride(const opreg_tensor *t);

#endif
