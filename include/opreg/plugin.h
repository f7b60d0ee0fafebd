/// @file plugin.h
/// @brief Backend plugins: the stable C ABI between opreg and a shared
/// library that brings a backend, and the loader.
///
/// A plugin is a shared library that exports one function,
/// `opreg_plugin_entry` (::OPREG_PLUGIN_ENTRY_SYMBOL). The loader passes it a
/// table of host functions (::opreg_host); the plugin answers with its
/// description (::opreg_plugin_desc). The plugin calls opreg *only* through
/// the host table, so it links against none of libopreg's symbols and one
/// binary keeps loading into every later opreg of the same major ABI
/// version. The inline helpers of the public headers (opreg_tensor_value(),
/// ...) may be used: they compile into the plugin.
///
/// Both tables start with `struct_size` and `abi_version` (major in the high
/// 16 bits, minor in the low 16). Members are only ever appended; each is
/// marked with the version that added it. A reader uses a member only when
/// the writer's `struct_size` covers it (OPREG_HOST_HAS()). A major version
/// other than the host's is refused, with both versions in the message.
///
/// The loader side (opreg_plugin_load() and the rest, at the end of this
/// file) is for programs; a plugin never calls it. See docs/plugins.md.
#ifndef OPREG_PLUGIN_H
#define OPREG_PLUGIN_H

#include "opreg/provider.h"
#include "opreg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Major version of the plugin ABI: changes only with an incompatible change.
#define OPREG_PLUGIN_ABI_MAJOR 1
/// Minor version: grows when members are appended to either table.
#define OPREG_PLUGIN_ABI_MINOR 3
/// The version this header describes: major in the high 16 bits.
#define OPREG_PLUGIN_ABI_VERSION                                                                   \
    (((uint32_t)OPREG_PLUGIN_ABI_MAJOR << 16) | (uint32_t)OPREG_PLUGIN_ABI_MINOR)

/// The name of the one function a plugin exports.
#define OPREG_PLUGIN_ENTRY_SYMBOL "opreg_plugin_entry"

/// A loaded plugin (opaque). The host passes it to the plugin's `init`, and
/// the plugin passes it back to the host functions that need it.
typedef struct opreg_plugin opreg_plugin;

