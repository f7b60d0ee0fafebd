/* Dispatch keys: the process-wide list of backends, the map from DLPack
 * device types to keys, and availability.
 *
 * The built-in keys (CPU, CUDA, Meta, Reference) exist from the start, with
 * their names, device types and the call path's availability bits
 * initialised statically, so the call path never waits for an init. Their
 * tables are attached by the code that assembles the built-ins
 * (builtins/builtins.c, through opreg__builtin_keys()) before any table is
 * read: this file names no backend. Keys are only appended: a slot is
 * filled, then key_count is published (release). */
#include "registry/builtins.h"
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ASCII case-insensitive equality (strcasecmp is POSIX, not C11). */
static bool name_eq(const char *a, const char *b) {
    for (;; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a + 32) : *a;
        char y = (*b >= 'A' && *b <= 'Z') ? (char)(*b + 32) : *b;
        if (x != y) return false;
        if (!x) return true;
    }
}

static bool unattached_available(void *context, char *why, size_t cap) {
    (void)context;
    if (why && cap) snprintf(why, cap, "no backend is attached to this key");
    return false;
}

/* A built-in key before its table is attached: the name and the device type
 * that lookups by name and by device read, and nothing to call. */
#define UNATTACHED(n, type)                                                                        \
    {                                                                                              \
        .struct_size = sizeof(opreg_backend), .abi_version = OPREG_BACKEND_ABI_VERSION, .name = n, \
        .device_type = type, .is_available = unattached_available,                                 \
    }
static const opreg_backend unattached[] = {
    [OPREG_KEY_CPU] = UNATTACHED("cpu", kDLCPU),
    [OPREG_KEY_CUDA] = UNATTACHED("cuda", kDLCUDA),
    [OPREG_KEY_META] = UNATTACHED("meta", OPREG_DEVICE_META),
    [OPREG_KEY_REFERENCE] = UNATTACHED("reference", kDLCPU),
};
#undef UNATTACHED
#define BUILTIN_KEYS ((int)(sizeof unattached / sizeof unattached[0]))

struct key_slot {
    char display[32];
    _Atomic(const opreg_backend *) backend;
    opreg_backend copy; /* attached tables and opreg_key_register()'s live here */
    char why[256];      /* why it is unavailable */
    bool plugin;        /* obtained by a plugin: its tables are allocated */
    bool released;      /* its plugin is gone: the next of that name may claim it */
    /* Every table a plugin key has had, newest first: a reader may still
     * hold an old one, so none is freed (there is one per load or unload). */
    struct plugin_table *tables;
    /* The table its release will publish, made when it was claimed, so that
     * a release cannot fail: the plugin's table, which points into code about
     * to be unloaded, must not stay. */
    struct plugin_table *release_stub;
    char prev_why[256]; /* why it was unavailable before it was taken back */
};

struct plugin_table {
    opreg_backend b; /* first: the table's address is the struct's */
    struct plugin_table *prev;
};

static struct key_slot keys[OPREG_MAX_KEYS] = {
    [OPREG_KEY_CPU] = { .display = "CPU", .backend = &unattached[OPREG_KEY_CPU] },
    [OPREG_KEY_CUDA] = { .display = "CUDA",
                         .backend = &unattached[OPREG_KEY_CUDA],
                         .why = "no backend is attached to this key" },
    [OPREG_KEY_META] = { .display = "Meta", .backend = &unattached[OPREG_KEY_META] },
    [OPREG_KEY_REFERENCE] = { .display = "Reference", .backend = &unattached[OPREG_KEY_REFERENCE] },
};
static _Atomic int key_count = BUILTIN_KEYS;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

_Atomic(int8_t) opreg__devmap[64] = {
    [kDLCPU] = OPREG_KEY_CPU + 1,
    [kDLCUDAHost] = OPREG_KEY_CPU + 1, /* pinned host memory: the CPU reads it */
    [kDLCUDA] = OPREG_KEY_CUDA + 1,
    [kDLCUDAManaged] = OPREG_KEY_CUDA + 1,
};
_Atomic uint32_t opreg__avail_mask =
    (1u << OPREG_KEY_CPU) | (1u << OPREG_KEY_META) | (1u << OPREG_KEY_REFERENCE);

