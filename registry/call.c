/* Calls: the dispatch key of a call, boxed calls with validation, and the
 * unchecked call under the typed entry points.
 *
 * A call loads the op's table once (acquire) and uses that table's plan and
 * kernels throughout, so it sees one consistent version even while another
 * thread replaces it. Nothing here locks or allocates. */
#include "registry/internal.h"

#include <stdio.h>
#include <string.h>

/* Error paths and argument binding stay out of the hot functions' frames. */
#if defined(__GNUC__)
#define NOINLINE    __attribute__((noinline, cold))
#define OUT_OF_LINE __attribute__((noinline))
#else
#define NOINLINE
#define OUT_OF_LINE
#endif

static inline bool same_device(DLDevice a, DLDevice b) {
    return a.device_type == b.device_type && a.device_id == b.device_id;
}

static void device_text(DLDevice d, char *buf, size_t cap) {
    opreg_device_format(d, buf, cap);
}

/* The general case: optional tensors, lists, or devices that differ. The
 * key is that of the first tensor not on the CPU (CPU when all are). */
OUT_OF_LINE static opreg_status slow_key(int32_t *key, const struct opreg__table *t,
                                         const opreg_value *args) {
    const struct opreg__plan *p = t->plan;
    const DLTensor *first = NULL, *primary = NULL;
    uint32_t first_arg = 0, other_arg = 0;
    const DLTensor *other = NULL;
    for (uint32_t i = 0; i < p->ntensor; i++) {
        const opreg_value *v = &args[p->tensor_pos[i]];
        size_t n = v->kind == OPREG_VALUE_TENSOR        ? 1
                   : v->kind == OPREG_VALUE_TENSOR_LIST ? v->u.tensors.len
                                                        : 0;
        for (size_t j = 0; j < n; j++) {
            const DLTensor *x = v->kind == OPREG_VALUE_TENSOR ? v->u.tensor : v->u.tensors.items[j];
            if (!x) continue;
            if (!first) {
                first = x;
                first_arg = p->tensor_pos[i];
            }
            if (!primary && x->device.device_type != kDLCPU) {
                primary = x;
            }
            if (!other && !same_device(x->device, first->device)) {
                other = x;
                other_arg = p->tensor_pos[i];
            }
        }
    }
    if (!first) {
        *key = OPREG_KEY_CPU;
        return OPREG_OK;
    }
    if (!primary) primary = first;
    *key = opreg__key_of_type((int32_t)primary->device.device_type);
    if (!other || (t->e[*key].flags & OPREG_KERNEL_MIXED_DEVICES)) return OPREG_OK;
    char a[48], b[48];
    device_text(first->device, a, sizeof a);
    device_text(other->device, b, sizeof b);
    return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                       "%s: expected all tensors to be on the same device, but argument '%s' is "
                       "on %s and argument '%s' is on %s (the kernel for %s does not accept "
                       "mixed devices)",
                       p->op_name, p->args[first_arg].name, a, p->args[other_arg].name, b,
                       *key == OPREG__KEY_UNKNOWN ? "that device" : opreg_key_name(*key));
}

/* The entry a call runs: by device type when every tensor argument is a
 * plain tensor on one device (the common case), else by key. */
static inline opreg_status call_entry(const opreg_dispatch_entry **out,
                                      const struct opreg__table *t, const opreg_value *args) {
    const struct opreg__plan *p = t->plan;
    if (p->ntensor == 0) {
        *out = &t->e[OPREG_KEY_CPU];
        return OPREG_OK;
    }
    if (p->plain_tensors) {
        DLDevice d0 = args[p->tensor_pos[0]].u.tensor->device;
        bool same = true;
        for (uint32_t i = 1; i < p->ntensor; i++)
            same &= same_device(args[p->tensor_pos[i]].u.tensor->device, d0);
        if (same && (uint32_t)d0.device_type < OPREG_DISPATCH_DEVICE_TYPES) {
            *out = &t->pub.by_device_type[d0.device_type];
            return OPREG_OK;
        }
    }
    int32_t key;
    OPREG__TRY(slow_key(&key, t, args));
    *out = &t->e[key];
    return OPREG_OK;
}

opreg_status opreg__call_by_key(const opreg_op *op, const opreg_value *args, opreg_value *rets) {
    const struct opreg__table *t = opreg__table_of(op);
    int32_t key = OPREG_KEY_CPU;
    if (t->plan->ntensor) OPREG__TRY(slow_key(&key, t, args));
    const opreg_dispatch_entry *e = &t->e[key];
    return e->fn(e->context, op, args, rets);
}

