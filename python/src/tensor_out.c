/* opreg.Tensor: a tensor that opreg allocated (an op's return), handed to
 * Python. It owns the tensor and frees it with opreg_tensor_free() when the
 * last reference goes, and exports it through DLPack (`__dlpack__`,
 * `__dlpack_device__`), so numpy.from_dlpack() and torch.from_dlpack() take
 * it without a copy: the managed tensor they receive holds a reference to
 * the opreg.Tensor, and its deleter drops that reference. */
#include "python/src/binding.h"

#include <stdlib.h>
#include <string.h>

typedef struct tensor_object {
    PyObject ob_base;
    DLTensor *t;
    DLTensor *base;   /* what `t` is a view of, owned too; NULL when `t` owns its data */
    int64_t *strides; /* row-major strides for consumers, in elements */
} tensor_object;

PyTypeObject *opreg__py_tensor_type;

DLTensor *opreg__py_tensor_get(PyObject *obj) {
    return ((tensor_object *)(void *)obj)->t;
}

PyObject *opreg__py_tensor_wrap(DLTensor *t) {
    return opreg__py_tensor_wrap_view(t, NULL);
}

PyObject *opreg__py_tensor_wrap_view(DLTensor *t, DLTensor *base) {
    int nd = t->ndim;
    int64_t *strides = malloc(sizeof(int64_t) * (size_t)(nd > 0 ? nd : 1));
    tensor_object *self = strides ? PyObject_New(tensor_object, opreg__py_tensor_type) : NULL;
    if (!self) {
        free(strides);
        opreg_tensor_free(t);
        opreg_tensor_free(base);
        return strides ? NULL : PyErr_NoMemory();
    }
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        if (t->strides) {
            strides[i] = t->strides[i];
        } else {
            strides[i] = s;
            s *= t->shape[i];
        }
    }
    self->t = t;
    self->base = base;
    self->strides = strides;
    return (PyObject *)self;
}

static void tensor_dealloc(PyObject *obj) {
    tensor_object *self = (tensor_object *)(void *)obj;
    PyTypeObject *tp = Py_TYPE(obj);
    opreg_tensor_free(self->t);
    opreg_tensor_free(self->base);
    free(self->strides);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(obj);
    Py_DECREF(tp);
}

/* ---- DLPack export ------------------------------------------------------------ */

/* The deleter may run on any thread (a consumer frees its tensor whenever it
 * likes), so it takes the interpreter lock to drop the reference. */
static void drop_owner(void *owner) {
    if (!Py_IsInitialized()) return; /* at exit: leave it */
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)owner);
    PyGILState_Release(g);
}

static void delete_unversioned(DLManagedTensor *m) {
    drop_owner(m->manager_ctx);
    free(m);
}

static void delete_versioned(opreg__py_managed_versioned *m) {
    drop_owner(m->manager_ctx);
    free(m);
}

/* A capsule that no consumer took frees its managed tensor itself. */
static void capsule_unversioned(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        m->deleter(m);
    } else {
        PyErr_Clear();
    }
}

static void capsule_versioned(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        opreg__py_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        m->deleter(m);
    } else {
        PyErr_Clear();
    }
}

/* The DLPack major version the consumer can read: 0 (no max_version, or
 * below 1.0) or 1. -1 with an exception for a malformed max_version. */
static int wanted_major(PyObject *max_version) {
    if (!max_version || max_version == Py_None) return 0;
    if (!PyTuple_Check(max_version) || PyTuple_Size(max_version) != 2) {
        PyErr_SetString(PyExc_TypeError, "max_version must be a tuple (major, minor)");
        return -1;
    }
    long major = PyLong_AsLong(PyTuple_GetItem(max_version, 0));
    if (major == -1 && PyErr_Occurred()) return -1;
    return major >= 1 ? 1 : 0;
}

static PyObject *tensor_dlpack(PyObject *obj, PyObject *args, PyObject *kwargs) {
    static char *names[] = { "stream", "max_version", "dl_device", "copy", NULL };
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", names, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    tensor_object *self = (tensor_object *)(void *)obj;
    DLTensor *t = self->t;
    if (t->device.device_type == OPREG_DEVICE_META || (!t->data && opreg_tensor_numel(t) > 0)) {
        PyErr_SetString(PyExc_BufferError,
                        "a Meta tensor has no data, so it cannot be exported through DLPack");
        return NULL;
    }
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "opreg.Tensor exports its own memory only (copy=True)");
        return NULL;
    }
    if (dl_device != Py_None) {
        long type = -1, id = -1;
        if (!PyArg_ParseTuple(dl_device, "ll:dl_device", &type, &id)) return NULL;
        if (type != (long)t->device.device_type || id != (long)t->device.device_id) {
            PyErr_SetString(PyExc_BufferError,
                            "opreg.Tensor cannot be exported to another device (dl_device)");
            return NULL;
        }
    }
    (void)stream; /* CPU memory: nothing to order; a device backend would sync here */
    int major = wanted_major(max_version);
    if (major < 0) return NULL;
    DLTensor view = *t;
    view.strides = self->strides;
    PyObject *cap;
    if (major >= 1) {
        opreg__py_managed_versioned *m = malloc(sizeof *m);
        if (!m) return PyErr_NoMemory();
        m->version.major = 1;
        m->version.minor = 0;
        m->manager_ctx = obj;
        m->deleter = delete_versioned;
        m->flags = 0;
        m->dl_tensor = view;
        Py_INCREF(obj);
        cap = PyCapsule_New(m, "dltensor_versioned", capsule_versioned);
        if (!cap) m->deleter(m);
    } else {
        DLManagedTensor *m = malloc(sizeof *m);
        if (!m) return PyErr_NoMemory();
        m->manager_ctx = obj;
        m->deleter = delete_unversioned;
        m->dl_tensor = view;
        Py_INCREF(obj);
        cap = PyCapsule_New(m, "dltensor", capsule_unversioned);
        if (!cap) m->deleter(m);
    }
    return cap;
}

