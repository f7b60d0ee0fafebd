/* Helpers shared by every layer of the library: error reporting and logging.
 * Not installed; names carry the opreg__ prefix. */
#ifndef OPREG_COMMON_INTERNAL_H
#define OPREG_COMMON_INTERNAL_H

#include "opreg/common.h"

#include <stdarg.h>

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

#endif