opreg_status opreg_call_unboxed(const opreg_op *op, const opreg_value *args, opreg_value *rets) {
    const struct opreg__table *t = opreg__table_of(op);
    const opreg_dispatch_entry *e;
    OPREG__TRY(call_entry(&e, t, args));
    return e->fn(e->context, op, args, rets);
}

/* ---- boxed calls ------------------------------------------------------------ */

static opreg_status type_error(const struct opreg__plan *p, uint32_t i, const opreg_value *v) {
    const struct opreg__arg *a = &p->args[i];
    if (a->kind == OPREG__KIND_UNSUPPORTED)
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "%s: argument '%s' has type %s, which opreg values cannot carry",
                           p->op_name, a->name, a->type_text);
    return opreg__fail(OPREG_ERR_TYPE_MISMATCH,
                       "%s: argument '%s' (position %u) expected a value of type %s but got %s",
                       p->op_name, a->name, i, a->type_text,
                       opreg_value_kind_name((opreg_value_kind)v->kind));
}

static opreg_status check_tensors(const struct opreg__plan *p, uint32_t i, const opreg_value *v) {
    const struct opreg__arg *a = &p->args[i];
    if (a->write && (v->flags & OPREG_VALUE_READONLY))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument '%s' (%s) is written by the op, but the value passed is "
                           "read-only",
                           p->op_name, a->name, a->type_text);
    if (v->kind == OPREG_VALUE_TENSOR) {
        if (!v->u.tensor)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument '%s' (%s) is a NULL tensor; pass a None value for an "
                               "absent optional tensor",
                               p->op_name, a->name, a->type_text);
        return OPREG_OK;
    }
    if (v->u.tensors.len && !v->u.tensors.items)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument '%s' (%s) has %zu items but a NULL item array", p->op_name,
                           a->name, a->type_text, v->u.tensors.len);
    if (!a->elem_optional)
        for (size_t j = 0; j < v->u.tensors.len; j++)
            if (!v->u.tensors.items[j])
                return opreg__fail(OPREG_ERR_TYPE_MISMATCH,
                                   "%s: argument '%s' (%s) item %zu is NULL; only Tensor?[] "
                                   "lists may hold None",
                                   p->op_name, a->name, a->type_text, j);
    return OPREG_OK;
}

/* The length of an int, float or bool list whose item array is NULL (0 when
 * it has one, or when it is empty), as check_tensors refuses for tensors. */
static size_t list_len_without_items(const opreg_value *v) {
    switch (v->kind) {
    case OPREG_VALUE_INT_LIST:
        return v->u.ints.items ? 0 : v->u.ints.len;
    case OPREG_VALUE_FLOAT_LIST:
        return v->u.floats.items ? 0 : v->u.floats.len;
    case OPREG_VALUE_BOOL_LIST:
        return v->u.bools.items ? 0 : v->u.bools.len;
    default:
        return 0;
    }
}

/* ---- lists and tuples of values ---------------------------------------------- */

struct nest {
    const struct opreg__plan *p;
    uint32_t arg;
    char path[96]; /* "[2][0]": where in the argument the value sits */
    size_t used;
};

NOINLINE static opreg_status nest_fail(const struct nest *n, opreg_status st, const char *what) {
    const struct opreg__arg *a = &n->p->args[n->arg];
    return opreg__fail(st, "%s: argument '%s' (%s)%s%s: %s", n->p->op_name, a->name, a->type_text,
                       n->used ? " item " : "", n->path, what);
}

NOINLINE static opreg_status nest_mismatch(const struct nest *n, const opreg_type *t,
                                           const opreg_value *v) {
    char want[64], what[160];
    if (t)
        opreg_type_format(t, want, sizeof want);
    else
        snprintf(want, sizeof want, "Any");
    snprintf(what, sizeof what, "expected a value of type %s but got %s", want,
             v->kind <= OPREG_VALUE_TUPLE ? opreg_value_kind_name((opreg_value_kind)v->kind)
                                          : "a value of no kind");
    return nest_fail(n, OPREG_ERR_TYPE_MISMATCH, what);
}

NOINLINE static opreg_status check_items(struct nest *n, const opreg_type *elem,
                                         const opreg_value *items, size_t len,
                                         const opreg_type *tuple, int depth);

