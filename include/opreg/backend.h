/// @file backend.h
/// @brief Dispatch keys and the backend table behind each of them.
///
/// A dispatch key names a backend: CPU, CUDA and Meta are built in, and a
/// plugin obtains a key for its backend by name at run time with
/// opreg_key_register(). Keys are process-wide (shared by every registry),
/// are never withdrawn, and number at most ::OPREG_MAX_KEYS.
///
/// Two alias keys are registration targets only, never the key of a call:
/// ::OPREG_KEY_COMPOSITE (a device-agnostic kernel of one op, for every key)
/// and the per-backend fallback (a kernel for every op on one key, see
/// opreg_library_fallback()).
#ifndef OPREG_BACKEND_H
#define OPREG_BACKEND_H

#include "opreg/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A dispatch key: 0..::OPREG_MAX_KEYS-1 for backends, or an alias key.
typedef int32_t opreg_dispatch_key;

/// The most backend keys a process can have (built-in ones included).
#define OPREG_MAX_KEYS 32
/// The built-in CPU key.
#define OPREG_KEY_CPU 0
/// The built-in CUDA key.
#define OPREG_KEY_CUDA 1
/// The built-in Meta key (shape functions; tensors without data).
#define OPREG_KEY_META 2
/// The built-in Reference key: the catalogue's portable reference kernels
/// (plain C, accumulating in double), the oracle the other backends are
/// tested against. Its tensors are CPU tensors, but no call is dispatched
/// to it by device: it is chosen explicitly, with opreg_call_boxed_key().
#define OPREG_KEY_REFERENCE 3
/// Alias key: a device-agnostic kernel used for every key without a direct one.
#define OPREG_KEY_COMPOSITE 0x100
/// No key (e.g. an impl library without a default key).
#define OPREG_KEY_NONE (-1)

/// The ABI version of ::opreg_backend: major in the high 16 bits.
#define OPREG_BACKEND_ABI_VERSION ((1u << 16) | 2u)

/// Flags of a backend (::opreg_backend `flags`).
enum opreg_backend_flags {
    /// A tensor's `data` is an opaque handle to a device buffer (an OpenCL
    /// `cl_mem`), not an address: `byte_offset` locates the first element
    /// inside that buffer, and two tensors can share memory only when they
    /// share the handle. The argument checks compare handles and offsets
    /// instead of address ranges.
    OPREG_BACKEND_DATA_IS_HANDLE = 1u << 0,
};

/// A backend: device discovery, availability, allocation and streams. Every
/// member after `abi_version` is optional (NULL) unless marked. Members are
/// only ever appended; each notes the version that added it.
typedef struct opreg_backend {
    uint32_t struct_size; ///< sizeof(opreg_backend) as the producer compiled it
    uint32_t abi_version; ///< ::OPREG_BACKEND_ABI_VERSION of the producer
    const char *name;     ///< required: the key's name, e.g. "cpu"; also the device spelling
    int32_t device_type;  ///< the DLPack device type of its tensors (1.0)
    void *context;        ///< passed to every function below (1.0)
    /// Whether the backend can run here; NULL means yes. When it cannot, it
    /// may write a reason into @p why (at most @p cap bytes). (1.0)
    bool (*is_available)(void *context, char *why, size_t cap);
    /// Number of devices; NULL means 1. (1.0)
    int (*device_count)(void *context);
    /// Allocate @p bytes on device @p device_id, aligned to at least 64 bytes.
    /// NULL means the backend has no memory (Meta): data is NULL. (1.0)
    opreg_status (*alloc)(void *context, void **out, size_t bytes, int device_id);
    /// Release memory from `alloc`. (1.0)
    void (*free)(void *context, void *ptr, size_t bytes, int device_id);
    /// The current stream of a device, or NULL for a synchronous backend. (1.0)
    void *(*current_stream)(void *context, int device_id);
    /// Wait for all work on a device. (1.0)
    opreg_status (*synchronize)(void *context, int device_id);
    /// ::opreg_backend_flags. (1.1)
    uint32_t flags;
    /// Copy @p bytes from host memory @p src into the device memory @p dst
    /// (what `alloc` returned, or a tensor's `data`) at byte @p dst_offset,
    /// and wait for the copy. NULL for a backend whose memory the host reads
    /// directly. (1.1)
    opreg_status (*copy_to_device)(void *context, void *dst, size_t dst_offset, const void *src,
                                   size_t bytes, int device_id);
    /// Copy @p bytes from device memory @p src at byte @p src_offset into
    /// host memory @p dst, and wait for the copy. (1.1)
    opreg_status (*copy_to_host)(void *context, void *dst, const void *src, size_t src_offset,
                                 size_t bytes, int device_id);
    /// Copy @p bytes from device memory @p src at byte @p src_offset to
    /// device memory @p dst at byte @p dst_offset, both of device
    /// @p device_id, in the order of the device's other work (on its current
    /// stream); it need not wait: `synchronize` does. What a device-neutral
    /// program (`opreg bench ops --device D`) measures a kernel's bandwidth
    /// against. NULL when the backend has no such copy. (1.2)
    opreg_status (*copy_on_device)(void *context, void *dst, size_t dst_offset, const void *src,
                                   size_t src_offset, size_t bytes, int device_id);
} opreg_backend;

