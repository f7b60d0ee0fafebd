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

/// Marks the functions the library exports (every other symbol is hidden).
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
    X(OPREG_ERR_INTERNAL, 18, "internal error")                                                    \
    X(OPREG_ERR_COMMUNICATION, 19, "collective communication failed")                              \
    X(OPREG_ERR_TIMEOUT, 20, "timed out")                                                          \
    X(OPREG_ERR_MUTATION, 21, "a kernel wrote a read-only argument")

/// Status returned by every fallible function. The numbers are stable: a
/// program may store them, and a plugin built against an older minor version
/// sees the same numbers. opreg_status_str() and opreg_status_name() give
/// their text.
typedef enum opreg_status {
#define OPREG__STATUS_ENUM(name, value, text) name = value,
    OPREG_STATUS_LIST(OPREG__STATUS_ENUM)
#undef OPREG__STATUS_ENUM
} opreg_status;

// Each status code of OPREG_STATUS_LIST is documented here; a code appended
// to the list gets its block too (the `docs` tests check it).
/// @var OPREG_OK
/// The call did what it was asked; its out-parameters are set.
/// @var OPREG_ERR_INVALID_ARGUMENT
/// An argument is NULL where a value is needed, out of range, or malformed
/// (an ill-formed name, an unknown key or dtype, a boxed call's missing or
/// surplus argument). The message names the argument.
/// @var OPREG_ERR_OUT_OF_MEMORY
/// An allocation failed.
/// @var OPREG_ERR_SCHEMA_SYNTAX
/// Schema text does not follow the grammar; the message gives the column
/// and a caret line under the offending token, in PyTorch's wording.
/// @var OPREG_ERR_SCHEMA_INVALID
/// Schema text parses but breaks a rule of the schema language (for
/// example a default of the wrong type, an illegal overload name, or a type
/// variable where registration refuses them).
/// @var OPREG_ERR_NOT_FOUND
/// No op (or dispatch key) of that name; for an op the message lists the
/// nearest names. Also returned by a call through the handle of an op whose
/// defining library was closed.
/// @var OPREG_ERR_ALREADY_DEFINED
/// The op, the namespace's defining library, or the backend name is already
/// registered; the message names both places.
/// @var OPREG_ERR_NAMESPACE_MISMATCH
/// A definition or kernel names a namespace other than its library's.
/// @var OPREG_ERR_NO_KERNEL
/// Dispatch found no kernel for the call's key (no direct kernel, composite
/// kernel or fallback); the message lists the keys that have one.
/// @var OPREG_ERR_BACKEND_UNAVAILABLE
/// The backend of the device is not built in, or cannot run here (no driver
/// or no device); opreg_key_is_available() says why.
/// @var OPREG_ERR_TYPE_MISMATCH
/// A boxed argument's kind does not match the schema's type; the message
/// names the argument and both types.
/// @var OPREG_ERR_DEVICE_MISMATCH
/// The tensors of a call are on different devices, and the kernel does not
/// accept mixed devices; the message names the arguments.
/// @var OPREG_ERR_SHAPE
/// A kernel refuses a tensor's shape, dtype, strides or layout (the
/// catalogue's argument checks, which the Meta, reference and fast kernels
/// share); the message names the argument and what was expected.
/// @var OPREG_ERR_UNSUPPORTED
/// The request is well formed but opreg does not support it: a definition
/// in a kernel-only library, an op with more than 64 arguments, a new
/// backend when every dispatch key is in use.
/// @var OPREG_ERR_ABI_MISMATCH
/// A backend table (or plugin) was built for another major version of the
/// ABI (::OPREG_BACKEND_ABI_VERSION), or is smaller than that version
/// requires.
/// @var OPREG_ERR_PLUGIN
/// A plugin module could not be loaded, or its entry point failed.
/// @var OPREG_ERR_DEVICE
/// The device's runtime (for example CUDA) reported an error; the message
/// carries its text.
/// @var OPREG_ERR_IO
/// Reading or writing a file failed.
/// @var OPREG_ERR_INTERNAL
/// An internal invariant broke, or a library opreg uses failed in a way it
/// does not expect; worth a bug report with the message.
/// @var OPREG_ERR_COMMUNICATION
/// A process group's engine (MPI, NCCL) reported an error, or a rank of
/// the group failed; the message names the op, the group, this rank and
/// carries the engine's text (include/opreg/collective.h).
/// @var OPREG_ERR_TIMEOUT
/// A collective did not finish within its group's timeout; the group was
/// aborted and cannot be used again.
/// @var OPREG_ERR_MUTATION
/// The mutation sanitizer (opreg/mutation.h, in ::OPREG_MUTATION_FAIL mode)
/// saw the kernel change a tensor argument that the op's schema does not
/// mark written; the message names the op, the key, the argument and where
/// the kernel was registered. The kernel did run: its outputs are written.

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

/// Set this thread's last error to @p message (copied; NULL gives "") and
/// return @p status: for libraries built on opreg (process-group engines,
/// wrappers) whose functions report failures the way opreg's own do.
/// Plugins use their host table's `set_error` instead.
OPREG_API opreg_status opreg_set_error(opreg_status status, const char *message);

/// The run-time version, "MAJOR.MINOR.PATCH". The string is static.
OPREG_API const char *opreg_version(void);

/// Log levels for the optional log callback.
typedef enum opreg_log_level {
    OPREG_LOG_DEBUG = 0, ///< detail, for debugging
    OPREG_LOG_INFO = 1,  ///< information
    OPREG_LOG_WARN = 2,  ///< something probably unintended, such as a replaced kernel
    OPREG_LOG_ERROR = 3, ///< a failure
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
