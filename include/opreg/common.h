/// @file common.h
/// @brief Version, export macro, status codes, the thread-local last error and logging.
///
/// Every fallible opreg function returns an ::opreg_status. When it is not
/// ::OPREG_OK, opreg_last_error() holds a message for the calling thread that
/// names the object, the argument and the reason.
#ifndef OPREG_COMMON_H
#define OPREG_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Major version: changes only with an incompatible ABI change.
#define OPREG_VERSION_MAJOR 0
/// Minor version: grows when functions or enumerators are appended.
#define OPREG_VERSION_MINOR 1
/// Patch version: fixes only.
#define OPREG_VERSION_PATCH 0

#if defined(_WIN32)
#define OPREG_API __declspec(dllexport)
#elif defined(__GNUC__)
#define OPREG_API __attribute__((visibility("default")))
#else
#define OPREG_API
#endif

/// The status codes, as an X-macro: name, stable number, description.
/// Codes are only ever appended; a number is never reused or renumbered.
#define OPREG_STATUS_LIST(X)                                                                       \
    X(OPREG_OK, 0, "success")                                                                      \
    X(OPREG_ERR_INVALID_ARGUMENT, 1, "invalid argument")                                           \
    X(OPREG_ERR_OUT_OF_MEMORY, 2, "out of memory")                                                 \
    X(OPREG_ERR_SCHEMA_SYNTAX, 3, "schema syntax error")                                           \
    X(OPREG_ERR_SCHEMA_INVALID, 4, "schema is well formed but not valid")                          \
    X(OPREG_ERR_NOT_FOUND, 5, "no such operator")                                                  \
    X(OPREG_ERR_ALREADY_DEFINED, 6, "operator already defined")                                    \
    X(OPREG_ERR_NAMESPACE_MISMATCH, 7, "namespace does not match the library")                     \
    X(OPREG_ERR_NO_KERNEL, 8, "no kernel for the dispatch key")                                    \
    X(OPREG_ERR_BACKEND_UNAVAILABLE, 9, "backend unavailable")                                     \
    X(OPREG_ERR_TYPE_MISMATCH, 10, "argument type mismatch")                                       \
    X(OPREG_ERR_DEVICE_MISMATCH, 11, "tensors on different devices")                               \
    X(OPREG_ERR_SHAPE, 12, "unsupported shape, dtype or layout")                                   \
    X(OPREG_ERR_UNSUPPORTED, 13, "not supported")                                                  \
    X(OPREG_ERR_ABI_MISMATCH, 14, "ABI version mismatch")                                          \
    X(OPREG_ERR_PLUGIN, 15, "plugin failed to load")                                               \
    X(OPREG_ERR_DEVICE, 16, "device runtime error")                                                \
    X(OPREG_ERR_IO, 17, "input/output error")                                                      \
    X(OPREG_ERR_INTERNAL, 18, "internal error")

/// Status returned by every fallible function.
typedef enum opreg_status {
#define OPREG__STATUS_ENUM(name, value, text) name = value,
    OPREG_STATUS_LIST(OPREG__STATUS_ENUM)
#undef OPREG__STATUS_ENUM
} opreg_status;

/// The short description of a status code, e.g. "schema syntax error".
/// Never NULL; an unknown code gives "unknown status". The string is static.
OPREG_API const char *opreg_status_str(opreg_status status);

/// The symbolic name of a status code, e.g. "OPREG_ERR_SCHEMA_SYNTAX".
/// Never NULL; an unknown code gives "OPREG_UNKNOWN". The string is static.
OPREG_API const char *opreg_status_name(opreg_status status);

/// The message of the last failed call on this thread, or "" if none failed.
/// The string is owned by opreg and stays valid until the next opreg call on
/// the same thread; copy it to keep it.
OPREG_API const char *opreg_last_error(void);

/// Forget the last error of this thread; opreg_last_error() then returns "".
OPREG_API void opreg_clear_error(void);

/// The run-time version, "MAJOR.MINOR.PATCH". The string is static.
OPREG_API const char *opreg_version(void);

/// Log levels for the optional log callback.
typedef enum opreg_log_level {
    OPREG_LOG_DEBUG = 0,
    OPREG_LOG_INFO = 1,
    OPREG_LOG_WARN = 2,
    OPREG_LOG_ERROR = 3,
} opreg_log_level;

/// A log sink. @p message is only valid during the call.
typedef void (*opreg_log_fn)(void *user, opreg_log_level level, const char *message);

/// Install a process-wide log callback (NULL removes it). opreg never prints
/// by itself: without a callback, log messages are dropped. The callback may
/// be called from any thread that calls into opreg. @p user is not owned.
OPREG_API void opreg_set_log_callback(opreg_log_fn fn, void *user, opreg_log_level min_level);

#ifdef __cplusplus
}
#endif

#endif
