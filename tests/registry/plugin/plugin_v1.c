/* A test plugin built against the frozen version-1.0 header
 * (tests/registry/plugin/abi_v1/opreg/plugin.h): its host table is smaller than the
 * current one. It defines v1test::scale with CPU and Meta kernels, and a
 * backend for a device of its own, "v1dev", whose kernels are the CPU ones. */
#include "opreg/plugin.h"

#if OPREG_PLUGIN_ABI_MINOR != 0
#error "plugin_v1 must be built against the frozen 1.0 header"
#endif

static const opreg_host *host;

/* scale(Tensor! out, Tensor x, float alpha): out = alpha * x, f32 */
static opreg_status check(const opreg_value *args) {
    const DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || out->dtype.code != kDLFloat ||
        out->dtype.bits != 32)
        return host->set_error(OPREG_ERR_SHAPE, "v1test::scale: f32 only");
    if (host->tensor_numel(out) != host->tensor_numel(x))
        return host->set_error(OPREG_ERR_SHAPE, "v1test::scale: out and x differ in size");
    return OPREG_OK;
}

static opreg_status scale_meta(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    return check(args);
}

static opreg_status scale_cpu(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    opreg_status st = check(args);
    if (st != OPREG_OK) return st;
    float *o = (float *)((char *)args[0].u.tensor->data + args[0].u.tensor->byte_offset);
    const float *x =
        (const float *)((char *)args[1].u.tensor->data + args[1].u.tensor->byte_offset);
    int64_t n = host->tensor_numel(args[1].u.tensor);
    for (int64_t i = 0; i < n; i++)
        o[i] = (float)args[2].u.f * x[i];
    return OPREG_OK;
}

static opreg_backend backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "v1dev",
    .device_type = kDLExtDev,
};

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    opreg_library *lib = NULL;
    *user = NULL;
    opreg_status st = h->library_create(&lib, plugin, OPREG_LIBRARY_DEF, "v1test", OPREG_KEY_CPU);
    if (st == OPREG_OK)
        st = h->library_def(NULL, lib, "scale(Tensor! out, Tensor x, float alpha) -> ()");
    opreg_kernel cpu = { scale_cpu, NULL, NULL, 0 }, meta = { scale_meta, NULL, NULL, 0 };
    if (st == OPREG_OK) st = h->library_impl(lib, "scale", OPREG_KEY_CPU, &cpu);
    if (st == OPREG_OK) st = h->library_impl(lib, "scale", key, &cpu);
    if (st == OPREG_OK) st = h->library_impl(lib, "scale", OPREG_KEY_META, &meta);
    return st; /* on failure the loader closes lib */
}

static void fini(void *user) {
    (void)user;
    host->log(OPREG_LOG_INFO, "v1test: fini");
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "v1test",
    .version = "1.0.0",
    .backend = &backend,
    .init = init,
    .fini = fini,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    host = h;
    return &desc;
}
