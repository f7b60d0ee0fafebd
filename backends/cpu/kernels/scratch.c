/* Per-thread scratch for the CPU kernels (kern_internal.h). A buffer per
 * thread rather than arrays on the stack: a kernel's range function runs on
 * whatever thread the pool gives it, and a host that lends its pool
 * (opreg_set_parallel_for) may give threads with small stacks (musl's
 * default is 128 KiB); rather than an allocation per call: a call's range
 * functions run many times a call, and a fresh 256 KiB block would be fresh
 * pages every time. */
#include "backends/cpu/kernels/kern_internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct scratch {
    void *p;
    size_t cap;
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_status;
static bool key_ready; /* created, and not yet deleted by scratch_unload */

static void scratch_free(void *p) {
    struct scratch *s = p;
    free(s->p);
    free(s);
}

static void key_init(void) {
    key_status = pthread_key_create(&key, scratch_free);
    key_ready = key_status == 0;
}

/* Unloading the library: the key goes, so that no thread that outlives the
 * library's code calls scratch_free at its exit. This thread's scratch is
 * freed; other live threads' stay allocated (a few hundred KiB each, once). */
__attribute__((destructor)) static void scratch_unload(void) {
    struct scratch *s;
    if (!key_ready) return;
    s = pthread_getspecific(key);
    if (s) scratch_free(s);
    pthread_key_delete(key);
    key_ready = false;
}

void *opreg__cpu_scratch(size_t bytes) {
    struct scratch *s;
    pthread_once(&key_once, key_init);
    if (key_status != 0) return NULL;
    s = pthread_getspecific(key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap < bytes) {
        /* whole pages, and never less than asked for (no wrap past SIZE_MAX) */
        size_t cap = (bytes + 4095u) & ~(size_t)4095u;
        void *p = cap < bytes ? NULL : aligned_alloc(64, cap);
        if (!p) return NULL;
        free(s->p);
        s->p = p;
        s->cap = cap;
    }
    return s->p;
}
