/// @file registry.h
/// @brief Registries, libraries, `def` and `impl`: the registration side.
///
/// A registry holds ops (schemas by name) and their kernels. A *library*
/// is the unit of registration, like PyTorch's `TORCH_LIBRARY`: the one
/// ::OPREG_LIBRARY_DEF library of a namespace owns its definitions, and any
/// number of ::OPREG_LIBRARY_IMPL fragments (`TORCH_LIBRARY_IMPL`) add
/// kernels to it. Closing a library withdraws everything it registered, and
/// restores the kernels it had replaced.
///
/// Registration may run while other threads call ops: see docs/registry.md.
/// Registration functions serialise on a per-registry mutex; calls and
/// queries never lock.
#ifndef OPREG_REGISTRY_H
#define OPREG_REGISTRY_H

#include "opreg/backend.h"
#include "opreg/schema.h"
#include "opreg/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A registry of ops and kernels (opaque).
typedef struct opreg_registry opreg_registry;
/// A library: a set of registrations that is withdrawn as one (opaque).
typedef struct opreg_library opreg_library;
/// An op: a name with its schema and dispatch table (opaque). A handle stays
/// valid, and keeps naming the same op, for the life of its registry.
typedef struct opreg_op opreg_op;

/// The one calling convention of every kernel. @p args holds every argument
/// in schema order, defaults filled in and validated (a typed entry point
/// passes them unchecked). The kernel writes each return into @p rets
/// (`opreg_schema_num_returns()` slots; NULL when the op returns nothing).
/// A returned tensor must come from opreg_tensor_empty() (or be a view from
/// opreg_tensor_view()) and then belongs to the caller; a returned string,
/// list or tuple must be made by opreg_value_pack() and then belongs to the
/// caller too. On failure the kernel leaves no return it made. @p context
/// is the pointer given at registration.
typedef opreg_status (*opreg_kernel_fn)(void *context, const opreg_op *op, const opreg_value *args,
                                        opreg_value *rets);

/// Kernel flags.
enum opreg_kernel_flags {
    /// The kernel accepts tensors on different devices (e.g. `swap_blocks`,
    /// which copies between host and device). The call's key is then the key
    /// of the first tensor that is not on the CPU.
    OPREG_KERNEL_MIXED_DEVICES = 1u << 0,
};

/// A kernel with its context, flags and an optional release function.
typedef struct opreg_kernel {
    opreg_kernel_fn fn; ///< required
    void *context;      ///< passed to fn; not owned unless `release` is set
    /// Called with `context` once no call can still be using it: when the
    /// registry is destroyed, or at opreg_registry_reclaim() after the
    /// registration was withdrawn. Never during a call. May be NULL.
    void (*release)(void *context);
    uint32_t flags; ///< ::opreg_kernel_flags
} opreg_kernel;

/// Create an empty registry; the caller owns it and releases it with
/// opreg_registry_destroy(). `*out` is NULL on failure.
/// @return ::OPREG_OK or ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_registry_create(opreg_registry **out);

/// Destroy a registry: closes its open libraries (their handles become
/// invalid), releases kernel contexts that have a `release` function, and
/// frees every op, schema and table. No thread may be calling into it. NULL
/// is a no-op. The process-default registry must not be destroyed.
OPREG_API void opreg_registry_destroy(opreg_registry *reg);

/// The process-default registry, created on first use with everything built
/// in registered (see docs/registry.md, "Built-in libraries"). It is owned
/// by opreg and lives until the process exits. NULL only when creating it
/// failed (out of memory, or a built-in library failed; see
/// opreg_last_error()), and then every later call returns NULL again.
OPREG_API opreg_registry *opreg_registry_default(void);

/// Free the tables, schemas and kernel contexts that earlier changes
/// withdrew. The caller promises that no thread is inside a call or query
/// on @p reg that started before this function was called (for example,
/// all callers have been joined). Without it, withdrawn memory is kept until
/// opreg_registry_destroy(). NULL is a no-op.
OPREG_API void opreg_registry_reclaim(opreg_registry *reg);

/// The kinds of libraries.
typedef enum opreg_library_kind {
    /// `TORCH_LIBRARY`: defines the ops of its namespace (one per namespace)
    /// and may also register kernels.
    OPREG_LIBRARY_DEF = 0,
    /// `TORCH_LIBRARY_IMPL`: registers kernels only; any number per namespace.
    OPREG_LIBRARY_IMPL = 1,
} opreg_library_kind;