/// The functions the host lends a plugin. The table is owned by the host and
/// stays valid until the plugin's `fini` returns. Every member is non-NULL
/// when `struct_size` covers it. Each member behaves as the public function
/// it names (see that function's documentation for ownership and errors).
typedef struct opreg_host {
    uint32_t struct_size; ///< sizeof(opreg_host) as the host compiled it (1.0)
    uint32_t abi_version; ///< the host's ::OPREG_PLUGIN_ABI_VERSION (1.0)

    /// @name Registration (1.0)
    /// @{
    /// opreg_library_create() on the plugin's registry. The library belongs
    /// to the plugin: it is closed when the plugin is unloaded, or when its
    /// `init` fails (the registry is then left as it was). Messages and
    /// `opreg supported --explain` name the plugin as the place of
    /// registration. Ops may be defined in the plugin's own namespaces only
    /// (a namespace the registry already has is refused by the usual rules).
    opreg_status (*library_create)(opreg_library **out, opreg_plugin *plugin,
                                   opreg_library_kind kind, const char *ns,
                                   opreg_dispatch_key default_key);
    /// opreg_library_def() (1.0)
    opreg_status (*library_def)(const opreg_op **out, opreg_library *lib, const char *schema);
    /// opreg_library_impl() (1.0)
    opreg_status (*library_impl)(opreg_library *lib, const char *name, opreg_dispatch_key key,
                                 const opreg_kernel *kernel);
    /// opreg_library_fallback() (1.0)
    opreg_status (*library_fallback)(opreg_library *lib, opreg_dispatch_key key,
                                     const opreg_kernel *kernel);
    /// opreg_library_close(), for a library of this plugin (1.0)
    void (*library_close)(opreg_library *lib);
    /// @}

    /// @name Ops and calls (1.0)
    /// @{
    /// opreg_op_find() on the plugin's registry (1.0)
    opreg_status (*op_find)(const opreg_op **out, const opreg_plugin *plugin, const char *name);
    /// opreg_op_name() (1.0)
    const char *(*op_name)(const opreg_op *op);
    /// opreg_call_boxed() (1.0)
    opreg_status (*call_boxed)(const opreg_op *op, const opreg_value *args, size_t nargs,
                               const opreg_kwarg *kwargs, size_t nkwargs, opreg_value *rets,
                               size_t nrets);
    /// opreg_call_boxed_key() (1.0)
    opreg_status (*call_boxed_key)(const opreg_op *op, opreg_dispatch_key key,
                                   const opreg_value *args, size_t nargs, const opreg_kwarg *kwargs,
                                   size_t nkwargs, opreg_value *rets, size_t nrets);
    /// opreg_key_name() (1.0)
    const char *(*key_name)(opreg_dispatch_key key);
    /// @}

    /// @name Tensors and values (1.0)
    /// @{
    /// opreg_tensor_empty() (1.0)
    opreg_status (*tensor_empty)(DLTensor **out, DLDevice device, opreg_dtype dtype, int ndim,
                                 const int64_t *shape);
    /// opreg_tensor_view() (1.0)
    opreg_status (*tensor_view)(DLTensor **out, const DLTensor *base, int ndim,
                                const int64_t *shape, const int64_t *strides, uint64_t byte_offset);
    /// opreg_tensor_free() (1.0)
    void (*tensor_free)(DLTensor *tensor);
    /// opreg_tensor_numel() (1.0)
    int64_t (*tensor_numel)(const DLTensor *tensor);
    /// opreg_tensor_nbytes() (1.0)
    size_t (*tensor_nbytes)(const DLTensor *tensor);
    /// opreg_tensor_is_contiguous() (1.0)
    bool (*tensor_is_contiguous)(const DLTensor *tensor);
    /// opreg_dtype_from_dlpack() (1.0)
    opreg_status (*dtype_from_dlpack)(opreg_dtype *out, DLDataType type);
    /// opreg_dtype_name() (1.0)
    const char *(*dtype_name)(opreg_dtype dtype);
    /// opreg_dtype_size() (1.0)
    size_t (*dtype_size)(opreg_dtype dtype);
    /// opreg_device_format() (1.0)
    size_t (*device_format)(DLDevice device, char *buf, size_t cap);
    /// opreg_value_kind_name() (1.0)
    const char *(*value_kind_name)(opreg_value_kind kind);
    /// @}

    /// @name Errors and logging (1.0)
    /// @{
    /// Set the calling thread's last error (what opreg_last_error() returns)
    /// to @p message (copied) and return @p status. A kernel that fails
    /// returns `host->set_error(status, "what went wrong")`. (1.0)
    opreg_status (*set_error)(opreg_status status, const char *message);
    /// opreg_last_error() (1.0)
    const char *(*last_error)(void);
    /// opreg_status_str() (1.0)
    const char *(*status_str)(opreg_status status);
    /// Send one message to the program's log callback, if any (see
    /// opreg_set_log_callback()); @p message is not kept. (1.0)
    void (*log)(opreg_log_level level, const char *message);
    /// @}

    /// @name Added in 1.1
    /// @{
    /// Run the argument checks of op @p op on @p args (all of its arguments,
    /// in schema order, as a kernel receives them): the checks of the op's
    /// Meta kernel, which for the catalogue are the same functions that the
    /// reference and CPU kernels run first (the single source of truth).
    /// Checks that read index data (slot numbers, positions) are not part of
    /// it. ::OPREG_OK when the op has no Meta kernel. (1.1)
    opreg_status (*check_args)(const opreg_op *op, const opreg_value *args, size_t nargs);
    /// The path the plugin was loaded from (owned by the host). (1.1)
    const char *(*plugin_path)(const opreg_plugin *plugin);
    /// @}

    /// @name Added in 1.2
    /// @{

    /// opreg_library_provider(), for a library of this plugin: a provider
    /// placed among the others of its op and key, e.g. before the CPU's
    /// `avx512_bf16` for the calls it covers (see docs/providers.md). (1.2)
    opreg_status (*library_provider)(opreg_library *lib, const char *name, opreg_dispatch_key key,
                                     const opreg_provider *provider);
    /// @}

    /// @name Added in 1.3
    /// @{

    /// opreg_value_pack(): a kernel's returned string, list or tuple
    /// (`str[]`, `int[][]`, `Tensor[]`), which the caller then owns. (1.3)
    opreg_status (*value_pack)(opreg_value *out, const opreg_value *in);
    /// opreg_value_release() (1.3)
    void (*value_release)(opreg_value *v);
    /// @}
} opreg_host;

