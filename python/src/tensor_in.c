/* Tensors passed in: any object that exports DLPack (`__dlpack__`), taken
 * without a copy.
 *
 * A type that offers DLPack's C exchange API (`__dlpack_c_exchange_api__`
 * on the type, a capsule "dlpack_exchange_api"; PyTorch 2.10 and later) is
 * read through it: its `dltensor_from_py_object_no_sync` fills a DLTensor on
 * the stack, with no capsule and no allocation, valid until the call returns
 * to Python (shape and strides are copied, since a long call lets other
 * threads run). For a CUDA tensor the type's `current_work_stream` says the
 * stream the producer's own work is queued on, and the call runs on it. The
 * table is looked up once per type.
 *
 * The general path asks the object for a capsule, DLPack 1.0 first
 * (`__dlpack__(max_version=(1, 0))`, which carries a read-only flag) and the
 * unversioned protocol from producers that refuse that keyword (remembered
 * per type, so the refusal is paid once). The capsule is consumed as the
 * protocol says (renamed "used_dltensor"), and its deleter runs after the
 * call.
 *
 * numpy arrays take a shorter path, because asking numpy for a capsule costs
 * several hundred nanoseconds per argument (an allocation, a capsule, a
 * deleter): for an object whose type is exactly numpy.ndarray, the tensor is
 * read from the array's header, the leading fields of numpy's
 * PyArrayObject_fields (data, nd, dimensions, strides, descr, flags). numpy's
 * own inline accessors (PyArray_DATA, PyArray_NDIM, ...) read those fields
 * inside every compiled numpy extension, so numpy keeps their layout fixed
 * across 1.x and 2.x. The dtype is looked up by the identity of the array's
 * descr in a small table filled from the descr's attributes (kind, itemsize,
 * byte order) the first time it is seen; an array whose dtype, strides or
 * alignment does not fit goes through the general path. Nothing is cached
 * about the array itself, so reshaping or resizing it between calls is
 * always seen. */
#include "python/src/binding.h"

#include <string.h>

/* ---- numpy's array header ------------------------------------------------- */

typedef struct numpy_array_head {
    PyObject ob_base;
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} numpy_array_head;

#define NUMPY_ALIGNED   0x0100
#define NUMPY_WRITEABLE 0x0400

/* numpy.ndarray, once numpy has been imported by someone (a strong ref). */
static PyObject *numpy_type;

struct known_descr {
    PyObject *descr; /* strong ref: its address cannot be reused */
    DLDataType dtype;
    int shift; /* log2 of the item size (1, 2, 4 or 8 bytes) */
};
#define MAX_DESCRS 24
static struct known_descr descrs[MAX_DESCRS];
static int ndescrs;
/* Descrs that do not map to a DLPack type (structured, object, strings,
 * non-native byte order), so they are not examined again. */
static PyObject *foreign_descrs[MAX_DESCRS];
static int nforeign;

/* Types whose __dlpack__ refused `max_version` (strong refs). */
#define MAX_UNVERSIONED 16
static PyObject *unversioned_types[MAX_UNVERSIONED];
static int nunversioned;

/* DLPack 1.3's exchange API (dlpack.h, DLPackExchangeAPI), as far as opreg
 * reads it: the header (a version and a chain of older tables), then the
 * producer's functions. Debian's DLPack 0.6 header predates it. */
typedef struct exchange_api {
    opreg__py_dlpack_version version;
    const struct exchange_api *prev_api;
    void *managed_tensor_allocator;
    int (*managed_tensor_from_py_object_no_sync)(void *obj, opreg__py_managed_versioned **out);
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *obj, DLTensor *out);
    int (*current_work_stream)(DLDeviceType type, int32_t id, void **stream);
} exchange_api;

/* Types seen by opreg__py_tensor_from(), with their table (NULL: none). */
#define MAX_API_TYPES 16
static struct {
    PyObject *type; /* strong ref */
    const exchange_api *api;
} api_types[MAX_API_TYPES];
static int napi_types;

