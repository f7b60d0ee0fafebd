/* The op kernels of the OpenCL backend, and the plugin's entry point.
 *
 * Each kernel first runs the op's argument checks through the host
 * (host->check_args: the catalogue's own checks, so the OpenCL backend
 * refuses exactly what the CPU and reference kernels refuse). The checks
 * that read index data (positions, slot numbers) need host memory, so this
 * file repeats them on a copy read back from the device. Then it sets the
 * kernel's arguments and enqueues it on the device's in-order queue; the
 * call returns without waiting (copy_to_host or synchronize waits). */
#include "backends/opencl/opencl_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define T(n) ((const DLTensor *)args[n].u.tensor)

/* A tensor's buffer and its first element, in elements of @p elem bytes. */
struct buf {
    cl_mem mem;
    cl_ulong off;
};

static opreg_status buf_of(struct buf *b, const char *op, const char *arg, const DLTensor *t) {
    size_t elem = ((size_t)t->dtype.bits * t->dtype.lanes + 7u) / 8u;
    size_t bytes = ocl.host->tensor_nbytes(t);
    b->mem = (cl_mem)t->data;
    b->off = elem ? t->byte_offset / elem : 0;
    if (bytes == 0) return OPREG_OK;
    if (elem == 0 || t->byte_offset % elem != 0)
        return ocl_fail(OPREG_ERR_INVALID_ARGUMENT,
                        "%s: argument '%s': byte_offset %" PRIu64
                        " is not a multiple of the element size",
                        op, arg, (uint64_t)t->byte_offset);
    size_t size = 0;
    if (clGetMemObjectInfo(b->mem, CL_MEM_SIZE, sizeof size, &size, NULL) != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_INVALID_ARGUMENT,
                        "%s: argument '%s': data is not an OpenCL buffer (cl_mem)", op, arg);
    if (t->byte_offset + bytes > size)
        return ocl_fail(OPREG_ERR_INVALID_ARGUMENT,
                        "%s: argument '%s': %zu bytes from offset %" PRIu64
                        " run past the end of its %zu-byte buffer",
                        op, arg, bytes, (uint64_t)t->byte_offset, size);
    return OPREG_OK;
}

/* The kernel variant of a tensor's dtype, read through the host's one
 * dtype table (the checks admit f32, f16 and bf16 only). */
static int dtype_index(const DLTensor *t) {
    opreg_dtype dt = OPREG_DTYPE_BF16;
    ocl.host->dtype_from_dlpack(&dt, t->dtype);
    return dt == OPREG_DTYPE_F32 ? OCL_F32 : dt == OPREG_DTYPE_F16 ? OCL_F16 : OCL_BF16;
}

static int64_t numel(const DLTensor *t) {
    return ocl.host->tensor_numel(t);
}

/* Arguments of a kernel: {size, pointer} pairs. */
struct karg {
    size_t size;
    const void *ptr;
};
#define A_MEM(b)                                                                                   \
    { sizeof(cl_mem), &(b).mem }, {                                                                \
        sizeof(cl_ulong), &(b).off                                                                 \
    }
#define A_U64(v)                                                                                   \
    {                                                                                              \
        sizeof(cl_ulong), &(cl_ulong) {                                                            \
            (cl_ulong)(v)                                                                          \
        }                                                                                          \
    }
#define A_F32(v)                                                                                   \
    {                                                                                              \
        sizeof(cl_float), &(cl_float) {                                                            \
            (cl_float)(v)                                                                          \
        }                                                                                          \
    }
#define A_I32(v)                                                                                   \
    {                                                                                              \
        sizeof(cl_int), &(cl_int) {                                                                \
            (cl_int)(v)                                                                            \
        }                                                                                          \
    }
#define NARGS(a) (sizeof(a) / sizeof((a)[0]))

/* Set the arguments of kernel @p k (dtype @p dt) and enqueue it over
 * @p global items, under the lock. */
static opreg_status launch(struct ocl_device *d, enum ocl_kernel k, int dt, const char *what,
                           const struct karg *a, size_t n, size_t global) {
    cl_kernel kernel = ocl_kernel_of(d, k, dt);
    for (size_t i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(kernel, (cl_uint)i, a[i].size, a[i].ptr);
        if (err != CL_SUCCESS)
            return ocl_fail(OPREG_ERR_DEVICE, "opencl: %s: argument %zu: error %d", what, i,
                            (int)err);
    }
    return ocl_enqueue(d, kernel, global, what);
}