/// True when a host table @p host has member @p member (its `struct_size`
/// covers it). A plugin checks this before using any member added after
/// the version it requires.
#define OPREG_HOST_HAS(host, member)                                                               \
    ((host)->struct_size >= offsetof(opreg_host, member) + sizeof((host)->member))

/// What a plugin is: returned by its entry point, read by the loader. Every
/// member is required unless marked optional.
typedef struct opreg_plugin_desc {
    uint32_t struct_size; ///< sizeof(opreg_plugin_desc) as the plugin compiled it (1.0)
    uint32_t abi_version; ///< the plugin's ::OPREG_PLUGIN_ABI_VERSION (1.0)
    /// The plugin's name: 1 to 31 letters, digits or '_' (1.0). A second
    /// plugin of the same name is refused while the first is loaded.
    const char *name;
    /// The plugin's own version, for listings; optional (1.0).
    const char *version;
    /// The backend it brings, or NULL for a plugin that only adds kernels
    /// to existing keys (1.0). The loader obtains the key for it before
    /// `init` (see docs/plugins.md, "Dispatch keys"); the table and what it
    /// points to must stay valid until the plugin's `fini` returns.
    const opreg_backend *backend;
    /// Register the plugin's libraries through @p host. @p key is the key of
    /// `backend` (::OPREG_KEY_NONE without one). @p user receives the
    /// plugin's own state, handed back to `fini`. On failure, return the
    /// status with a message set by `host->set_error()`: the loader closes
    /// every library the plugin opened, so the registry is left as it was;
    /// `fini` follows later, as after an unload. (1.0)
    opreg_status (*init)(const opreg_host *host, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user);
    /// Release the plugin's state; optional (1.0). Called once no call can
    /// still be running one of its kernels: at opreg_registry_reclaim() or
    /// opreg_registry_destroy() after an unload or a failed `init` (a call
    /// may have reached a kernel before the rollback). The library is
    /// unloaded from memory after `fini` returns.
    void (*fini)(void *user);
} opreg_plugin_desc;

/// The one function a plugin exports, named ::OPREG_PLUGIN_ENTRY_SYMBOL.
/// It receives the host table (valid until the plugin's `fini`) and returns
/// the plugin's description (owned by the plugin, valid until it is
/// unloaded), or NULL to refuse to load, with a message set by
/// `host->set_error()`. It must not register anything: that is `init`'s job,
/// after the loader has checked the description's ABI version.
typedef const opreg_plugin_desc *(*opreg_plugin_entry_fn)(const opreg_host *host);

/// How a plugin exports its entry point (visibility and C linkage):
///
///     OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *host)
#if defined(_WIN32)
#define OPREG_PLUGIN_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define OPREG_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define OPREG_PLUGIN_EXPORT
#endif

/* ---- the loader: for programs, never called by a plugin ------------------ */

/// What became of a load.
typedef enum opreg_plugin_state {
    OPREG_PLUGIN_LOADED = 0,   ///< loaded; its libraries are open
    OPREG_PLUGIN_REFUSED = 1,  ///< the load failed; `reason` says why
    OPREG_PLUGIN_UNLOADED = 2, ///< loaded, then unloaded
} opreg_plugin_state;

