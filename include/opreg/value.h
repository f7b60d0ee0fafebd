/// @file value.h
/// @brief ::opreg_value, the tagged union of boxed calls and kernels.
///
/// An argument value never owns what it points to: tensors, lists and
/// strings belong to whoever built the value, and must outlive the call that
/// receives it. Returns are the other way round: what a kernel returns
/// through a return slot (a tensor, or a list, string or tuple that
/// opreg_value_pack() made) belongs to the caller, who releases it with
/// opreg_value_release() (a lone tensor also with opreg_tensor_free()).
#ifndef OPREG_VALUE_H
#define OPREG_VALUE_H

#include "opreg/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The kinds of values. An optional (`T?`) argument takes a value of kind
/// T or ::OPREG_VALUE_NONE.
typedef enum opreg_value_kind {
    OPREG_VALUE_NONE = 0,   ///< `None`, for an optional argument
    OPREG_VALUE_TENSOR = 1, ///< `Tensor` (also an present `Tensor?`): `tensor`
    OPREG_VALUE_TENSOR_LIST =
        2,                 ///< `Tensor[]`, `Tensor?[]`: `tensors` (NULL items only for `Tensor?[]`)
    OPREG_VALUE_INT = 3,   ///< `int`, `SymInt`, `Layout`, `MemoryFormat`: `i`
    OPREG_VALUE_FLOAT = 4, ///< `float` (a C double): `f`
    OPREG_VALUE_BOOL = 5,  ///< `bool`: `b`
    OPREG_VALUE_STR = 6,   ///< `str`: `s` (NUL-terminated, `len` bytes)
    OPREG_VALUE_INT_LIST = 7,     ///< `int[]`, `SymInt[]`: `ints`
    OPREG_VALUE_FLOAT_LIST = 8,   ///< `float[]`: `floats`
    OPREG_VALUE_BOOL_LIST = 9,    ///< `bool[]`: `bools`
    OPREG_VALUE_SCALAR_TYPE = 10, ///< `ScalarType`: `dtype`
    OPREG_VALUE_DEVICE = 11,      ///< `Device`: `device`
    /// `str[]`: `strs`, each item a ::opreg_str (any bytes, NUL included).
    OPREG_VALUE_STR_LIST = 12,
    /// Any other list (`int[][]`, `int?[]`, `Scalar[]`, `(str, int)[]`):
    /// `list`, one ::opreg_value per item, each of the element type.
    OPREG_VALUE_LIST = 13,
    /// A tuple `(A, B, ...)`: `list`, one ::opreg_value per element, in order.
    OPREG_VALUE_TUPLE = 14,
} opreg_value_kind;

/// A string of @p len bytes at @p ptr, which may hold any byte (a CUDA IPC
/// handle, say). Strings that opreg makes (opreg_value_pack()) are also
/// NUL-terminated after the @p len bytes.
typedef struct opreg_str {
    const char *ptr; ///< the bytes (borrowed unless the value is owned)
    size_t len;      ///< how many
} opreg_str;

/// Value flags.
enum opreg_value_flags {
    /// The tensor of this value must not be written: passing it for a
    /// `Tensor!` argument is refused by opreg_call_boxed().
    OPREG_VALUE_READONLY = 1u << 0,
    /// The value owns its payload, in one allocation made by
    /// opreg_value_pack() (with the tensors it names): release it with
    /// opreg_value_release(). Only returns carry it.
    OPREG_VALUE_OWNED = 1u << 1,
};

/// A boxed value: 24 bytes, passed by value or in arrays.
typedef struct opreg_value {
    uint32_t kind;  ///< an ::opreg_value_kind
    uint32_t flags; ///< ::opreg_value_flags
    union {
        DLTensor *tensor;
        struct {
            DLTensor *const *items;
            size_t len;
        } tensors;
        int64_t i;
        double f;
        bool b;
        struct {
            const char *ptr;
            size_t len;
        } s;
        struct {
            const int64_t *items;
            size_t len;
        } ints;
        struct {
            const double *items;
            size_t len;
        } floats;
        struct {
            const bool *items;
            size_t len;
        } bools;
        opreg_dtype dtype;
        DLDevice device;
        struct {
            const opreg_str *items;
            size_t len;
        } strs;
        struct {
            const struct opreg_value *items;
            size_t len;
        } list;
    } u; ///< the payload: the member named by `kind` (borrowed unless ::OPREG_VALUE_OWNED)
} opreg_value;

/// A value given by name, for keyword-only arguments (or any argument).
/// The name is not copied and must outlive the call.
typedef struct opreg_kwarg {
    const char *name;  ///< the argument's name in the schema
    opreg_value value; ///< its value
} opreg_kwarg;

/// The schema spelling of a value kind ("Tensor", "int[]", "None", ...).
/// The string is static; an unknown kind gives "?".
OPREG_API const char *opreg_value_kind_name(opreg_value_kind kind);