static PyObject *tensor_dlpack_device(PyObject *obj, PyObject *unused) {
    (void)unused;
    DLTensor *t = opreg__py_tensor_get(obj);
    return Py_BuildValue("(ii)", (int)t->device.device_type, (int)t->device.device_id);
}

/* ---- attributes ------------------------------------------------------------- */

static PyObject *tensor_shape(PyObject *obj, void *closure) {
    (void)closure;
    DLTensor *t = opreg__py_tensor_get(obj);
    PyObject *shape = PyTuple_New(t->ndim);
    for (int i = 0; shape && i < t->ndim; i++) {
        PyObject *n = PyLong_FromLongLong(t->shape[i]);
        if (!n || PyTuple_SetItem(shape, i, n) < 0) {
            Py_DECREF(shape);
            return NULL;
        }
    }
    return shape;
}

static PyObject *tensor_strides(PyObject *obj, void *closure) {
    (void)closure;
    tensor_object *self = (tensor_object *)(void *)obj;
    int nd = self->t->ndim;
    PyObject *strides = PyTuple_New(nd);
    for (int i = 0; strides && i < nd; i++) {
        PyObject *n = PyLong_FromLongLong(self->strides[i]);
        if (!n || PyTuple_SetItem(strides, i, n) < 0) {
            Py_DECREF(strides);
            return NULL;
        }
    }
    return strides;
}

static PyObject *tensor_ndim(PyObject *obj, void *closure) {
    (void)closure;
    return PyLong_FromLong(opreg__py_tensor_get(obj)->ndim);
}

static const char *dtype_name(const DLTensor *t) {
    opreg_dtype d;
    if (opreg_dtype_from_dlpack(&d, t->dtype) != OPREG_OK) return "?";
    const char *n = opreg_dtype_name(d);
    return n ? n : "?";
}

static PyObject *tensor_dtype(PyObject *obj, void *closure) {
    (void)closure;
    return PyUnicode_FromString(dtype_name(opreg__py_tensor_get(obj)));
}

static PyObject *tensor_device(PyObject *obj, void *closure) {
    (void)closure;
    char buf[64];
    opreg_device_format(opreg__py_tensor_get(obj)->device, buf, sizeof buf);
    return PyUnicode_FromString(buf);
}

static PyObject *tensor_repr(PyObject *obj) {
    PyObject *shape = tensor_shape(obj, NULL);
    if (!shape) return NULL;
    DLTensor *t = opreg__py_tensor_get(obj);
    char dev[64];
    opreg_device_format(t->device, dev, sizeof dev);
    PyObject *r = PyUnicode_FromFormat("opreg.Tensor(shape=%R, dtype=%s, device=%s)", shape,
                                       dtype_name(t), dev);
    Py_DECREF(shape);
    return r;
}

static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)type;
    (void)args;
    (void)kwargs;
    PyErr_SetString(PyExc_TypeError, "opreg.Tensor objects come from ops; they are not created "
                                     "directly (pass any DLPack tensor to an op instead)");
    return NULL;
}

static PyMethodDef tensor_methods[] = {
    { "__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
      "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n"
      "A DLPack capsule of this tensor (no copy); DLPack 1.0 when max_version >= (1, 0)." },
    { "__dlpack_device__", tensor_dlpack_device, METH_NOARGS,
      "(device type, device id) as DLPack numbers them." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef tensor_getset[] = {
    { "shape", tensor_shape, NULL, "The sizes, a tuple.", NULL },
    { "strides", tensor_strides, NULL, "The strides, in elements (not bytes), a tuple.", NULL },
    { "ndim", tensor_ndim, NULL, "The number of dimensions.", NULL },
    { "dtype", tensor_dtype, NULL, "opreg's dtype name ('f32', 'bf16', ...).", NULL },
    { "device", tensor_device, NULL, "The device ('cpu', 'meta', ...).", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot tensor_slots[] = {
    { Py_tp_new, (void *)tensor_new },
    { Py_tp_dealloc, (void *)tensor_dealloc },
    { Py_tp_repr, (void *)tensor_repr },
    { Py_tp_methods, tensor_methods },
    { Py_tp_getset, tensor_getset },
    { Py_tp_doc, "A tensor that an opreg op returned. It owns its memory and exports it\n"
                 "through DLPack: numpy.from_dlpack(t) and torch.from_dlpack(t) share it." },
    { 0, NULL },
};

static PyType_Spec tensor_spec = {
    "opreg.Tensor", sizeof(tensor_object), 0, Py_TPFLAGS_DEFAULT, tensor_slots,
};

int opreg__py_tensor_type_init(PyObject *module) {
    opreg__py_tensor_type = (PyTypeObject *)PyType_FromSpec(&tensor_spec);
    if (!opreg__py_tensor_type) return -1;
    Py_INCREF(opreg__py_tensor_type);
    if (PyModule_AddObject(module, "Tensor", (PyObject *)opreg__py_tensor_type) < 0) {
        Py_DECREF(opreg__py_tensor_type);
        return -1;
    }
    return 0;
}
