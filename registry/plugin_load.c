/* The plugin loader: a plugin's file and its entry point, the description
 * and its ABI check, the backend's key, init with rollback, unload, and the
 * records. Every attempt is recorded in the registry's plugin list, so
 * `opreg plugins` can say what was refused and why.
 *
 * Lifetimes: a plugin's code may be running in a kernel, or in a kernel
 * context's release function, until opreg_registry_reclaim(); so its `fini`
 * and dlclose() are deferred to reclaim (after the retired list has run) or
 * to destroy, never done at unload or after a failed init. Lock order:
 * plugin_lock, then the registry's lock (taken by the library functions). */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "registry/plugin_internal.h"

#include <stdio.h>
#include <sys/stat.h>

/* A refusal's reason is written into room made with the record, so that
 * recording it cannot fail. */
#define REASON_CAP 4096

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
    p->path = opreg__plugin_dup(path);
    p->name = opreg__plugin_dup("");
    p->version = opreg__plugin_dup("");
    p->reason = calloc(1, REASON_CAP);
    p->where = opreg__plugin_dup(path);
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
    char *d = opreg__plugin_dup(s ? s : "");
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

/* A plugin from its file: open it and find its entry point, then
 * run_entry(). With @p entry given, a plugin without a file: run_entry()
 * alone, with no handle. */
static opreg_status load_locked(struct opreg_plugin *p, opreg_plugin_entry_fn entry,
                                size_t host_size, uint32_t host_version) {
    if (entry) return run_entry(p, NULL, entry, host_size, host_version);
    struct stat sb;
    if (stat(p->path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return refuse(p, opreg__fail(OPREG_ERR_IO, "plugin %s: no such file", p->path));
    const char *why = NULL;
    void *h = opreg__dl_open(p->path, &why);
    if (!h)
        return refuse(p,
                      opreg__fail(OPREG_ERR_IO, "plugin %s: cannot be loaded: %s", p->path, why));
    /* The same file under another path (a link, a copy's hard link): the
     * loader gave back the loaded plugin's own handle; its entry point must
     * not run again over the state of the plugin in use. */
    struct opreg__plugin_list *l = p->reg->plugins;
    for (size_t i = 0; i < l->count; i++) {
        const struct opreg_plugin *o = l->items[i];
        if (o != p && o->state == OPREG_PLUGIN_LOADED && o->handle == h) {
            opreg__dl_close(h);
            return refuse(p, opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                                         "plugin %s: the same file is already loaded as plugin "
                                         "'%s' from %s",
                                         p->path, o->name, o->path));
        }
    }
    entry = (opreg_plugin_entry_fn)opreg__dl_func(h, OPREG_PLUGIN_ENTRY_SYMBOL);
    if (!entry) {
        opreg__dl_close(h);
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
    if (h) opreg__dl_close(h);
}

/* What follows finding the entry point, the same for a file and for an
 * entry function: the description and its checks, the key, init. @p h is
 * the file's handle, NULL without a file. */
static opreg_status run_entry(struct opreg_plugin *p, void *h, opreg_plugin_entry_fn entry,
                              size_t host_size, uint32_t host_version) {
    struct opreg__plugin_list *l = p->reg->plugins;
    /* The table this plugin gets; a test may lend a smaller, older one. */
    memset(&p->host, 0, sizeof p->host);
    memcpy(&p->host, &opreg__plugin_host, host_size);
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
    if (p->handle) opreg__dl_close(p->handle);
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
