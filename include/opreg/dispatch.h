/// @file dispatch.h
/// @brief Looking ops up, asking what is supported, and calling them.
///
/// None of these functions takes a lock or allocates on success; they may
/// run while other threads register and close libraries.
///
/// Resolution order, for an op and a backend key: the op's direct kernel for
/// the key, then its composite kernel, then the key's fallback. The result
/// is worked out when something is registered, so a call costs one indexed
/// load and one indirect call. The key of a call is the key of the device of
/// its tensor arguments (plain, optional and list), or CPU for an op with no
/// tensor argument.
#ifndef OPREG_DISPATCH_H
#define OPREG_DISPATCH_H

#include "opreg/registry.h"

#ifndef __cplusplus
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// Look an op up by "ns::name" (overload "") or "ns::name.overload".
/// `*out` receives a handle owned by the registry, valid for its life; NULL
/// on failure. No allocation.
/// @return ::OPREG_OK, or ::OPREG_ERR_NOT_FOUND with the nearest defined
/// names (by edit distance) in the message; ::OPREG_ERR_INVALID_ARGUMENT.
OPREG_API opreg_status opreg_op_find(const opreg_op **out, const opreg_registry *reg,
                                     const char *name);

/// opreg_op_find() with a name of @p len bytes (not NUL-terminated).
OPREG_API opreg_status opreg_op_find_n(const opreg_op **out, const opreg_registry *reg,
                                       const char *name, size_t len);

/// True when op @p name is defined and some available backend other than
/// Meta has a kernel for it (direct, composite or fallback). Never sets
/// the last error.
OPREG_API bool opreg_is_op_supported(const opreg_registry *reg, const char *name);

/// True when op @p name is defined and would run on @p device: its key's
/// backend is available and a kernel resolves for the key.
OPREG_API bool opreg_is_op_supported_on(const opreg_registry *reg, const char *name,
                                        DLDevice device);

/// How a key's kernel was found.
typedef enum opreg_kernel_kind {
    OPREG_KERNEL_NONE = 0,      ///< no kernel
    OPREG_KERNEL_DIRECT = 1,    ///< registered for this key
    OPREG_KERNEL_COMPOSITE = 2, ///< the op's composite kernel
    OPREG_KERNEL_FALLBACK = 3,  ///< the key's fallback
} opreg_kernel_kind;

/// Why an op is or is not supported.
typedef enum opreg_support_reason {
    OPREG_SUPPORT_OK = 0,                  ///< a kernel would run
    OPREG_SUPPORT_NO_SUCH_OP = 1,          ///< the name is not defined
    OPREG_SUPPORT_NO_KERNEL = 2,           ///< no kernel resolves for the key
    OPREG_SUPPORT_BACKEND_UNAVAILABLE = 3, ///< the key's backend cannot run here
    OPREG_SUPPORT_NO_BACKEND = 4,          ///< no backend handles the device
} opreg_support_reason;

/// The answer of opreg_explain_support().
typedef struct opreg_support_info {
    bool supported;              ///< whether a kernel would run
    opreg_support_reason reason; ///< why (::OPREG_SUPPORT_OK when supported)
    opreg_dispatch_key key;      ///< the key looked at (::OPREG_KEY_NONE if none)
    opreg_kernel_kind kind;      ///< how the kernel would be found
    char message[512];           ///< one line (or a few) for people
} opreg_support_info;

/// Say which kernel would run for op @p name on @p device (its key, and
/// whether direct, composite or fallback, and which library registered it),
/// or why none would. @p device NULL means "any backend", as
/// opreg_is_op_supported(). Fills @p out; takes the registration lock.
/// @return ::OPREG_OK (whatever the answer), ::OPREG_ERR_INVALID_ARGUMENT.
OPREG_API opreg_status opreg_explain_support(opreg_support_info *out, opreg_registry *reg,
                                             const char *name, const DLDevice *device);

/// @name Listing
/// @{

/// Number of op records (defined or not) in @p reg; records are only
/// appended, so indices stay valid.
OPREG_API size_t opreg_registry_num_ops(const opreg_registry *reg);
/// Op record @p i, or NULL when out of range.
OPREG_API const opreg_op *opreg_registry_op(const opreg_registry *reg, size_t i);
/// The op's full name, "ns::name" or "ns::name.overload". Lives with the registry.
OPREG_API const char *opreg_op_name(const opreg_op *op);
/// Whether the op is defined now (its defining library is open).
OPREG_API bool opreg_op_is_defined(const opreg_op *op);
/// The op's schema, or NULL when it is not defined. It stays valid until
/// opreg_registry_reclaim() or opreg_registry_destroy().
OPREG_API const opreg_schema *opreg_op_schema(const opreg_op *op);
/// How the kernel for @p key would be found now.
OPREG_API opreg_kernel_kind opreg_op_kernel_kind(const opreg_op *op, opreg_dispatch_key key);
/// True when the op has a composite kernel.
OPREG_API bool opreg_op_has_composite(const opreg_op *op);
/// @}

