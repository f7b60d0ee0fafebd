/* opreg._opreg.Op: one op of the default registry, callable from Python.
 *
 * The object holds the op's handle (found once, valid for the registry's
 * life) and a plan of its arguments built from the op's schema: for each
 * argument, how a Python value becomes an opreg_value, and its name as an
 * interned str for keywords. A call converts the positional values in
 * schema order, hands keyword values to opreg by name, and makes one
 * opreg_call_boxed(), which binds keywords and defaults, checks every value
 * (a `Tensor!` given a read-only tensor included) and dispatches; its errors
 * come back as opreg.Error with opreg's message. The plan is rebuilt when the
 * op's schema changes (its library closed and the name defined again).
 *
 * Python subclasses (opreg.OpOverloadPacket) add attribute access to
 * overloads; the call itself stays this type's tp_call. */
#include "python/src/binding.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The most arguments an op can have (the registry refuses more at def). */
#define MAX_ARGS 64
/* The most returns a call converts. */
#define MAX_RETS 16
/* Tensor arguments converted without an allocation. */
#define INLINE_SLOTS 12
/* A call whose tensors hold at least this many elements lets other Python
 * threads run while the kernel does. Below it, releasing and taking the
 * interpreter lock would cost more than it frees. */
#define RELEASE_GIL_NUMEL (1 << 15)

enum arg_kind {
    K_TENSOR,
    K_TENSOR_LIST,
    K_INT,
    K_FLOAT,
    K_BOOL,
    K_STR,
    K_INT_LIST,
    K_FLOAT_LIST,
    K_BOOL_LIST,
    K_SCALAR_TYPE,
    K_DEVICE,
    K_SCALAR,
    K_UNSUPPORTED,
};

struct arg_plan {
    uint8_t kind;
    bool optional;      /* `T?`: None is accepted */
    bool elem_optional; /* `Tensor?[]` */
    bool write;         /* `Tensor!`, `Tensor(a!)[]` */
    int64_t list_size;  /* `int[N]`: N; -1 otherwise */
    const char *name;   /* owned by the schema */
    PyObject *pyname;   /* interned */
    char type_text[80];
};

typedef struct op_object {
    PyObject ob_base;
    const opreg_op *op;
    const opreg_schema *schema; /* the schema the plan was built from */
    uint32_t nargs;
    uint32_t nreturns;
    struct arg_plan *args;
} op_object;

static opreg_registry *default_registry(void) {
    opreg_registry *reg = opreg_registry_default();
    if (!reg) opreg__py_raise(OPREG_ERR_INTERNAL, "the default registry could not be created");
    return reg;
}

/* ---- the plan ----------------------------------------------------------------- */

static uint8_t leaf_kind(opreg_type_kind k) {
    switch (k) {
    case OPREG_TYPE_TENSOR:
        return K_TENSOR;
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
        return K_INT;
    case OPREG_TYPE_FLOAT:
        return K_FLOAT;
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_SYMBOOL:
        return K_BOOL;
    case OPREG_TYPE_STR:
        return K_STR;
    case OPREG_TYPE_SCALAR_TYPE:
        return K_SCALAR_TYPE;
    case OPREG_TYPE_DEVICE:
        return K_DEVICE;
    case OPREG_TYPE_SCALAR:
        return K_SCALAR;
    default:
        return K_UNSUPPORTED;
    }
}

static uint8_t list_kind(const opreg_type *elem, bool *elem_optional) {
    opreg_type_kind k = opreg_type_get_kind(elem);
    if (k == OPREG_TYPE_OPTIONAL &&
        opreg_type_get_kind(opreg_type_element(elem, 0)) == OPREG_TYPE_TENSOR) {
        *elem_optional = true;
        return K_TENSOR_LIST;
    }
    switch (leaf_kind(k)) {
    case K_TENSOR:
        return K_TENSOR_LIST;
    case K_INT:
        return K_INT_LIST;
    case K_FLOAT:
        return K_FLOAT_LIST;
    case K_BOOL:
        return K_BOOL_LIST;
    default:
        return K_UNSUPPORTED;
    }
}