/* The prologue of every kernel: the op's checks, then the device, locked.
 * The body runs with `d` and must reach `done`. */
#define OCL_KERNEL(name, nargs)                                                                    \
    static opreg_status body_##name(struct ocl_device *d, const opreg_value *args);                \
    static opreg_status ocl_##name(void *context, const opreg_op *op, const opreg_value *args,     \
                                   opreg_value *rets) {                                            \
        (void)context, (void)rets;                                                                 \
        opreg_status st = ocl.host->check_args(op, args, nargs);                                   \
        if (st != OPREG_OK) return st;                                                             \
        struct ocl_device *d = NULL;                                                               \
        pthread_mutex_lock(&ocl.lock);                                                             \
        st = ocl_device_ready(&d, T(0)->device.device_id);                                         \
        if (st == OPREG_OK) st = body_##name(d, args);                                             \
        pthread_mutex_unlock(&ocl.lock);                                                           \
        return st;                                                                                 \
    }                                                                                              \
    static opreg_status body_##name(struct ocl_device *d, const opreg_value *args)

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        opreg_status try_st_ = (expr);                                                             \
        if (try_st_ != OPREG_OK) return try_st_;                                                   \
    } while (0)

/* Rows of a tensor whose leading dims collapse (the checks' rule): the
 * stride of the innermost leading dim of size > 1, as a dim of size 1 has
 * no stride that matters; the width for a single row. */
static int64_t row_stride(const DLTensor *t) {
    int n = t->ndim;
    for (int d = n - 2; d >= 0 && t->strides; d--)
        if (t->shape[d] > 1) return t->strides[d];
    return n ? t->shape[n - 1] : 1;
}

/* ---- norms ------------------------------------------------------------------------- */

OCL_KERNEL(rms_norm, 4) {
    const char *op = "_C::rms_norm";
    const DLTensor *out = T(0), *in = T(1), *w = T(2);
    int64_t h = in->shape[in->ndim - 1], rows = h ? numel(in) / h : 0;
    struct buf bo, bi, bw;
    TRY(buf_of(&bo, op, "out", out));
    TRY(buf_of(&bi, op, "input", in));
    TRY(buf_of(&bw, op, "weight", w));
    if (rows == 0 || h == 0) return OPREG_OK;
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_U64(row_stride(in)),
                        A_MEM(bw), A_U64(h),  A_F32(args[3].u.f) };
    return launch(d, OCL_K_rms_norm, dtype_index(in), op, a, NARGS(a), (size_t)rows);
}

OCL_KERNEL(fused_add_rms_norm, 4) {
    const char *op = "_C::fused_add_rms_norm";
    const DLTensor *in = T(0), *res = T(1), *w = T(2);
    int64_t h = in->shape[in->ndim - 1], rows = h ? numel(in) / h : 0;
    /* input's rows may be strided (the checks allow a slice) */
    int64_t in_stride = row_stride(in);
    struct buf bi, br, bw;
    TRY(buf_of(&bi, op, "input", in));
    TRY(buf_of(&br, op, "residual", res));
    TRY(buf_of(&bw, op, "weight", w));
    if (rows == 0 || h == 0) return OPREG_OK;
    struct karg a[] = { A_MEM(bi), A_U64(in_stride), A_MEM(br),
                        A_MEM(bw), A_U64(h),         A_F32(args[3].u.f) };
    return launch(d, OCL_K_fused_add_rms_norm, dtype_index(in), op, a, NARGS(a), (size_t)rows);
}

/* ---- gated activations ------------------------------------------------------------- */

static opreg_status gated(struct ocl_device *d, const opreg_value *args, enum ocl_kernel k,
                          const char *op) {
    const DLTensor *out = T(0), *in = T(1);
    int64_t d2 = in->shape[in->ndim - 1] / 2;
    struct buf bo, bi;
    TRY(buf_of(&bo, op, "out", out));
    TRY(buf_of(&bi, op, "input", in));
    if (d2 == 0) return OPREG_OK;
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_U64(d2) };
    return launch(d, k, dtype_index(in), op, a, NARGS(a), (size_t)numel(out));
}

