/* Inputs derived from an op's schema alone, for ops that declare no
 * generator: [rows, cols] tensors of uniform values, scalars from the sizes
 * named after their arguments (opreg/inputs.h says which). */
#include "opcheck/opcheck_internal.h"

#include <stdio.h>
#include <string.h>

/* The type under `T?`, and whether there was one. */
static const opreg_type *unwrap_optional(const opreg_type *t, bool *optional) {
    *optional = opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL;
    return *optional ? opreg_type_element(t, 0) : t;
}

static DLTensor *random_matrix(opreg_gen *g) {
    int64_t shape[2] = { opreg_gen_dim(g, "rows", 4), opreg_gen_dim(g, "cols", 8) };
    DLTensor *t = opreg_gen_tensor(g, opreg_gen_dtype(g), 2, shape);
    opreg_gen_fill(g, t, -1, 1);
    return t;
}

static void schema_build(opreg_gen *g) {
    const opreg_op *op = opreg_gen_context(g);
    const opreg_schema *s = opreg_op_schema(op);
    for (size_t i = 0; i < opreg_schema_num_arguments(s) && !opreg_gen_failed(g); i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        const char *name = opreg_argument_name(a);
        bool optional;
        const opreg_type *t = unwrap_optional(opreg_argument_type(a), &optional);
        opreg_type_kind kind = opreg_type_get_kind(t);
        if (optional && opreg_argument_default(a)) {
            opreg_gen_arg(g, opreg_none());
            continue;
        }
        switch (kind) {
        case OPREG_TYPE_TENSOR:
            opreg_gen_arg_tensor(g, random_matrix(g));
            break;
        case OPREG_TYPE_INT:
        case OPREG_TYPE_SYMINT:
            opreg_gen_arg(g, opreg_int_value(opreg_gen_count(g, name, 1)));
            break;
        case OPREG_TYPE_FLOAT:
            opreg_gen_arg(g, opreg_float_value(0.5));
            break;
        case OPREG_TYPE_BOOL:
            opreg_gen_arg(g, opreg_bool_value(false));
            break;
        case OPREG_TYPE_STR:
            opreg_gen_arg_str(g, "");
            break;
        case OPREG_TYPE_SCALAR_TYPE:
            opreg_gen_arg(g, opreg_dtype_value(opreg_gen_dtype(g)));
            break;
        case OPREG_TYPE_LIST:
            if (opreg_type_get_kind(opreg_type_element(t, 0)) == OPREG_TYPE_TENSOR) {
                DLTensor *items[OPREG__IN_MAX_LIST];
                int64_t n = opreg_gen_count(g, "list", 2);
                if (n > OPREG__IN_MAX_LIST) {
                    opreg_gen_fail(g, "list=%lld: at most %d tensors", (long long)n,
                                   OPREG__IN_MAX_LIST);
                    break;
                }
                for (int64_t k = 0; k < n; k++)
                    items[k] = random_matrix(g);
                opreg_gen_arg_list(g, items, (size_t)n);
                break;
            }
            /* fallthrough */
        default: {
            char text[64];
            opreg_type_format(opreg_argument_type(a), text, sizeof text);
            opreg_gen_fail(g,
                           "argument '%s' of type %s: no inputs derive from it; declare a "
                           "generator (opreg_library_generator)",
                           name, text);
            break;
        }
        }
    }
}

opreg_status opreg_inputs_build_from_schema(opreg_inputs **out, const opreg_op *op, int dtype,
                                            opreg_sizes *sizes, uint64_t seed, char *err,
                                            size_t cap) {
    opreg_generator gen = { NULL, schema_build, OPREG_GEN_FLOATS, OPREG_DTYPE_F32, 0, (void *)op };
    opreg_status st;
    *out = NULL;
    if (!op || !opreg_op_schema(op)) {
        snprintf(err, cap, "%s is not defined", op ? opreg_op_name(op) : "(null)");
        return OPREG_ERR_NOT_FOUND;
    }
    st = opreg_inputs_build_with(out, op, &gen, dtype, sizes, seed, err, cap);
    if (st == OPREG_ERR_INVALID_ARGUMENT && strstr(err, "no inputs derive"))
        st = OPREG_ERR_UNSUPPORTED;
    return st;
}
