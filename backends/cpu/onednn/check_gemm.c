/* Argument checks of the oneDNN GEMM kernels (see check_gemm.h). The kernels
 * hand raw pointers and plain layouts to oneDNN, so everything oneDNN would
 * misread is refused here: dtypes, sizes, strides and overlap. */
#include "backends/cpu/onednn/check_gemm.h"

#include "common/internal.h"

#include <inttypes.h>

#define OP_LINEAR "_C::linear"
#define OP_MM     "_C::cutlass_scaled_mm"

/* A set of dtypes: DTS(F32) | DTS(BF16). */
#define DTS(d) (1u << OPREG_DTYPE_##d)

static int dtype_of(const opreg_tensor *t) {
    opreg_dtype dt;
    if (t->dtype.lanes != 1) return -1;
    if (opreg_dtype_from_dlpack(&dt, t->dtype) != OPREG_OK) return -1;
    return (int)dt;
}

static const char *dtype_text(int dt) {
    const char *name = dt < 0 ? NULL : opreg_dtype_name((opreg_dtype)dt);
    return name ? name : "unknown";
}

static int64_t numel(const opreg_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* The stride of @p dim in elements, with NULL strides meaning row-major. */
static int64_t stride_of(const opreg_tensor *t, int dim) {
    int64_t s = 1;
    if (t->strides) return t->strides[dim];
    for (int d = t->ndim - 1; d > dim; d--)
        s *= t->shape[d];
    return s;
}

/* NULL, rank (exact, or 1..max when @p ndim < 0), shape and dtype. */
static opreg_status chk_tensor(const char *op, const char *arg, const opreg_tensor *t,
                               uint32_t dtypes, const char *want, int ndim) {
    int dt;
    if (!t) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s': is NULL", op, arg);
    if (t->ndim < 0 || t->ndim > OPREG__GEMM_MAX_NDIM || (t->ndim > 0 && !t->shape))
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': invalid rank %d or no shape", op,
                           arg, t->ndim);
    if (ndim >= 0 ? t->ndim != ndim : t->ndim < 1)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': expected rank %s%d, got %d", op,
                           arg, ndim >= 0 ? "" : ">= ", ndim >= 0 ? ndim : 1, t->ndim);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: argument '%s': negative size %" PRId64 " in dim %d", op, arg,
                               t->shape[d], d);
    dt = dtype_of(t);
    if (dt < 0 || dt >= 32 || !(dtypes & (1u << dt)))
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': expected dtype %s, got %s", op, arg,
                           want, dtype_text(dt));
    return OPREG_OK;
}

static opreg_status chk_contig(const char *op, const char *arg, const opreg_tensor *t) {
    if (!opreg_tensor_is_contiguous(t))
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': must be contiguous", op, arg);
    return OPREG_OK;
}

static opreg_status chk_size(const char *op, const char *arg, const opreg_tensor *t, int dim,
                             int64_t expect) {
    if (t->shape[dim] != expect)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': expected size %" PRId64 " in dim %d, got %" PRId64,
                           op, arg, expect, dim, t->shape[dim]);
    return OPREG_OK;
}

static opreg_status chk_same_dtype(const char *op, const char *arg, const opreg_tensor *t,
                                   const char *ref_arg, const opreg_tensor *ref) {
    if (dtype_of(t) != dtype_of(ref))
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument '%s': dtype %s differs from %s's %s", op,
                           arg, dtype_text(dtype_of(t)), ref_arg, dtype_text(dtype_of(ref)));
    return OPREG_OK;
}

/* CPU device and data present: what only a real (non-Meta) call needs. */
static opreg_status chk_cpu_data(const char *op, const char *arg, const opreg_tensor *t) {
    if (t->device.device_type != kDLCPU)
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: argument '%s': expected a CPU tensor, got device type %d", op, arg,
                           (int)t->device.device_type);
    if (!t->data && numel(t) > 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s': data is NULL", op, arg);
    return OPREG_OK;
}