int32_t opreg__key_of_type_slow(int32_t device_type) {
    int n = atomic_load_explicit(&key_count, memory_order_acquire);
    for (int k = 0; k < n; k++) {
        const opreg_backend *b = atomic_load_explicit(&keys[k].backend, memory_order_acquire);
        if (b->device_type == device_type) return k;
    }
    return OPREG__KEY_UNKNOWN;
}

/* Nothing past what struct_size covers is read: the size first, then the
 * version, then the name (only when the table holds it). */
static opreg_status check_table(const opreg_backend *b) {
    if (!b) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "backend: the table is NULL");
    if (b->struct_size < offsetof(opreg_backend, name))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "backend: struct_size %u is too small for an opreg_backend",
                           b->struct_size);
    bool has_name = b->struct_size >= offsetof(opreg_backend, name) + sizeof b->name;
    unsigned major = b->abi_version >> 16, ours = OPREG_BACKEND_ABI_VERSION >> 16;
    if (major != ours)
        return opreg__fail(OPREG_ERR_ABI_MISMATCH,
                           "backend '%s': ABI version %u.%u is not compatible with this "
                           "library's %u.%u (major versions differ)",
                           has_name && b->name ? b->name : "?", major, b->abi_version & 0xffffu,
                           ours, OPREG_BACKEND_ABI_VERSION & 0xffffu);
    if (b->struct_size < offsetof(opreg_backend, is_available))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "backend: struct_size %u is too small for an opreg_backend",
                           b->struct_size);
    if (!b->name || !*b->name || strlen(b->name) >= sizeof keys[0].display)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "backend: name must be 1 to 31 characters");
    /* memory that could not be given back would leak with every tensor */
    bool has_alloc = b->struct_size >= offsetof(opreg_backend, alloc) + sizeof b->alloc && b->alloc;
    bool has_free = b->struct_size >= offsetof(opreg_backend, free) + sizeof b->free && b->free;
    if (has_alloc && !has_free)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "backend '%s': it has alloc but no free (struct_size %u)", b->name,
                           b->struct_size);
    return OPREG_OK;
}

/* Copy what the producer's struct_size covers into @p copy (the rest stays
 * NULL) and publish it as key k's table. */
static void fill_slot_into(int k, const opreg_backend *b, opreg_backend *copy, bool own_name) {
    struct key_slot *s = &keys[k];
    memset(copy, 0, sizeof *copy);
    size_t n = b->struct_size < sizeof *copy ? b->struct_size : sizeof *copy;
    memcpy(copy, b, n);
    copy->struct_size = sizeof *copy;
    copy->abi_version = OPREG_BACKEND_ABI_VERSION;
    if (own_name) copy->name = s->display; /* a plugin's string goes with its code */
    bool ok = true;
    s->why[0] = '\0';
    if (copy->is_available) ok = copy->is_available(copy->context, s->why, sizeof s->why);
    if (!ok && !s->why[0]) snprintf(s->why, sizeof s->why, "the backend says it is unavailable");
    atomic_store_explicit(&s->backend, copy, memory_order_release);
    if (ok)
        atomic_fetch_or(&opreg__avail_mask, 1u << k);
    else
        atomic_fetch_and(&opreg__avail_mask, ~(1u << k));
}

static void fill_slot(int k, const opreg_backend *b) {
    fill_slot_into(k, b, &keys[k].copy, false);
}

/* Register a new key under key_lock; @p plugin_copy (allocated) or the
 * slot's own copy holds the table. */
static opreg_status register_locked(opreg_dispatch_key *out, const opreg_backend *backend,
                                    opreg_backend *plugin_copy) {
    int n = atomic_load_explicit(&key_count, memory_order_relaxed);
    for (int k = 0; k < n; k++) {
        const opreg_backend *b = atomic_load_explicit(&keys[k].backend, memory_order_relaxed);
        if (name_eq(b->name, backend->name) || b->device_type == backend->device_type) {
            return opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                               "backend '%s': key %s already handles %s device type %d",
                               backend->name, keys[k].display,
                               b->device_type == backend->device_type ? "the" : "the name, and",
                               (int)b->device_type);
        }
    }
    if (n >= OPREG_MAX_KEYS) {
        return opreg__fail(OPREG_ERR_UNSUPPORTED, "backend '%s': all %d dispatch keys are in use",
                           backend->name, OPREG_MAX_KEYS);
    }
    snprintf(keys[n].display, sizeof keys[n].display, "%s", backend->name);
    if (plugin_copy) {
        keys[n].plugin = true;
        fill_slot_into(n, backend, plugin_copy, true);
    } else {
        fill_slot(n, backend);
    }
    if ((uint32_t)backend->device_type < 64u &&
        atomic_load_explicit(&opreg__devmap[backend->device_type], memory_order_relaxed) == 0)
        atomic_store_explicit(&opreg__devmap[backend->device_type], (int8_t)(n + 1),
                              memory_order_relaxed);
    atomic_store_explicit(&key_count, n + 1, memory_order_release);
    *out = n;
    return OPREG_OK;
}

