/* Status strings, the thread-local last error, the version and the log sink. */
#include "common/internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define ERROR_CAPACITY 4096

static _Thread_local char last_error[ERROR_CAPACITY];

const char *opreg_status_str(opreg_status status) {
    switch (status) {
#define CASE(name, value, text)                                                                    \
    case name:                                                                                     \
        return text;
        OPREG_STATUS_LIST(CASE)
#undef CASE
    }
    return "unknown status";
}

const char *opreg_status_name(opreg_status status) {
    switch (status) {
#define CASE(name, value, text)                                                                    \
    case name:                                                                                     \
        return #name;
        OPREG_STATUS_LIST(CASE)
#undef CASE
    }
    return "OPREG_UNKNOWN";
}

const char *opreg_last_error(void) {
    return last_error;
}

void opreg_clear_error(void) {
    last_error[0] = '\0';
}

opreg_status opreg_set_error(opreg_status status, const char *message) {
    snprintf(last_error, sizeof last_error, "%s", message ? message : "");
    return status;
}

const char *opreg_version(void) {
#define STR_(x) #x
#define STR(x)  STR_(x)
    return STR(OPREG_VERSION_MAJOR) "." STR(OPREG_VERSION_MINOR) "." STR(OPREG_VERSION_PATCH);
#undef STR
#undef STR_
}

opreg_status opreg__vfail(opreg_status status, const char *fmt, va_list ap) {
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return status;
}

opreg_status opreg__fail(opreg_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    opreg__vfail(status, fmt, ap);
    va_end(ap);
    return status;
}

opreg_status opreg__fail_text(opreg_status status, const char *text, size_t len) {
    if (len >= sizeof last_error) len = sizeof last_error - 1;
    memmove(last_error, text, len);
    last_error[len] = '\0';
    return status;
}

/* The sink is swapped as one pointer so that a concurrent log call sees either
 * the old or the new callback with its own user pointer. */
struct log_sink {
    opreg_log_fn fn;
    void *user;
    opreg_log_level min_level;
};

static struct log_sink sinks[2];
static _Atomic(struct log_sink *) current_sink;
static atomic_int next_sink;

void opreg_set_log_callback(opreg_log_fn fn, void *user, opreg_log_level min_level) {
    if (!fn) {
        atomic_store(&current_sink, NULL);
        return;
    }
    /* Two slots: the one not in use is filled, then published. */
    int slot = atomic_fetch_add(&next_sink, 1) & 1;
    sinks[slot] = (struct log_sink){ fn, user, min_level };
    atomic_store(&current_sink, &sinks[slot]);
}

void opreg__log(opreg_log_level level, const char *fmt, ...) {
    struct log_sink *sink = atomic_load(&current_sink);
    if (!sink || level < sink->min_level) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sink->fn(sink->user, level, msg);
}