/* The schema spelling of a type ("Tensor?[]", "int[2]"), for messages. */
static void spell(const opreg_type *t, char *buf, size_t cap) {
    opreg_type_kind k = opreg_type_get_kind(t);
    if (k == OPREG_TYPE_LIST || k == OPREG_TYPE_OPTIONAL) {
        char inner[48];
        spell(opreg_type_element(t, 0), inner, sizeof inner);
        int64_t n = opreg_type_list_size(t);
        if (k == OPREG_TYPE_OPTIONAL)
            snprintf(buf, cap, "%s?", inner);
        else if (n >= 0)
            snprintf(buf, cap, "%s[%lld]", inner, (long long)n);
        else
            snprintf(buf, cap, "%s[]", inner);
        return;
    }
    const char *name = opreg_type_name(t);
    snprintf(buf, cap, "%s", name ? name : "(composite type)");
}

static void free_plan(op_object *self) {
    for (uint32_t i = 0; self->args && i < self->nargs; i++)
        Py_XDECREF(self->args[i].pyname);
    PyMem_Free(self->args);
    self->args = NULL;
    self->nargs = self->nreturns = 0;
    self->schema = NULL;
}

static int build_plan(op_object *self, const opreg_schema *s) {
    free_plan(self);
    if (!s) return 0; /* undefined: a call reaches opreg's "not found" stub */
    size_t n = opreg_schema_num_arguments(s);
    struct arg_plan *args = PyMem_Calloc(n ? n : 1, sizeof *args);
    if (!args) {
        PyErr_NoMemory();
        return -1;
    }
    self->args = args;
    for (size_t i = 0; i < n; i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        const opreg_type *t = opreg_argument_type(a);
        struct arg_plan *p = &args[i];
        self->nargs = (uint32_t)i + 1;
        spell(t, p->type_text, sizeof p->type_text);
        p->name = opreg_argument_name(a);
        p->write = opreg_argument_is_write(a);
        p->list_size = -1;
        if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) {
            p->optional = true;
            t = opreg_type_element(t, 0);
        }
        if (opreg_type_get_kind(t) == OPREG_TYPE_LIST) {
            p->list_size = opreg_type_list_size(t);
            p->kind = list_kind(opreg_type_element(t, 0), &p->elem_optional);
        } else {
            p->kind = leaf_kind(opreg_type_get_kind(t));
        }
        p->pyname = PyUnicode_InternFromString(p->name);
        if (!p->pyname) {
            free_plan(self);
            return -1;
        }
    }
    self->nargs = (uint32_t)n;
    self->nreturns = (uint32_t)opreg_schema_num_returns(s);
    self->schema = s;
    return 0;
}

/* ---- one call's converted values ------------------------------------------------ */

struct slot_block {
    struct slot_block *next;
    int used;
    opreg__py_tensor slots[32];
};

struct frame {
    opreg__py_tensor inline_slots[INLINE_SLOTS];
    int ninline;
    struct slot_block *blocks;
    PyObject *keep[2 * MAX_ARGS]; /* UTF-8 bytes of str values and keyword names */
    int nkeep;
    void *heap[2 * MAX_ARGS]; /* list arrays */
    int nheap;
    int64_t numel;
};

static opreg__py_tensor *new_slot(struct frame *f) {
    if (f->ninline < INLINE_SLOTS) return &f->inline_slots[f->ninline++];
    if (!f->blocks || f->blocks->used == 32) {
        struct slot_block *b = PyMem_Malloc(sizeof *b);
        if (!b) {
            PyErr_NoMemory();
            return NULL;
        }
        b->next = f->blocks;
        b->used = 0;
        f->blocks = b;
    }
    return &f->blocks->slots[f->blocks->used++];
}

static void *frame_alloc(struct frame *f, size_t bytes) {
    if (f->nheap == 2 * MAX_ARGS) {
        PyErr_SetString(PyExc_MemoryError, "too many list arguments");
        return NULL;
    }
    void *p = PyMem_Malloc(bytes ? bytes : 1);
    if (!p) return PyErr_NoMemory();
    f->heap[f->nheap++] = p;
    return p;
}