/// Open a library on @p reg for namespace @p ns. @p default_key is the key
/// that opreg_library_impl() uses when given ::OPREG_KEY_NONE (use
/// ::OPREG_KEY_NONE for none). @p file and @p line say where it is declared,
/// for messages (@p file may be NULL; it is copied).
///
/// `*out` receives a library that the caller owns and closes with
/// opreg_library_close(); it is NULL on failure.
/// @return ::OPREG_OK; ::OPREG_ERR_ALREADY_DEFINED for a second DEF library
/// of a namespace (naming both places); ::OPREG_ERR_INVALID_ARGUMENT (NULL,
/// an empty or ill-formed namespace, an unknown key); ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_library_create(opreg_library **out, opreg_registry *reg,
                                            opreg_library_kind kind, const char *ns,
                                            opreg_dispatch_key default_key, const char *file,
                                            int line);

/// Withdraw everything @p lib registered and free the handle. Ops it defined
/// become undefined (lookups fail, calls through cached handles return
/// ::OPREG_ERR_NOT_FOUND); kernels it replaced come back. Once it returns,
/// no new call reaches the library's kernels; calls already running finish
/// normally (nothing they use is freed before opreg_registry_reclaim() or
/// opreg_registry_destroy()). NULL is a no-op.
OPREG_API void opreg_library_close(opreg_library *lib);

/// The first error a library's registrations hit (::OPREG_OK when none); the
/// convenience macros report it. The message was set at the time.
OPREG_API opreg_status opreg_library_status(const opreg_library *lib);

/// Define an op from schema text, as `m.def()`. The namespace may be left
/// out (the library's is used) or must be the library's. Type variables are
/// accepted only in the `aten` and `prim` namespaces. The text is copied.
///
/// `*out` (if @p out is not NULL) receives the op's handle, owned by the
/// registry; NULL on failure.
/// @return ::OPREG_OK; ::OPREG_ERR_SCHEMA_SYNTAX or ::OPREG_ERR_SCHEMA_INVALID
/// (with the parser's message and caret line; an illegal overload name is
/// one); ::OPREG_ERR_NAMESPACE_MISMATCH; ::OPREG_ERR_ALREADY_DEFINED (naming
/// both places); ::OPREG_ERR_UNSUPPORTED (an IMPL library, or more than 64
/// arguments); ::OPREG_ERR_INVALID_ARGUMENT; ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_library_def(const opreg_op **out, opreg_library *lib,
                                         const char *schema);

/// opreg_library_def() that records where the def is written (@p file may be
/// NULL: the library's place is used), so that a duplicate definition names
/// both def() calls, as PyTorch's message does. OPREG_DEF() passes
/// `__FILE__` and `__LINE__`. The file name is copied.
OPREG_API opreg_status opreg_library_def_at(const opreg_op **out, opreg_library *lib,
                                            const char *schema, const char *file, int line);

/// Register @p kernel for op @p name ("rms_norm", "rms_norm.out" or
/// "_C::rms_norm.out"; the namespace must be the library's) on @p key (a
/// backend key, ::OPREG_KEY_COMPOSITE, or ::OPREG_KEY_NONE for the
/// library's default key). The op need not be defined yet: the kernel waits
/// for its definition. A second kernel for the same op and key replaces the
/// first and logs a warning (::OPREG_LOG_WARN, "Overriding a previously
/// registered kernel ..."); closing its library restores the first.
/// The ::opreg_kernel struct is copied.
/// @return ::OPREG_OK, ::OPREG_ERR_NAMESPACE_MISMATCH,
/// ::OPREG_ERR_INVALID_ARGUMENT (NULL fn, bad name, unknown key),
/// ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_library_impl(opreg_library *lib, const char *name,
                                          opreg_dispatch_key key, const opreg_kernel *kernel);

/// opreg_library_impl() with a plain function and context, no flags.
OPREG_API opreg_status opreg_library_impl_fn(opreg_library *lib, const char *name,
                                             opreg_dispatch_key key, opreg_kernel_fn fn,
                                             void *context);

/// Register a fallback for backend key @p key: the kernel of every op (of
/// every namespace) that has neither a direct kernel for @p key nor a
/// composite kernel. A second fallback for a key replaces the first, as
/// kernels do. The struct is copied.
/// @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT, ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_library_fallback(opreg_library *lib, opreg_dispatch_key key,
                                              const opreg_kernel *kernel);