static PyObject *str_dlpack;   /* "__dlpack__" */
static PyObject *str_exchange; /* "__dlpack_c_exchange_api__" */
static PyObject *kw_versioned; /* {"max_version": (1, 0)} */
static PyObject *empty_tuple;

static int init_strings(void) {
    if (str_dlpack) return 0;
    str_dlpack = PyUnicode_InternFromString("__dlpack__");
    str_exchange = PyUnicode_InternFromString("__dlpack_c_exchange_api__");
    empty_tuple = PyTuple_New(0);
    kw_versioned = PyDict_New();
    PyObject *v = Py_BuildValue("(ii)", 1, 0);
    if (!str_dlpack || !str_exchange || !empty_tuple || !kw_versioned || !v ||
        PyDict_SetItemString(kw_versioned, "max_version", v) < 0) {
        Py_XDECREF(v);
        return -1;
    }
    Py_DECREF(v);
    return 0;
}

static void find_numpy(void) {
    PyObject *np = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy"); /* borrowed */
    if (!np) return;
    PyObject *t = PyObject_GetAttrString(np, "ndarray");
    if (t && PyType_Check(t)) {
        numpy_type = t;
        return;
    }
    Py_XDECREF(t);
    PyErr_Clear();
}

/* An int attribute of a descr, or -1. */
static long descr_long(PyObject *descr, const char *name) {
    PyObject *v = PyObject_GetAttrString(descr, name);
    long r = -1;
    if (v && PyLong_Check(v)) r = PyLong_AsLong(v);
    Py_XDECREF(v);
    PyErr_Clear();
    return r;
}

/* A one-character str attribute of a descr, or 0. */
static char descr_char(PyObject *descr, const char *name) {
    PyObject *v = PyObject_GetAttrString(descr, name);
    char c = 0;
    if (v && PyUnicode_Check(v) && PyUnicode_GetLength(v) == 1) {
        Py_UCS4 u = PyUnicode_ReadChar(v, 0);
        c = u < 128 ? (char)u : 0;
    }
    Py_XDECREF(v);
    PyErr_Clear();
    return c;
}

/* Learn the DLPack type of a numpy descr from its kind, size and byte
 * order. NULL when it has none (then the general path decides). */
static const struct known_descr *learn_descr(PyObject *descr) {
    for (int i = 0; i < nforeign; i++)
        if (foreign_descrs[i] == descr) return NULL;
    char kind = descr_char(descr, "kind");
    char order = descr_char(descr, "byteorder");
    long size = descr_long(descr, "itemsize");
    PyObject *fields = PyObject_GetAttrString(descr, "fields");
    bool plain = fields == Py_None;
    Py_XDECREF(fields);
    PyErr_Clear();
    DLDataType t = { 0, 0, 1 };
    bool ok = plain && (order == '=' || order == '|') &&
              (size == 1 || size == 2 || size == 4 || size == 8);
    if (ok) {
        t.bits = (uint8_t)(size * 8);
        switch (kind) {
        case 'f':
            t.code = kDLFloat;
            ok = size == 2 || size == 4 || size == 8;
            break;
        case 'i':
            t.code = kDLInt;
            break;
        case 'u':
            t.code = kDLUInt;
            break;
        case 'b':
            t.code = OPREG_DL_BOOL;
            ok = size == 1;
            break;
        default:
            ok = false;
        }
    }
    if (!ok) {
        if (nforeign < MAX_DESCRS) {
            Py_INCREF(descr);
            foreign_descrs[nforeign++] = descr;
        }
        return NULL;
    }
    if (ndescrs == MAX_DESCRS) return NULL;
    Py_INCREF(descr);
    descrs[ndescrs] = (struct known_descr){ descr, t,
                                            size == 1   ? 0
                                            : size == 2 ? 1
                                            : size == 4 ? 2
                                                        : 3 };
    return &descrs[ndescrs++];
}

static inline const struct known_descr *find_descr(PyObject *descr) {
    for (int i = 0; i < ndescrs; i++)
        if (descrs[i].descr == descr) return &descrs[i];
    return learn_descr(descr);
}