/// Register a backend and obtain its key. The table is copied (up to its
/// `struct_size`); `name` and `context` are not, and must outlive the process
/// (or the last use of the key). Keys are never withdrawn.
/// @return ::OPREG_OK; ::OPREG_ERR_ABI_MISMATCH (a major version other than
/// this library's, both named); ::OPREG_ERR_ALREADY_DEFINED (the name or the
/// device type is taken); ::OPREG_ERR_UNSUPPORTED (all ::OPREG_MAX_KEYS keys
/// are in use); ::OPREG_ERR_INVALID_ARGUMENT. `*out` is ::OPREG_KEY_NONE on failure.
OPREG_API opreg_status opreg_key_register(opreg_dispatch_key *out, const opreg_backend *backend);

/// Attach a backend table to a built-in key whose backend is not compiled in
/// (CUDA, for a CUDA backend built separately). Same copying rules as
/// opreg_key_register(). Availability is evaluated again.
/// @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT, ::OPREG_ERR_ABI_MISMATCH.
OPREG_API opreg_status opreg_key_attach_backend(opreg_dispatch_key key,
                                                const opreg_backend *backend);

/// Find a key by name ("cpu", "CPU", "cuda", "meta", "composite", a plugin's
/// name; case-insensitive).
/// @return ::OPREG_OK, or ::OPREG_ERR_NOT_FOUND listing the known names
/// (`*out` is then ::OPREG_KEY_NONE).
OPREG_API opreg_status opreg_key_find(opreg_dispatch_key *out, const char *name);

/// Number of backend keys registered so far (keys are 0..count-1).
OPREG_API int opreg_key_count(void);

/// The display name of a key ("CPU", "CUDA", "Meta", "Composite", or the
/// plugin's name), or NULL for an unknown key. The string lives forever.
OPREG_API const char *opreg_key_name(opreg_dispatch_key key);

/// The key that handles tensors of @p device, or ::OPREG_KEY_NONE.
OPREG_API opreg_dispatch_key opreg_key_of_device(DLDevice device);

/// The backend table of a key (read-only, lives forever), or NULL.
OPREG_API const opreg_backend *opreg_key_backend(opreg_dispatch_key key);

/// Whether the key's backend can run here (evaluated once, at registration).
/// When not, and @p why is not NULL, the reason is written there (snprintf
/// semantics, at most @p cap bytes).
OPREG_API bool opreg_key_is_available(opreg_dispatch_key key, char *why, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
