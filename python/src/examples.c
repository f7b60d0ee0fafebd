/* Tensors that Python asks opreg to make: Meta tensors of any shape, strides
 * and dtype (what opreg.torch's fake kernels hand to opreg's Meta kernels),
 * and the catalogue's example inputs, the same random, valid arguments that
 * `opreg run` and the C tests build (opreg/inputs.h), so that Python
 * checks every op with inputs its data checks accept. */
#include "python/src/binding.h"
#include "opreg/inputs.h"

#include <string.h>

/* Elements from the first to the last one of a strided shape (0 when empty). */
static int64_t extent_of(int nd, const int64_t *shape, const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == 0) return 0;
        last += (shape[i] - 1) * strides[i];
    }
    return last + 1;
}

/* A tuple of at most OPREG__PY_INLINE_DIMS ints into `out`; the count, or -1
 * with an exception set. */
static int read_dims(PyObject *seq, int64_t *out, const char *what, bool allow_negative) {
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Size(fast);
    if (n > OPREG__PY_INLINE_DIMS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: at most %d dimensions", what, OPREG__PY_INLINE_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(fast, i);
        long long v = item ? PyLong_AsLongLong(item) : -1;
        Py_XDECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        if (v < 0 && !allow_negative) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "%s: item %zd is negative (%lld)", what, i, v);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    return (int)n;
}

/* meta_tensor(shape, dtype, strides=None) -> opreg.Tensor on the Meta
 * device: a shape, strides and a dtype, no data. */
PyObject *opreg__py_meta_tensor(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *names[] = { "shape", "dtype", "strides", NULL };
    PyObject *pyshape, *pystrides = Py_None;
    const char *dtname;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os|O:meta_tensor", names, &pyshape, &dtname,
                                     &pystrides))
        return NULL;
    int64_t shape[OPREG__PY_INLINE_DIMS], strides[OPREG__PY_INLINE_DIMS];
    int nd = read_dims(pyshape, shape, "shape", false);
    if (nd < 0) return NULL;
    opreg_dtype dt;
    opreg_status st = opreg_dtype_from_name(&dt, dtname);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    DLTensor *t = NULL, *base = NULL;
    if (pystrides == Py_None) {
        int64_t s = 1;
        for (int i = nd - 1; i >= 0; i--) {
            strides[i] = s;
            s *= shape[i];
        }
    } else {
        int ns = read_dims(pystrides, strides, "strides", false);
        if (ns < 0) return NULL;
        if (ns != nd)
            return opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT,
                                    "meta_tensor: %d strides for %d dimensions", ns, nd);
    }
    /* A base that spans the strided elements, and the view of it. */
    int64_t extent = extent_of(nd, shape, strides);
    st = opreg_tensor_empty_meta(&base, dt, 1, &extent);
    if (st == OPREG_OK) st = opreg_tensor_view(&t, base, nd, shape, strides, 0);
    if (st != OPREG_OK) {
        opreg_tensor_free(base);
        return opreg__py_raise(st, NULL);
    }
    return opreg__py_tensor_wrap_view(t, base);
}

/* ---- example inputs -------------------------------------------------------- */

/* A CPU copy of `t` that Python owns, with the same shape and strides. */
static PyObject *tensor_copy(const DLTensor *t) {
    opreg_dtype dt;
    opreg_status st = opreg_dtype_from_dlpack(&dt, t->dtype);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    int64_t strides[64];
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        strides[i] = t->strides ? t->strides[i] : s;
        s *= t->shape[i];
    }
    int64_t extent = extent_of(t->ndim, t->shape, strides);
    DLTensor *base = NULL, *view = NULL;
    st = opreg_tensor_empty_cpu(&base, dt, 1, &extent);
    if (st == OPREG_OK) st = opreg_tensor_view(&view, base, t->ndim, t->shape, strides, 0);
    if (st != OPREG_OK) {
        opreg_tensor_free(base);
        return opreg__py_raise(st, NULL);
    }
    memcpy(base->data, (const char *)t->data + t->byte_offset,
           (size_t)extent * opreg_dtype_size(dt));
    return opreg__py_tensor_wrap_view(view, base);
}

static PyObject *value_to_py(const opreg_value *v);

static PyObject *list_to_py(size_t n, const opreg_value *items, const int64_t *ints,
                            const double *floats, const bool *bools) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = items    ? value_to_py(&items[i])
                      : ints   ? PyLong_FromLongLong(ints[i])
                      : floats ? PyFloat_FromDouble(floats[i])
                               : PyBool_FromLong(bools[i]);
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, (Py_ssize_t)i, o);
    }
    return list;
}

static PyObject *value_to_py(const opreg_value *v) {
    switch (v->kind) {
    case OPREG_VALUE_NONE:
    case OPREG_VALUE_INT:
    case OPREG_VALUE_FLOAT:
    case OPREG_VALUE_BOOL:
    case OPREG_VALUE_STR:
        return opreg__py_plain_value(v);
    case OPREG_VALUE_TENSOR:
        return tensor_copy(v->u.tensor);
    case OPREG_VALUE_TENSOR_LIST: {
        PyObject *list = PyList_New((Py_ssize_t)v->u.tensors.len);
        for (size_t i = 0; list && i < v->u.tensors.len; i++) {
            PyObject *o = tensor_copy(v->u.tensors.items[i]);
            if (!o) {
                Py_CLEAR(list);
                break;
            }
            PyList_SetItem(list, (Py_ssize_t)i, o);
        }
        return list;
    }
    case OPREG_VALUE_INT_LIST:
        return list_to_py(v->u.ints.len, NULL, v->u.ints.items, NULL, NULL);
    case OPREG_VALUE_FLOAT_LIST:
        return list_to_py(v->u.floats.len, NULL, NULL, v->u.floats.items, NULL);
    case OPREG_VALUE_BOOL_LIST:
        return list_to_py(v->u.bools.len, NULL, NULL, NULL, v->u.bools.items);
    default:
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "example_inputs: an argument of kind %d has no Python form",
                                (int)v->kind);
    }
}

/* example_inputs(name, dtype=None, shape=None, seed=0) -> list: the op's
 * arguments in schema order, CPU tensors as opreg.Tensor copies. */
PyObject *opreg__py_example_inputs(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *names[] = { "name", "dtype", "shape", "seed", NULL };
    const char *name, *dtname = NULL, *shapetext = NULL;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|zzK:example_inputs", names, &name, &dtname,
                                     &shapetext, &seed))
        return NULL;
    const opreg_op *op = opreg__py_find_op(name);
    if (!op) return NULL;
    opreg_status st;
    int dtype = -1;
    if (dtname) {
        opreg_dtype d;
        st = opreg_dtype_from_name(&d, dtname);
        if (st != OPREG_OK) return opreg__py_raise(st, NULL);
        dtype = (int)d;
    }
    char err[256] = "";
    opreg_sizes shape;
    if (opreg_sizes_parse(&shape, shapetext ? shapetext : "", err, sizeof err) < 0)
        return opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "example_inputs: %s", err);
    opreg_inputs *in = NULL;
    st = opreg_inputs_build(&in, op, dtype, &shape, seed, err, sizeof err);
    if (st != OPREG_OK) {
        if (err[0]) return opreg__py_raisef(st, "example_inputs(%s): %s", name, err);
        return opreg__py_raise(st, NULL);
    }
    size_t n = opreg_inputs_nargs(in);
    const opreg_value *vals = opreg_inputs_args(in);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = value_to_py(&vals[i]);
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, (Py_ssize_t)i, o);
    }
    opreg_inputs_free(in);
    return list;
}