static int frame_keep(struct frame *f, PyObject *o) {
    if (f->nkeep == 2 * MAX_ARGS) {
        Py_DECREF(o);
        PyErr_SetString(PyExc_MemoryError, "too many str arguments");
        return -1;
    }
    f->keep[f->nkeep++] = o;
    return 0;
}

static void frame_release(struct frame *f) {
    for (int i = 0; i < f->ninline; i++)
        if (f->inline_slots[i].capsule) opreg__py_tensor_release(&f->inline_slots[i]);
    while (f->blocks) {
        struct slot_block *b = f->blocks;
        for (int i = 0; i < b->used; i++)
            opreg__py_tensor_release(&b->slots[i]);
        f->blocks = b->next;
        PyMem_Free(b);
    }
    for (int i = 0; i < f->nkeep; i++)
        Py_DECREF(f->keep[i]);
    for (int i = 0; i < f->nheap; i++)
        PyMem_Free(f->heap[i]);
}

/* ---- converting values ------------------------------------------------------------ */

static PyObject *type_error(const opreg__py_where *w, const struct arg_plan *a, PyObject *o) {
    char where[256], tn[96];
    opreg__py_where_text(w, where, sizeof where);
    opreg__py_type_name(o, tn, sizeof tn);
    return opreg__py_raisef(OPREG_ERR_TYPE_MISMATCH, "%s expected a value of type %s but got %s",
                            where, a->type_text, tn);
}

/* Fold a Python conversion error (overflow) into opreg.Error, naming the argument. */
static int range_error(const opreg__py_where *w, const struct arg_plan *a) {
    PyErr_Clear();
    char where[256];
    opreg__py_where_text(w, where, sizeof where);
    opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: the value is out of range for type %s", where,
                     a->type_text);
    return -1;
}

static int to_tensor(struct frame *f, PyObject *o, const opreg__py_where *w, DLTensor **out,
                     bool *readonly) {
    opreg__py_tensor *t = new_slot(f);
    if (!t || opreg__py_tensor_from(t, o, w) < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->t.ndim; i++)
        n *= t->t.shape[i];
    f->numel += n;
    *out = &t->t;
    *readonly = t->readonly;
    return 0;
}

static int to_int(PyObject *o, int64_t *out) {
    if (PyLong_Check(o)) {
        long long v = PyLong_AsLongLong(o);
        if (v == -1 && PyErr_Occurred()) return -2;
        *out = v;
        return 0;
    }
    if (!PyIndex_Check(o)) return -1; /* numpy integers have __index__ */
    PyObject *i = PyNumber_Index(o);
    if (!i) return -2;
    long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) return -2;
    *out = v;
    return 0;
}

static int to_float(PyObject *o, double *out) {
    if (PyFloat_Check(o)) {
        *out = PyFloat_AsDouble(o);
        return 0;
    }
    if (PyLong_Check(o)) {
        *out = PyLong_AsDouble(o);
        return *out == -1.0 && PyErr_Occurred() ? -2 : 0;
    }
    if (PyUnicode_Check(o) || PyBytes_Check(o) || !PyNumber_Check(o)) return -1;
    PyObject *x = PyNumber_Float(o); /* numpy floats and 0-d arrays */
    if (!x) {
        PyErr_Clear();
        return -1;
    }
    *out = PyFloat_AsDouble(x);
    Py_DECREF(x);
    return 0;
}

static int to_bool(PyObject *o, bool *out) {
    if (o == Py_True || o == Py_False) {
        *out = o == Py_True;
        return 0;
    }
    return -1;
}

/* A name for a dtype or device: a str, or str(obj) ("torch.float32", "cuda:0"). */
static PyObject *name_bytes(PyObject *o) {
    PyObject *s = PyUnicode_Check(o) ? (Py_INCREF(o), o) : PyObject_Str(o);
    if (!s) return NULL;
    PyObject *b = PyUnicode_AsUTF8String(s);
    Py_DECREF(s);
    return b;
}