/// One entry of a registry's plugin list (opreg_plugin_info_at()). Strings
/// are owned by the registry and live as long as it does.
typedef struct opreg_plugin_info {
    const char *name;         ///< the plugin's name, or "" when it was never read
    const char *version;      ///< the plugin's version, or ""
    const char *path;         ///< the path it was loaded from
    const char *reason;       ///< why it was refused, or ""
    opreg_plugin_state state; ///< loaded, refused or unloaded
    uint32_t abi_version;     ///< what the plugin declared, 0 when never read
    opreg_dispatch_key key;   ///< its backend's key, or ::OPREG_KEY_NONE
} opreg_plugin_info;

/// Load the plugin at @p path (a file path, passed to `dlopen`) into @p reg:
/// check its entry point and ABI version, obtain its backend's key, and run
/// its `init`. Every attempt, failed or not, is recorded in the registry's
/// plugin list. On failure the registry is left exactly as it was (its ops
/// and kernels; see docs/plugins.md for what happens to a backend key).
/// `*out` (if not NULL) receives the plugin, owned by the registry, valid
/// until opreg_plugin_unload() or the registry's destruction; NULL on failure.
/// @return ::OPREG_OK; ::OPREG_ERR_IO (no such file, or not loadable);
/// ::OPREG_ERR_PLUGIN (no entry point, a bad description, or the entry
/// point refused); ::OPREG_ERR_ABI_MISMATCH (another major version: both
/// versions are named); ::OPREG_ERR_ALREADY_DEFINED (a plugin of that name
/// is loaded, or its backend's name or device type is taken); or the status
/// its `init` returned, with its message.
OPREG_API opreg_status opreg_plugin_load(opreg_plugin **out, opreg_registry *reg, const char *path);

/// Unload a plugin: close its libraries (once this returns, no new call
/// reaches its kernels) and mark its backend's key unavailable. Calls that
/// are running keep running: the plugin's `fini` and the unloading of its
/// code wait for opreg_registry_reclaim() (which the caller may call only
/// when no call that started earlier can still be running) or
/// opreg_registry_destroy(). Tensors on the plugin's device must be freed
/// before the unload. NULL is a no-op.
OPREG_API void opreg_plugin_unload(opreg_plugin *plugin);

/// Load every `*.so` file of the folders in the environment variable
/// `OPREG_PLUGIN_PATH` (separated by ':'), then of the installed plugin
/// folder (opreg_plugin_dir()), in name order within a folder. A folder
/// that does not exist is skipped; each failed load is recorded as refused
/// and does not stop the search. `*loaded` (if not NULL) receives the
/// number loaded. The process-default registry does this once, when it is
/// created. @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT, or
/// ::OPREG_ERR_OUT_OF_MEMORY when memory ran out for a folder's listing or a
/// load (that folder or plugin is neither loaded nor recorded; the rest of
/// the search still runs, and what it loaded stays loaded).
OPREG_API opreg_status opreg_plugin_load_search(opreg_registry *reg, size_t *loaded);

/// The installed plugin folder: `opreg/plugins` beside the libopreg.so that
/// holds this function when that folder exists (so a prefix installed or
/// moved anywhere finds its own plugins), else the folder configured at
/// build time (`<prefix>/<libdir>/opreg/plugins`). The string is static.
OPREG_API const char *opreg_plugin_dir(void);

/// Number of entries in @p reg's plugin list (loaded, refused, unloaded).
OPREG_API size_t opreg_plugin_count(const opreg_registry *reg);

/// Entry @p i of @p reg's plugin list, in load order.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT when out of range.
OPREG_API opreg_status opreg_plugin_info_at(opreg_plugin_info *out, const opreg_registry *reg,
                                            size_t i);

#ifdef __cplusplus
}
#endif

#endif
