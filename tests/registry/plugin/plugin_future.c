/* A test plugin that declares a future major ABI version (2.0): the loader
 * must refuse it, naming both versions, before calling anything of it but
 * its entry point. */
#include "opreg/plugin.h"

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)plugin, (void)key, (void)user;
    return h->set_error(OPREG_ERR_INTERNAL, "plugin_future: init must never run");
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc) + 64, /* a later, larger description */
    .abi_version = (2u << 16) | 0u,
    .name = "future",
    .init = init,
};

/* The description as a 2.0 plugin would lay it out: longer than ours. */
static struct {
    opreg_plugin_desc d;
    char more[64];
} big;

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    big.d = desc;
    return &big.d;
}