/* Check value @p v against type @p t (NULL for `Any`: its structure only). */
NOINLINE static opreg_status check_nested(struct nest *n, const opreg_type *t, const opreg_value *v,
                                          int depth) {
    if (depth > OPREG__MAX_NESTING)
        return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, "lists and tuples nest too deep");
    uint8_t optional = 0, elem_optional = 0;
    uint8_t want = t ? opreg__kind_of_type(t, &optional, &elem_optional) : OPREG__KIND_ANY;
    if (want == OPREG__KIND_ANY) t = NULL; /* `Any` and `Any?`: the structure only */
    if (v->kind == OPREG_VALUE_NONE && (optional || want == OPREG__KIND_ANY)) return OPREG_OK;
    if (want == OPREG__KIND_SCALAR &&
        (v->kind == OPREG_VALUE_INT || v->kind == OPREG_VALUE_FLOAT || v->kind == OPREG_VALUE_BOOL))
        return OPREG_OK;
    if (want == OPREG__KIND_ANY ? v->kind > OPREG_VALUE_TUPLE : v->kind != want)
        return nest_mismatch(n, t, v);
    if (t && opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) t = opreg_type_element(t, 0);
    char what[96];
    switch (v->kind) {
    case OPREG_VALUE_STR:
        if (!v->u.s.ptr) return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, "the str is NULL");
        return OPREG_OK;
    case OPREG_VALUE_TENSOR:
        if (!v->u.tensor) return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, "a NULL tensor");
        return OPREG_OK;
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
    case OPREG_VALUE_STR_LIST:
        /* The payloads share one layout: an item pointer, then a length. */
        if (v->u.ints.len && !v->u.ints.items) {
            snprintf(what, sizeof what, "%zu items but a NULL item array", v->u.ints.len);
            return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, what);
        }
        if (v->kind == OPREG_VALUE_STR_LIST)
            for (size_t j = 0; j < v->u.strs.len; j++)
                if (!v->u.strs.items[j].ptr && v->u.strs.items[j].len) {
                    snprintf(what, sizeof what, "str item %zu has %zu bytes but a NULL pointer", j,
                             v->u.strs.items[j].len);
                    return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, what);
                }
        return OPREG_OK;
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        if (v->u.list.len && !v->u.list.items) {
            snprintf(what, sizeof what, "%zu items but a NULL item array", v->u.list.len);
            return nest_fail(n, OPREG_ERR_INVALID_ARGUMENT, what);
        }
        if (v->kind == OPREG_VALUE_TUPLE && t && v->u.list.len != opreg_type_num_elements(t)) {
            snprintf(what, sizeof what, "a tuple of %zu values, for a tuple type of %zu",
                     v->u.list.len, opreg_type_num_elements(t));
            return nest_fail(n, OPREG_ERR_TYPE_MISMATCH, what);
        }
        return check_items(n, t && v->kind == OPREG_VALUE_LIST ? opreg_type_element(t, 0) : NULL,
                           v->u.list.items, v->u.list.len,
                           t && v->kind == OPREG_VALUE_TUPLE ? t : NULL, depth);
    default:
        return OPREG_OK;
    }
}

/* Each item of a list (of element type @p elem) or of a tuple (of type
 * @p tuple), with its place added to the path. NULL types: `Any`. */
NOINLINE static opreg_status check_items(struct nest *n, const opreg_type *elem,
                                         const opreg_value *items, size_t len,
                                         const opreg_type *tuple, int depth) {
    size_t used = n->used;
    for (size_t j = 0; j < len; j++) {
        int m = snprintf(n->path + used, sizeof n->path - used, "[%zu]", j);
        n->used = used + (m > 0 && (size_t)m < sizeof n->path - used ? (size_t)m : 0);
        OPREG__TRY(
            check_nested(n, tuple ? opreg_type_element(tuple, j) : elem, &items[j], depth + 1));
    }
    n->used = used;
    n->path[used] = '\0';
    return OPREG_OK;
}