/* 1 when the array was read from its header, 0 when the general path must
 * take it. */
static int from_numpy(opreg__py_tensor *out, PyObject *obj) {
    const numpy_array_head *a = (const numpy_array_head *)(const void *)obj;
    int nd = a->nd;
    if (nd < 0 || nd > OPREG__PY_INLINE_DIMS || !(a->flags & NUMPY_ALIGNED)) return 0;
    const struct known_descr *d = find_descr(a->descr);
    if (!d) return 0;
    for (int i = 0; i < nd; i++) {
        int64_t n = a->dimensions[i], s = a->strides[i];
        /* Negative strides and strides between items: numpy decides (general path). */
        if (s < 0 || ((s & ((INT64_C(1) << d->shift) - 1)) != 0 && n != 1)) return 0;
        out->shape[i] = n;
        out->strides[i] = s >> d->shift;
    }
    out->t.data = a->data;
    out->t.device.device_type = kDLCPU;
    out->t.device.device_id = 0;
    out->t.ndim = nd;
    out->t.dtype = d->dtype;
    out->t.shape = out->shape;
    out->t.strides = out->strides;
    out->t.byte_offset = 0;
    out->readonly = !(a->flags & NUMPY_WRITEABLE);
    return 1;
}

/* Raise opreg.Error saying which argument the producer refused to export
 * through `how`, with the producer's own reason (its pending exception). */
static void refuse(PyObject *obj, const opreg__py_where *where, const char *how) {
    char what[256], tn[96];
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *text = ev ? PyObject_Str(ev) : NULL;
    PyObject *bytes = text ? PyUnicode_AsUTF8String(text) : NULL;
    PyErr_Clear();
    opreg__py_type_name(obj, tn, sizeof tn);
    opreg__py_where_text(where, what, sizeof what);
    opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT,
                     "%s: the %s passed could not be taken through %s: %s", what, tn, how,
                     bytes ? PyBytes_AsString(bytes) : "(no reason given)");
    Py_XDECREF(bytes);
    Py_XDECREF(text);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
}

/* ---- DLPack's C exchange API --------------------------------------------------- */

/* The exchange table of `type`, NULL when it has none (or none of major
 * version 1 in its chain), learnt once per type. */
static const exchange_api *exchange_of(PyObject *type) {
    for (int i = 0; i < napi_types; i++)
        if (api_types[i].type == type) return api_types[i].api;
    const exchange_api *api = NULL;
    PyObject *cap = PyObject_GetAttr(type, str_exchange);
    if (cap && PyCapsule_IsValid(cap, "dlpack_exchange_api"))
        api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    Py_XDECREF(cap);
    PyErr_Clear();
    while (api && api->version.major > 1)
        api = api->prev_api;
    if (api &&
        (api->version.major != 1 || !api->current_work_stream ||
         (!api->dltensor_from_py_object_no_sync && !api->managed_tensor_from_py_object_no_sync)))
        api = NULL;
    if (napi_types < MAX_API_TYPES) {
        Py_INCREF(type);
        api_types[napi_types].type = type;
        api_types[napi_types++].api = api;
    }
    return api;
}

/* Copy the DLTensor's shape and strides inline (or keep the producer's for
 * more dimensions than fit, which the managed tensor then holds). */
static void own_dims(opreg__py_tensor *out) {
    int nd = out->t.ndim;
    if (nd < 0 || nd > OPREG__PY_INLINE_DIMS) return;
    for (int i = 0; i < nd; i++) {
        out->shape[i] = out->t.shape[i];
        out->strides[i] = out->t.strides ? out->t.strides[i] : 0;
    }
    if (out->t.strides) out->t.strides = out->strides;
    out->t.shape = out->shape;
}

/* Read `obj` through its type's table. -1 with opreg.Error (and the
 * producer's reason) set. */
