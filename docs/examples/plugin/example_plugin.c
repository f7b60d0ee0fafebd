/* A minimal opreg backend plugin: a device called "example" whose memory is
 * ordinary host memory, and a kernel for one op of the catalogue,
 * _C::silu_and_mul (out = silu(x) * y for input [..., 2d] = [x, y]), in f32.
 *
 * It calls opreg only through the host table it is given, so the built
 * module has no undefined opreg_ symbol and keeps loading into later opreg
 * releases of the same major plugin ABI. */
#include <opreg/plugin.h>

#include <math.h>
#include <stdlib.h>

static const opreg_host *host;

/* ---- the backend: host memory behind a device of its own ---- */

static opreg_status ex_alloc(void *ctx, void **out, size_t bytes, int device_id) {
    (void)ctx, (void)device_id;
    *out = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    return *out ? OPREG_OK : host->set_error(OPREG_ERR_OUT_OF_MEMORY, "example: out of memory");
}

static void ex_free(void *ctx, void *ptr, size_t bytes, int device_id) {
    (void)ctx, (void)bytes, (void)device_id;
    free(ptr);
}

static const opreg_backend backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "example",
    .device_type = kDLExtDev,
    .alloc = ex_alloc,
    .free = ex_free,
};

/* ---- the kernel ---- */

static opreg_status silu_and_mul(void *ctx, const opreg_op *op, const opreg_value *args,
                                 opreg_value *rets) {
    (void)ctx, (void)rets;
    /* The catalogue's own argument checks (shapes, dtypes, devices, overlap). */
    opreg_status st = host->check_args(op, args, 2);
    if (st != OPREG_OK) return st;
    const DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    if (out->dtype.code != kDLFloat || out->dtype.bits != 32)
        return host->set_error(OPREG_ERR_UNSUPPORTED, "example: silu_and_mul runs f32 only");
    int64_t d = in->shape[in->ndim - 1] / 2, rows = d ? host->tensor_numel(out) / d : 0;
    const float *x = (const float *)((const char *)in->data + in->byte_offset);
    float *o = (float *)((char *)out->data + out->byte_offset);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < d; i++) {
            float a = x[r * 2 * d + i], b = x[r * 2 * d + d + i];
            o[r * d + i] = a / (1.0f + expf(-a)) * b;
        }
    return OPREG_OK;
}

/* ---- registration ---- */

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)user;
    if (!OPREG_HOST_HAS(h, check_args))
        return h->set_error(OPREG_ERR_UNSUPPORTED, "example: needs plugin ABI 1.1 (check_args)");
    opreg_library *lib = NULL;
    opreg_status st = h->library_create(&lib, plugin, OPREG_LIBRARY_IMPL, "_C", key);
    if (st != OPREG_OK) return st;
    opreg_kernel k = { silu_and_mul, NULL, NULL, 0 };
    return h->library_impl(lib, "silu_and_mul", key, &k); /* on failure lib is closed for us */
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "example",
    .version = "1.0",
    .backend = &backend,
    .init = init,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    host = h;
    return &desc;
}
