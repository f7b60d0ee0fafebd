/* Values: kind names and the one constructor that is not inline. */
#include "registry/internal.h"

#include <string.h>

const char *opreg_value_kind_name(opreg_value_kind kind) {
    switch (kind) {
    case OPREG_VALUE_NONE:
        return "None";
    case OPREG_VALUE_TENSOR:
        return "Tensor";
    case OPREG_VALUE_TENSOR_LIST:
        return "Tensor[]";
    case OPREG_VALUE_INT:
        return "int";
    case OPREG_VALUE_FLOAT:
        return "float";
    case OPREG_VALUE_BOOL:
        return "bool";
    case OPREG_VALUE_STR:
        return "str";
    case OPREG_VALUE_INT_LIST:
        return "int[]";
    case OPREG_VALUE_FLOAT_LIST:
        return "float[]";
    case OPREG_VALUE_BOOL_LIST:
        return "bool[]";
    case OPREG_VALUE_SCALAR_TYPE:
        return "ScalarType";
    case OPREG_VALUE_DEVICE:
        return "Device";
    }
    return "?";
}

opreg_value opreg_str_value(const char *s) {
    opreg_value v = { OPREG_VALUE_STR, 0, { 0 } };
    v.u.s.ptr = s;
    v.u.s.len = s ? strlen(s) : 0;
    return v;
}
