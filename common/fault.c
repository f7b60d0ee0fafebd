/* The allocation-failure hook (build option OPREG_FAULT_INJECTION; see
 * common/fault.h). This file is compiled only with the option on, and it
 * alone calls the C allocator by its own names: common/internal.h is not
 * included here, so nothing below is redirected back to itself.
 *
 * The counter is process-wide and atomic: a test arms it in one thread, and
 * an allocation in another thread (a plugin's worker) counts the same. */
#define _POSIX_C_SOURCE 200809L
#include "common/fault.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define SITE       __builtin_return_address(0)
#define NOINLINE__ __attribute__((noinline))
#else
#define SITE ((const void *)0)
#define NOINLINE__
#endif

static atomic_ulong countdown; /* allocations until the failure; 0: disarmed */
static atomic_bool persistent;
static atomic_bool failed;
static atomic_bool paused;
static atomic_ulong count;
static void (*_Atomic tracer)(void *, const void *, unsigned long);
static void *_Atomic tracer_user;

void opreg__fi_arm(unsigned long n, bool keep_failing) {
    atomic_store(&persistent, keep_failing);
    atomic_store(&failed, false);
    atomic_store(&count, 0);
    atomic_store(&countdown, n);
}

unsigned long opreg__fi_disarm(void) {
    atomic_store(&persistent, false);
    return atomic_exchange(&countdown, 0);
}

void opreg__fi_pause(bool pause) {
    atomic_store(&paused, pause);
}

unsigned long opreg__fi_count(void) {
    return atomic_load(&count);
}

bool opreg__fi_failed(void) {
    return atomic_load(&failed);
}

void opreg__fi_trace(void (*fn)(void *user, const void *site, unsigned long index), void *user) {
    atomic_store(&tracer_user, user);
    atomic_store(&tracer, fn);
}

/* Count one allocation made at @p site; true when it must fail. */
static bool fail_now(const void *site) {
    if (atomic_load(&paused)) return false;
    unsigned long index = atomic_fetch_add(&count, 1) + 1;
    void (*fn)(void *, const void *, unsigned long) = atomic_load(&tracer);
    if (fn) fn(atomic_load(&tracer_user), site, index);
    unsigned long left = atomic_load(&countdown);
    while (left > 0) {
        unsigned long next = left == 1 && atomic_load(&persistent) ? 1 : left - 1;
        if (atomic_compare_exchange_weak(&countdown, &left, next)) {
            if (left != 1) return false;
            atomic_store(&failed, true);
            return true;
        }
    }
    return false;
}

NOINLINE__ void *opreg__fi_malloc(size_t size) {
    return fail_now(SITE) ? NULL : malloc(size);
}

NOINLINE__ void *opreg__fi_calloc(size_t n, size_t size) {
    return fail_now(SITE) ? NULL : calloc(n, size);
}

NOINLINE__ void *opreg__fi_realloc(void *ptr, size_t size) {
    return fail_now(SITE) ? NULL : realloc(ptr, size);
}

NOINLINE__ void *opreg__fi_aligned_alloc(size_t align, size_t size) {
    return fail_now(SITE) ? NULL : aligned_alloc(align, size);
}

NOINLINE__ char *opreg__fi_strdup(const char *s) {
    return fail_now(SITE) ? NULL : strdup(s);
}

NOINLINE__ char *opreg__fi_strndup(const char *s, size_t n) {
    return fail_now(SITE) ? NULL : strndup(s, n);
}
