/* Per-thread scratch for the CPU kernels (kern_internal.h). A buffer per
 * thread rather than arrays on the stack: a kernel's range function runs on
 * whatever thread the pool gives it, and a host that lends its pool
 * (opreg_set_parallel_for) may give threads with small stacks (musl's
 * default is 128 KiB); rather than an allocation per call: a call's range
 * functions run many times a call, and a fresh 256 KiB block would be fresh
 * pages every time.
 *
 * The key is one of opreg's thread keys (common/thread_keys.h): deleted
 * when the library is unloaded, after opreg's workers have exited and
 * freed their scratch, so that a host thread outliving the library does
 * not call scratch_free at its exit; after that, no scratch is had (the
 * kernels then take their portable way). */
#include "backends/cpu/kernels/kern_internal.h"
#include "common/internal.h"
#include "common/thread_keys.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_status;

static void scratch_free(void *p) {
    struct opreg__buffer *s = p;
    free(s->p);
    free(s);
}

static void key_init(void) {
    key_status = opreg__thread_key_create(&key, scratch_free);
}

void *opreg__cpu_scratch(size_t bytes) {
    struct opreg__buffer *s;
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
    return opreg__buffer_reserve(s, bytes) ? s->p : NULL;
}
