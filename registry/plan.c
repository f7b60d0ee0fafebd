/* Argument plans: what each argument of an op accepts, worked out once when
 * the op is defined, so that a boxed call checks values with a few compares
 * and fills defaults by copying prepared values. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value kind of a non-optional, non-list leaf type. */
static uint8_t leaf_kind(opreg_type_kind k) {
    switch (k) {
    case OPREG_TYPE_TENSOR:
        return OPREG_VALUE_TENSOR;
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
        return OPREG_VALUE_INT;
    case OPREG_TYPE_FLOAT:
        return OPREG_VALUE_FLOAT;
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_SYMBOOL:
        return OPREG_VALUE_BOOL;
    case OPREG_TYPE_STR:
        return OPREG_VALUE_STR;
    case OPREG_TYPE_SCALAR_TYPE:
        return OPREG_VALUE_SCALAR_TYPE;
    case OPREG_TYPE_DEVICE:
        return OPREG_VALUE_DEVICE;
    case OPREG_TYPE_SCALAR:
        return OPREG__KIND_SCALAR;
    default:
        return OPREG__KIND_UNSUPPORTED;
    }
}

/* Whether values of type @p t can sit inside a list or a tuple value: any
 * type but tensors (which would escape the device check) and the types no
 * value carries. */
static bool nestable(const opreg_type *t, int depth) {
    if (depth > OPREG__MAX_NESTING) return false;
    opreg_type_kind k = opreg_type_get_kind(t);
    switch (k) {
    case OPREG_TYPE_OPTIONAL:
    case OPREG_TYPE_LIST:
        return nestable(opreg_type_element(t, 0), depth + 1);
    case OPREG_TYPE_TUPLE:
        for (size_t i = 0; i < opreg_type_num_elements(t); i++)
            if (!nestable(opreg_type_element(t, i), depth + 1)) return false;
        return true;
    case OPREG_TYPE_ANY:
        return true;
    default: {
        uint8_t leaf = leaf_kind(k);
        return leaf != OPREG_VALUE_TENSOR && leaf != OPREG__KIND_UNSUPPORTED;
    }
    }
}

static uint8_t list_kind(const opreg_type *elem, uint8_t *elem_optional) {
    opreg_type_kind k = opreg_type_get_kind(elem);
    if (k == OPREG_TYPE_OPTIONAL &&
        opreg_type_get_kind(opreg_type_element(elem, 0)) == OPREG_TYPE_TENSOR) {
        *elem_optional = 1;
        return OPREG_VALUE_TENSOR_LIST;
    }
    switch (leaf_kind(k)) {
    case OPREG_VALUE_TENSOR:
        return OPREG_VALUE_TENSOR_LIST;
    case OPREG_VALUE_INT:
        return OPREG_VALUE_INT_LIST;
    case OPREG_VALUE_FLOAT:
        return OPREG_VALUE_FLOAT_LIST;
    case OPREG_VALUE_BOOL:
        return OPREG_VALUE_BOOL_LIST;
    case OPREG_VALUE_STR:
        return OPREG_VALUE_STR_LIST;
    default:
        return nestable(elem, 1) ? OPREG_VALUE_LIST : OPREG__KIND_UNSUPPORTED;
    }
}

uint8_t opreg__kind_of_type(const opreg_type *t, uint8_t *optional, uint8_t *elem_optional) {
    *optional = 0;
    *elem_optional = 0;
    if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) {
        *optional = 1;
        t = opreg_type_element(t, 0);
    }
    switch (opreg_type_get_kind(t)) {
    case OPREG_TYPE_LIST:
        return list_kind(opreg_type_element(t, 0), elem_optional);
    case OPREG_TYPE_TUPLE:
        return nestable(t, 0) ? OPREG_VALUE_TUPLE : OPREG__KIND_UNSUPPORTED;
    case OPREG_TYPE_ANY:
        return OPREG__KIND_ANY;
    default:
        return leaf_kind(opreg_type_get_kind(t));
    }
}

/* Number of 8-byte pool slots a default list needs. */
static size_t pool_need(const opreg_argument *a, uint8_t kind) {
    const opreg_default *d = opreg_argument_default(a);
    if (!d || (kind != OPREG_VALUE_INT_LIST && kind != OPREG_VALUE_FLOAT_LIST &&
               kind != OPREG_VALUE_BOOL_LIST))
        return 0;
    if (opreg_default_get_kind(d) == OPREG_DEFAULT_LIST) return opreg_default_list_size(d);
    int64_t n = opreg_type_list_size(opreg_argument_type(a));
    return n > 0 ? (size_t)n : 1;
}

static double as_double(const opreg_default *d) {
    return opreg_default_get_kind(d) == OPREG_DEFAULT_INT ? (double)opreg_default_int(d)
                                                          : opreg_default_float(d);
}