static int to_dtype(PyObject *o, opreg_dtype *out) {
    if (!PyUnicode_Check(o) && (PyLong_Check(o) || PyFloat_Check(o))) return -1;
    PyObject *b = name_bytes(o);
    if (!b) {
        PyErr_Clear();
        return -1;
    }
    const char *s = PyBytes_AsString(b);
    if (strncmp(s, "torch.", 6) == 0) s += 6;
    opreg_status st = opreg_dtype_from_name(out, s);
    Py_DECREF(b);
    return st == OPREG_OK ? 0 : -1;
}

static int to_device(PyObject *o, DLDevice *out) {
    if (!PyUnicode_Check(o) && (PyLong_Check(o) || PyFloat_Check(o))) return -1;
    PyObject *b = name_bytes(o);
    if (!b) {
        PyErr_Clear();
        return -1;
    }
    opreg_status st = opreg_device_parse(out, PyBytes_AsString(b));
    Py_DECREF(b);
    return st == OPREG_OK ? 0 : -1;
}

static int to_list(struct frame *f, const struct arg_plan *a, PyObject *o, const opreg__py_where *w,
                   opreg_value *v) {
    /* A list is copied into a tuple held until the call returns: converting
     * an item may run Python code (a producer's __dlpack__), which must not
     * be able to drop the other items from under the call. */
    if (PyList_Check(o)) {
        o = PyList_AsTuple(o);
        if (!o || frame_keep(f, o) < 0) return -1;
    }
    Py_ssize_t n = PyTuple_Check(o) ? PyTuple_Size(o) : -1;
    int64_t one_int = 0;
    double one_float = 0;
    bool one_bool = false;
    /* `int[2] stride` takes a single int too, repeated, as PyTorch does. */
    bool single = false;
    if (n < 0 && a->list_size > 0) {
        single = (a->kind == K_INT_LIST && to_int(o, &one_int) == 0) ||
                 (a->kind == K_FLOAT_LIST && to_float(o, &one_float) == 0) ||
                 (a->kind == K_BOOL_LIST && to_bool(o, &one_bool) == 0);
        if (!single && PyErr_Occurred()) return range_error(w, a);
        if (single) n = a->list_size;
    }
    if (n < 0) {
        type_error(w, a, o);
        return -1;
    }
    opreg__py_where iw = *w;
    if (a->kind == K_TENSOR_LIST) {
        DLTensor **items = frame_alloc(f, sizeof(DLTensor *) * (size_t)n);
        if (!items) return -1;
        bool any_readonly = false;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyTuple_GetItem(o, i);
            iw.item = (int)i;
            if (x == Py_None && a->elem_optional) {
                items[i] = NULL;
                continue;
            }
            bool ro = false;
            if (to_tensor(f, x, &iw, &items[i], &ro) < 0) return -1;
            any_readonly |= ro;
        }
        *v = opreg_tensor_list_value(items, (size_t)n);
        if (any_readonly) v->flags = OPREG_VALUE_READONLY;
        return 0;
    }
    void *items = frame_alloc(f, 8 * (size_t)n);
    if (!items) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = single ? NULL : PyTuple_GetItem(o, i);
        int rc = 0;
        iw.item = (int)i;
        if (a->kind == K_INT_LIST) {
            int64_t *d = items;
            if (single)
                d[i] = one_int;
            else
                rc = to_int(x, &d[i]);
        } else if (a->kind == K_FLOAT_LIST) {
            double *d = items;
            if (single)
                d[i] = one_float;
            else
                rc = to_float(x, &d[i]);
        } else {
            bool *d = items;
            if (single)
                d[i] = one_bool;
            else
                rc = to_bool(x, &d[i]);
        }
        if (rc == -2) return range_error(&iw, a);
        if (rc < 0) {
            type_error(&iw, a, x);
            return -1;
        }
    }
    v->flags = 0;
    v->u.ints.items = items;
    v->u.ints.len = (size_t)n;
    v->kind = a->kind == K_INT_LIST     ? OPREG_VALUE_INT_LIST
              : a->kind == K_FLOAT_LIST ? OPREG_VALUE_FLOAT_LIST
                                        : OPREG_VALUE_BOOL_LIST;
    return 0;
}