NOINLINE static opreg_status check_arg(const struct opreg__plan *p, uint32_t i,
                                       const opreg_value *v) {
    uint32_t want = p->args[i].kind;
    if ((want >= OPREG_VALUE_STR_LIST && want <= OPREG_VALUE_TUPLE) || want == OPREG__KIND_ANY) {
        struct nest n = { p, i, "", 0 };
        return check_nested(&n, p->args[i].type, v, 0);
    }
    /* OPREG__KIND_SCALAR and _UNSUPPORTED are expectations, never the kind
     * of a value: a value that claims one is of no kind at all. */
    if (v->kind == want && want <= OPREG_VALUE_DEVICE) {
        if (want == OPREG_VALUE_TENSOR && v->u.tensor && !v->flags) return OPREG_OK;
        if (want == OPREG_VALUE_TENSOR || want == OPREG_VALUE_TENSOR_LIST)
            return check_tensors(p, i, v);
        if (want == OPREG_VALUE_STR && !v->u.s.ptr)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s' (str) is NULL",
                               p->op_name, p->args[i].name);
        size_t len = list_len_without_items(v);
        if (len)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument '%s' (%s) has %zu items but a NULL item array",
                               p->op_name, p->args[i].name, p->args[i].type_text, len);
        return OPREG_OK;
    }
    if (v->kind == OPREG_VALUE_NONE && p->args[i].optional) return OPREG_OK;
    if (want == OPREG__KIND_SCALAR &&
        (v->kind == OPREG_VALUE_INT || v->kind == OPREG_VALUE_FLOAT || v->kind == OPREG_VALUE_BOOL))
        return OPREG_OK;
    return type_error(p, i, v);
}

static int find_arg(const struct opreg__plan *p, const char *name) {
    size_t len = strlen(name);
    for (uint32_t j = 0; j < p->nargs; j++)
        if (p->args[j].name_len == len && memcmp(p->args[j].name, name, len) == 0) return (int)j;
    return -1;
}

/* Put positional values, named values and defaults in schema order. */
OUT_OF_LINE static opreg_status bind(opreg_value *out, const struct opreg__plan *p,
                                     const opreg_value *args, size_t nargs,
                                     const opreg_kwarg *kwargs, size_t nkwargs) {
    if (nargs > p->npositional) {
        if (nargs <= p->nargs)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: takes %u positional arguments but %zu were given; argument "
                               "'%s' is keyword-only: pass it by name",
                               p->op_name, p->npositional, nargs, p->args[p->npositional].name);
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: takes %u arguments but %zu were given",
                           p->op_name, p->nargs, nargs);
    }
    bool given[OPREG__MAX_ARGS] = { false };
    for (size_t i = 0; i < nargs; i++) {
        out[i] = args[i];
        given[i] = true;
    }
    for (size_t k = 0; k < nkwargs; k++) {
        int j = kwargs[k].name ? find_arg(p, kwargs[k].name) : -1;
        if (j < 0)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: got an unexpected keyword argument '%s'", p->op_name,
                               kwargs[k].name ? kwargs[k].name : "(NULL)");
        if (given[j])
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: got multiple values for argument '%s'", p->op_name,
                               kwargs[k].name);
        out[j] = kwargs[k].value;
        given[j] = true;
    }
    for (uint32_t j = 0; j < p->nargs; j++) {
        if (given[j]) continue;
        const struct opreg__arg *a = &p->args[j];
        if (!a->has_default)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: missing %sargument '%s' (%s)%s",
                               p->op_name, a->kwarg_only ? "keyword-only " : "", a->name,
                               a->type_text, a->kwarg_only ? "; pass it by name" : "");
        out[j] = a->def;
    }
    return OPREG_OK;
}

/* Check each value; on the way, see whether every tensor is a plain,
 * writable tensor on one device, so the device-type entry can be used
 * without a second pass. The rest goes to check_arg and call_entry. */
static inline opreg_status check_and_run(const opreg_op *op, const struct opreg__table *t,
                                         const opreg_value *full, opreg_value *rets) {
    const struct opreg__plan *p = t->plan;
    DLDevice d0 = { kDLCPU, 0 };
    uint32_t ntensor = 0;
    bool same = true;
    for (uint32_t i = 0; i < p->nargs; i++) {
        const opreg_value *v = &full[i];
        uint32_t k = v->kind;
        if (k == p->want[i]) {
            if (k == OPREG_VALUE_TENSOR && v->u.tensor && !v->flags) {
                DLDevice d = v->u.tensor->device;
                if (ntensor++ == 0)
                    d0 = d;
                else
                    same &= same_device(d, d0);
                continue;
            }
            if (k >= OPREG_VALUE_INT && k <= OPREG_VALUE_BOOL) continue;
        }
        OPREG__TRY(check_arg(p, i, v));
    }
    const opreg_dispatch_entry *e;
    if (p->plain_tensors && ntensor == p->ntensor && same &&
        (uint32_t)d0.device_type < OPREG_DISPATCH_DEVICE_TYPES)
        e = &t->pub.by_device_type[d0.device_type];
    else
        OPREG__TRY(call_entry(&e, t, full));
    return e->fn(e->context, op, full, rets);
}