opreg_status opreg_key_register(opreg_dispatch_key *out, const opreg_backend *backend) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_key_register: out is NULL");
    *out = OPREG_KEY_NONE;
    OPREG__TRY(check_table(backend));
    pthread_mutex_lock(&key_lock);
    opreg_status st = register_locked(out, backend, NULL);
    pthread_mutex_unlock(&key_lock);
    return st;
}

/* ---- plugin keys ------------------------------------------------------------
 * A plugin's key is obtained by name when it loads. Keys are never withdrawn:
 * when the plugin is unloaded or its init fails, the key stays, with a table
 * that says it is unavailable and why, and the next plugin of the same name
 * (and device type) takes it over. Each attach gets a table of its own, so a
 * reader that loaded the previous one keeps a valid (if stale) table. */

static bool released_available(void *context, char *why, size_t cap) {
    const struct key_slot *s = context;
    if (why && cap) snprintf(why, cap, "%s", s->why);
    return false;
}

opreg_status opreg__key_claim(opreg_dispatch_key *out, const opreg_backend *backend) {
    *out = OPREG_KEY_NONE;
    OPREG__TRY(check_table(backend));
    struct plugin_table *t = calloc(1, sizeof *t);
    struct plugin_table *stub = calloc(1, sizeof *stub);
    if (!t || !stub) {
        free(t);
        free(stub);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "backend '%s': out of memory", backend->name);
    }
    opreg_backend *copy = &t->b;
    pthread_mutex_lock(&key_lock);
    int n = atomic_load_explicit(&key_count, memory_order_relaxed);
    for (int k = 0; k < n; k++) {
        struct key_slot *s = &keys[k];
        const opreg_backend *b = atomic_load_explicit(&s->backend, memory_order_relaxed);
        if (!name_eq(b->name, backend->name) || !s->released) continue;
        if (b->device_type != backend->device_type) break; /* refused below, by register */
        t->prev = s->tables;
        s->tables = t;
        memcpy(s->prev_why, s->why, sizeof s->prev_why);
        fill_slot_into(k, backend, copy, true);
        s->released = false;
        s->release_stub = stub;
        pthread_mutex_unlock(&key_lock);
        *out = k;
        return OPREG_OK;
    }
    opreg_status st = register_locked(out, backend, copy);
    if (st == OPREG_OK) {
        keys[*out].tables = t;
        keys[*out].release_stub = stub;
        keys[*out].prev_why[0] = '\0';
    }
    pthread_mutex_unlock(&key_lock);
    if (st != OPREG_OK) {
        free(t);
        free(stub);
    }
    return st;
}

/* Publish the stub made at claim time: no allocation, so no failure. */
static void release_locked(struct key_slot *s, int key) {
    struct plugin_table *t = s->release_stub;
    const opreg_backend *old = atomic_load_explicit(&s->backend, memory_order_relaxed);
    atomic_fetch_and(&opreg__avail_mask, ~(1u << key));
    if (t) {
        opreg_backend *stub = &t->b;
        stub->struct_size = sizeof *stub;
        stub->abi_version = OPREG_BACKEND_ABI_VERSION;
        stub->name = s->display;
        stub->device_type = old->device_type;
        stub->flags = old->flags;
        stub->context = s;
        stub->is_available = released_available;
        t->prev = s->tables;
        s->tables = t;
        s->release_stub = NULL;
        atomic_store_explicit(&s->backend, stub, memory_order_release);
    }
    s->released = true;
}