/* Convert one Python value for argument `a`. -1 with an exception set. */
static int convert(struct frame *f, const struct arg_plan *a, PyObject *o, const opreg__py_where *w,
                   opreg_value *v) {
    int rc = -1;
    v->flags = 0;
    /* Tensors and floats first, by plain branches: a switch's indirect jump
     * over an op's mixed argument kinds mispredicts. */
    if (a->kind == K_TENSOR && o != Py_None) {
        bool ro = false;
        if (to_tensor(f, o, w, &v->u.tensor, &ro) < 0) return -1;
        v->kind = OPREG_VALUE_TENSOR;
        v->flags = ro ? OPREG_VALUE_READONLY : 0;
        return 0;
    }
    if (a->kind == K_FLOAT && PyFloat_Check(o)) {
        v->kind = OPREG_VALUE_FLOAT;
        v->u.f = PyFloat_AsDouble(o);
        return 0;
    }
    if (o == Py_None && (a->optional || a->kind == K_UNSUPPORTED)) {
        *v = opreg_none(); /* an unsupported type: opreg says so, or a None it accepts */
        return 0;
    }
    switch (a->kind) {
    case K_TENSOR: {
        bool ro = false;
        if (to_tensor(f, o, w, &v->u.tensor, &ro) < 0) return -1;
        v->kind = OPREG_VALUE_TENSOR;
        v->flags = ro ? OPREG_VALUE_READONLY : 0;
        return 0;
    }
    case K_INT:
        v->kind = OPREG_VALUE_INT;
        rc = to_int(o, &v->u.i);
        break;
    case K_FLOAT:
        v->kind = OPREG_VALUE_FLOAT;
        rc = to_float(o, &v->u.f);
        break;
    case K_BOOL:
        v->kind = OPREG_VALUE_BOOL;
        rc = to_bool(o, &v->u.b);
        break;
    case K_STR:
        if (PyUnicode_Check(o)) {
            PyObject *b = PyUnicode_AsUTF8String(o);
            char *s;
            Py_ssize_t len;
            if (!b || frame_keep(f, b) < 0 || PyBytes_AsStringAndSize(b, &s, &len) < 0) return -1;
            v->kind = OPREG_VALUE_STR;
            v->u.s.ptr = s;
            v->u.s.len = (size_t)len;
            return 0;
        }
        break;
    case K_SCALAR_TYPE: {
        opreg_dtype d;
        rc = to_dtype(o, &d);
        *v = opreg_dtype_value(d);
        break;
    }
    case K_DEVICE: {
        DLDevice d = { kDLCPU, 0 };
        rc = to_device(o, &d);
        *v = opreg_device_value(d);
        break;
    }
    case K_SCALAR:
        if (o == Py_True || o == Py_False) {
            *v = opreg_bool_value(o == Py_True);
            return 0;
        }
        if (PyLong_Check(o)) {
            v->kind = OPREG_VALUE_INT;
            rc = to_int(o, &v->u.i);
        } else {
            v->kind = OPREG_VALUE_FLOAT;
            rc = to_float(o, &v->u.f);
        }
        break;
    case K_TENSOR_LIST:
    case K_INT_LIST:
    case K_FLOAT_LIST:
    case K_BOOL_LIST:
        return to_list(f, a, o, w, v);
    default: {
        char where[256];
        opreg__py_where_text(w, where, sizeof where);
        opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                         "%s has type %s, which the Python binding cannot pass", where,
                         a->type_text);
        return -1;
    }
    }
    if (rc == -2) return range_error(w, a);
    if (rc < 0) {
        type_error(w, a, o);
        return -1;
    }
    return 0;
}

/* ---- returns ------------------------------------------------------------------- */

static void free_rets(opreg_value *rets, uint32_t from, uint32_t n) {
    for (uint32_t i = from; i < n; i++)
        if (rets[i].kind == OPREG_VALUE_TENSOR) opreg_tensor_free(rets[i].u.tensor);
}

