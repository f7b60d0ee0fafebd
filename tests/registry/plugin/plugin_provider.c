/* A test plugin that adds a provider (plugin ABI 1.2) in front of a kernel:
 * prov::fill(Tensor! out) -> () writes 1.0 into every element with its
 * `default` impl, and its provider `seven`, placed before `default`, takes
 * the calls of exactly 7 elements and writes 7.0. On a host older than 1.2
 * it registers the impl alone and says so in the log. */
#include "opreg/plugin.h"

#include <stdio.h>

static const opreg_host *host;

static opreg_status fill_with(const opreg_value *args, float v) {
    float *o = args[0].u.tensor->data;
    for (int64_t i = 0, n = host->tensor_numel(args[0].u.tensor); i < n; i++)
        o[i] = v;
    return OPREG_OK;
}

static opreg_status fill_one(void *ctx, const opreg_op *op, const opreg_value *args,
                             opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    return fill_with(args, 1.0f);
}

static opreg_status fill_seven(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    return fill_with(args, 7.0f);
}

static bool seven_only(void *ctx, const opreg_op *op, const opreg_value *args, char *why,
                       size_t cap) {
    (void)ctx, (void)op;
    int64_t n = host->tensor_numel(args[0].u.tensor);
    if (n == 7) return true;
    snprintf(why, cap, "takes 7 elements, not %lld", (long long)n);
    return false;
}

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)key, (void)user;
    host = h;
    opreg_library *lib = NULL;
    opreg_kernel one = { fill_one, NULL, NULL, 0 };
    opreg_status st = h->library_create(&lib, plugin, OPREG_LIBRARY_DEF, "prov", OPREG_KEY_CPU);
    if (st == OPREG_OK) st = h->library_def(NULL, lib, "fill(Tensor! out) -> ()");
    if (st == OPREG_OK) st = h->library_impl(lib, "fill", OPREG_KEY_CPU, &one);
    if (st != OPREG_OK) return st;
    if (!OPREG_HOST_HAS(h, library_provider)) {
        h->log(OPREG_LOG_INFO, "prov: the host has no library_provider (plugin ABI < 1.2); "
                               "prov::fill runs its default kernel only");
        return OPREG_OK;
    }
    opreg_provider p = { 0 };
    p.struct_size = sizeof p;
    p.name = "seven";
    p.kernel.fn = fill_seven;
    p.supports = seven_only;
    p.place = OPREG_PROVIDER_BEFORE;
    p.anchor = "default";
    return h->library_provider(lib, "fill", OPREG_KEY_CPU, &p);
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "prov",
    .version = "1.2.0",
    .init = init,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    return &desc;
}
