/* Python values to opreg values for one call, by the registry's plan of
 * each argument, and a call's returns back to Python.
 *
 * A converted value points into what its call's frame holds: the tensor
 * slots (a numpy array's header copied, or the producer's managed tensor),
 * the UTF-8 bytes of a str, the array of a list. The frame is released once
 * the call has returned. Values of the wrong type fail with opreg.Error
 * (OPREG_ERR_TYPE_MISMATCH) naming the op, the argument and both types. */
#include "python/src/binding.h"

#include <string.h>

/* ---- one call's frame ------------------------------------------------------------ */

struct opreg__py_slot_block {
    struct opreg__py_slot_block *next;
    int used;
    opreg__py_tensor slots[32];
};

void opreg__py_frame_init(opreg__py_frame *f) {
    f->ninline = 0;
    f->blocks = NULL;
    f->nkeep = 0;
    f->nheap = 0;
    f->numel = 0;
    f->has_stream = false;
    f->chain = NULL;
    f->more_keep = NULL;
}

static opreg__py_tensor *new_slot(opreg__py_frame *f) {
    if (f->ninline < OPREG__PY_INLINE_SLOTS) return &f->inline_slots[f->ninline++];
    if (!f->blocks || f->blocks->used == 32) {
        struct opreg__py_slot_block *b = PyMem_Malloc(sizeof *b);
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

void *opreg__py_frame_alloc(opreg__py_frame *f, size_t bytes) {
    if (f->nheap < 2 * OPREG__PY_MAX_ARGS) {
        void *p = PyMem_Malloc(bytes ? bytes : 1);
        if (!p) return PyErr_NoMemory();
        f->heap[f->nheap++] = p;
        return p;
    }
    /* More arrays than a flat call has (nested lists): chained blocks. */
    void **block = PyMem_Malloc(sizeof(void *) + (bytes ? bytes : 1));
    if (!block) return PyErr_NoMemory();
    block[0] = f->chain;
    f->chain = block;
    return block + 1;
}

int opreg__py_frame_keep(opreg__py_frame *f, PyObject *o) {
    if (f->nkeep < 2 * OPREG__PY_MAX_ARGS) {
        f->keep[f->nkeep++] = o;
        return 0;
    }
    /* More objects than a flat call keeps (nested lists): one list more. */
    if (!f->more_keep && !(f->more_keep = PyList_New(0))) {
        Py_DECREF(o);
        return -1;
    }
    int rc = PyList_Append(f->more_keep, o);
    Py_DECREF(o);
    return rc;
}

void opreg__py_frame_release(opreg__py_frame *f) {
    for (int i = 0; i < f->ninline; i++)
        if (f->inline_slots[i].capsule) opreg__py_tensor_release(&f->inline_slots[i]);
    while (f->blocks) {
        struct opreg__py_slot_block *b = f->blocks;
        for (int i = 0; i < b->used; i++)
            opreg__py_tensor_release(&b->slots[i]);
        f->blocks = b->next;
        PyMem_Free(b);
    }
    for (int i = 0; i < f->nkeep; i++)
        Py_DECREF(f->keep[i]);
    for (int i = 0; i < f->nheap; i++)
        PyMem_Free(f->heap[i]);
    while (f->chain) {
        void **block = f->chain;
        f->chain = block[0];
        PyMem_Free(block);
    }
    Py_CLEAR(f->more_keep);
}

void opreg__py_frame_release_keeping_error(opreg__py_frame *f) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    opreg__py_frame_release(f);
    if (et) {
        PyErr_Clear(); /* the original error wins over one a deleter raised */
        PyErr_Restore(et, ev, tb);
    }
}

/* ---- converting values ------------------------------------------------------------ */

static PyObject *type_error(const opreg__py_where *w, const opreg_arg_plan *a, PyObject *o) {
    char where[256], tn[96];
    opreg__py_where_text(w, where, sizeof where);
    opreg__py_type_name(o, tn, sizeof tn);
    return opreg__py_raisef(OPREG_ERR_TYPE_MISMATCH, "%s expected a value of type %s but got %s",
                            where, a->type_text, tn);
}

/* Fold a Python conversion error (overflow) into opreg.Error, naming the argument. */
static int range_error(const opreg__py_where *w, const opreg_arg_plan *a) {
    PyErr_Clear();
    char where[256];
    opreg__py_where_text(w, where, sizeof where);
    opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: the value is out of range for type %s", where,
                     a->type_text);
    return -1;
}

