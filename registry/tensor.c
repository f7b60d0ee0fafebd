/* Tensors that opreg creates: one allocation holds a header, the DLTensor,
 * its shape and its strides; the data comes from the device's backend
 * allocator (none for Meta). The header records how to free the data, so
 * opreg_tensor_free() needs nothing else. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NDIM 64

struct tensor_block {
    const opreg_backend *backend; /* NULL for views and data-less tensors */
    void *alloc;                  /* what backend->alloc returned */
    size_t bytes;
    DLTensor t;
    int64_t dims[]; /* shape[ndim] then strides[ndim] */
};

static struct tensor_block *block_of(DLTensor *t) {
    return (struct tensor_block *)(void *)((char *)t - offsetof(struct tensor_block, t));
}

/* a * b for a, b >= 0; false when it does not fit in int64_t. */
static bool mul_fits(int64_t a, int64_t b, int64_t *out) {
    if (a && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

/* The element count, or -1 when a size is negative or the count does not
 * fit in int64_t (no buffer holds such a tensor). A size of 0 gives 0
 * whatever the others are. */
int64_t opreg_tensor_numel(const DLTensor *t) {
    if (!t) return 0;
    int64_t n = 1;
    bool fits = true;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) return 0;
        if (t->shape[i] < 0) fits = false;
        if (fits) fits = mul_fits(n, t->shape[i], &n);
    }
    return fits ? n : -1;
}

/* a * b + c in size_t, saturating at SIZE_MAX. */
static size_t mul_add_sat(size_t a, size_t b, size_t c) {
    if (a && b > (SIZE_MAX - c) / a) return SIZE_MAX;
    return a * b + c;
}

/* SIZE_MAX when the extent does not fit (or the tensor cannot exist). */
size_t opreg_tensor_nbytes(const DLTensor *t) {
    if (!t) return 0;
    size_t elem = ((size_t)t->dtype.bits * t->dtype.lanes + 7u) / 8u;
    int64_t numel = opreg_tensor_numel(t);
    if (numel <= 0) return numel == 0 ? 0 : SIZE_MAX;
    if (!t->strides) return mul_add_sat((size_t)numel, elem, 0);
    size_t extent = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t s = t->strides[i] < 0 ? 0 - (uint64_t)t->strides[i] : (uint64_t)t->strides[i];
        extent = mul_add_sat((size_t)(t->shape[i] - 1), (size_t)s, extent);
    }
    return mul_add_sat(extent, elem, 0);
}

bool opreg_tensor_is_contiguous(const DLTensor *t) {
    if (!t) return false;
    if (!t->strides) return true;
    uint64_t expected = 1; /* unsigned: past int64_t, no stride matches anyway */
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && (t->strides[i] < 0 || (uint64_t)t->strides[i] != expected))
            return false;
        expected *= (uint64_t)t->shape[i];
    }
    return true;
}

/* A shape a tensor can have: ndim in 0..MAX_NDIM, sizes >= 0, and an element
 * count and byte size (of @p elem bytes an element; 0 when not known) that
 * fit in int64_t. */
static opreg_status check_shape(const char *what, int ndim, const int64_t *shape, size_t elem) {
    if (ndim < 0 || ndim > MAX_NDIM)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: ndim %d is outside 0..%d", what, ndim,
                           MAX_NDIM);
    if (ndim > 0 && !shape)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: shape is NULL with ndim %d", what,
                           ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: shape[%d] is negative (%lld)", what,
                               i, (long long)shape[i]);
    DLTensor t = { 0 };
    t.ndim = ndim;
    t.shape = (int64_t *)(uintptr_t)shape;
    int64_t numel = opreg_tensor_numel(&t), bytes;
    if (numel < 0 || !mul_fits(numel, elem ? (int64_t)elem : 1, &bytes))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: the shape's %s of %zu-byte elements does not fit in int64_t", what,
                           numel < 0 ? "element count" : "byte size", elem ? elem : 1);
    return OPREG_OK;
}