OCL_KERNEL(silu_and_mul, 2) {
    return gated(d, args, OCL_K_silu_and_mul, "_C::silu_and_mul");
}
OCL_KERNEL(gelu_and_mul, 2) {
    return gated(d, args, OCL_K_gelu_and_mul, "_C::gelu_and_mul");
}
OCL_KERNEL(gelu_tanh_and_mul, 2) {
    return gated(d, args, OCL_K_gelu_tanh_and_mul, "_C::gelu_tanh_and_mul");
}

/* ---- index data, read back to check it --------------------------------------------- */

/* Copy the int64 tensor @p t to host memory (the caller frees *out). */
static opreg_status read_indices(struct ocl_device *d, const char *op, const char *arg,
                                 const DLTensor *t, int64_t **out) {
    int64_t n = numel(t);
    struct buf b;
    *out = NULL;
    TRY(buf_of(&b, op, arg, t));
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return ocl_fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    cl_int err = n ? clEnqueueReadBuffer(d->queue, b.mem, CL_TRUE, t->byte_offset,
                                         (size_t)n * sizeof *v, v, 0, NULL, NULL)
                   : CL_SUCCESS;
    if (err != CL_SUCCESS) {
        free(v);
        return ocl_fail(OPREG_ERR_DEVICE, "%s: reading '%s' back: error %d", op, arg, (int)err);
    }
    *out = v;
    return OPREG_OK;
}

/* ---- rotary embedding ----------------------------------------------------------------- */

OCL_KERNEL(rotary_embedding, 6) {
    const char *op = "_C::rotary_embedding";
    const DLTensor *pos = T(0), *q = T(1), *k = T(2), *cache = T(4);
    int64_t head_size = args[3].u.i, tokens = numel(pos), rot_dim = cache->shape[1];
    int64_t max_pos = cache->shape[0], q_row = 1, k_row = 1;
    for (int i = pos->ndim; i < q->ndim; i++)
        q_row *= q->shape[i];
    for (int i = pos->ndim; i < k->ndim; i++)
        k_row *= k->shape[i];
    /* tokens may lie further apart than a row (the checks allow a view) */
    int64_t q_step = q->ndim == pos->ndim + 1 ? row_stride(q) : q->strides ? q->strides[0] : q_row;
    int64_t k_step = k->ndim == pos->ndim + 1 ? row_stride(k) : k->strides ? k->strides[0] : k_row;
    struct buf bp, bq, bk, bc;
    TRY(buf_of(&bp, op, "positions", pos));
    TRY(buf_of(&bq, op, "query", q));
    TRY(buf_of(&bk, op, "key", k));
    TRY(buf_of(&bc, op, "cos_sin_cache", cache));
    if (tokens == 0) return OPREG_OK;
    int64_t *p;
    TRY(read_indices(d, op, "positions", pos, &p));
    for (int64_t t = 0; t < tokens; t++)
        if (p[t] < 0 || p[t] >= max_pos) {
            opreg_status st =
                ocl_fail(OPREG_ERR_INVALID_ARGUMENT,
                         "%s: argument 'positions': token %" PRId64 " uses cache row %" PRId64
                         ", outside cos_sin_cache's %" PRId64 " rows",
                         op, t, p[t], max_pos);
            free(p);
            return st;
        }
    free(p);
    struct karg a[] = { A_MEM(bp),      A_MEM(bq),        A_U64(q_row),      A_U64(q_step),
                        A_MEM(bk),      A_U64(k_row),     A_U64(k_step),     A_MEM(bc),
                        A_U64(rot_dim), A_U64(head_size), A_I32(args[5].u.b) };
    return launch(d, OCL_K_rotary_embedding, dtype_index(q), op, a, NARGS(a), (size_t)tokens);
}

/* ---- reshape_and_cache ------------------------------------------------------------------ */

static int kv_kind(const char *s) {
    if (strcmp(s, "auto") == 0) return 0;
    if (strcmp(s, "fp8") == 0 || strcmp(s, "fp8_e4m3") == 0) return 1;
    return 2; /* "fp8_e5m2": the checks refuse anything else */
}

