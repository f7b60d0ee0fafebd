/* The plugin loader: dlopen, the entry point and its description, the ABI
 * check, the backend's key, init with rollback, unload, and the search of
 * the plugin folders. Every attempt is recorded in the registry's plugin
 * list, so `opreg plugins` can say what was refused and why.
 *
 * Lifetimes: a plugin's code may be running in a kernel, or in a kernel
 * context's release function, until opreg_registry_reclaim(); so its `fini`
 * and dlclose() are deferred to reclaim (after the retired list has run) or
 * to destroy, never done at unload or after a failed init. Lock order:
 * plugin_lock, then the registry's lock (taken by the library functions). */
#define _GNU_SOURCE /* dladdr */
#include "registry/internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef OPREG_PLUGIN_INSTALL_DIR
#define OPREG_PLUGIN_INSTALL_DIR "/usr/local/lib/opreg/plugins"
#endif
#ifndef OPREG_PLUGIN_DIR_FROM_LIB
#define OPREG_PLUGIN_DIR_FROM_LIB "opreg/plugins"
#endif

struct opreg_plugin {
    struct opreg_registry *reg;
    char *path, *name, *version, *reason, *where;
    opreg_plugin_state state;
    uint32_t abi_version;
    opreg_dispatch_key key;
    void *handle;           /* dlopen()'s, until reclaim */
    opreg_plugin_desc desc; /* what the plugin's struct_size covers */
    void *user;             /* from init, for fini */
    bool pending;           /* fini and dlclose wait for reclaim */
    pthread_mutex_t libs_lock;
    opreg_library **libs;
    size_t nlibs, cap_libs;
    opreg_host host; /* the table lent to this plugin */
    struct opreg_plugin *next_gone;
};

struct opreg__plugin_list {
    size_t count, cap;
    struct opreg_plugin **items;
    /* Loads that ran out of memory after init ran: off the list, as if never
     * tried, but their fini and dlclose still wait for reclaim. */
    struct opreg_plugin *gone;
};

/* A refusal's reason is written into room made with the record, so that
 * recording it cannot fail. */
#define REASON_CAP 4096

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- the host table ------------------------------------------------------- */

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

static const opreg_host host_table = {
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
};

/* ---- records ---------------------------------------------------------------- */

static struct opreg__plugin_list *list_of(struct opreg_registry *reg) {
    if (!reg->plugins) reg->plugins = calloc(1, sizeof *reg->plugins);
    return reg->plugins;
}

static struct opreg_plugin *new_record(struct opreg_registry *reg, const char *path) {
    struct opreg__plugin_list *l = list_of(reg);
    struct opreg_plugin *p = calloc(1, sizeof *p);
    if (!l || !p) goto oom;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        struct opreg_plugin **v = realloc(l->items, cap * sizeof *v);
        if (!v) goto oom;
        l->items = v;
        l->cap = cap;
    }
    p->path = dup_str(path);
    p->name = dup_str("");
    p->version = dup_str("");
    p->reason = calloc(1, REASON_CAP);
    p->where = dup_str(path);
    if (!p->path || !p->name || !p->version || !p->reason || !p->where) {
        free(p->path);
        free(p->name);
        free(p->version);
        free(p->reason);
        free(p->where);
        goto oom;
    }
    pthread_mutex_init(&p->libs_lock, NULL);
    p->reg = reg;
    p->key = OPREG_KEY_NONE;
    p->state = OPREG_PLUGIN_REFUSED;
    l->items[l->count++] = p;
    return p;
oom:
    free(p);
    return NULL;
}

static void free_record(struct opreg_plugin *p) {
    free(p->path);
    free(p->name);
    free(p->version);
    free(p->reason);
    free(p->where);
    free(p->libs);
    pthread_mutex_destroy(&p->libs_lock);
    free(p);
}

/* A load that ran out of memory leaves no record, so the list stays as it
 * was (a refusal for any other reason is recorded, to say why). If its init
 * ran, its fini and dlclose still wait for reclaim, off the list. */
static void drop_record(struct opreg_registry *reg, struct opreg_plugin *p) {
    struct opreg__plugin_list *l = reg->plugins;
    size_t i = l->count;
    while (i > 0 && l->items[i - 1] != p) /* the newest: the attempt added it */
        i--;
    if (i == 0) return;
    memmove(l->items + i - 1, l->items + i, (l->count - i) * sizeof *l->items);
    l->count--;
    if (p->pending) {
        p->next_gone = l->gone;
        l->gone = p;
    } else {
        free_record(p);
    }
}

/* Replace *dst by a copy of @p s; false, keeping the old text, when memory
 * runs out. */
