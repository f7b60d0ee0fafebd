/* Lists of strings, lists of values and tuples, both ways: Python sequences
 * into opreg values by the argument's schema type (`str[]`, `int[][]`,
 * `int?[]`, `(str[], int)`, `Any`), and the strings, lists and tuples that
 * kernels return back into Python.
 *
 * An argument's arrays and the Python objects they point into (UTF-8
 * bytes, tuples of list items) are held by its call's frame. */
#include "python/src/binding.h"

#include <string.h>

#define MAX_DEPTH 32

/* Where in an argument a nested value sits: "[2][0]". */
struct path {
    char text[96];
    size_t used;
};

static int fail_type(const opreg__py_where *w, const struct path *p, const opreg_type *t,
                     PyObject *o) {
    char where[256], want[96], got[96];
    opreg__py_where_text(w, where, sizeof where);
    if (t)
        opreg_type_format(t, want, sizeof want);
    else
        snprintf(want, sizeof want, "Any");
    opreg__py_type_name(o, got, sizeof got);
    opreg__py_raisef(OPREG_ERR_TYPE_MISMATCH, "%s%s%s expected a value of type %s but got %s",
                     where, p->used ? " item " : "", p->text, want, got);
    return -1;
}

static int fail_range(const opreg__py_where *w, const struct path *p, const opreg_type *t) {
    PyErr_Clear();
    char where[256], want[96];
    opreg__py_where_text(w, where, sizeof where);
    opreg_type_format(t, want, sizeof want);
    opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s%s%s: the value is out of range for type %s",
                     where, p->used ? " item " : "", p->text, want);
    return -1;
}

/* A Python list or tuple as a tuple the frame holds (items cannot change
 * under the call); NULL, with no exception, for anything else. */
static PyObject *as_tuple(opreg__py_frame *f, PyObject *o) {
    if (PyTuple_Check(o)) return o;
    if (!PyList_Check(o)) return NULL;
    PyObject *t = PyList_AsTuple(o);
    if (!t || opreg__py_frame_keep(f, t) < 0) return NULL;
    return t; /* the frame's reference keeps it */
}

static int from(opreg__py_frame *f, const opreg_type *t, PyObject *o, const opreg__py_where *w,
                struct path *p, opreg_value *v, int depth);

/* Add item `i` to the path; returns the length to go back to. */
static size_t path_push(struct path *p, Py_ssize_t i) {
    size_t used = p->used;
    int m = snprintf(p->text + used, sizeof p->text - used, "[%zd]", i);
    p->used = used + (m > 0 && (size_t)m < sizeof p->text - used ? (size_t)m : 0);
    return used;
}

static void path_pop(struct path *p, size_t used) {
    p->used = used;
    p->text[used] = '\0';
}

/* Item `i` of a list or tuple, with its place on the path. */
static int from_item(opreg__py_frame *f, const opreg_type *t, PyObject *o, const opreg__py_where *w,
                     struct path *p, opreg_value *v, int depth, Py_ssize_t i) {
    size_t used = path_push(p, i);
    int rc = from(f, t, o, w, p, v, depth + 1);
    path_pop(p, used);
    return rc;
}

/* A value for `Any`: by what the Python object is. */
static int from_any(opreg__py_frame *f, PyObject *o, const opreg__py_where *w, struct path *p,
                    opreg_value *v, int depth) {
    int rc;
    if (o == Py_None) {
        *v = opreg_none();
        return 0;
    }
    if (o == Py_True || o == Py_False) {
        *v = opreg_bool_value(o == Py_True);
        return 0;
    }
    if (PyLong_Check(o)) {
        *v = opreg_int_value(0);
        rc = opreg__py_to_int(o, &v->u.i);
        return rc == 0 ? 0 : fail_range(w, p, NULL);
    }
    if (PyFloat_Check(o)) {
        *v = opreg_float_value(PyFloat_AsDouble(o));
        return 0;
    }
    if (PyUnicode_Check(o) || PyBytes_Check(o)) {
        opreg_str s;
        if (opreg__py_to_str(f, o, &s) < 0) return -1;
        v->kind = OPREG_VALUE_STR;
        v->flags = 0;
        v->u.s.ptr = s.ptr;
        v->u.s.len = s.len;
        return 0;
    }
    PyObject *items = as_tuple(f, o);
    if (!items) {
        if (PyErr_Occurred()) return -1;
        bool ro = false;
        DLTensor *x;
        if (opreg__py_to_tensor(f, o, w, &x, &ro) < 0) return -1; /* names what it got */
        *v = ro ? opreg_tensor_value_readonly(x) : opreg_tensor_value(x);
        return 0;
    }
    Py_ssize_t n = PyTuple_Size(items);
    opreg_value *vals = opreg__py_frame_alloc(f, sizeof *vals * (size_t)n);
    if (!vals) return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (from_item(f, NULL, PyTuple_GetItem(items, i), w, p, &vals[i], depth, i) < 0) return -1;
    *v = PyTuple_Check(o) ? opreg_tuple_value(vals, (size_t)n) : opreg_list_value(vals, (size_t)n);
    return 0;
}