/* Refuse an output whose bytes intersect an input's: oneDNN reads inputs
 * while it writes the output, in blocks, so any overlap corrupts results. */
static opreg_status chk_no_overlap(const char *op, const opreg_tensor *out, const char *arg,
                                   const opreg_tensor *t) {
    uintptr_t o0, o1, t0, t1;
    if (!t || numel(out) == 0 || numel(t) == 0) return OPREG_OK;
    o0 = (uintptr_t)out->data + (uintptr_t)out->byte_offset;
    o1 = o0 + opreg_tensor_nbytes(out);
    t0 = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    t1 = t0 + opreg_tensor_nbytes(t);
    if (o0 < t1 && t0 < o1)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'out': overlaps input '%s' in memory", op, arg);
    return OPREG_OK;
}

opreg_status opreg__gemm_linear_out_shape(const opreg_tensor *input, const opreg_tensor *weight,
                                          const opreg_tensor *bias, int *out_ndim,
                                          int64_t *out_shape, opreg_dtype *out_dtype) {
    const uint32_t fl = DTS(F32) | DTS(BF16);
    OPREG__TRY(chk_tensor(OP_LINEAR, "input", input, fl, "f32 or bf16", -1));
    OPREG__TRY(chk_contig(OP_LINEAR, "input", input));
    OPREG__TRY(chk_tensor(OP_LINEAR, "weight", weight, fl, "f32 or bf16", 2));
    OPREG__TRY(chk_same_dtype(OP_LINEAR, "weight", weight, "input", input));
    OPREG__TRY(chk_size(OP_LINEAR, "weight", weight, 1, input->shape[input->ndim - 1]));
    OPREG__TRY(chk_contig(OP_LINEAR, "weight", weight));
    if (bias) {
        OPREG__TRY(chk_tensor(OP_LINEAR, "bias", bias, fl, "f32 or bf16", 1));
        OPREG__TRY(chk_same_dtype(OP_LINEAR, "bias", bias, "input", input));
        OPREG__TRY(chk_size(OP_LINEAR, "bias", bias, 0, weight->shape[0]));
        OPREG__TRY(chk_contig(OP_LINEAR, "bias", bias));
    }
    *out_ndim = input->ndim;
    for (int d = 0; d + 1 < input->ndim; d++)
        out_shape[d] = input->shape[d];
    out_shape[input->ndim - 1] = weight->shape[0];
    *out_dtype = (opreg_dtype)dtype_of(input);
    return OPREG_OK;
}

opreg_status opreg__gemm_check_linear(const opreg_tensor *out, const opreg_tensor *input,
                                      const opreg_tensor *weight, const opreg_tensor *bias) {
    int ndim;
    int64_t shape[OPREG__GEMM_MAX_NDIM];
    opreg_dtype dt;
    OPREG__TRY(opreg__gemm_linear_out_shape(input, weight, bias, &ndim, shape, &dt));
    OPREG__TRY(chk_tensor(OP_LINEAR, "out", out, 1u << dt, dtype_text((int)dt), ndim));
    for (int d = 0; d < ndim; d++)
        OPREG__TRY(chk_size(OP_LINEAR, "out", out, d, shape[d]));
    OPREG__TRY(chk_contig(OP_LINEAR, "out", out));
    OPREG__TRY(chk_cpu_data(OP_LINEAR, "out", out));
    OPREG__TRY(chk_cpu_data(OP_LINEAR, "input", input));
    OPREG__TRY(chk_cpu_data(OP_LINEAR, "weight", weight));
    if (bias) OPREG__TRY(chk_cpu_data(OP_LINEAR, "bias", bias));
    OPREG__TRY(chk_no_overlap(OP_LINEAR, out, "input", input));
    OPREG__TRY(chk_no_overlap(OP_LINEAR, out, "weight", weight));
    return chk_no_overlap(OP_LINEAR, out, "bias", bias);
}