static int from_exchange(opreg__py_tensor *out, PyObject *obj, const exchange_api *api,
                         const opreg__py_where *where) {
    out->readonly = false;
    bool done = false;
    if (api->dltensor_from_py_object_no_sync) {
        out->t.ndim = 0;
        if (api->dltensor_from_py_object_no_sync(obj, &out->t) != 0) goto refused;
        done = out->t.ndim <= OPREG__PY_INLINE_DIMS;
        if (done) own_dims(out);
    }
    if (!done) {
        /* No borrowing form, or more dimensions than fit inline: a managed
         * tensor holds them until the call returns. */
        opreg__py_managed_versioned *m = NULL;
        if (!api->managed_tensor_from_py_object_no_sync ||
            api->managed_tensor_from_py_object_no_sync(obj, &m) != 0 || !m)
            goto refused;
        out->t = m->dl_tensor;
        out->readonly =
            (m->flags & (OPREG__PY_DLPACK_FLAG_READ_ONLY | OPREG__PY_DLPACK_FLAG_IS_COPIED)) != 0;
        out->managed = m;
        out->versioned = true;
    }
    if (out->t.device.device_type == kDLCUDA || out->t.device.device_type == kDLCUDAManaged) {
        void *stream = NULL;
        if (api->current_work_stream(kDLCUDA, out->t.device.device_id, &stream) != 0) goto refused;
        out->stream = stream;
        out->has_stream = true;
    }
    return 0;
refused:
    if (out->managed) {
        opreg__py_managed_versioned *m = out->managed;
        if (m->deleter) m->deleter(m);
        out->managed = NULL;
    }
    refuse(obj, where, "DLPack's exchange API");
    return -1;
}

/* ---- the general path ------------------------------------------------------ */

static bool is_unversioned(PyObject *type) {
    for (int i = 0; i < nunversioned; i++)
        if (unversioned_types[i] == type) return true;
    return false;
}

/* Ask the producer for a capsule; NULL with an exception on failure. */
static PyObject *export_capsule(PyObject *obj, const opreg__py_where *where) {
    char what[256];
    PyObject *meth = PyObject_GetAttr(obj, str_dlpack);
    if (!meth) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        char tn[96];
        opreg__py_type_name(obj, tn, sizeof tn);
        opreg__py_where_text(where, what, sizeof what);
        return opreg__py_raisef(
            OPREG_ERR_TYPE_MISMATCH,
            "%s expected a value of type Tensor (an object with __dlpack__) but got %s", what, tn);
    }
    PyObject *type = (PyObject *)Py_TYPE(obj);
    PyObject *cap = NULL;
    if (!is_unversioned(type)) {
        cap = PyObject_Call(meth, empty_tuple, kw_versioned);
        if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
            /* A producer from before DLPack 1.0: ask it the old way, now and later. */
            PyErr_Clear();
            if (nunversioned < MAX_UNVERSIONED) {
                Py_INCREF(type);
                unversioned_types[nunversioned++] = type;
            }
            cap = PyObject_CallObject(meth, NULL);
        }
    } else {
        cap = PyObject_CallObject(meth, NULL);
    }
    Py_DECREF(meth);
    if (cap) return cap;
    refuse(obj, where, "DLPack");
    return NULL;
}

/* torch.Tensor and torch.nn.Parameter, and torch._C._to_dlpack, once torch
 * has been imported by someone (strong refs): for a torch without the
 * exchange API, torch's own C function gives the capsule that
 * Tensor.__dlpack__ (Python code in torch 1.x) would, for about 60% of its
 * cost. */
static PyObject *torch_tensor_type, *torch_parameter_type, *torch_to_dlpack;
static bool torch_looked;

static PyObject *attr_path(PyObject *o, const char *a, const char *b) {
    PyObject *x = PyObject_GetAttrString(o, a);
    if (x && b) {
        PyObject *y = PyObject_GetAttrString(x, b);
        Py_DECREF(x);
        x = y;
    }
    return x;
}

