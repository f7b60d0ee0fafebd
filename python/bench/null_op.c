/* The plugin `_opreg_bench`, for `opreg bench python` only: it defines
 * `_opreg_bench::rms_norm`, rms_norm's schema with a CPU kernel that does
 * nothing, so that the benchmark measures what the binding and the
 * dispatcher cost without the kernel's work. A plugin rather than a
 * registration in the binding, so that the production module has no
 * benchmark code: opreg.load_plugin() puts the op into the binding's
 * registry, and opreg._bench.load_plugin() into the benchmark module's.
 * Built against opreg/plugin.h alone, like every plugin. */
#include "opreg/plugin.h"

static opreg_status null_kernel(void *context, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)context, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)key, (void)user;
    opreg_library *lib = NULL;
    opreg_kernel k = { null_kernel, NULL, NULL, 0 };
    opreg_status st =
        h->library_create(&lib, plugin, OPREG_LIBRARY_DEF, "_opreg_bench", OPREG_KEY_CPU);
    if (st == OPREG_OK)
        st = h->library_def(
            NULL, lib, "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
    if (st == OPREG_OK) st = h->library_impl(lib, "rms_norm", OPREG_KEY_CPU, &k);
    return st;
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "_opreg_bench",
    .version = "1",
    .init = init,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    return &desc;
}