/// The signature of a library's body, as the macros below write it.
typedef void (*opreg_library_body)(opreg_library *lib);

/// Open a library, run @p body on it, and keep it open when every
/// registration succeeded. On failure the library is closed (the registry is
/// left as it was) and the first error is returned with its message. `*out`
/// (if not NULL) receives the open library, owned by the caller; NULL on
/// failure. With @p out NULL the library stays open until the registry is
/// destroyed (as the default registry's built-in libraries do). The
/// convenience macros expand to a call of this.
OPREG_API opreg_status opreg_library_run(opreg_library **out, opreg_registry *reg,
                                         opreg_library_kind kind, const char *ns,
                                         opreg_dispatch_key default_key, const char *file, int line,
                                         opreg_library_body body);

/// @name Convenience macros, in the spirit of `TORCH_LIBRARY(ns, m)`
///
///     OPREG_LIBRARY(_C, m) {
///         OPREG_DEF(m, "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
///     }
///     OPREG_LIBRARY_IMPL(_C, CPU, m) {
///         OPREG_IMPL(m, "rms_norm", rms_norm_cpu, NULL);
///     }
///
/// Each macro defines an ordinary external function,
/// `opreg_status opreg_library_init_<ns>(opreg_registry *reg, opreg_library **out)`
/// and `opreg_library_impl_init_<ns>_<KEY>(...)`, that opens the library on
/// @p reg and runs the body. Nothing runs by itself: no constructor
/// attributes are used, so static linking cannot drop a registration. The
/// program (or, for built-in libraries, opreg_registry_default()) calls the
/// init function, and that call is what pulls the object file in. Declare
/// it elsewhere with OPREG_DECLARE_LIBRARY(ns) / OPREG_DECLARE_LIBRARY_IMPL.
/// @{
#define OPREG_LIBRARY(ns, m)                                                                       \
    static void opreg_library_body_##ns(opreg_library *m);                                         \
    OPREG_DECLARE_LIBRARY(ns);                                                                     \
    opreg_status opreg_library_init_##ns(opreg_registry *reg, opreg_library **out) {               \
        return opreg_library_run(out, reg, OPREG_LIBRARY_DEF, #ns, OPREG_KEY_NONE, __FILE__,       \
                                 __LINE__, opreg_library_body_##ns);                               \
    }                                                                                              \
    static void opreg_library_body_##ns(opreg_library *m)

/// `key` is CPU, CUDA, META or COMPOSITE (the suffix of an `OPREG_KEY_` macro).
#define OPREG_LIBRARY_IMPL(ns, key, m)                                                             \
    static void opreg_library_impl_body_##ns##_##key(opreg_library *m);                            \
    OPREG_DECLARE_LIBRARY_IMPL(ns, key);                                                           \
    opreg_status opreg_library_impl_init_##ns##_##key(opreg_registry *reg, opreg_library **out) {  \
        return opreg_library_run(out, reg, OPREG_LIBRARY_IMPL, #ns, OPREG_KEY_##key, __FILE__,     \
                                 __LINE__, opreg_library_impl_body_##ns##_##key);                  \
    }                                                                                              \
    static void opreg_library_impl_body_##ns##_##key(opreg_library *m)

/// Declare the init function of OPREG_LIBRARY(ns, m).
#define OPREG_DECLARE_LIBRARY(ns)                                                                  \
    opreg_status opreg_library_init_##ns(opreg_registry *reg, opreg_library **out)
/// Declare the init function of OPREG_LIBRARY_IMPL(ns, key, m).
#define OPREG_DECLARE_LIBRARY_IMPL(ns, key)                                                        \
    opreg_status opreg_library_impl_init_##ns##_##key(opreg_registry *reg, opreg_library **out)

/// Inside a body: define an op (errors are kept in the library).
#define OPREG_DEF(m, schema) ((void)opreg_library_def_at(NULL, (m), (schema), __FILE__, __LINE__))
/// Inside a body: register a kernel for the library's key.
#define OPREG_IMPL(m, name, fn, ctx)                                                               \
    ((void)opreg_library_impl_fn((m), (name), OPREG_KEY_NONE, (fn), (ctx)))
/// @}

#ifdef __cplusplus
}
#endif

#endif