static void find_torch(void) {
    PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch"); /* borrowed */
    if (!torch) return;
    torch_looked = true;
    torch_tensor_type = attr_path(torch, "Tensor", NULL);
    torch_parameter_type = attr_path(torch, "nn", "Parameter");
    torch_to_dlpack = attr_path(torch, "_C", "_to_dlpack");
    PyErr_Clear();
    if (!torch_tensor_type || !torch_to_dlpack) {
        Py_CLEAR(torch_tensor_type);
        Py_CLEAR(torch_to_dlpack);
    }
}

static bool is_plain_torch(PyObject *type) {
    if (!torch_looked) find_torch();
    return torch_to_dlpack && (type == torch_tensor_type || type == torch_parameter_type);
}

/* A torch.Tensor (or Parameter) on the CPU, described by libtorch's own
 * accessors from the at::Tensor inside the object (torch_tensor.c): about a
 * fifth of the exchange API's cost, which goes through torch's Python
 * argument caster. 1 when read, 0 when the exchange API should read it
 * instead (another device, an unusual tensor, the path off), -1 with
 * opreg.Error set. While the path is checked, the exchange API's reading is
 * the one used and the two are compared. */
static int from_torch(opreg__py_tensor *out, PyObject *obj, const exchange_api *api,
                      const opreg__py_where *where) {
    void *handle = opreg__py_torch_handle(obj);
    DLTensor mine;
    int32_t what;
    if (!handle || opreg__py_torch_describe(&mine, handle, &what) != OPREG__PY_TORCH_OK ||
        mine.device.device_type != kDLCPU || mine.ndim > OPREG__PY_INLINE_DIMS)
        return 0;
    if (opreg__py_torch_verifying()) {
        if (from_exchange(out, obj, api, where) < 0) return -1;
        opreg__py_torch_verify(&mine, &out->t);
        return 1;
    }
    out->t = mine;
    own_dims(out);
    out->readonly = false;
    return 1;
}

static int from_capsule(opreg__py_tensor *out, PyObject *obj, const opreg__py_where *where);

/* A torch.Tensor (or Parameter) of a torch without the exchange API, read
 * from the fields of its TensorImpl where torch_tensor.c knows them (about
 * a tenth of torch._C._to_dlpack's cost), else through that function. While
 * the reading is checked, both are read and compared. 0, or -1 with
 * opreg.Error set. */
static int from_torch_fields(opreg__py_tensor *out, PyObject *obj, const opreg__py_where *where) {
    DLTensor mine;
    uint64_t kind;
    int r = opreg__py_torch_fields(obj, &mine, out->shape, out->strides, &kind);
    if (r == 1) {
        out->t = mine;
        out->readonly = false;
        return 0;
    }
    /* from_capsule leaves out->shape and out->strides (mine's) alone */
    if (from_capsule(out, obj, where) < 0) return -1;
    if (r == 2) opreg__py_torch_fields_verify(&mine, &out->t, kind);
    return 0;
}

/* A capsule from torch._C._to_dlpack; NULL with opreg.Error on failure. */
static PyObject *torch_capsule(PyObject *obj, const opreg__py_where *where) {
    PyObject *cap = PyObject_CallFunctionObjArgs(torch_to_dlpack, obj, NULL);
    if (!cap) refuse(obj, where, "DLPack (torch._C._to_dlpack)");
    return cap;
}

