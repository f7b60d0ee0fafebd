/* Dispatch keys: the process-wide list of backends, the map from DLPack
 * device types to keys, and availability.
 *
 * The built-in keys are initialised statically, so the call path never waits
 * for an init. This file is the one place that names the built-in backends
 * (backends/cpu, backends/meta); CUDA's table is attached by the CUDA backend
 * with opreg_key_attach_backend() and is a stub until then. Keys are only
 * appended: a slot is filled, then key_count is published (release). */
#include "registry/internal.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/meta/meta_backend.h"
#ifdef OPREG_HAVE_CUDA
#include "backends/cuda/cuda_internal.h"
#endif

#include <stdio.h>
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

static bool cuda_stub_available(void *context, char *why, size_t cap) {
    (void)context;
    if (why && cap) snprintf(why, cap, "opreg was built without the CUDA backend");
    return false;
}

static const opreg_backend cuda_stub = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "cuda",
    .device_type = kDLCUDA,
    .is_available = cuda_stub_available,
};

struct key_slot {
    char display[32];
    _Atomic(const opreg_backend *) backend;
    opreg_backend copy; /* plugin and attached tables live here */
    char why[256];      /* why it is unavailable */
};

static struct key_slot keys[OPREG_MAX_KEYS] = {
    [OPREG_KEY_CPU] = { .display = "CPU", .backend = &opreg__cpu_backend },
    [OPREG_KEY_CUDA] = { .display = "CUDA",
                         .backend = &cuda_stub,
                         .why = "opreg was built without the CUDA backend" },
    [OPREG_KEY_META] = { .display = "Meta", .backend = &opreg__meta_backend },
    [OPREG_KEY_REFERENCE] = { .display = "Reference", .backend = &opreg__reference_backend },
};
static _Atomic int key_count = 4;
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

static opreg_status check_table(const opreg_backend *b) {
    if (!b) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "backend: the table is NULL");
    unsigned major = b->abi_version >> 16, ours = OPREG_BACKEND_ABI_VERSION >> 16;
    if (major != ours)
        return opreg__fail(OPREG_ERR_ABI_MISMATCH,
                           "backend '%s': ABI version %u.%u is not compatible with this "
                           "library's %u.%u (major versions differ)",
                           b->name ? b->name : "?", major, b->abi_version & 0xffffu, ours,
                           OPREG_BACKEND_ABI_VERSION & 0xffffu);
    if (b->struct_size < offsetof(opreg_backend, is_available))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "backend: struct_size %u is too small for an opreg_backend",
                           b->struct_size);
    if (!b->name || !*b->name || strlen(b->name) >= sizeof keys[0].display)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "backend: name must be 1 to 31 characters");
    return OPREG_OK;
}

/* Copy what the producer's struct_size covers; the rest stays NULL. */
static void fill_slot(int k, const opreg_backend *b) {
    struct key_slot *s = &keys[k];
    memset(&s->copy, 0, sizeof s->copy);
    size_t n = b->struct_size < sizeof s->copy ? b->struct_size : sizeof s->copy;
    memcpy(&s->copy, b, n);
    s->copy.struct_size = sizeof s->copy;
    bool ok = true;
    s->why[0] = '\0';
    if (s->copy.is_available) ok = s->copy.is_available(s->copy.context, s->why, sizeof s->why);
    if (!ok && !s->why[0]) snprintf(s->why, sizeof s->why, "the backend says it is unavailable");
    atomic_store_explicit(&s->backend, &s->copy, memory_order_release);
    if (ok)
        atomic_fetch_or(&opreg__avail_mask, 1u << k);
    else
        atomic_fetch_and(&opreg__avail_mask, ~(1u << k));
}

opreg_status opreg_key_register(opreg_dispatch_key *out, const opreg_backend *backend) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_key_register: out is NULL");
    *out = OPREG_KEY_NONE;
    OPREG__TRY(check_table(backend));
    pthread_mutex_lock(&key_lock);
    int n = atomic_load_explicit(&key_count, memory_order_relaxed);
    for (int k = 0; k < n; k++) {
        const opreg_backend *b = atomic_load_explicit(&keys[k].backend, memory_order_relaxed);
        if (name_eq(b->name, backend->name) || b->device_type == backend->device_type) {
            pthread_mutex_unlock(&key_lock);
            return opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                               "backend '%s': key %s already handles %s device type %d",
                               backend->name, keys[k].display,
                               b->device_type == backend->device_type ? "the" : "the name, and",
                               (int)b->device_type);
        }
    }
    if (n >= OPREG_MAX_KEYS) {
        pthread_mutex_unlock(&key_lock);
        return opreg__fail(OPREG_ERR_UNSUPPORTED, "backend '%s': all %d dispatch keys are in use",
                           backend->name, OPREG_MAX_KEYS);
    }
    snprintf(keys[n].display, sizeof keys[n].display, "%s", backend->name);
    fill_slot(n, backend);
    if ((uint32_t)backend->device_type < 64u &&
        atomic_load_explicit(&opreg__devmap[backend->device_type], memory_order_relaxed) == 0)
        atomic_store_explicit(&opreg__devmap[backend->device_type], (int8_t)(n + 1),
                              memory_order_relaxed);
    atomic_store_explicit(&key_count, n + 1, memory_order_release);
    pthread_mutex_unlock(&key_lock);
    *out = n;
    return OPREG_OK;
}

opreg_status opreg_key_attach_backend(opreg_dispatch_key key, const opreg_backend *backend) {
    if (key != OPREG_KEY_CUDA)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_key_attach_backend: key %d is not a built-in key without a "
                           "backend (only CUDA is)",
                           (int)key);
    OPREG__TRY(check_table(backend));
    pthread_mutex_lock(&key_lock);
    fill_slot(key, backend);
    pthread_mutex_unlock(&key_lock);
    return OPREG_OK;
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

/* The CUDA backend attaches its table on first need: here, for the queries
 * that a program may make before it creates a registry, and when a registry
 * is created (opreg_registry_create). */
void opreg__keys_init(void) {
#ifdef OPREG_HAVE_CUDA
    opreg__cuda_attach();
#endif
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