void opreg__key_release(opreg_dispatch_key key, const char *why) {
    if (key < 0 || key >= opreg_key_count() || !keys[key].plugin) return;
    pthread_mutex_lock(&key_lock);
    struct key_slot *s = &keys[key];
    snprintf(s->why, sizeof s->why, "%s", why);
    release_locked(s, key);
    pthread_mutex_unlock(&key_lock);
}

void opreg__key_unclaim(opreg_dispatch_key key, const char *why) {
    if (key < 0 || key >= opreg_key_count() || !keys[key].plugin) return;
    pthread_mutex_lock(&key_lock);
    struct key_slot *s = &keys[key];
    if (s->prev_why[0])
        memcpy(s->why, s->prev_why, sizeof s->why);
    else
        snprintf(s->why, sizeof s->why, "%s", why);
    release_locked(s, key);
    pthread_mutex_unlock(&key_lock);
}

opreg_status opreg__key_attach(opreg_dispatch_key key, const opreg_backend *backend) {
    if (key < 0 || key >= BUILTIN_KEYS)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "key %d is not a built-in key", (int)key);
    OPREG__TRY(check_table(backend));
    pthread_mutex_lock(&key_lock);
    fill_slot(key, backend);
    pthread_mutex_unlock(&key_lock);
    return OPREG_OK;
}

opreg_status opreg_key_attach_backend(opreg_dispatch_key key, const opreg_backend *backend) {
    if (key != OPREG_KEY_CUDA)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_key_attach_backend: key %d is not a built-in key without a "
                           "backend (only CUDA is)",
                           (int)key);
    opreg__keys_init(); /* a later attach of the built-ins must not undo this one */
    return opreg__key_attach(key, backend);
}

opreg_status opreg_key_find(opreg_dispatch_key *out, const char *name) {
    if (!out || !name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_key_find: %s is NULL",
                           out ? "name" : "out");
    *out = OPREG_KEY_NONE;
    if (name_eq(name, "composite")) {
        *out = OPREG_KEY_COMPOSITE;
        return OPREG_OK;
    }
    int n = atomic_load_explicit(&key_count, memory_order_acquire);
    char known[400] = "";
    size_t used = 0;
    for (int k = 0; k < n; k++) {
        const opreg_backend *b = atomic_load_explicit(&keys[k].backend, memory_order_acquire);
        if (name_eq(name, b->name) || name_eq(name, keys[k].display)) {
            *out = k;
            return OPREG_OK;
        }
        if (used < sizeof known)
            used +=
                (size_t)snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "", b->name);
    }
    return opreg__fail(OPREG_ERR_NOT_FOUND, "no dispatch key named '%s'; known keys: %s, composite",
                       name, known);
}

int opreg_key_count(void) {
    return atomic_load_explicit(&key_count, memory_order_acquire);
}

const char *opreg_key_name(opreg_dispatch_key key) {
    if (key == OPREG_KEY_COMPOSITE) return "Composite";
    if (key < 0 || key >= opreg_key_count()) return NULL;
    return keys[key].display;
}

opreg_dispatch_key opreg_key_of_device(DLDevice device) {
    int32_t k = opreg__key_of_type((int32_t)device.device_type);
    return k == OPREG__KEY_UNKNOWN ? OPREG_KEY_NONE : k;
}

static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

/* The built-in tables are attached on first need: here, for the queries
 * that a program may make before it creates a registry, and when a registry
 * is created (opreg_registry_create). */
void opreg__keys_init(void) {
    pthread_once(&builtins_once, opreg__builtin_keys);
}

const opreg_backend *opreg_key_backend(opreg_dispatch_key key) {
    opreg__keys_init();
    if (key < 0 || key >= opreg_key_count()) return NULL;
    return atomic_load_explicit(&keys[key].backend, memory_order_acquire);
}

bool opreg_key_is_available(opreg_dispatch_key key, char *why, size_t cap) {
    opreg__keys_init();
    if (key < 0 || key >= opreg_key_count()) {
        if (why && cap) snprintf(why, cap, "no such dispatch key %d", (int)key);
        return false;
    }
    bool ok = (atomic_load_explicit(&opreg__avail_mask, memory_order_acquire) >> key) & 1u;
    if (!ok && why && cap) {
        pthread_mutex_lock(&key_lock);
        snprintf(why, cap, "%s", keys[key].why);
        pthread_mutex_unlock(&key_lock);
    }
    return ok;
}