/* A list whose items are numbers or strings, in the array form of its kind. */
static int from_flat_list(opreg__py_frame *f, const opreg_type *elem, PyObject *items,
                          const opreg__py_where *w, struct path *p, opreg_value *v) {
    Py_ssize_t n = PyTuple_Size(items);
    opreg_type_kind ek = opreg_type_get_kind(elem);
    size_t size = ek == OPREG_TYPE_STR ? sizeof(opreg_str) : 8;
    void *arr = opreg__py_frame_alloc(f, size * (size_t)n);
    if (!arr) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GetItem(items, i);
        int rc;
        switch (ek) {
        case OPREG_TYPE_STR:
            rc = opreg__py_to_str(f, x, &((opreg_str *)arr)[i]);
            break;
        case OPREG_TYPE_FLOAT:
            rc = opreg__py_to_float(x, &((double *)arr)[i]);
            break;
        case OPREG_TYPE_BOOL:
        case OPREG_TYPE_SYMBOOL:
            rc = opreg__py_to_bool(x, &((bool *)arr)[i]);
            break;
        default:
            rc = opreg__py_to_int(x, &((int64_t *)arr)[i]);
            break;
        }
        if (rc == 0) continue;
        path_push(p, i); /* the error names the item */
        if (rc == -2 && ek == OPREG_TYPE_STR) return -1;
        return rc == -2 ? fail_range(w, p, elem) : fail_type(w, p, elem, x);
    }
    v->flags = 0;
    v->u.ints.items = arr; /* every list payload: items, then len */
    v->u.ints.len = (size_t)n;
    v->kind = ek == OPREG_TYPE_STR                                ? OPREG_VALUE_STR_LIST
              : ek == OPREG_TYPE_FLOAT                            ? OPREG_VALUE_FLOAT_LIST
              : ek == OPREG_TYPE_BOOL || ek == OPREG_TYPE_SYMBOOL ? OPREG_VALUE_BOOL_LIST
                                                                  : OPREG_VALUE_INT_LIST;
    return 0;
}

static int from(opreg__py_frame *f, const opreg_type *t, PyObject *o, const opreg__py_where *w,
                struct path *p, opreg_value *v, int depth) {
    if (depth > MAX_DEPTH) {
        opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "lists and tuples nest deeper than %d",
                         MAX_DEPTH);
        return -1;
    }
    if (!t) return from_any(f, o, w, p, v, depth);
    const opreg_type *full = t;
    if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) {
        if (o == Py_None) {
            *v = opreg_none();
            return 0;
        }
        t = opreg_type_element(t, 0);
    }
    opreg_type_kind k = opreg_type_get_kind(t);
    int rc = -1;
    v->flags = 0;
    switch (k) {
    case OPREG_TYPE_LIST:
    case OPREG_TYPE_TUPLE: {
        PyObject *items = as_tuple(f, o);
        if (!items) return PyErr_Occurred() ? -1 : fail_type(w, p, full, o);
        Py_ssize_t n = PyTuple_Size(items);
        if (k == OPREG_TYPE_TUPLE && (size_t)n != opreg_type_num_elements(t))
            return fail_type(w, p, full, o);
        const opreg_type *elem = opreg_type_element(t, 0);
        opreg_type_kind ek = opreg_type_get_kind(elem);
        if (k == OPREG_TYPE_LIST &&
            (ek == OPREG_TYPE_STR || ek == OPREG_TYPE_INT || ek == OPREG_TYPE_SYMINT ||
             ek == OPREG_TYPE_FLOAT || ek == OPREG_TYPE_BOOL || ek == OPREG_TYPE_SYMBOOL))
            return from_flat_list(f, elem, items, w, p, v);
        opreg_value *vals = opreg__py_frame_alloc(f, sizeof *vals * (size_t)n);
        if (!vals) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            const opreg_type *et = k == OPREG_TYPE_TUPLE ? opreg_type_element(t, (size_t)i) : elem;
            if (from_item(f, et, PyTuple_GetItem(items, i), w, p, &vals[i], depth, i) < 0)
                return -1;
        }
        *v = k == OPREG_TYPE_TUPLE ? opreg_tuple_value(vals, (size_t)n)
                                   : opreg_list_value(vals, (size_t)n);
        return 0;
    }
    case OPREG_TYPE_ANY:
        return from_any(f, o, w, p, v, depth);
    case OPREG_TYPE_STR: {
        opreg_str s;
        rc = opreg__py_to_str(f, o, &s);
        if (rc == -2) return -1;
        if (rc == 0) {
            v->kind = OPREG_VALUE_STR;
            v->u.s.ptr = s.ptr;
            v->u.s.len = s.len;
        }
        break;
    }
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
        v->kind = OPREG_VALUE_INT;
        rc = opreg__py_to_int(o, &v->u.i);
        break;
    case OPREG_TYPE_FLOAT:
        v->kind = OPREG_VALUE_FLOAT;
        rc = opreg__py_to_float(o, &v->u.f);
        break;
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_SYMBOOL:
        v->kind = OPREG_VALUE_BOOL;
        rc = opreg__py_to_bool(o, &v->u.b);
        break;
    case OPREG_TYPE_SCALAR:
        rc = opreg__py_to_scalar(o, v);
        break;
    case OPREG_TYPE_SCALAR_TYPE: {
        opreg_dtype d = OPREG_DTYPE_F32;
        rc = opreg__py_to_dtype(o, &d);
        *v = opreg_dtype_value(d);
        break;
    }
    case OPREG_TYPE_DEVICE: {
        DLDevice d = { kDLCPU, 0 };
        rc = opreg__py_to_device(o, &d);
        *v = opreg_device_value(d);
        break;
    }
    default:
        break; /* tensors and the rest: not inside lists and tuples */
    }
    if (rc == -2) return fail_range(w, p, full);
    if (rc < 0) return fail_type(w, p, full, o);
    return 0;
}

