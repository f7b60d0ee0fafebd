/* A test plugin whose init fails halfway: it brings a backend (so it gets a
 * key), defines an op, replaces the kernel of an existing op
 * (base::twice on CPU) and registers a fallback, then fails. The loader must
 * leave the registry exactly as it was. */
#include "opreg/plugin.h"

#include <stdlib.h>

static opreg_status boom(void *ctx, const opreg_op *op, const opreg_value *args,
                         opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_ERR_INTERNAL;
}

static opreg_backend backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "halfway",
    .device_type = kDLVPI,
};

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    opreg_library *def = NULL, *impl = NULL;
    *user = malloc(16); /* freed by fini, which the loader must still call */
    opreg_kernel k = { boom, NULL, NULL, 0 };
    opreg_status st = h->library_create(&def, plugin, OPREG_LIBRARY_DEF, "halfway", key);
    if (st == OPREG_OK) st = h->library_def(NULL, def, "op(Tensor x) -> ()");
    if (st == OPREG_OK) st = h->library_impl(def, "op", key, &k);
    if (st == OPREG_OK)
        st = h->library_create(&impl, plugin, OPREG_LIBRARY_IMPL, "base", OPREG_KEY_CPU);
    if (st == OPREG_OK) st = h->library_impl(impl, "twice", OPREG_KEY_CPU, &k);
    if (st == OPREG_OK) st = h->library_fallback(impl, key, &k);
    if (st != OPREG_OK) return st;
    return h->set_error(OPREG_ERR_DEVICE, "halfway: the device went away during init");
}

static void fini(void *user) {
    free(user);
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "halfway",
    .version = "0.1",
    .backend = &backend,
    .init = init,
    .fini = fini,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    return &desc;
}