static PyObject *ret_to_py(const opreg_value *v) {
    switch (v->kind) {
    case OPREG_VALUE_TENSOR:
        return opreg__py_tensor_wrap(v->u.tensor);
    case OPREG_VALUE_INT:
        return PyLong_FromLongLong(v->u.i);
    case OPREG_VALUE_FLOAT:
        return PyFloat_FromDouble(v->u.f);
    case OPREG_VALUE_BOOL:
        return PyBool_FromLong(v->u.b);
    case OPREG_VALUE_STR:
        return PyUnicode_FromStringAndSize(v->u.s.ptr, (Py_ssize_t)v->u.s.len);
    default:
        Py_RETURN_NONE;
    }
}

static PyObject *returns_to_py(opreg_value *rets, uint32_t n) {
    if (n == 0) Py_RETURN_NONE;
    if (n == 1) return ret_to_py(&rets[0]);
    PyObject *tuple = PyTuple_New(n);
    for (uint32_t i = 0; i < n; i++) {
        PyObject *x = tuple ? ret_to_py(&rets[i]) : NULL;
        if (!x) {
            free_rets(rets, i + 1, n);
            Py_XDECREF(tuple);
            return NULL;
        }
        PyTuple_SetItem(tuple, (Py_ssize_t)i, x);
    }
    return tuple;
}

/* ---- the call ------------------------------------------------------------------ */

static int find_keyword(const op_object *self, PyObject *key) {
    for (uint32_t j = 0; j < self->nargs; j++)
        if (self->args[j].pyname == key) return (int)j;
    for (uint32_t j = 0; j < self->nargs; j++) {
        int c = PyUnicode_Compare(self->args[j].pyname, key);
        if (c == 0) return (int)j;
        if (c == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    return -1;
}

static int convert_keywords(op_object *self, struct frame *f, PyObject *kwargs, opreg_kwarg *kw,
                            size_t *nkw, const char *op_name) {
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (PyDict_Next(kwargs, &pos, &key, &val)) {
        if (*nkw == MAX_ARGS) {
            opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: more than %d keyword arguments",
                             op_name, MAX_ARGS);
            return -1;
        }
        int j = find_keyword(self, key);
        opreg_kwarg *k = &kw[(*nkw)++];
        if (j < 0) {
            /* Not an argument of the op: opreg says so, naming it. */
            PyObject *b = PyUnicode_AsUTF8String(key);
            if (!b || frame_keep(f, b) < 0) return -1;
            k->name = PyBytes_AsString(b);
            k->value = opreg_none();
            continue;
        }
        opreg__py_where w = { op_name, self->args[j].name, j, -1 };
        k->name = self->args[j].name;
        if (convert(f, &self->args[j], val, &w, &k->value) < 0) return -1;
    }
    return 0;
}

/* Release a call's values, keeping a pending exception: a producer's
 * deleter may run Python code. */
static void release_keeping_error(struct frame *f) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    frame_release(f);
    if (et) {
        PyErr_Clear(); /* the original error wins over one a deleter raised */
        PyErr_Restore(et, ev, tb);
    }
}

/* Everything one call needs, converted from Python. */
struct call {
    struct frame f;
    opreg_value vals[MAX_ARGS];
    opreg_kwarg kw[MAX_ARGS];
    size_t nargs;
    size_t nkw;
};