int opreg__py_to_tensor(opreg__py_frame *f, PyObject *o, const opreg__py_where *w, DLTensor **out,
                        bool *readonly) {
    opreg__py_tensor *t = new_slot(f);
    if (!t || opreg__py_tensor_from(t, o, w) < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->t.ndim; i++)
        n *= t->t.shape[i];
    f->numel += n;
    if (t->has_stream && !f->has_stream) {
        f->has_stream = true;
        f->stream_device = t->t.device.device_id;
        f->stream = t->stream;
    }
    *out = &t->t;
    *readonly = t->readonly;
    return 0;
}

int opreg__py_to_int(PyObject *o, int64_t *out) {
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

int opreg__py_to_float(PyObject *o, double *out) {
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

int opreg__py_to_bool(PyObject *o, bool *out) {
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

int opreg__py_to_str(opreg__py_frame *f, PyObject *o, opreg_str *out) {
    PyObject *b;
    if (PyUnicode_Check(o)) {
        if (!(b = PyUnicode_AsUTF8String(o))) return -2;
    } else if (PyBytes_Check(o)) { /* any bytes: an IPC handle, say */
        Py_INCREF(o);
        b = o;
    } else {
        return -1;
    }
    char *s;
    Py_ssize_t len;
    if (opreg__py_frame_keep(f, b) < 0 || PyBytes_AsStringAndSize(b, &s, &len) < 0) return -2;
    out->ptr = s;
    out->len = (size_t)len;
    return 0;
}

int opreg__py_to_scalar(PyObject *o, opreg_value *v) {
    if (o == Py_True || o == Py_False) {
        *v = opreg_bool_value(o == Py_True);
        return 0;
    }
    if (PyLong_Check(o)) {
        *v = opreg_int_value(0);
        return opreg__py_to_int(o, &v->u.i);
    }
    *v = opreg_float_value(0);
    return opreg__py_to_float(o, &v->u.f);
}

int opreg__py_to_dtype(PyObject *o, opreg_dtype *out) {
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

int opreg__py_to_device(PyObject *o, DLDevice *out) {
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

static int to_list(opreg__py_frame *f, const opreg_arg_plan *a, PyObject *o,
                   const opreg__py_where *w, opreg_value *v) {
    /* A list is copied into a tuple held until the call returns: converting
     * an item may run Python code (a producer's __dlpack__), which must not
     * be able to drop the other items from under the call. */
    if (PyList_Check(o)) {
        o = PyList_AsTuple(o);
        if (!o || opreg__py_frame_keep(f, o) < 0) return -1;
    }
    Py_ssize_t n = PyTuple_Check(o) ? PyTuple_Size(o) : -1;
    int64_t one_int = 0;
    double one_float = 0;
    bool one_bool = false;
    /* `int[2] stride` takes a single int too, repeated, as PyTorch does. */
    bool single = false;
    if (n < 0 && a->list_size > 0) {
        single = (a->kind == OPREG_VALUE_INT_LIST && opreg__py_to_int(o, &one_int) == 0) ||
                 (a->kind == OPREG_VALUE_FLOAT_LIST && opreg__py_to_float(o, &one_float) == 0) ||
                 (a->kind == OPREG_VALUE_BOOL_LIST && opreg__py_to_bool(o, &one_bool) == 0);
        if (!single && PyErr_Occurred()) return range_error(w, a);
        if (single) n = a->list_size;
    }
    if (n < 0) {
        type_error(w, a, o);
        return -1;
    }
    opreg__py_where iw = *w;
    if (a->kind == OPREG_VALUE_TENSOR_LIST) {
        DLTensor **items = opreg__py_frame_alloc(f, sizeof(DLTensor *) * (size_t)n);
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
            if (opreg__py_to_tensor(f, x, &iw, &items[i], &ro) < 0) return -1;
            any_readonly |= ro;
        }
        *v = opreg_tensor_list_value(items, (size_t)n);
        if (any_readonly) v->flags = OPREG_VALUE_READONLY;
        return 0;
    }
    void *items = opreg__py_frame_alloc(f, 8 * (size_t)n);
    if (!items) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = single ? NULL : PyTuple_GetItem(o, i);
        int rc = 0;
        iw.item = (int)i;
        if (a->kind == OPREG_VALUE_INT_LIST) {
            int64_t *d = items;
            if (single)
                d[i] = one_int;
            else
                rc = opreg__py_to_int(x, &d[i]);
        } else if (a->kind == OPREG_VALUE_FLOAT_LIST) {
            double *d = items;
            if (single)
                d[i] = one_float;
            else
                rc = opreg__py_to_float(x, &d[i]);
        } else {
            bool *d = items;
            if (single)
                d[i] = one_bool;
            else
                rc = opreg__py_to_bool(x, &d[i]);
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
    v->kind = a->kind == OPREG_VALUE_INT_LIST     ? OPREG_VALUE_INT_LIST
              : a->kind == OPREG_VALUE_FLOAT_LIST ? OPREG_VALUE_FLOAT_LIST
                                                  : OPREG_VALUE_BOOL_LIST;
    return 0;
}

int opreg__py_value_from(opreg__py_frame *f, const opreg_arg_plan *a, PyObject *o,
                         const opreg__py_where *w, opreg_value *v) {
    int rc = -1;
    v->flags = 0;
    /* Tensors and floats first, by plain branches: a switch's indirect jump
     * over an op's mixed argument kinds mispredicts. */
    if (a->kind == OPREG_VALUE_TENSOR && o != Py_None) {
        bool ro = false;
        if (opreg__py_to_tensor(f, o, w, &v->u.tensor, &ro) < 0) return -1;
        v->kind = OPREG_VALUE_TENSOR;
        v->flags = ro ? OPREG_VALUE_READONLY : 0;
        return 0;
    }
    if (a->kind == OPREG_VALUE_FLOAT && PyFloat_Check(o)) {
        v->kind = OPREG_VALUE_FLOAT;
        v->u.f = PyFloat_AsDouble(o);
        return 0;
    }
    if (o == Py_None && (a->optional || a->kind == OPREG_ARG_KIND_UNSUPPORTED)) {
        *v = opreg_none(); /* an unsupported type: opreg says so, or a None it accepts */
        return 0;
    }
    switch (a->kind) {
    case OPREG_VALUE_TENSOR: {
        bool ro = false;
        if (opreg__py_to_tensor(f, o, w, &v->u.tensor, &ro) < 0) return -1;
        v->kind = OPREG_VALUE_TENSOR;
        v->flags = ro ? OPREG_VALUE_READONLY : 0;
        return 0;
    }
    case OPREG_VALUE_INT:
        v->kind = OPREG_VALUE_INT;
        rc = opreg__py_to_int(o, &v->u.i);
        break;
    case OPREG_VALUE_FLOAT:
        v->kind = OPREG_VALUE_FLOAT;
        rc = opreg__py_to_float(o, &v->u.f);
        break;
    case OPREG_VALUE_BOOL:
        v->kind = OPREG_VALUE_BOOL;
        rc = opreg__py_to_bool(o, &v->u.b);
        break;
    case OPREG_VALUE_STR: {
        opreg_str str;
        rc = opreg__py_to_str(f, o, &str);
        if (rc == -2) return -1;
        if (rc == 0) {
            v->kind = OPREG_VALUE_STR;
            v->u.s.ptr = str.ptr;
            v->u.s.len = str.len;
            return 0;
        }
        break;
    }
    case OPREG_VALUE_SCALAR_TYPE: {
        opreg_dtype d;
        rc = opreg__py_to_dtype(o, &d);
        *v = opreg_dtype_value(d);
        break;
    }
    case OPREG_VALUE_DEVICE: {
        DLDevice d = { kDLCPU, 0 };
        rc = opreg__py_to_device(o, &d);
        *v = opreg_device_value(d);
        break;
    }
    case OPREG_ARG_KIND_SCALAR:
        rc = opreg__py_to_scalar(o, v);
        break;
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
        return to_list(f, a, o, w, v);
    case OPREG_VALUE_STR_LIST:
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
    case OPREG_ARG_KIND_ANY:
        return opreg__py_nested_from(f, a->type, o, w, v);
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

PyObject *opreg__py_plain_value(const opreg_value *v) {
    switch (v->kind) {
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

PyObject *opreg__py_returns_to(opreg_value *rets, uint32_t n) {
    PyObject *result = NULL;
    if (n == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (n == 1) {
        result = opreg__py_nested_to(&rets[0]);
    } else if ((result = PyTuple_New(n))) {
        for (uint32_t i = 0; i < n; i++) {
            PyObject *x = opreg__py_nested_to(&rets[i]);
            if (!x) {
                Py_CLEAR(result);
                break;
            }
            PyTuple_SetItem(result, (Py_ssize_t)i, x);
        }
    }
    /* What did not pass to Python (all of it on failure), and the blocks
     * of returned lists. */
    for (uint32_t i = 0; i < n; i++)
        opreg_value_release(&rets[i]);
    return result;
}