/* b is [K, N] column-major, as vLLM passes weight.t(): element (k, n) at
 * k + n*K. A stride of a size-1 dim does not matter. */
static opreg_status chk_col_major(const opreg_tensor *b) {
    int64_t k = b->shape[0], n = b->shape[1];
    if ((k > 1 && stride_of(b, 0) != 1) || (n > 1 && stride_of(b, 1) != k))
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'b': must be column-major [K, N] with strides (1, %" PRId64
                           "), got (%" PRId64 ", %" PRId64 ")",
                           OP_MM, k, stride_of(b, 0), stride_of(b, 1));
    return OPREG_OK;
}

/* A scale tensor of any rank whose numel is 1 or @p per (one per row or
 * column); "per" names which. */
static opreg_status chk_scales(const char *arg, const opreg_tensor *s, int64_t per,
                               const char *per_name) {
    OPREG__TRY(chk_tensor(OP_MM, arg, s, DTS(F32), "f32", s && s->ndim == 0 ? 0 : -1));
    OPREG__TRY(chk_contig(OP_MM, arg, s));
    if (numel(s) != 1 && numel(s) != per)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': expected 1 (per tensor) or %" PRId64
                           " (per %s) elements, got %" PRId64,
                           OP_MM, arg, per, per_name, numel(s));
    return chk_cpu_data(OP_MM, arg, s);
}

opreg_status opreg__gemm_check_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                         const opreg_tensor *b, const opreg_tensor *a_scales,
                                         const opreg_tensor *b_scales, const opreg_tensor *bias) {
    int64_t m, n, k;
    OPREG__TRY(chk_tensor(OP_MM, "a", a, DTS(I8), "i8", 2));
    OPREG__TRY(chk_contig(OP_MM, "a", a));
    OPREG__TRY(chk_tensor(OP_MM, "b", b, DTS(I8), "i8", 2));
    m = a->shape[0];
    k = a->shape[1];
    n = b->shape[1];
    OPREG__TRY(chk_size(OP_MM, "b", b, 0, k));
    OPREG__TRY(chk_col_major(b));
    OPREG__TRY(chk_tensor(OP_MM, "out", out, DTS(F32) | DTS(BF16), "f32 or bf16", 2));
    OPREG__TRY(chk_size(OP_MM, "out", out, 0, m));
    OPREG__TRY(chk_size(OP_MM, "out", out, 1, n));
    OPREG__TRY(chk_contig(OP_MM, "out", out));
    OPREG__TRY(chk_scales("a_scales", a_scales, m, "row"));
    OPREG__TRY(chk_scales("b_scales", b_scales, n, "column"));
    if (bias) {
        OPREG__TRY(chk_tensor(OP_MM, "bias", bias, DTS(F32) | DTS(BF16), "f32 or bf16", 1));
        OPREG__TRY(chk_same_dtype(OP_MM, "bias", bias, "out", out));
        OPREG__TRY(chk_size(OP_MM, "bias", bias, 0, n));
        OPREG__TRY(chk_contig(OP_MM, "bias", bias));
        OPREG__TRY(chk_cpu_data(OP_MM, "bias", bias));
    }
    OPREG__TRY(chk_cpu_data(OP_MM, "out", out));
    OPREG__TRY(chk_cpu_data(OP_MM, "a", a));
    OPREG__TRY(chk_cpu_data(OP_MM, "b", b));
    OPREG__TRY(chk_no_overlap(OP_MM, out, "a", a));
    OPREG__TRY(chk_no_overlap(OP_MM, out, "b", b));
    OPREG__TRY(chk_no_overlap(OP_MM, out, "a_scales", a_scales));
    OPREG__TRY(chk_no_overlap(OP_MM, out, "b_scales", b_scales));
    return chk_no_overlap(OP_MM, out, "bias", bias);
}