/* Convert a call's arguments. -1 with an exception set; release c->f either way. */
static int prepare(op_object *self, struct call *c, PyObject *args, PyObject *kwargs) {
    c->f.ninline = 0;
    c->f.blocks = NULL;
    c->f.nkeep = 0;
    c->f.nheap = 0;
    c->f.numel = 0;
    c->nkw = 0;
    c->nargs = 0;
    const opreg_schema *s = opreg_op_schema(self->op);
    if (s != self->schema && build_plan(self, s) < 0) return -1;
    const char *op_name = opreg_op_name(self->op);
    Py_ssize_t n = PyTuple_Size(args);
    if (n > MAX_ARGS) {
        opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: takes %u arguments but %zd were given",
                         op_name, self->nargs, n);
        return -1;
    }
    if (self->nreturns > MAX_RETS) {
        opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                         "%s: returns %u values; the Python binding takes at most %d", op_name,
                         self->nreturns, MAX_RETS);
        return -1;
    }
    c->nargs = (size_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint32_t)i >= self->nargs) {
            c->vals[i] = opreg_none(); /* too many: opreg says how many it takes */
            continue;
        }
        opreg__py_where w = { op_name, self->args[i].name, (int)i, -1 };
        if (convert(&c->f, &self->args[i], PyTuple_GetItem(args, i), &w, &c->vals[i]) < 0)
            return -1;
    }
    if (kwargs && PyDict_Size(kwargs) > 0 &&
        convert_keywords(self, &c->f, kwargs, c->kw, &c->nkw, op_name) < 0)
        return -1;
    return 0;
}