/// @name Constructors
/// Each builds a value that borrows its argument.
/// @{
static inline opreg_value opreg_none(void) {
    opreg_value v;
    v.kind = OPREG_VALUE_NONE;
    v.flags = 0;
    v.u.i = 0;
    return v;
}
static inline opreg_value opreg_tensor_value(DLTensor *t) {
    opreg_value v;
    v.kind = OPREG_VALUE_TENSOR;
    v.flags = 0;
    v.u.tensor = t;
    return v;
}
/// A tensor that the callee may only read (refused for `Tensor!`).
static inline opreg_value opreg_tensor_value_readonly(const DLTensor *t) {
    opreg_value v;
    v.kind = OPREG_VALUE_TENSOR;
    v.flags = OPREG_VALUE_READONLY;
    v.u.tensor = (DLTensor *)(uintptr_t)t;
    return v;
}
/// An optional tensor: None when @p t is NULL.
static inline opreg_value opreg_optional_tensor_value(DLTensor *t) {
    return t ? opreg_tensor_value(t) : opreg_none();
}
static inline opreg_value opreg_tensor_list_value(DLTensor *const *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_TENSOR_LIST;
    v.flags = 0;
    v.u.tensors.items = items;
    v.u.tensors.len = len;
    return v;
}
static inline opreg_value opreg_int_value(int64_t i) {
    opreg_value v;
    v.kind = OPREG_VALUE_INT;
    v.flags = 0;
    v.u.i = i;
    return v;
}
static inline opreg_value opreg_float_value(double f) {
    opreg_value v;
    v.kind = OPREG_VALUE_FLOAT;
    v.flags = 0;
    v.u.f = f;
    return v;
}
static inline opreg_value opreg_bool_value(bool b) {
    opreg_value v;
    v.kind = OPREG_VALUE_BOOL;
    v.flags = 0;
    v.u.b = b;
    return v;
}
/// A string value; @p s must be NUL-terminated and outlive the call.
OPREG_API opreg_value opreg_str_value(const char *s);
static inline opreg_value opreg_int_list_value(const int64_t *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_INT_LIST;
    v.flags = 0;
    v.u.ints.items = items;
    v.u.ints.len = len;
    return v;
}
static inline opreg_value opreg_float_list_value(const double *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_FLOAT_LIST;
    v.flags = 0;
    v.u.floats.items = items;
    v.u.floats.len = len;
    return v;
}
static inline opreg_value opreg_bool_list_value(const bool *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_BOOL_LIST;
    v.flags = 0;
    v.u.bools.items = items;
    v.u.bools.len = len;
    return v;
}
static inline opreg_value opreg_dtype_value(opreg_dtype dtype) {
    opreg_value v;
    v.kind = OPREG_VALUE_SCALAR_TYPE;
    v.flags = 0;
    v.u.dtype = dtype;
    return v;
}
static inline opreg_value opreg_device_value(DLDevice device) {
    opreg_value v;
    v.kind = OPREG_VALUE_DEVICE;
    v.flags = 0;
    v.u.device = device;
    return v;
}
static inline opreg_value opreg_str_list_value(const opreg_str *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_STR_LIST;
    v.flags = 0;
    v.u.strs.items = items;
    v.u.strs.len = len;
    return v;
}
/// A list of values (`int[][]`: each item an int list value).
static inline opreg_value opreg_list_value(const opreg_value *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_LIST;
    v.flags = 0;
    v.u.list.items = items;
    v.u.list.len = len;
    return v;
}
/// A tuple of @p len values, in order.
static inline opreg_value opreg_tuple_value(const opreg_value *items, size_t len) {
    opreg_value v;
    v.kind = OPREG_VALUE_TUPLE;
    v.flags = 0;
    v.u.list.items = items;
    v.u.list.len = len;
    return v;
}
/// An opaque handle (a pointer to a kernel library's own state, as vLLM's
/// `fptr_t`), carried as an `int`; opreg_value_handle() gives it back.
static inline opreg_value opreg_handle_value(void *handle) {
    return opreg_int_value((int64_t)(intptr_t)handle);
}
/// The handle an `int` value carries (see opreg_handle_value()).
static inline void *opreg_value_handle(const opreg_value *v) {
    return (void *)(intptr_t)v->u.i;
}
/// @}

/// @name Owned values (returns)
/// @{

/// Make an owned copy of @p in, for a kernel's return slot: every string,
/// list and tuple in it (nested ones too) is copied into one allocation
/// that @p out owns (::OPREG_VALUE_OWNED), strings NUL-terminated. Tensors
/// are not copied but *taken*: each tensor that @p in names (alone, in a
/// `Tensor[]` list, or in a list or tuple) must be the caller's own (from
/// opreg_tensor_empty() or another call's returns) and belongs to @p out
/// once this returns ::OPREG_OK; NULL items of a tensor list stay NULL. A
/// lone tensor, a scalar or None is copied as it is, with no allocation.
/// @p in itself stays borrowed and may be freed after the call.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT for NULL pointers, a
///         kind outside ::opreg_value_kind, a list with items but a NULL
///         item array, or nesting deeper than 32; ::OPREG_ERR_OUT_OF_MEMORY.
///         On failure @p out is None and the tensors are still the caller's.
OPREG_API opreg_status opreg_value_pack(opreg_value *out, const opreg_value *in);

/// Release a value that a call returned: a tensor (as opreg_tensor_free()),
/// or a value made by opreg_value_pack() with everything it owns, the
/// tensors in its lists and tuples included. Nothing else is freed (a
/// borrowed list, a scalar). @p v is None afterwards; NULL is a no-op.
OPREG_API void opreg_value_release(opreg_value *v);
/// @}

#ifdef __cplusplus
}
#endif

#endif