OCL_KERNEL(reshape_and_cache, 7) {
    const char *op = "_C::reshape_and_cache";
    const DLTensor *key = T(0), *value = T(1), *kc = T(2), *vc = T(3), *sm = T(4);
    int64_t tokens = sm->shape[0], h = key->shape[1], dd = key->shape[2], x = kc->shape[4];
    int64_t bs = kc->shape[3], slots = kc->shape[0] * bs;
    int64_t ks = key->strides ? key->strides[0] : h * dd;
    int64_t vs = value->strides ? value->strides[0] : h * dd;
    /* blocks through the caches' dim-0 stride, as the checks allow */
    int64_t kbs = kc->strides && kc->shape[0] > 1 ? kc->strides[0] : h * dd * bs;
    int64_t vbs = vc->strides && vc->shape[0] > 1 ? vc->strides[0] : h * dd * bs;
    struct buf bk, bv, bkc, bvc, bs_;
    TRY(buf_of(&bk, op, "key", key));
    TRY(buf_of(&bv, op, "value", value));
    TRY(buf_of(&bkc, op, "key_cache", kc));
    TRY(buf_of(&bvc, op, "value_cache", vc));
    TRY(buf_of(&bs_, op, "slot_mapping", sm));
    if (tokens == 0 || h * dd == 0) return OPREG_OK;
    int64_t *s;
    TRY(read_indices(d, op, "slot_mapping", sm, &s));
    for (int64_t t = 0; t < tokens; t++)
        if (s[t] >= slots) {
            opreg_status st =
                ocl_fail(OPREG_ERR_INVALID_ARGUMENT,
                         "%s: argument 'slot_mapping': slot %" PRId64 " of token %" PRId64
                         " is outside the cache's %" PRId64 " slots",
                         op, s[t], t, slots);
            free(s);
            return st;
        }
    free(s);
    struct karg a[] = { A_MEM(bk),         A_U64(ks),
                        A_MEM(bv),         A_U64(vs),
                        A_MEM(bkc),        A_MEM(bvc),
                        A_MEM(bs_),        A_U64(h),
                        A_U64(dd),         A_U64(x),
                        A_U64(bs),         A_U64(kbs),
                        A_U64(vbs),        A_I32(kv_kind(args[5].u.s.ptr)),
                        A_F32(args[6].u.f) };
    return launch(d, OCL_K_reshape_and_cache, dtype_index(key), op, a, NARGS(a),
                  (size_t)(tokens * h * dd));
}

/* ---- quantisation ----------------------------------------------------------------------- */

static opreg_status quant_bufs(const char *op, const opreg_value *args, struct buf *bo,
                               struct buf *bi, struct buf *bsc) {
    TRY(buf_of(bo, op, "out", T(0)));
    TRY(buf_of(bi, op, "input", T(1)));
    return buf_of(bsc, op, "scale", T(2));
}

OCL_KERNEL(static_scaled_fp8_quant, 3) {
    const char *op = "_C::static_scaled_fp8_quant";
    struct buf bo, bi, bsc;
    TRY(quant_bufs(op, args, &bo, &bi, &bsc));
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_MEM(bsc) };
    return launch(d, OCL_K_fp8_quant, dtype_index(T(1)), op, a, NARGS(a), (size_t)numel(T(1)));
}