static PyObject *op_call(PyObject *obj, PyObject *args, PyObject *kwargs) {
    op_object *self = (op_object *)(void *)obj;
    struct call c;
    PyObject *result = NULL;
    if (prepare(self, &c, args, kwargs) == 0) {
        opreg_value rets[MAX_RETS];
        opreg_status st;
        if (c.f.numel >= RELEASE_GIL_NUMEL) {
            Py_BEGIN_ALLOW_THREADS;
            st = opreg_call_boxed(self->op, c.vals, c.nargs, c.kw, c.nkw, rets, self->nreturns);
            Py_END_ALLOW_THREADS;
        } else {
            st = opreg_call_boxed(self->op, c.vals, c.nargs, c.kw, c.nkw, rets, self->nreturns);
        }
        if (st == OPREG_OK)
            result = returns_to_py(rets, self->nreturns);
        else
            opreg__py_raise(st, NULL);
    }
    if (result)
        frame_release(&c.f);
    else
        release_keeping_error(&c.f);
    return result;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* _time_c(n, *args, **kwargs): the arguments converted once, then n calls of
 * opreg_call_boxed() timed in C; the nanoseconds per call. For
 * tools/bench_python.py, which sets it beside the cost of a call from
 * Python, so the binding's own share shows. */
static PyObject *op_time_c(PyObject *obj, PyObject *args, PyObject *kwargs) {
    op_object *self = (op_object *)(void *)obj;
    Py_ssize_t n = PyTuple_Size(args);
    long long iters = n > 0 ? PyLong_AsLongLong(PyTuple_GetItem(args, 0)) : -1;
    if (iters < 1) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_time_c(n, *args): n >= 1");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    if (!rest) return NULL;
    struct call c;
    PyObject *result = NULL;
    if (prepare(self, &c, rest, kwargs) == 0) {
        opreg_value rets[MAX_RETS];
        opreg_status st = OPREG_OK;
        double t0 = now_ns();
        for (long long i = 0; i < iters && st == OPREG_OK; i++) {
            st = opreg_call_boxed(self->op, c.vals, c.nargs, c.kw, c.nkw, rets, self->nreturns);
            if (st == OPREG_OK) free_rets(rets, 0, self->nreturns);
        }
        double t1 = now_ns();
        if (st == OPREG_OK)
            result = PyFloat_FromDouble((t1 - t0) / (double)iters);
        else
            opreg__py_raise(st, NULL);
    }
    release_keeping_error(&c.f);
    Py_DECREF(rest);
    return result;
}

/* ---- the type ------------------------------------------------------------------ */

static int op_init(PyObject *obj, PyObject *args, PyObject *kwargs) {
    static char *names[] = { "name", NULL };
    const char *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s:Op", names, &name)) return -1;
    opreg_registry *reg = default_registry();
    if (!reg) return -1;
    op_object *self = (op_object *)(void *)obj;
    const opreg_op *op;
    opreg_status st = opreg_op_find(&op, reg, name);
    if (st != OPREG_OK) {
        opreg__py_raise(st, NULL);
        return -1;
    }
    free_plan(self);
    self->op = op;
    return build_plan(self, opreg_op_schema(op));
}

static void op_dealloc(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    free_plan((op_object *)(void *)obj);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(obj);
    Py_DECREF(tp);
}

static bool check_bound(const op_object *self) {
    if (self->op) return true;
    PyErr_SetString(PyExc_RuntimeError, "opreg op object is not initialised");
    return false;
}

static PyObject *op_get_name(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    return PyUnicode_FromString(opreg_op_name(self->op));
}

static PyObject *op_get_schema(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    const opreg_schema *s = opreg_op_schema(self->op);
    if (!s) Py_RETURN_NONE;
    char *text = opreg_schema_to_string(s, OPREG_SCHEMA_CANONICAL);
    if (!text) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(text);
    opreg_string_free(text);
    return r;
}

static PyObject *op_get_overload(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    const char *name = opreg_op_name(self->op);
    const char *sep = strstr(name, "::");
    const char *dot = strchr(sep ? sep + 2 : name, '.');
    return PyUnicode_FromString(dot ? dot + 1 : "");
}

static PyObject *op_repr(PyObject *obj) {
    op_object *self = (op_object *)(void *)obj;
    if (!self->op) return PyUnicode_FromString("<opreg op (uninitialised)>");
    return PyUnicode_FromFormat("<opreg op %s>", opreg_op_name(self->op));
}

/* _explain(*args, **kwargs): opreg_explain_call() on the arguments as a call
 * would convert them, for the key of the tensors' device: which provider
 * would run and why each earlier one declined, as text. Nothing runs. */
static PyObject *op_explain(PyObject *obj, PyObject *args, PyObject *kwargs) {
    op_object *self = (op_object *)(void *)obj;
    struct call c;
    PyObject *result = NULL;
    if (prepare(self, &c, args, kwargs) == 0) {
        opreg_call_explanation *x = PyMem_Malloc(sizeof *x);
        if (!x) {
            PyErr_NoMemory();
        } else {
            opreg_status st =
                opreg_explain_call(x, self->op, OPREG_KEY_NONE, c.vals, c.nargs, c.kw, c.nkw);
            if (st == OPREG_OK)
                result = PyUnicode_FromString(x->message);
            else
                opreg__py_raise(st, NULL);
            PyMem_Free(x);
        }
    }
    if (result)
        frame_release(&c.f);
    else
        release_keeping_error(&c.f);
    return result;
}

static PyMethodDef op_methods[] = {
    { "_time_c", (PyCFunction)(void (*)(void))op_time_c, METH_VARARGS | METH_KEYWORDS,
      "_time_c(n, *args, **kwargs) -> float\n"
      "Nanoseconds per call of the op in C, the arguments converted once (benchmarks)." },
    { "_explain", (PyCFunction)(void (*)(void))op_explain, METH_VARARGS | METH_KEYWORDS,
      "_explain(*args, **kwargs) -> str\n"
      "Which provider would run these arguments, and why each earlier one declined (see "
      "opreg.explain)." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef op_getset[] = {
    { "name", op_get_name, NULL, "The op's full name, 'ns::name' or 'ns::name.overload'.", NULL },
    { "schema", op_get_schema, NULL, "The op's schema (canonical form), None when undefined.",
      NULL },
    { "overload", op_get_overload, NULL, "The overload name ('' for none).", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot op_slots[] = {
    { Py_tp_init, (void *)op_init },
    { Py_tp_new, (void *)PyType_GenericNew },
    { Py_tp_dealloc, (void *)op_dealloc },
    { Py_tp_call, (void *)op_call },
    { Py_tp_repr, (void *)op_repr },
    { Py_tp_getset, op_getset },
    { Py_tp_methods, op_methods },
    { Py_tp_doc, "Op(name): an op of the default registry, by its full name.\n"
                 "Calling it runs the op: positional and keyword arguments as its schema says." },
    { 0, NULL },
};

static PyType_Spec op_spec = {
    "opreg._opreg.Op", sizeof(op_object), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, op_slots,
};

int opreg__py_op_type_init(PyObject *module) {
    PyObject *type = PyType_FromSpec(&op_spec);
    if (!type) return -1;
    if (PyModule_AddObject(module, "Op", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}