static int from_capsule(opreg__py_tensor *out, PyObject *obj, const opreg__py_where *where) {
    char what[256];
    PyObject *cap = is_plain_torch((PyObject *)Py_TYPE(obj)) ? torch_capsule(obj, where)
                                                             : export_capsule(obj, where);
    if (!cap) return -1;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        opreg__py_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m->version.major != 1) {
            /* Not consumed: the producer's capsule destructor frees it. */
            unsigned major = m->version.major, minor = m->version.minor;
            Py_DECREF(cap);
            opreg__py_where_text(where, what, sizeof what);
            opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                             "%s: the producer gave a DLPack %u.%u tensor; opreg reads 1.x", what,
                             major, minor);
            return -1;
        }
        if (PyCapsule_SetName(cap, "used_dltensor_versioned") < 0) {
            Py_DECREF(cap);
            return -1;
        }
        out->t = m->dl_tensor;
        out->readonly =
            (m->flags & (OPREG__PY_DLPACK_FLAG_READ_ONLY | OPREG__PY_DLPACK_FLAG_IS_COPIED)) != 0;
        out->managed = m;
        out->versioned = true;
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
            Py_DECREF(cap);
            return -1;
        }
        out->t = m->dl_tensor;
        /* DLPack 0.x cannot say read-only: its producers refuse to export
         * read-only memory (numpy does). */
        out->readonly = false;
        out->managed = m;
        out->versioned = false;
    } else {
        char tn[96];
        opreg__py_type_name(obj, tn, sizeof tn);
        opreg__py_where_text(where, what, sizeof what);
        Py_DECREF(cap);
        opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT,
                         "%s: __dlpack__ of the %s passed did not return an unused DLPack capsule",
                         what, tn);
        return -1;
    }
    out->capsule = cap;
    return 0;
}

int opreg__py_tensor_from(opreg__py_tensor *out, PyObject *obj, const opreg__py_where *where) {
    out->capsule = NULL;
    out->managed = NULL;
    out->owner = obj;
    out->has_stream = false;
    PyObject *type = (PyObject *)Py_TYPE(obj);
    if (type == numpy_type && from_numpy(out, obj)) return 0;
    if (type == (PyObject *)opreg__py_tensor_type) {
        out->t = *opreg__py_tensor_get(obj);
        out->readonly = false;
        return 0;
    }
    if (init_strings() < 0) return -1;
    if (!numpy_type) {
        find_numpy();
        if (type == numpy_type && from_numpy(out, obj)) return 0;
    }
    const exchange_api *api = exchange_of(type);
    if (api) {
        int r = is_plain_torch(type) ? from_torch(out, obj, api, where) : 0;
        return r != 0 ? (r > 0 ? 0 : -1) : from_exchange(out, obj, api, where);
    }
    if (is_plain_torch(type)) return from_torch_fields(out, obj, where);
    return from_capsule(out, obj, where);
}

void opreg__py_tensor_release(opreg__py_tensor *t) {
    if (t->managed) {
        if (t->versioned) {
            opreg__py_managed_versioned *m = t->managed;
            if (m->deleter) m->deleter(m);
        } else {
            DLManagedTensor *m = t->managed;
            if (m->deleter) m->deleter(m);
        }
        t->managed = NULL;
    }
    Py_CLEAR(t->capsule);
}

PyObject *opreg__py_tensor_info(PyObject *m, PyObject *args) {
    PyObject *obj;
    (void)m;
    if (!PyArg_ParseTuple(args, "O:tensor_info", &obj)) return NULL;
    opreg__py_tensor t;
    opreg__py_where where = { "tensor_info", "tensor", 0, -1 };
    if (opreg__py_tensor_from(&t, obj, &where) < 0) return NULL;
    PyObject *shape = PyTuple_New(t.t.ndim), *strides = PyTuple_New(t.t.ndim);
    int64_t compact = 1; /* no strides: row-major */
    for (int i = t.t.ndim - 1; shape && strides && i >= 0; i--) {
        PyTuple_SetItem(shape, i, PyLong_FromLongLong(t.t.shape[i]));
        PyTuple_SetItem(strides, i, PyLong_FromLongLong(t.t.strides ? t.t.strides[i] : compact));
        compact *= t.t.shape[i];
    }
    PyObject *r = NULL;
    if (shape && strides && !PyErr_Occurred())
        r = Py_BuildValue(
            "(KOO(iii)(ii)O)", (unsigned long long)(uintptr_t)t.t.data + t.t.byte_offset, shape,
            strides, t.t.dtype.code, t.t.dtype.bits, t.t.dtype.lanes, (int)t.t.device.device_type,
            (int)t.t.device.device_id, t.readonly ? Py_True : Py_False);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    opreg__py_tensor_release(&t);
    return r;
}