/* Fill a list default from a list (or a scalar repeated n times, `int[2] s=1`). */
static bool make_list(opreg_value *v, uint8_t kind, const opreg_default *d, size_t n,
                      uint64_t *pool) {
    bool is_list = opreg_default_get_kind(d) == OPREG_DEFAULT_LIST;
    for (size_t i = 0; i < n; i++) {
        const opreg_default *item = is_list ? opreg_default_list_item(d, i) : d;
        opreg_default_kind ik = opreg_default_get_kind(item);
        if (kind == OPREG_VALUE_INT_LIST && ik == OPREG_DEFAULT_INT) {
            int64_t x = opreg_default_int(item);
            memcpy(&pool[i], &x, 8);
        } else if (kind == OPREG_VALUE_FLOAT_LIST &&
                   (ik == OPREG_DEFAULT_INT || ik == OPREG_DEFAULT_FLOAT)) {
            double x = as_double(item);
            memcpy(&pool[i], &x, 8);
        } else if (kind == OPREG_VALUE_BOOL_LIST && ik == OPREG_DEFAULT_BOOL) {
            ((bool *)(void *)pool)[i] = opreg_default_bool(item);
        } else {
            return false;
        }
    }
    v->kind = kind;
    v->u.ints.items = (const int64_t *)(const void *)pool;
    v->u.ints.len = n;
    return true;
}

/* Turn a schema default into the value a call would pass. False when the
 * default has no value form (then the argument counts as required). */
static bool make_default(struct opreg__arg *arg, const opreg_default *d, size_t npool,
                         uint64_t *pool) {
    opreg_value *v = &arg->def;
    opreg_default_kind dk = opreg_default_get_kind(d);
    if (dk == OPREG_DEFAULT_NONE) {
        *v = opreg_none();
        return arg->optional;
    }
    switch (arg->kind) {
    case OPREG_VALUE_INT:
        if (dk != OPREG_DEFAULT_INT) return false;
        *v = opreg_int_value(opreg_default_int(d));
        return true;
    case OPREG_VALUE_FLOAT:
        if (dk != OPREG_DEFAULT_INT && dk != OPREG_DEFAULT_FLOAT) return false;
        *v = opreg_float_value(as_double(d));
        return true;
    case OPREG_VALUE_BOOL:
        if (dk != OPREG_DEFAULT_BOOL) return false;
        *v = opreg_bool_value(opreg_default_bool(d));
        return true;
    case OPREG__KIND_SCALAR:
        if (dk == OPREG_DEFAULT_INT)
            *v = opreg_int_value(opreg_default_int(d));
        else if (dk == OPREG_DEFAULT_FLOAT)
            *v = opreg_float_value(opreg_default_float(d));
        else if (dk == OPREG_DEFAULT_BOOL)
            *v = opreg_bool_value(opreg_default_bool(d));
        else
            return false;
        return true;
    case OPREG_VALUE_STR:
        if (dk != OPREG_DEFAULT_STRING) return false;
        v->kind = OPREG_VALUE_STR;
        v->u.s.ptr = opreg_default_string(d, &v->u.s.len);
        return true;
    case OPREG_VALUE_SCALAR_TYPE:
        if (dk != OPREG_DEFAULT_INT || !opreg_dtype_name((opreg_dtype)opreg_default_int(d)))
            return false;
        *v = opreg_dtype_value((opreg_dtype)opreg_default_int(d));
        return true;
    case OPREG_VALUE_DEVICE: {
        if (dk != OPREG_DEFAULT_DEVICE) return false;
        int64_t index = -1;
        opreg_dispatch_key k;
        const char *type = opreg_default_device(d, &index);
        if (opreg_key_find(&k, type) != OPREG_OK || k == OPREG_KEY_COMPOSITE) return false;
        DLDevice dev = { (DLDeviceType)opreg_key_backend(k)->device_type,
                         (int32_t)(index < 0 ? 0 : index) };
        *v = opreg_device_value(dev);
        return true;
    }
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
        return make_list(v, arg->kind, d, npool, pool);
    default:
        return false;
    }
}