/* Named values, defaults or kwarg-only arguments: bind them first. */
OUT_OF_LINE static opreg_status bind_and_run(const opreg_op *op, const struct opreg__table *t,
                                             const opreg_value *args, size_t nargs,
                                             const opreg_kwarg *kwargs, size_t nkwargs,
                                             opreg_value *rets) {
    opreg_value bound[OPREG__MAX_ARGS];
    OPREG__TRY(bind(bound, t->plan, args, nargs, kwargs, nkwargs));
    return check_and_run(op, t, bound, rets);
}

/* What both boxed calls check before anything else: the op is there and
 * defined, and the arrays agree with their counts. OPREG_OK with *t set
 * means go on; anything else is the call's answer. */
static opreg_status preamble(const struct opreg__table **t, const opreg_op *op,
                             const opreg_value *args, size_t nargs, const opreg_kwarg *kwargs,
                             size_t nkwargs, opreg_value *rets, size_t nrets) {
    *t = opreg__table_of(op);
    const struct opreg__plan *p = (*t)->plan;
    if (!p->defined) {
        opreg_status st = (*t)->e[0].fn(NULL, op, args, rets);
        return st == OPREG_OK ? OPREG_ERR_INTERNAL : st; /* the stub always fails */
    }
    if ((nargs && !args) || (nkwargs && !kwargs))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: %s is NULL but its count is not 0",
                           p->op_name, nargs && !args ? "args" : "kwargs");
    if (nrets < p->nreturns || (p->nreturns && !rets))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: returns %u values but rets has room for %zu", p->op_name,
                           p->nreturns, rets ? nrets : 0);
    return OPREG_OK;
}

opreg_status opreg_call_boxed(const opreg_op *op, const opreg_value *args, size_t nargs,
                              const opreg_kwarg *kwargs, size_t nkwargs, opreg_value *rets,
                              size_t nrets) {
    if (!op) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_call_boxed: op is NULL");
    const struct opreg__table *t;
    OPREG__TRY(preamble(&t, op, args, nargs, kwargs, nkwargs, rets, nrets));
    const struct opreg__plan *p = t->plan;
    if (nkwargs || nargs != p->nargs || p->has_kwarg_only)
        return bind_and_run(op, t, args, nargs, kwargs, nkwargs, rets);
    return check_and_run(op, t, args, rets);
}

opreg_status opreg__bind_checked(const struct opreg__table *t, const opreg_value *args,
                                 size_t nargs, const opreg_kwarg *kwargs, size_t nkwargs,
                                 opreg_value *bound, int32_t *device_key) {
    const struct opreg__plan *p = t->plan;
    OPREG__TRY(bind(bound, p, args, nargs, kwargs, nkwargs));
    for (uint32_t i = 0; i < p->nargs; i++)
        OPREG__TRY(check_arg(p, i, &bound[i]));
    *device_key = OPREG_KEY_CPU;
    if (p->ntensor) OPREG__TRY(slow_key(device_key, t, bound));
    return OPREG_OK;
}

opreg_status opreg_call_boxed_key(const opreg_op *op, opreg_dispatch_key key,
                                  const opreg_value *args, size_t nargs, const opreg_kwarg *kwargs,
                                  size_t nkwargs, opreg_value *rets, size_t nrets) {
    if (!op) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_call_boxed_key: op is NULL");
    if (key < 0 || key >= opreg_key_count())
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_call_boxed_key: %d is not a backend key", (int)key);
    const struct opreg__table *t;
    OPREG__TRY(preamble(&t, op, args, nargs, kwargs, nkwargs, rets, nrets));
    /* The key is given, but the tensors must still agree on a device. */
    opreg_value bound[OPREG__MAX_ARGS];
    int32_t device_key;
    OPREG__TRY(opreg__bind_checked(t, args, nargs, kwargs, nkwargs, bound, &device_key));
    const opreg_dispatch_entry *e = &t->e[key];
    return e->fn(e->context, op, bound, rets);
}