static bool set_str(char **dst, const char *s) {
    char *d = dup_str(s ? s : "");
    if (!d) return false;
    free(*dst);
    *dst = d;
    return true;
}

/* Record why the load failed; the last error says the same. */
static opreg_status refuse(struct opreg_plugin *p, opreg_status st) {
    p->state = OPREG_PLUGIN_REFUSED;
    /* Code that was unloaded must leave no pointer into it behind; code
     * whose init ran stays mapped until reclaim, for its fini. */
    if (!p->pending) memset(&p->desc, 0, sizeof p->desc);
    snprintf(p->reason, REASON_CAP, "%s", opreg_last_error());
    return st;
}

static bool valid_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 31) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

/* Close what init opened, newest first. */
static void close_libs(struct opreg_plugin *p) {
    pthread_mutex_lock(&p->libs_lock);
    while (p->nlibs > 0)
        opreg_library_close(p->libs[--p->nlibs]);
    pthread_mutex_unlock(&p->libs_lock);
}

/* The description's members that version 1.0 has. */
#define DESC_V1_SIZE (offsetof(opreg_plugin_desc, fini) + sizeof(void (*)(void *)))

static opreg_status check_desc(struct opreg_plugin *p, const opreg_plugin_desc *d) {
    const char *path = p->path;
    if (d->struct_size < offsetof(opreg_plugin_desc, name) + sizeof d->name)
        return opreg__fail(OPREG_ERR_PLUGIN, "plugin %s: its description is too small (%u bytes)",
                           path, d->struct_size);
    unsigned major = d->abi_version >> 16, minor = d->abi_version & 0xffffu;
    const char *name = d->name && valid_name(d->name) ? d->name : "?";
    p->abi_version = d->abi_version;
    if (major != OPREG_PLUGIN_ABI_MAJOR)
        return opreg__fail(OPREG_ERR_ABI_MISMATCH,
                           "plugin '%s' (%s) was built for plugin ABI %u.%u, but this opreg "
                           "has plugin ABI %u.%u: the major versions differ",
                           name, path, major, minor, OPREG_PLUGIN_ABI_MAJOR,
                           OPREG_PLUGIN_ABI_MINOR);
    if (d->struct_size < DESC_V1_SIZE)
        return opreg__fail(OPREG_ERR_PLUGIN,
                           "plugin %s: its description is %u bytes, smaller than version 1.0's "
                           "%zu",
                           path, d->struct_size, (size_t)DESC_V1_SIZE);
    if (!d->name || !valid_name(d->name))
        return opreg__fail(OPREG_ERR_PLUGIN,
                           "plugin %s: its name must be 1 to 31 letters, digits or '_'", path);
    if (!d->init) return opreg__fail(OPREG_ERR_PLUGIN, "plugin '%s' (%s) has no init", name, path);
    return OPREG_OK;
}

static opreg_status run_entry(struct opreg_plugin *p, void *h, opreg_plugin_entry_fn entry,
                              size_t host_size, uint32_t host_version);

/* A plugin from its file: dlopen and dlsym, then run_entry(). With @p entry
 * given, a plugin without a file: run_entry() alone, with no handle. */
static opreg_status load_locked(struct opreg_plugin *p, opreg_plugin_entry_fn entry,
                                size_t host_size, uint32_t host_version) {
    if (entry) return run_entry(p, NULL, entry, host_size, host_version);
    struct stat sb;
    if (stat(p->path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return refuse(p, opreg__fail(OPREG_ERR_IO, "plugin %s: no such file", p->path));
    dlerror();
    void *h = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return refuse(p, opreg__fail(OPREG_ERR_IO, "plugin %s: cannot be loaded: %s", p->path,
                                     e ? e : "unknown error"));
    }
    /* The same file under another path (a link, a copy's hard link): the
     * loader gave back the loaded plugin's own handle; its entry point must
     * not run again over the state of the plugin in use. */
    struct opreg__plugin_list *l = p->reg->plugins;
    for (size_t i = 0; i < l->count; i++) {
        const struct opreg_plugin *o = l->items[i];
        if (o != p && o->state == OPREG_PLUGIN_LOADED && o->handle == h) {
            dlclose(h);
            return refuse(p, opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                                         "plugin %s: the same file is already loaded as plugin "
                                         "'%s' from %s",
                                         p->path, o->name, o->path));
        }
    }
    void *sym = dlsym(h, OPREG_PLUGIN_ENTRY_SYMBOL);
    memcpy(&entry, &sym, sizeof entry); /* object to function pointer, as POSIX allows */
    if (!entry) {
        dlclose(h);
        return refuse(p, opreg__fail(OPREG_ERR_PLUGIN,
                                     "%s is not an opreg plugin: it does not export %s", p->path,
                                     OPREG_PLUGIN_ENTRY_SYMBOL));
    }
    return run_entry(p, h, entry, host_size, host_version);
}