/// @name Argument plans
///
/// What each argument of an op accepts, as the registry worked it out when
/// the op was defined and as opreg_call_boxed() checks values against it:
/// a binding that converts its language's values reads this instead of
/// walking the schema's types itself.
/// @{

/// Kinds that opreg_arg_plan::kind takes beyond ::opreg_value_kind.
enum opreg_arg_kind {
    /// `Scalar`: a value of kind ::OPREG_VALUE_INT, ::OPREG_VALUE_FLOAT or
    /// ::OPREG_VALUE_BOOL.
    OPREG_ARG_KIND_SCALAR = 100,
    /// A type that no value can carry (`Dict(str, int)`, `Tensor[][]`, a
    /// tensor inside a tuple): a call is refused, naming the argument and
    /// its type.
    OPREG_ARG_KIND_UNSUPPORTED = 101,
    /// `Any`: a value of any kind (c10d's `group_name`). A tensor passed
    /// there takes no part in choosing the kernel's device.
    OPREG_ARG_KIND_ANY = 102,
};

/// One argument of an op's plan, filled by opreg_op_arg_plan(). Members are
/// only appended: the caller sets `struct_size`, and opreg fills only the
/// members it covers, so a caller built against an older header keeps
/// working.
typedef struct opreg_arg_plan {
    /// sizeof(opreg_arg_plan) as the caller compiled it; set before the call.
    uint32_t struct_size;
    /// The value kind expected: an ::opreg_value_kind for the type without
    /// its `?` (`Tensor?[]` expects ::OPREG_VALUE_TENSOR_LIST, `str[]`
    /// ::OPREG_VALUE_STR_LIST, `int[][]` and `int?[]` ::OPREG_VALUE_LIST,
    /// `(str[], int)` ::OPREG_VALUE_TUPLE), or an ::opreg_arg_kind.
    uint32_t kind;
    /// The argument's name (owned by the registry).
    const char *name;
    /// Its type as opreg's messages print it, without alias annotations:
    /// "Tensor?", "Tensor[]" (for `Tensor(a!)[]`), "int[2]" (owned by the
    /// registry).
    const char *type_text;
    /// `int[N]` and the like, or their optional form: N; -1 for an unsized
    /// list and for every other type.
    int64_t list_size;
    /// `T?`: ::OPREG_VALUE_NONE is accepted.
    bool optional;
    /// `Tensor?[]`: NULL items are accepted.
    bool elem_optional;
    /// `Tensor!`, `Tensor(a!)[]`: the op writes it, so a read-only tensor
    /// (::OPREG_VALUE_READONLY) is refused.
    bool write;
    /// After `*` in the schema: passed by name only.
    bool kwarg_only;
    /// The schema gives a default that a call fills in when the argument
    /// is missing (a default without a value form counts as none).
    bool has_default;
    /// That default, as a call passes it, when `has_default`; its payload
    /// (a string, a list) is owned by the registry.
    opreg_value default_value;
    /// The definition this plan belongs to, as opreg_op_schema() gave it
    /// when the plan was read: a caller that reads several arguments
    /// compares it to know they all come from one definition.
    const opreg_schema *schema;
    /// The argument's type in the schema, `?` included (owned by the
    /// registry, as `schema`): a binding walks it for ::OPREG_VALUE_LIST
    /// and ::OPREG_VALUE_TUPLE arguments, whose items it describes.
    const opreg_type *type;
} opreg_arg_plan;

/// Read argument @p index (in schema order) of the plan of @p op's current
/// definition into @p out, whose `struct_size` the caller has set. No lock,
/// no allocation. Everything @p out points to (the strings, the default's
/// payload, the schema) is owned by the registry and lives as long as that
/// definition: while the op stays defined by it, and after the op is
/// withdrawn or defined again until opreg_registry_reclaim() or
/// opreg_registry_destroy(), as opreg_op_schema()'s schema does. The number
/// of arguments is opreg_schema_num_arguments() of that schema.
/// @return ::OPREG_OK; ::OPREG_ERR_NOT_FOUND when the op is not defined;
/// ::OPREG_ERR_INVALID_ARGUMENT for a NULL pointer, a `struct_size` below
/// 4, or an index past the last argument. But for those first two, which
/// leave @p out as it was, `struct_size` is left at the bytes filled (the
/// smaller of the caller's and this version's), and on failure every other
/// member those bytes cover is zero.
OPREG_API opreg_status opreg_op_arg_plan(opreg_arg_plan *out, const opreg_op *op, size_t index);
/// @}

