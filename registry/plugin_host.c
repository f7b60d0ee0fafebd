/* The host table: the functions of opreg that a plugin is lent, through
 * the table its entry point receives (opreg/plugin.h). Most are the public
 * functions themselves; the few wrapped here tie a library to the plugin
 * that opened it, or take a plugin handle for a registry. */
#include "registry/plugin_internal.h"

static opreg_status host_library_create(opreg_library **out, opreg_plugin *p,
                                        opreg_library_kind kind, const char *ns,
                                        opreg_dispatch_key default_key) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "library_create: out is NULL");
    *out = NULL;
    if (!p) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "library_create: plugin is NULL");
    pthread_mutex_lock(&p->libs_lock);
    opreg_library *lib = NULL;
    opreg_status st = OPREG_OK;
    if (p->nlibs == p->cap_libs) {
        size_t cap = p->cap_libs ? 2 * p->cap_libs : 4;
        opreg_library **v = realloc(p->libs, cap * sizeof *v);
        if (!v)
            st = opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "library_create: out of memory");
        else {
            p->libs = v;
            p->cap_libs = cap;
        }
    }
    /* Registrations name the plugin, not a source line. */
    if (st == OPREG_OK)
        st = opreg__library_create_where(&lib, p->reg, kind, ns, default_key, p->where);
    if (st == OPREG_OK) {
        lib->plugin = p;
        p->libs[p->nlibs++] = lib;
        *out = lib;
    }
    pthread_mutex_unlock(&p->libs_lock);
    return st;
}

/* Forget @p lib in its plugin's list; true when it was there. */
static bool forget_lib(struct opreg_plugin *p, opreg_library *lib) {
    bool found = false;
    pthread_mutex_lock(&p->libs_lock);
    for (size_t i = 0; i < p->nlibs; i++)
        if (p->libs[i] == lib) {
            memmove(p->libs + i, p->libs + i + 1, (p->nlibs - i - 1) * sizeof *p->libs);
            p->nlibs--;
            found = true;
            break;
        }
    pthread_mutex_unlock(&p->libs_lock);
    return found;
}

static void host_library_close(opreg_library *lib) {
    if (!lib) return;
    if (lib->plugin && !forget_lib(lib->plugin, lib)) return; /* closed already */
    opreg_library_close(lib);
}

static opreg_status host_op_find(const opreg_op **out, const opreg_plugin *p, const char *name) {
    if (!p) {
        if (out) *out = NULL;
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "op_find: plugin is NULL");
    }
    return opreg_op_find(out, p->reg, name);
}

static opreg_status host_set_error(opreg_status status, const char *message) {
    return opreg__fail(status, "%s", message ? message : "");
}

static void host_log(opreg_log_level level, const char *message) {
    opreg__log(level, "%s", message ? message : "");
}

static opreg_status host_check_args(const opreg_op *op, const opreg_value *args, size_t nargs) {
    if (!op) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "check_args: op is NULL");
    return opreg__check_args(op, args, nargs);
}

static const char *host_plugin_path(const opreg_plugin *p) {
    return p ? p->path : NULL;
}

const opreg_host opreg__plugin_host = {
    .struct_size = sizeof(opreg_host),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .library_create = host_library_create,
    .library_def = opreg_library_def,
    .library_impl = opreg_library_impl,
    .library_fallback = opreg_library_fallback,
    .library_close = host_library_close,
    .op_find = host_op_find,
    .op_name = opreg_op_name,
    .call_boxed = opreg_call_boxed,
    .call_boxed_key = opreg_call_boxed_key,
    .key_name = opreg_key_name,
    .tensor_empty = opreg_tensor_empty,
    .tensor_view = opreg_tensor_view,
    .tensor_free = opreg_tensor_free,
    .tensor_numel = opreg_tensor_numel,
    .tensor_nbytes = opreg_tensor_nbytes,
    .tensor_is_contiguous = opreg_tensor_is_contiguous,
    .dtype_from_dlpack = opreg_dtype_from_dlpack,
    .dtype_name = opreg_dtype_name,
    .dtype_size = opreg_dtype_size,
    .device_format = opreg_device_format,
    .value_kind_name = opreg_value_kind_name,
    .set_error = host_set_error,
    .last_error = opreg_last_error,
    .status_str = opreg_status_str,
    .log = host_log,
    .check_args = host_check_args,
    .plugin_path = host_plugin_path,
    .library_provider = opreg_library_provider,
    .value_pack = opreg_value_pack,
    .value_release = opreg_value_release,
};
