/* opreg's dtypes, written once: every table of dtype facts in the library is
 * built from this list, at compile time. Not installed.
 *
 * Each row is X(arg, DTYPE, CODE, BITS, NAME, TORCH, ALIAS):
 *   DTYPE  the opreg_dtype, as its enumerator's suffix (OPREG_DTYPE_##DTYPE);
 *          its number is PyTorch's ScalarType number (opreg/tensor.h)
 *   CODE   its DLPack type code, with BITS bits and one lane
 *   NAME   opreg's short name (opreg_dtype_name())
 *   TORCH  PyTorch's name of the ScalarType, ALIAS its other spelling or
 *          NULL: c10::getStringToDtypeMap() for this type
 * and @p arg is passed through unchanged, for a user that expands the list
 * inside a macro of its own (ops/check/common.c, one cell per expansion).
 *
 * Its readers: registry/dtype.c (the public opreg_dtype_* functions, and
 * through them the tools and the Python binding), ops/check/common.c (the
 * DLPack code x bits index of opreg__dtype_of()), ops/ops_internal.h (the
 * element sizes of opreg__dtype_bytes()) and schemas/defaults.c (ScalarType
 * names in schema defaults). The order is the order of
 * opreg_dtype_from_name()'s message. */
#ifndef OPREG_COMMON_DTYPE_LIST_H
#define OPREG_COMMON_DTYPE_LIST_H

#include "opreg/tensor.h"

#define OPREG__DTYPE_LIST(X, arg)                                                                  \
    X(arg, F32, kDLFloat, 32, "f32", "float32", "float")                                           \
    X(arg, F16, kDLFloat, 16, "f16", "float16", "half")                                            \
    X(arg, BF16, kDLBfloat, 16, "bf16", "bfloat16", NULL)                                          \
    X(arg, F64, kDLFloat, 64, "f64", "float64", "double")                                          \
    X(arg, I8, kDLInt, 8, "i8", "int8", NULL)                                                      \
    X(arg, U8, kDLUInt, 8, "u8", "uint8", NULL)                                                    \
    X(arg, I16, kDLInt, 16, "i16", "int16", "short")                                               \
    X(arg, I32, kDLInt, 32, "i32", "int32", "int")                                                 \
    X(arg, I64, kDLInt, 64, "i64", "int64", "long")                                                \
    X(arg, BOOL, OPREG_DL_BOOL, 8, "bool", "bool", NULL)                                           \
    X(arg, F8_E4M3FN, OPREG_DL_FLOAT8_E4M3FN, 8, "f8_e4m3fn", "float8_e4m3fn", NULL)               \
    X(arg, F8_E5M2, OPREG_DL_FLOAT8_E5M2, 8, "f8_e5m2", "float8_e5m2", NULL)

#endif