OCL_KERNEL(dynamic_scaled_fp8_quant, 3) {
    const char *op = "_C::dynamic_scaled_fp8_quant";
    struct buf bo, bi, bsc;
    TRY(quant_bufs(op, args, &bo, &bi, &bsc));
    int64_t n = numel(T(1)), chunk = 4096;
    if (n == 0) return OPREG_OK;
    int dt = dtype_index(T(1));
    /* amax into scratch[0], then scratch[1] = fmax(scale, amax / 448), then
     * the quantisation with scratch[1], which also stores it to scale: in
     * queue order, and only the last command writes the outputs. */
    cl_uint zero = 0;
    cl_int err = clEnqueueFillBuffer(d->queue, d->scratch, &zero, sizeof zero, 0, sizeof zero, 0,
                                     NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_DEVICE, "%s: clEnqueueFillBuffer: %d", op, err);
    struct karg am[] = { A_MEM(bi), A_U64(n), A_U64(chunk), { sizeof(cl_mem), &d->scratch } };
    TRY(launch(d, OCL_K_amax, dt, op, am, NARGS(am), (size_t)((n + chunk - 1) / chunk)));
    cl_kernel fin = d->finish_scale;
    if (clSetKernelArg(fin, 0, sizeof(cl_mem), &bsc.mem) != CL_SUCCESS ||
        clSetKernelArg(fin, 1, sizeof(cl_ulong), &bsc.off) != CL_SUCCESS ||
        clSetKernelArg(fin, 2, sizeof(cl_mem), &d->scratch) != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_DEVICE, "%s: setting fp8_finish_scale's arguments", op);
    TRY(ocl_enqueue(d, fin, 1, op));
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_MEM(bsc), { sizeof(cl_mem), &d->scratch } };
    return launch(d, OCL_K_fp8_quant_dyn, dt, op, a, NARGS(a), (size_t)n);
}

OCL_KERNEL(static_scaled_int8_quant, 3) {
    const char *op = "_C::static_scaled_int8_quant";
    struct buf bo, bi, bsc;
    TRY(quant_bufs(op, args, &bo, &bi, &bsc));
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_MEM(bsc) };
    return launch(d, OCL_K_static_int8_quant, dtype_index(T(1)), op, a, NARGS(a),
                  (size_t)numel(T(1)));
}

OCL_KERNEL(dynamic_scaled_int8_quant, 3) {
    const char *op = "_C::dynamic_scaled_int8_quant";
    const DLTensor *in = T(1);
    struct buf bo, bi, bsc;
    TRY(quant_bufs(op, args, &bo, &bi, &bsc));
    int64_t h = in->shape[in->ndim - 1], rows = h ? numel(in) / h : 0;
    if (rows == 0) return OPREG_OK;
    struct karg a[] = { A_MEM(bo), A_MEM(bi), A_MEM(bsc), A_U64(h) };
    return launch(d, OCL_K_dynamic_int8_quant, dtype_index(in), op, a, NARGS(a), (size_t)rows);
}

/* ---- registration and the entry point ------------------------------------------------- */

/* The ops this backend runs: exactly these are supported on opencl. */
#define OCL_OPS(X)                                                                                 \
    X(rms_norm)                                                                                    \
    X(fused_add_rms_norm)                                                                          \
    X(silu_and_mul)                                                                                \
    X(gelu_and_mul)                                                                                \
    X(gelu_tanh_and_mul)                                                                           \
    X(rotary_embedding)                                                                            \
    X(reshape_and_cache)                                                                           \
    X(static_scaled_fp8_quant)                                                                     \
    X(dynamic_scaled_fp8_quant)                                                                    \
    X(static_scaled_int8_quant)                                                                    \
    X(dynamic_scaled_int8_quant)

opreg_status ocl_register(const opreg_host *host, opreg_plugin *plugin, opreg_dispatch_key key) {
    opreg_library *lib = NULL;
    opreg_status st = host->library_create(&lib, plugin, OPREG_LIBRARY_IMPL, "_C", key);
#define OCL_IMPL(name)                                                                             \
    if (st == OPREG_OK) {                                                                          \
        opreg_kernel k = { ocl_##name, NULL, NULL, 0 };                                            \
        st = host->library_impl(lib, #name, key, &k);                                              \
    }
    OCL_OPS(OCL_IMPL)
#undef OCL_IMPL
    return st; /* on failure the loader closes lib */
}

static opreg_status init(const opreg_host *host, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)user;
    /* The kernels run the catalogue's checks through check_args (1.1): on an
     * older host the plugin declines to load rather than run unchecked. */
    if (!OPREG_HOST_HAS(host, check_args))
        return host->set_error(OPREG_ERR_UNSUPPORTED,
                               "the OpenCL backend needs a host of plugin ABI 1.1 or later "
                               "(check_args)");
    return ocl_register(host, plugin, key);
}

static void fini(void *user) {
    (void)user;
    ocl_release();
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "opencl",
    .version = "0.1.0",
    .backend = &ocl_backend,
    .init = init,
    .fini = fini,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *host);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *host) {
    ocl.host = host;
    return &desc;
}