static struct tensor_block *new_block(int ndim, const int64_t *shape, const int64_t *strides) {
    struct tensor_block *b = calloc(1, sizeof *b + 2u * (size_t)ndim * sizeof(int64_t));
    if (!b) return NULL;
    b->t.ndim = ndim;
    b->t.shape = ndim ? b->dims : NULL;
    b->t.strides = ndim ? b->dims + ndim : NULL;
    uint64_t expected = 1; /* unsigned: a size-0 dim lets the others' product overflow */
    for (int i = ndim - 1; i >= 0; i--) {
        b->dims[i] = shape[i];
        b->dims[ndim + i] = strides ? strides[i] : (int64_t)expected;
        expected *= (uint64_t)shape[i];
    }
    return b;
}

opreg_status opreg_tensor_empty(DLTensor **out, DLDevice device, opreg_dtype dtype, int ndim,
                                const int64_t *shape) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_tensor_empty: out is NULL");
    *out = NULL;
    size_t elem = opreg_dtype_size(dtype);
    if (!elem)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_tensor_empty: unknown dtype %d",
                           (int)dtype);
    OPREG__TRY(check_shape("opreg_tensor_empty", ndim, shape, elem));
    opreg_dispatch_key k = opreg_key_of_device(device);
    char why[160] = "";
    if (k == OPREG_KEY_NONE)
        return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE,
                           "opreg_tensor_empty: no backend handles device type %d",
                           (int)device.device_type);
    if (!opreg_key_is_available(k, why, sizeof why))
        return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE,
                           "opreg_tensor_empty: backend %s is unavailable: %s", opreg_key_name(k),
                           why);
    struct tensor_block *b = new_block(ndim, shape, NULL);
    if (!b) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_tensor_empty: out of memory");
    b->t.device = device;
    b->t.dtype = opreg_dtype_to_dlpack(dtype);
    b->t.strides = NULL; /* contiguous: DLPack's compact form */
    const opreg_backend *be = opreg_key_backend(k);
    if (be->alloc) {
        size_t n = (size_t)opreg_tensor_numel(&b->t) * elem;
        opreg_clear_error(); /* what the backend says, if anything, goes in the message */
        opreg_status st = be->alloc(be->context, &b->alloc, n, device.device_id);
        if (st != OPREG_OK) {
            char said[1024];
            snprintf(said, sizeof said, "%s", opreg_last_error());
            free(b);
            return opreg__fail(st,
                               "opreg_tensor_empty: backend %s could not allocate %zu bytes%s%s",
                               opreg_key_name(k), n, said[0] ? ": " : "", said);
        }
        b->backend = be;
        b->bytes = n;
        b->t.data = b->alloc;
    }
    *out = &b->t;
    return OPREG_OK;
}

opreg_status opreg_tensor_empty_cpu(DLTensor **out, opreg_dtype dtype, int ndim,
                                    const int64_t *shape) {
    DLDevice d = { kDLCPU, 0 };
    return opreg_tensor_empty(out, d, dtype, ndim, shape);
}

opreg_status opreg_tensor_empty_meta(DLTensor **out, opreg_dtype dtype, int ndim,
                                     const int64_t *shape) {
    DLDevice d = { OPREG_DEVICE_META, 0 };
    return opreg_tensor_empty(out, d, dtype, ndim, shape);
}

opreg_status opreg_tensor_view(DLTensor **out, const DLTensor *base, int ndim, const int64_t *shape,
                               const int64_t *strides, uint64_t byte_offset) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_tensor_view: out is NULL");
    *out = NULL;
    if (!base) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_tensor_view: base is NULL");
    OPREG__TRY(check_shape("opreg_tensor_view", ndim, shape, 0));
    struct tensor_block *b = new_block(ndim, shape, strides);
    if (!b) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_tensor_view: out of memory");
    b->t.data = base->data;
    b->t.device = base->device;
    b->t.dtype = base->dtype;
    b->t.byte_offset = base->byte_offset + byte_offset;
    if (!strides) b->t.strides = NULL;
    *out = &b->t;
    return OPREG_OK;
}

void opreg_tensor_free(DLTensor *tensor) {
    if (!tensor) return;
    struct tensor_block *b = block_of(tensor);
    if (b->backend && b->backend->free)
        b->backend->free(b->backend->context, b->alloc, b->bytes, tensor->device.device_id);
    free(b);
}
