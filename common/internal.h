/* Helpers shared by every layer of the library: error reporting, logging, a
 * reusable aligned buffer and an unaligned word load. Not installed; names
 * carry the opreg__ prefix. */
#ifndef OPREG_COMMON_INTERNAL_H
#define OPREG_COMMON_INTERNAL_H

#include "opreg/common.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Test builds (OPREG_FAULT_INJECTION): the library's allocations go through
 * the counter of common/fault.c, which a test arms to fail the Nth one.
 * Macros here rather than opreg__malloc() wrappers at each call: the release
 * build's code is the plain C calls, unchanged and at no cost, and no new
 * call site can forget a wrapper, since every library file includes this
 * header. Only the library's own calls are redirected (not libc's, the
 * dynamic loader's or a test's), which a global malloc interposer could not
 * tell apart. The system headers come first, so their declarations keep
 * their names. */
#ifdef OPREG_FAULT_INJECTION
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#define malloc(size)               opreg__fi_malloc(size)
#define calloc(n, size)            opreg__fi_calloc(n, size)
#define realloc(ptr, size)         opreg__fi_realloc(ptr, size)
#define aligned_alloc(align, size) opreg__fi_aligned_alloc(align, size)
#define strdup(s)                  opreg__fi_strdup(s)
#define strndup(s, n)              opreg__fi_strndup(s, n)
#endif

#if defined(__GNUC__)
#define OPREG__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OPREG__PRINTF(f, a)
#endif

/* Set this thread's last error to a formatted message and return status. */
opreg_status opreg__fail(opreg_status status, const char *fmt, ...) OPREG__PRINTF(2, 3);
opreg_status opreg__vfail(opreg_status status, const char *fmt, va_list ap);

/* Set this thread's last error to a message given verbatim. */
opreg_status opreg__fail_text(opreg_status status, const char *text, size_t len);

/* Send a message to the log callback, if one is set and the level passes. */
void opreg__log(opreg_log_level level, const char *fmt, ...) OPREG__PRINTF(2, 3);

/* Return from the enclosing function when a status is not OPREG_OK. */
#define OPREG__TRY(expr)                                                                           \
    do {                                                                                           \
        opreg_status opreg__st = (expr);                                                           \
        if (opreg__st != OPREG_OK) return opreg__st;                                               \
    } while (0)

/* A 64-byte-aligned buffer reused call after call (the per-thread scratch
 * of the CPU kernels and of the oneDNN glue); zeroed is empty. */
struct opreg__buffer {
    void *p;
    size_t cap; /* bytes at p, whole pages */
};

/* Makes @p b hold at least @p bytes, in whole pages: its old contents are
 * not kept. false without memory (or for a size past SIZE_MAX's last
 * page), @p b then as it was. Its memory is the caller's, freed with
 * free(b->p). */
bool opreg__buffer_reserve(struct opreg__buffer *b, size_t bytes);

/* Eight bytes at s as one word, in memory order (s must have 8 readable
 * bytes; any alignment). For the schema lexer's reserved words and the
 * registry's name hashing and comparison. */
static inline uint64_t opreg__load8(const char *s) {
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

#endif
