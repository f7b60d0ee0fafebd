/// @file value.h
/// @brief ::opreg_value, the tagged union of boxed calls and kernels.
///
/// A value never owns what it points to: tensors, lists and strings belong to
/// whoever built the value, and must outlive the call that receives it. The
/// one exception is a tensor that a kernel returns through a `-> Tensor`
/// return slot, which the caller owns (see opreg_call_boxed()).
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
} opreg_value_kind;

/// Value flags.
enum opreg_value_flags {
    /// The tensor of this value must not be written: passing it for a
    /// `Tensor!` argument is refused by opreg_call_boxed().
    OPREG_VALUE_READONLY = 1u << 0,
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
    } u; ///< the payload: the member named by `kind` (borrowed, never owned)
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
/// @}

#ifdef __cplusplus
}
#endif

#endif