/* The backend members that version 1.0 has: up to synchronize. */
#define BACKEND_V1_SIZE offsetof(opreg_backend, flags)

/* A plugin's backend table holds at least version 1.0's members, as its
 * description does. This is checked from struct_size alone, before
 * opreg__key_claim(), which reads the version and the name first; and a
 * table cut between alloc and free would have its tensors' memory
 * allocated and never released. */
static opreg_status claim_key(opreg_dispatch_key *key, const opreg_backend *b) {
    if (b->struct_size < BACKEND_V1_SIZE)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "backend: struct_size %u is too small for an opreg_backend (version "
                           "1.0's is %zu bytes)",
                           b->struct_size, (size_t)BACKEND_V1_SIZE);
    return opreg__key_claim(key, b);
}

/* Give back the code of a plugin refused before its init ran: its file's
 * handle, or nothing for a plugin without a file. */
static void unmap(void *h) {
    if (h) dlclose(h);
}

/* What follows finding the entry point, the same for a file and for an
 * entry function: the description and its checks, the key, init. @p h is
 * the file's handle, NULL without a file. */
static opreg_status run_entry(struct opreg_plugin *p, void *h, opreg_plugin_entry_fn entry,
                              size_t host_size, uint32_t host_version) {
    struct opreg__plugin_list *l = p->reg->plugins;
    /* The table this plugin gets; a test may lend a smaller, older one. */
    memset(&p->host, 0, sizeof p->host);
    memcpy(&p->host, &host_table, host_size);
    p->host.struct_size = (uint32_t)host_size;
    p->host.abi_version = host_version;
    opreg_clear_error();
    const opreg_plugin_desc *d = entry(&p->host);
    if (!d) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", opreg_last_error());
        unmap(h);
        return refuse(p, opreg__fail(OPREG_ERR_PLUGIN, "plugin %s refused to load: %s", p->path,
                                     msg[0] ? msg : "(no reason given)"));
    }
    /* From here on nothing reads the plugin's memory after dlclose(h):
     * what the messages need is copied into the record first. */
    opreg_status st = check_desc(p, d);
    if (st != OPREG_OK) {
        if (d->struct_size >= offsetof(opreg_plugin_desc, name) + sizeof d->name && d->name &&
            !set_str(&p->name, d->name))
            st = opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "plugin %s: out of memory", p->path);
        unmap(h);
        return refuse(p, st);
    }
    memset(&p->desc, 0, sizeof p->desc);
    memcpy(&p->desc, d, d->struct_size < sizeof p->desc ? d->struct_size : sizeof p->desc);
    if (!set_str(&p->name, d->name) || !set_str(&p->version, d->version)) {
        unmap(h);
        return refuse(p, opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "plugin %s: out of memory", p->path));
    }
    for (size_t i = 0; i < l->count; i++) {
        const struct opreg_plugin *o = l->items[i];
        if (o != p && o->state == OPREG_PLUGIN_LOADED && strcmp(o->name, p->name) == 0) {
            unmap(h);
            return refuse(p, opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                                         "plugin '%s' (%s): a plugin of that name is already "
                                         "loaded from %s",
                                         p->name, p->path, o->path));
        }
    }
    char where[1024];
    snprintf(where, sizeof where, "plugin '%s' (%s)", p->name, p->path);
    if (!set_str(&p->where, where)) {
        unmap(h);
        return refuse(p, opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "plugin %s: out of memory", p->path));
    }
    opreg_dispatch_key key = OPREG_KEY_NONE;
    if (p->desc.backend && (st = claim_key(&key, p->desc.backend)) != OPREG_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", opreg_last_error());
        unmap(h);
        return refuse(p, opreg__fail(st, "plugin '%s' (%s): %s", p->name, p->path, msg));
    }
    p->key = key;
    p->handle = h;
    opreg_clear_error();
    st = p->desc.init(&p->host, p, key, &p->user);
    if (st != OPREG_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", opreg_last_error());
        close_libs(p);
        opreg__fail(st, "plugin '%s' (%s): init failed: %s", p->name, p->path,
                    msg[0] ? msg : opreg_status_str(st));
        if (key != OPREG_KEY_NONE) {
            char why[160];
            snprintf(why, sizeof why, "plugin '%s' failed to initialise", p->name);
            if (st == OPREG_ERR_OUT_OF_MEMORY)
                opreg__key_unclaim(key, why); /* as it was before the attempt */
            else
                opreg__key_release(key, why);
        }
        p->pending = true; /* a call may have reached a kernel meanwhile */
        return refuse(p, st);
    }
    p->state = OPREG_PLUGIN_LOADED;
    return OPREG_OK;
}