opreg_status opreg__plan_build(struct opreg__plan **out, const opreg_schema *schema,
                               const char *op_name) {
    *out = NULL;
    size_t nargs = opreg_schema_num_arguments(schema);
    if (nargs > OPREG__MAX_ARGS)
        return opreg__fail(OPREG_ERR_UNSUPPORTED, "def %s: %zu arguments; opreg allows at most %d",
                           op_name, nargs, OPREG__MAX_ARGS);
    size_t npool = 0;
    uint8_t kinds[OPREG__MAX_ARGS], elem_opt[OPREG__MAX_ARGS] = { 0 }, opt[OPREG__MAX_ARGS] = { 0 };
    for (size_t i = 0; i < nargs; i++) {
        const opreg_argument *a = opreg_schema_argument(schema, i);
        kinds[i] = opreg__kind_of_type(opreg_argument_type(a), &opt[i], &elem_opt[i]);
        npool += pool_need(a, kinds[i]);
    }
    struct opreg__plan *p = calloc(1, sizeof *p + nargs * sizeof(struct opreg__arg) + npool * 8);
    if (!p) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "def %s: out of memory", op_name);
    p->args = (struct opreg__arg *)(void *)(p + 1);
    uint64_t *pool = (uint64_t *)(void *)(p->args + nargs);
    p->defined = true;
    p->schema = schema;
    p->op_name = op_name;
    p->nargs = (uint32_t)nargs;
    p->nreturns = (uint32_t)opreg_schema_num_returns(schema);
    p->plain_tensors = true;
    for (size_t i = 0; i < nargs; i++) {
        const opreg_argument *a = opreg_schema_argument(schema, i);
        struct opreg__arg *arg = &p->args[i];
        arg->name = opreg_argument_name(a);
        arg->name_len = (uint32_t)strlen(arg->name);
        arg->kind = kinds[i];
        arg->type = opreg_argument_type(a);
        p->want[i] = kinds[i];
        arg->optional = opt[i];
        arg->elem_optional = elem_opt[i];
        arg->write = opreg_argument_is_write(a);
        arg->kwarg_only = opreg_argument_is_kwarg_only(a);
        opreg_type_format(opreg_argument_type(a), arg->type_text, sizeof arg->type_text);
        if (!arg->kwarg_only)
            p->npositional++;
        else
            p->has_kwarg_only = true;
        const opreg_default *d = opreg_argument_default(a);
        size_t need = pool_need(a, arg->kind);
        if (d) arg->has_default = make_default(arg, d, need, pool);
        pool += need;
        if (arg->kind == OPREG_VALUE_TENSOR || arg->kind == OPREG_VALUE_TENSOR_LIST) {
            p->tensor_pos[p->ntensor++] = (uint8_t)i;
            if (arg->kind != OPREG_VALUE_TENSOR || arg->optional) p->plain_tensors = false;
        }
    }
    *out = p;
    return OPREG_OK;
}

_Static_assert(OPREG__KIND_SCALAR == OPREG_ARG_KIND_SCALAR &&
                   OPREG__KIND_UNSUPPORTED == OPREG_ARG_KIND_UNSUPPORTED &&
                   OPREG__KIND_ANY == OPREG_ARG_KIND_ANY,
               "the plan's extra kinds are the public ones");

/* The N of `int[N]` (or of its optional form), -1 for any other type. Read
 * from the schema when asked: calls never need it. */
static int64_t fixed_list_size(const opreg_type *t) {
    if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) t = opreg_type_element(t, 0);
    return opreg_type_get_kind(t) == OPREG_TYPE_LIST ? opreg_type_list_size(t) : -1;
}

opreg_status opreg_op_arg_plan(opreg_arg_plan *out, const opreg_op *op, size_t index) {
    if (!out || out->struct_size < sizeof out->struct_size)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_op_arg_plan: %s",
                           out ? "out->struct_size is not set" : "out is NULL");
    opreg_arg_plan r;
    memset(&r, 0, sizeof r);
    size_t size = out->struct_size < sizeof r ? out->struct_size : sizeof r;
    opreg_status st = OPREG_OK;
    const struct opreg__plan *p = op ? opreg__table_of(op)->plan : NULL;
    if (!op) {
        st = opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_op_arg_plan: op is NULL");
    } else if (!p->defined) {
        st = opreg__fail(OPREG_ERR_NOT_FOUND, "opreg_op_arg_plan: %s is not defined",
                         opreg_op_name(op));
    } else if (index >= p->nargs) {
        st = opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                         "opreg_op_arg_plan: %s has %u arguments; there is no argument %zu",
                         opreg_op_name(op), p->nargs, index);
    } else {
        const struct opreg__arg *a = &p->args[index];
        r.kind = a->kind;
        r.name = a->name;
        r.type_text = a->type_text;
        r.list_size = fixed_list_size(opreg_argument_type(opreg_schema_argument(p->schema, index)));
        r.optional = a->optional;
        r.elem_optional = a->elem_optional;
        r.write = a->write;
        r.kwarg_only = a->kwarg_only;
        r.has_default = a->has_default;
        r.default_value = a->has_default ? a->def : opreg_none();
        r.schema = p->schema;
        r.type = a->type;
    }
    r.struct_size = (uint32_t)size;
    memcpy(out, &r, size);
    return st;
}
