/* The CPython extension `opreg._opreg`, built once against the limited API
 * of CPython 3.8 (Py_LIMITED_API, set by python/CMakeLists.txt), so that one
 * `_opreg.abi3.so` imports on every CPython from 3.8 on. Everything here
 * works on the process-default registry. Internal to the extension.
 *
 * The interpreter lock is held for all the state below (module-level
 * caches): the extension does not support free-threaded builds, which have
 * no stable ABI anyway. */
#ifndef OPREG_PYTHON_BINDING_H
#define OPREG_PYTHON_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "opreg/opreg.h"

/* ---- DLPack 1.0's versioned managed tensor ----------------------------------
 * Debian 12's DLPack 0.6 header predates it. The layout is DLPack 1.0's ABI
 * (dlpack.h, DLManagedTensorVersioned); its DLTensor is the same as 0.6's. */
typedef struct opreg__py_dlpack_version {
    uint32_t major;
    uint32_t minor;
} opreg__py_dlpack_version;

typedef struct opreg__py_managed_versioned {
    opreg__py_dlpack_version version;
    void *manager_ctx;
    void (*deleter)(struct opreg__py_managed_versioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} opreg__py_managed_versioned;

#define OPREG__PY_DLPACK_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define OPREG__PY_DLPACK_FLAG_IS_COPIED (UINT64_C(1) << 1)

/* ---- tensors passed in ------------------------------------------------------ */

/* Dimensions kept inline in a converted tensor; more go through DLPack's own
 * shape and strides arrays (the capsule path). */
#define OPREG__PY_INLINE_DIMS 8

/* One tensor argument converted for one call. `t` is what the op sees. The
 * producer's capsule (or managed tensor) is held until the call has
 * returned, so the memory stays valid whatever the producer does. */
typedef struct opreg__py_tensor {
    DLTensor t;
    bool readonly; /* the producer marked it read-only, or gave a copy */
    PyObject *capsule;
    void *managed;   /* DLManagedTensor or opreg__py_managed_versioned */
    bool versioned;  /* which of the two `managed` is */
    PyObject *owner; /* borrowed: the object the tensor came from */
    int64_t shape[OPREG__PY_INLINE_DIMS];
    int64_t strides[OPREG__PY_INLINE_DIMS];
} opreg__py_tensor;

/* Where a value comes from, for messages: "_C::rms_norm: argument 'x'
 * (position 1)" and, for an item of a list, " item 2". */
typedef struct opreg__py_where {
    const char *op;
    const char *arg;
    int position;
    int item; /* -1 when not a list item */
} opreg__py_where;

/* Format `w` into `buf` (snprintf semantics). */
void opreg__py_where_text(const opreg__py_where *w, char *buf, size_t cap);

/* Convert `obj` for one call: the object must export DLPack (`__dlpack__`).
 * numpy arrays are read from numpy's array header once numpy has exported
 * their dtype through DLPack, opreg.Tensor objects directly; no data is
 * copied in any case. On failure a Python exception is set and -1 returned
 * (`out` then holds nothing to release). `where` names the argument for
 * messages. */
int opreg__py_tensor_from(opreg__py_tensor *out, PyObject *obj, const opreg__py_where *where);

/* Release what opreg__py_tensor_from() held (the producer's managed tensor). */
void opreg__py_tensor_release(opreg__py_tensor *t);

/* ---- tensors handed out ------------------------------------------------------ */

/* The type of opreg.Tensor (created at module init). */
extern PyTypeObject *opreg__py_tensor_type;

/* Create opreg.Tensor's type. -1 with an exception on failure. */
int opreg__py_tensor_type_init(PyObject *module);

/* Wrap a tensor that opreg allocated (an op's return): the new object owns it
 * and frees it with opreg_tensor_free(). On failure the tensor is freed and
 * NULL returned with an exception set. */
PyObject *opreg__py_tensor_wrap(DLTensor *t);

/* The DLTensor of an opreg.Tensor (borrowed; lives with the object). */
DLTensor *opreg__py_tensor_get(PyObject *obj);

/* ---- ops ------------------------------------------------------------------ */

/* Create the type opreg._opreg.Op. -1 with an exception on failure. */
int opreg__py_op_type_init(PyObject *module);

/* ---- errors ------------------------------------------------------------------ */

/* opreg.Error (a RuntimeError subclass), created at module init. */
extern PyObject *opreg__py_error;

/* Raise opreg.Error for `status` with opreg's last error message, or with
 * `fallback` when the message is empty. Returns NULL. */
PyObject *opreg__py_raise(opreg_status status, const char *fallback);

/* Raise opreg.Error for `status` with a formatted message. Returns NULL. */
PyObject *opreg__py_raisef(opreg_status status, const char *fmt, ...);

/* The name of an object's type, for messages, into `buf`. */
void opreg__py_type_name(PyObject *obj, char *buf, size_t cap);

#endif