static opreg_status load(opreg_plugin **out, opreg_registry *reg, const char *path,
                         opreg_plugin_entry_fn entry, size_t host_size, uint32_t host_version) {
    if (out) *out = NULL;
    if (!reg || !path)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_load: %s is NULL",
                           reg ? "path" : "reg");
    if (host_size < offsetof(opreg_host, library_create) || host_size > sizeof(opreg_host))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_load: bad host table size");
    pthread_mutex_lock(&reg->plugin_lock);
    struct opreg_plugin *p = new_record(reg, path);
    opreg_status st = p ? load_locked(p, entry, host_size, host_version)
                        : opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_plugin_load: out of memory");
    if (p && st == OPREG_ERR_OUT_OF_MEMORY) drop_record(reg, p);
    pthread_mutex_unlock(&reg->plugin_lock);
    if (st == OPREG_OK && out) *out = p;
    return st;
}

opreg_status opreg__plugin_load_with_host(opreg_plugin **out, opreg_registry *reg, const char *path,
                                          size_t host_size, uint32_t host_version) {
    return load(out, reg, path, NULL, host_size, host_version);
}

opreg_status opreg__plugin_load_entry(opreg_plugin **out, opreg_registry *reg,
                                      const char *path_label, opreg_plugin_entry_fn entry) {
    if (!entry) {
        if (out) *out = NULL;
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_load: entry is NULL");
    }
    return load(out, reg, path_label, entry, sizeof(opreg_host), OPREG_PLUGIN_ABI_VERSION);
}

opreg_status opreg_plugin_load(opreg_plugin **out, opreg_registry *reg, const char *path) {
    return opreg__plugin_load_with_host(out, reg, path, sizeof(opreg_host),
                                        OPREG_PLUGIN_ABI_VERSION);
}

void opreg_plugin_unload(opreg_plugin *p) {
    if (!p) return;
    struct opreg_registry *reg = p->reg;
    pthread_mutex_lock(&reg->plugin_lock);
    if (p->state == OPREG_PLUGIN_LOADED) {
        close_libs(p);
        if (p->key != OPREG_KEY_NONE) {
            char why[160];
            snprintf(why, sizeof why, "plugin '%s' was unloaded", p->name);
            opreg__key_release(p->key, why);
        }
        p->state = OPREG_PLUGIN_UNLOADED;
        p->pending = true;
    }
    pthread_mutex_unlock(&reg->plugin_lock);
}

void opreg__plugins_unload_all(struct opreg_registry *reg) {
    struct opreg__plugin_list *l = reg->plugins;
    for (size_t i = 0; l && i < l->count; i++)
        opreg_plugin_unload(l->items[i]);
}

static void reclaim_one(struct opreg_plugin *p) {
    if (!p->pending) return;
    if (p->desc.fini) p->desc.fini(p->user);
    p->user = NULL;
    if (p->handle) dlclose(p->handle);
    p->handle = NULL;
    p->pending = false;
}

/* Under plugin_lock, after the retired list has run. */
void opreg__plugins_reclaim(struct opreg_registry *reg) {
    struct opreg__plugin_list *l = reg->plugins;
    for (size_t i = 0; l && i < l->count; i++)
        reclaim_one(l->items[i]);
    while (l && l->gone) {
        struct opreg_plugin *p = l->gone;
        l->gone = p->next_gone;
        reclaim_one(p);
        free_record(p);
    }
}

void opreg__plugins_free(struct opreg_registry *reg) {
    struct opreg__plugin_list *l = reg->plugins;
    if (!l) return;
    for (size_t i = 0; i < l->count; i++)
        free_record(l->items[i]);
    free(l->items);
    free(l);
    reg->plugins = NULL;
}

/* ---- search and listing ------------------------------------------------------ */

static char plugin_dir[4096];
static pthread_once_t plugin_dir_once = PTHREAD_ONCE_INIT;

/* <folder of the file holding this code>/OPREG_PLUGIN_DIR_FROM_LIB when that
 * folder exists (an installed libopreg.so, wherever its prefix now is),
 * else the configured install folder (a build tree, a static link). */
