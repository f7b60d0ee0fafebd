/* A test plugin built against the current header that uses a host member
 * added in 1.1 (check_args) only when the host's struct_size covers it. On
 * an older host it degrades: it checks the arguments itself and says so in
 * the log. minor::twice(Tensor! out, Tensor x) doubles f32 tensors;
 * minor::uses_host_checks() -> bool tells which checks it runs. */
#include "opreg/plugin.h"

#include <string.h>

static const opreg_host *host;
static bool host_checks;

static opreg_status own_check(const opreg_value *args) {
    const DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || out->dtype.code != kDLFloat ||
        out->dtype.bits != 32 || host->tensor_numel(out) != host->tensor_numel(x))
        return host->set_error(OPREG_ERR_SHAPE,
                               "minor::twice: out and x must be f32 of the same size");
    return OPREG_OK;
}

static opreg_status twice_meta(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    return own_check(args);
}

static opreg_status twice_cpu(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    (void)ctx, (void)rets;
    opreg_status st = host_checks ? host->check_args(op, args, 2) : own_check(args);
    if (st != OPREG_OK) return st;
    float *o = args[0].u.tensor->data;
    const float *x = args[1].u.tensor->data;
    for (int64_t i = 0, n = host->tensor_numel(args[1].u.tensor); i < n; i++)
        o[i] = 2.0f * x[i];
    return OPREG_OK;
}

static opreg_status uses_host_checks(void *ctx, const opreg_op *op, const opreg_value *args,
                                     opreg_value *rets) {
    (void)ctx, (void)op, (void)args;
    rets[0] = opreg_bool_value(host_checks);
    return OPREG_OK;
}

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)key, (void)user;
    host = h;
    host_checks = OPREG_HOST_HAS(h, check_args);
    if (!host_checks)
        h->log(OPREG_LOG_INFO, "minor: the host (plugin ABI 1.0) has no check_args; the plugin "
                               "checks arguments itself");
    opreg_library *lib = NULL;
    opreg_kernel cpu = { twice_cpu, NULL, NULL, 0 }, meta = { twice_meta, NULL, NULL, 0 };
    opreg_kernel q = { uses_host_checks, NULL, NULL, 0 };
    opreg_status st = h->library_create(&lib, plugin, OPREG_LIBRARY_DEF, "minor", OPREG_KEY_CPU);
    if (st == OPREG_OK) st = h->library_def(NULL, lib, "twice(Tensor! out, Tensor x) -> ()");
    if (st == OPREG_OK) st = h->library_def(NULL, lib, "uses_host_checks() -> bool");
    if (st == OPREG_OK) st = h->library_impl(lib, "twice", OPREG_KEY_CPU, &cpu);
    if (st == OPREG_OK) st = h->library_impl(lib, "twice", OPREG_KEY_META, &meta);
    if (st == OPREG_OK) st = h->library_impl(lib, "uses_host_checks", OPREG_KEY_CPU, &q);
    return st;
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "minor",
    .version = "1.1.0",
    .init = init,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    return &desc;
}