/// Call @p op with boxed arguments, validated against its schema: the arity;
/// the type of each value (None for optionals, list element types); kwarg-only
/// arguments given by name in @p kwargs (any argument may be); defaults
/// filled in for missing ones; `Tensor!` arguments not read-only; and that
/// the tensors are on one device (unless the kernel accepts mixed devices).
/// @p rets receives the returns: @p nrets must be at least the schema's
/// number of returns. Each return is the caller's, to release with
/// opreg_value_release() (a lone tensor also with opreg_tensor_free()); a
/// string, list or tuple return is one block with the tensors it holds.
/// On failure no return needs releasing. Arrays are borrowed for the call
/// only.
/// @return the kernel's status, or ::OPREG_ERR_TYPE_MISMATCH,
/// ::OPREG_ERR_INVALID_ARGUMENT, ::OPREG_ERR_DEVICE_MISMATCH (naming the
/// arguments), ::OPREG_ERR_NO_KERNEL (listing the keys that have kernels),
/// ::OPREG_ERR_NOT_FOUND (the op was withdrawn), each naming the argument.
OPREG_API opreg_status opreg_call_boxed(const opreg_op *op, const opreg_value *args, size_t nargs,
                                        const opreg_kwarg *kwargs, size_t nkwargs,
                                        opreg_value *rets, size_t nrets);

/// opreg_call_boxed() on the kernel of an explicit backend @p key (direct,
/// composite or fallback), whatever the tensors' device: for example the
/// Reference key, to run the catalogue's reference kernel beside the fast
/// one. The arguments are validated as for opreg_call_boxed(), tensors
/// still on one device. @return as opreg_call_boxed(), or
/// ::OPREG_ERR_INVALID_ARGUMENT for a key that is not a backend key.
OPREG_API opreg_status opreg_call_boxed_key(const opreg_op *op, opreg_dispatch_key key,
                                            const opreg_value *args, size_t nargs,
                                            const opreg_kwarg *kwargs, size_t nkwargs,
                                            opreg_value *rets, size_t nrets);

/// Call @p op with every argument in schema order and of the right kinds, as
/// the generated typed entry points do: no type checking, only the dispatch
/// key (and its device check). @p rets as for opreg_call_boxed().
OPREG_API opreg_status opreg_call_unboxed(const opreg_op *op, const opreg_value *args,
                                          opreg_value *rets);

/// @name Inline fast path (the ABI of generated typed entry points)
///
/// An op handle points to a struct whose first member is the atomic pointer
/// to its current dispatch table, and a table starts with one entry per
/// DLPack device type below ::OPREG_DISPATCH_DEVICE_TYPES, resolved at
/// registration (a device type that no key handled at that time gets an
/// entry that re-dispatches by key). Generated code, when all tensor
/// arguments are plain tensors on one device, loads the table (acquire),
/// indexes it by the device type and calls the entry: one indexed load and
/// one indirect call. Anything else goes through opreg_call_unboxed(). This
/// layout only changes with the major version.
/// @{

/// The number of DLPack device types a dispatch table indexes directly.
#define OPREG_DISPATCH_DEVICE_TYPES 64

/// One resolved kernel of a dispatch table.
typedef struct opreg_dispatch_entry {
    opreg_kernel_fn fn; ///< never NULL: a stub reports why nothing runs
    void *context;      ///< passed to fn
    uint8_t kind;       ///< an ::opreg_kernel_kind
    uint8_t flags;      ///< ::opreg_kernel_flags
    uint16_t reserved;  ///< zero
    uint32_t id;        ///< the registration, 0 for stubs
} opreg_dispatch_entry;

/// The public head of a dispatch table (the rest is private).
typedef struct opreg_dispatch_table {
    /// The kernel for tensors of each DLPack device type.
    opreg_dispatch_entry by_device_type[OPREG_DISPATCH_DEVICE_TYPES];
} opreg_dispatch_table;

#ifndef __cplusplus
/// The public head of an op (the rest is private).
struct opreg_op_head {
    /// The current table; replaced (release) at each registration change.
    _Atomic(const opreg_dispatch_table *) table;
};

/// Call @p op for tensors all on @p device (every tensor argument a plain
/// tensor), with arguments as for opreg_call_unboxed().
static inline opreg_status opreg_call_on_device(const opreg_op *op, DLDevice device,
                                                const opreg_value *args, opreg_value *rets) {
    if ((uint32_t)device.device_type < OPREG_DISPATCH_DEVICE_TYPES) {
        const opreg_dispatch_table *t = atomic_load_explicit(
            &((const struct opreg_op_head *)(const void *)op)->table, memory_order_acquire);
        const opreg_dispatch_entry *e = &t->by_device_type[device.device_type];
        return e->fn(e->context, op, args, rets);
    }
    return opreg_call_unboxed(op, args, rets);
}

/// Whether two devices are the same (type and index).
static inline bool opreg_device_equal(DLDevice a, DLDevice b) {
    return a.device_type == b.device_type && a.device_id == b.device_id;
}
#endif
/// @}

#ifdef __cplusplus
}
#endif

#endif