int opreg__py_nested_from(opreg__py_frame *f, const opreg_type *t, PyObject *o,
                          const opreg__py_where *w, opreg_value *v) {
    struct path p = { "", 0 };
    return from(f, t, o, w, &p, v, 0);
}

/* ---- returns ------------------------------------------------------------------- */

static PyObject *str_to_py(const char *s, size_t len) {
    PyObject *u = PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, NULL);
    if (u || !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return u;
    PyErr_Clear(); /* raw bytes: an IPC handle, say */
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
}

static PyObject *to_py(opreg_value *v, int depth) {
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_RecursionError, "opreg: a returned value nests too deep");
        return NULL;
    }
    size_t n;
    PyObject *out;
    switch (v->kind) {
    case OPREG_VALUE_TENSOR: {
        DLTensor *t = v->u.tensor;
        v->u.tensor = NULL;
        if (!t) Py_RETURN_NONE;
        return opreg__py_tensor_wrap(t);
    }
    case OPREG_VALUE_STR:
        return str_to_py(v->u.s.ptr ? v->u.s.ptr : "", v->u.s.len);
    case OPREG_VALUE_SCALAR_TYPE:
        return PyUnicode_FromString(opreg_dtype_name(v->u.dtype) ? opreg_dtype_name(v->u.dtype)
                                                                 : "?");
    case OPREG_VALUE_DEVICE: {
        char buf[48];
        opreg_device_format(v->u.device, buf, sizeof buf);
        return PyUnicode_FromString(buf);
    }
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
    case OPREG_VALUE_STR_LIST:
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        n = v->u.ints.len; /* every list payload: items, then len */
        out = v->kind == OPREG_VALUE_TUPLE ? PyTuple_New((Py_ssize_t)n) : PyList_New((Py_ssize_t)n);
        if (!out) return NULL;
        for (size_t i = 0; i < n; i++) {
            PyObject *x;
            switch (v->kind) {
            case OPREG_VALUE_TENSOR_LIST: {
                /* The value owns its item array (opreg_value_pack()): the
                 * tensor passes to Python and its slot is cleared. */
                DLTensor **items = (DLTensor **)(uintptr_t)v->u.tensors.items;
                DLTensor *t = items[i];
                items[i] = NULL;
                x = t ? opreg__py_tensor_wrap(t) : (Py_INCREF(Py_None), Py_None);
                break;
            }
            case OPREG_VALUE_INT_LIST:
                x = PyLong_FromLongLong(v->u.ints.items[i]);
                break;
            case OPREG_VALUE_FLOAT_LIST:
                x = PyFloat_FromDouble(v->u.floats.items[i]);
                break;
            case OPREG_VALUE_BOOL_LIST:
                x = PyBool_FromLong(v->u.bools.items[i]);
                break;
            case OPREG_VALUE_STR_LIST:
                x = str_to_py(v->u.strs.items[i].ptr ? v->u.strs.items[i].ptr : "",
                              v->u.strs.items[i].len);
                break;
            default:
                x = to_py((opreg_value *)(uintptr_t)&v->u.list.items[i], depth + 1);
                break;
            }
            if (!x) {
                Py_DECREF(out);
                return NULL;
            }
            if (v->kind == OPREG_VALUE_TUPLE)
                PyTuple_SetItem(out, (Py_ssize_t)i, x);
            else
                PyList_SetItem(out, (Py_ssize_t)i, x);
        }
        return out;
    default:
        return opreg__py_plain_value(v);
    }
}

PyObject *opreg__py_nested_to(opreg_value *v) {
    return to_py(v, 0);
}