static void find_plugin_dir(void) {
    Dl_info info;
    struct stat st;
    snprintf(plugin_dir, sizeof plugin_dir, "%s", OPREG_PLUGIN_INSTALL_DIR);
    if (!dladdr(plugin_dir, &info) || !info.dli_fname) return; /* an object of this file */
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    char here[sizeof plugin_dir];
    int n = snprintf(here, sizeof here, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                     OPREG_PLUGIN_DIR_FROM_LIB);
    if (n > 0 && (size_t)n < sizeof here && stat(here, &st) == 0 && S_ISDIR(st.st_mode))
        memcpy(plugin_dir, here, (size_t)n + 1);
}

const char *opreg_plugin_dir(void) {
    pthread_once(&plugin_dir_once, find_plugin_dir);
    return plugin_dir;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool loaded_from(struct opreg_registry *reg, const char *path) {
    bool found = false;
    pthread_mutex_lock(&reg->plugin_lock);
    struct opreg__plugin_list *l = reg->plugins;
    for (size_t i = 0; l && i < l->count && !found; i++)
        found = l->items[i]->state == OPREG_PLUGIN_LOADED && strcmp(l->items[i]->path, path) == 0;
    pthread_mutex_unlock(&reg->plugin_lock);
    return found;
}

/* Load the *.so files of one folder, in name order. Out of memory for the
 * folder's listing (nothing of it is loaded then) or for a load sets *oom. */
static size_t load_dir(struct opreg_registry *reg, const char *dir, size_t len, bool *oom) {
    char path[4096];
    if (len == 0 || len >= sizeof path - 2) return 0;
    memcpy(path, dir, len);
    path[len] = '\0';
    DIR *d = opendir(path);
    if (!d) return 0;
    char **names = NULL;
    size_t n = 0, cap = 0, loaded = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so") != 0) continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 8;
            char **v = realloc(names, c * sizeof *v);
            if (!v) {
                *oom = true;
                break;
            }
            names = v;
            cap = c;
        }
        if ((names[n] = dup_str(e->d_name)) == NULL) {
            *oom = true;
            break;
        }
        n++;
    }
    closedir(d);
    if (*oom) { /* a partial listing would load a different set, in another order */
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        n = 0;
    }
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(path, sizeof path, "%.*s/%s", (int)len, dir, names[i]);
        if (w > 0 && (size_t)w < sizeof path && !loaded_from(reg, path)) {
            opreg_status st = opreg_plugin_load(NULL, reg, path);
            if (st == OPREG_OK) loaded++;
            if (st == OPREG_ERR_OUT_OF_MEMORY) *oom = true;
        }
        free(names[i]);
    }
    free(names);
    return loaded;
}

opreg_status opreg_plugin_load_search(opreg_registry *reg, size_t *loaded) {
    if (loaded) *loaded = 0;
    if (!reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_load_search: reg is NULL");
    size_t count = 0;
    bool oom = false;
    const char *env = getenv("OPREG_PLUGIN_PATH");
    for (const char *s = env; s && *s;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        count += load_dir(reg, s, len, &oom);
        s = colon ? colon + 1 : s + len;
    }
    const char *dir = opreg_plugin_dir();
    count += load_dir(reg, dir, strlen(dir), &oom);
    opreg_clear_error();
    if (loaded) *loaded = count;
    /* A refusal is in the list, with its reason; a load that ran out of
     * memory is not, so it is reported here. */
    if (oom)
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY,
                           "opreg_plugin_load_search: out of memory: some plugins were neither "
                           "loaded nor recorded (%zu loaded)",
                           count);
    return OPREG_OK;
}

size_t opreg_plugin_count(const opreg_registry *reg) {
    if (!reg) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&reg->plugin_lock);
    size_t n = reg->plugins ? reg->plugins->count : 0;
    pthread_mutex_unlock((pthread_mutex_t *)&reg->plugin_lock);
    return n;
}

opreg_status opreg_plugin_info_at(opreg_plugin_info *out, const opreg_registry *reg, size_t i) {
    if (!out || !reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_info_at: %s is NULL",
                           out ? "reg" : "out");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock((pthread_mutex_t *)&reg->plugin_lock);
    const struct opreg__plugin_list *l = reg->plugins;
    opreg_status st = OPREG_OK;
    if (!l || i >= l->count) {
        st = opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                         "opreg_plugin_info_at: index %zu is out of range (%zu plugins)", i,
                         l ? l->count : 0);
    } else {
        const struct opreg_plugin *p = l->items[i];
        out->name = p->name;
        out->version = p->version;
        out->path = p->path;
        out->reason = p->reason;
        out->state = p->state;
        out->abi_version = p->abi_version;
        out->key = p->key;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&reg->plugin_lock);
    return st;
}
