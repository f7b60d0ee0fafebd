/* Declarations shared by the files of the CPython extension `opreg._opreg`,
 * built once against the limited API of CPython 3.8 (Py_LIMITED_API, set by
 * python/CMakeLists.txt), so that one `_opreg.abi3.so` imports on every
 * CPython from 3.8 on. Everything here works on the process-default
 * registry. Internal to the extension (and to the benchmark module built
 * from the same files, python/bench).
 *
 *   module.c      the module: its functions (queries, load_plugin) and init
 *   op.c          the type Op and its attributes
 *   plan.c        an op's argument plan, read from the registry
 *   values.c      Python values to opreg values for one call, and returns back
 *   call.c        the call path: binding the arguments, the call, explain
 *   errors.c      opreg.Error and the text of messages
 *   tensor_in.c   tensors passed in (DLPack, numpy's header)
 *   tensor_out.c  opreg.Tensor, the tensors handed out
 *   examples.c    Meta tensors made from Python, the catalogue's example inputs
 *   torch_stable.c  opreg ops as C kernels of torch's dispatcher (stable C ABI)
 *   torch_tensor.c  torch tensors described by libtorch's C accessors, or by
 *                   their TensorImpl's fields (torch 1.13)
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
    bool has_stream; /* a CUDA tensor whose producer named its work stream */
    void *stream;    /* that stream (a cudaStream_t), when has_stream */
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

/* tensor_info(obj): the DLTensor an op would see for `obj`, as a tuple
 * (data, shape, strides, (code, bits, lanes), (device type, id), readonly). */
PyObject *opreg__py_tensor_info(PyObject *m, PyObject *args);

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

/* Wrap view `t` of `base` (both opreg's): the new object owns and frees
 * both. On failure both are freed and NULL returned with an exception set. */
PyObject *opreg__py_tensor_wrap_view(DLTensor *t, DLTensor *base);

/* The DLTensor of an opreg.Tensor (borrowed; lives with the object). */
DLTensor *opreg__py_tensor_get(PyObject *obj);

/* ---- argument plans (plan.c) ------------------------------------------------ */

/* One argument as the registry plans it (opreg_op_arg_plan()), with its
 * name as an interned str, so that a keyword is found by identity. */
typedef struct opreg__py_arg {
    opreg_arg_plan p;
    PyObject *pyname;
} opreg__py_arg;

/* What converting a call of one op needs: the op's handle (found once,
 * valid for the registry's life) and the plans of its arguments, read for
 * the definition `schema` (NULL, and no arguments, while the op is not
 * defined: a call then reaches opreg's "not found" stub). */
typedef struct opreg__py_plan {
    const opreg_op *op;
    const opreg_schema *schema;
    uint32_t nargs;
    uint32_t nreturns;
    opreg__py_arg *args; /* nargs items, PyMem */
} opreg__py_plan;

/* Read the plan of plan->op's definition `s` (which may be NULL), replacing
 * what `plan` held. -1 with an exception set, leaving it empty. */
int opreg__py_plan_read(opreg__py_plan *plan, const opreg_schema *s);

/* Release what a plan holds; it is empty afterwards (the op is kept). */
void opreg__py_plan_clear(opreg__py_plan *plan);

/* Make the plan that of the op's current definition: read again only when
 * the definition changed (its library closed and the name defined again). */
static inline int opreg__py_plan_current(opreg__py_plan *plan) {
    const opreg_schema *s = opreg_op_schema(plan->op);
    return s == plan->schema ? 0 : opreg__py_plan_read(plan, s);
}

/* ---- one call's values (values.c) ---------------------------------------------- */

/* The most arguments an op can have (the registry refuses more at def). */
#define OPREG__PY_MAX_ARGS 64
/* Tensor arguments converted without an allocation. */
#define OPREG__PY_INLINE_SLOTS 12

struct opreg__py_slot_block;

/* What the converted values of one call hold until it returns: tensor slots
 * (inline, then in blocks), Python objects kept alive (the UTF-8 bytes of
 * str values and keyword names, tuples of list items), and list arrays. */
typedef struct opreg__py_frame {
    opreg__py_tensor inline_slots[OPREG__PY_INLINE_SLOTS];
    int ninline;
    struct opreg__py_slot_block *blocks;
    PyObject *keep[2 * OPREG__PY_MAX_ARGS];
    int nkeep;
    void *heap[2 * OPREG__PY_MAX_ARGS];
    int nheap;
    /* Past those arrays (nested lists): blocks chained through their first
     * word, and a list of the objects kept. */
    void *chain;
    PyObject *more_keep;
    int64_t numel; /* elements of the call's tensors, together */
    /* The producer's work stream for the call's CUDA tensors (the first
     * tensor's that named one): the call runs on it. */
    bool has_stream;
    int stream_device;
    void *stream;
} opreg__py_frame;

/* Start an empty frame. */
void opreg__py_frame_init(opreg__py_frame *f);

/* Hold `o` (a new reference, stolen) until the frame is released. -1 with
 * an exception set (and `o` released) when memory runs out. */
int opreg__py_frame_keep(opreg__py_frame *f, PyObject *o);

/* `bytes` bytes that live until the frame is released; NULL with an
 * exception set. */
void *opreg__py_frame_alloc(opreg__py_frame *f, size_t bytes);

/* Release what the frame holds. */
void opreg__py_frame_release(opreg__py_frame *f);

/* opreg__py_frame_release() keeping a pending exception: a producer's
 * deleter may run Python code. */
void opreg__py_frame_release_keeping_error(opreg__py_frame *f);

/* Convert one Python value `o` for argument `a` into `v`, holding what it
 * needs in `f`. -1 with an exception set. `w` names it for messages. */
int opreg__py_value_from(opreg__py_frame *f, const opreg_arg_plan *a, PyObject *o,
                         const opreg__py_where *w, opreg_value *v);

/* A call's returns as Python: None, the value, or a tuple. Returned tensors
 * pass to the new objects, and every return is released (opreg_value_release()),
 * on failure too. */
PyObject *opreg__py_returns_to(opreg_value *rets, uint32_t n);

/* Scalar conversions of values.c: 0, -1 for a value of the wrong type (no
 * exception), -2 with a Python exception set (out of range). */
int opreg__py_to_int(PyObject *o, int64_t *out);
int opreg__py_to_float(PyObject *o, double *out);
int opreg__py_to_bool(PyObject *o, bool *out);
/* A str (as UTF-8) or bytes (as they are), held by the frame. */
int opreg__py_to_str(opreg__py_frame *f, PyObject *o, opreg_str *out);
/* `Scalar`: a bool, an int or (anything float() takes) a float value. */
int opreg__py_to_scalar(PyObject *o, opreg_value *v);
int opreg__py_to_dtype(PyObject *o, opreg_dtype *out);
int opreg__py_to_device(PyObject *o, DLDevice *out);
/* A tensor argument into a frame slot; -1 with an exception set. */
int opreg__py_to_tensor(opreg__py_frame *f, PyObject *o, const opreg__py_where *w, DLTensor **out,
                        bool *readonly);

/* nested.c: a `str[]`, a list of values or a tuple (of type `t`, the
 * argument's schema type with its `?`; NULL for `Any`) into `v`; -1 with an
 * exception set. */
int opreg__py_nested_from(opreg__py_frame *f, const opreg_type *t, PyObject *o,
                          const opreg__py_where *w, opreg_value *v);
/* A returned string, list or tuple as Python (str items as str when they
 * are UTF-8, else bytes); tensors in it pass to the new objects (their
 * slots are cleared). NULL with an exception set. */
PyObject *opreg__py_nested_to(opreg_value *v);

/* A value of kind int, float, bool or str as Python; None for any other. */
PyObject *opreg__py_plain_value(const opreg_value *v);

/* ---- calls (call.c) ------------------------------------------------------------ */

/* The most returns a call converts. */
#define OPREG__PY_MAX_RETS 16

/* Everything one call needs, converted from Python. */
typedef struct opreg__py_call {
    opreg__py_frame f;
    opreg_value vals[OPREG__PY_MAX_ARGS];
    opreg_kwarg kw[OPREG__PY_MAX_ARGS];
    size_t nargs;
    size_t nkw;
} opreg__py_call;

/* Convert a call's arguments for `plan` (made current first). -1 with an
 * exception set; release c->f either way. */
int opreg__py_call_prepare(opreg__py_call *c, opreg__py_plan *plan, PyObject *args,
                           PyObject *kwargs);

/* Call the op: convert, one opreg_call_boxed(), the returns as Python. */
PyObject *opreg__py_call_op(opreg__py_plan *plan, PyObject *args, PyObject *kwargs);

/* opreg__py_call_op() on the kernel of `key` whatever the tensors' device
 * (OPREG_KEY_NONE: dispatch by device). */
PyObject *opreg__py_call_op_key(opreg__py_plan *plan, opreg_dispatch_key key, PyObject *args,
                                PyObject *kwargs);

/* opreg_explain_call() on the arguments as a call would convert them: the
 * text, or NULL with an exception set. Nothing runs. */
PyObject *opreg__py_explain_call(opreg__py_plan *plan, PyObject *args, PyObject *kwargs);

/* ---- the module (module.c) ---------------------------------------------------- */

/* The process-default registry, or NULL with opreg.Error set. */
opreg_registry *opreg__py_registry(void);

/* The op `name` of the default registry, or NULL with opreg.Error set. */
const opreg_op *opreg__py_find_op(const char *name);

/* ---- tensors made for Python (examples.c) ------------------------------------ */

/* meta_tensor(shape, dtype, strides=None): an opreg.Tensor on the Meta device. */
PyObject *opreg__py_meta_tensor(PyObject *m, PyObject *args, PyObject *kwargs);

/* example_inputs(name, dtype=None, shape=None, seed=0): the arguments that
 * `opreg run` would build for the op, as Python values. */
PyObject *opreg__py_example_inputs(PyObject *m, PyObject *args, PyObject *kwargs);

/* ---- opcheck (opcheck.c) ------------------------------------------------------ */

/* opcheck(pattern="*", *, checks=None, dtypes=None, sizes=None, keys=None,
 * seed=1, raise_on_failure=True): opreg_opcheck() as a list of dicts. */
PyObject *opreg__py_opcheck(PyObject *m, PyObject *args, PyObject *kwargs);

/* ---- an OpenMP runtime lent to opreg (openmp.c) ---------------------------- */

/* share_openmp(library, threads): opreg's CPU kernels run their loops on the
 * OpenMP team of `library` (already loaded), `threads` wide; None as the
 * library gives opreg its own pool back. */
PyObject *opreg__py_share_openmp(PyObject *m, PyObject *args);

/* ---- opreg ops as C kernels of torch (torch_stable.c) ------------------------- */

/* torch_stable_open(library): look up torch's stable C ABI in a loaded
 * libtorch; torch_stable_library(namespace, key) -> handle;
 * torch_stable_supports(op) -> None or why not; torch_stable_impl(handle,
 * name, op); torch_stable_close(handle). */
PyObject *opreg__py_torch_stable_open(PyObject *m, PyObject *args);
PyObject *opreg__py_torch_stable_library(PyObject *m, PyObject *args);
PyObject *opreg__py_torch_stable_supports(PyObject *m, PyObject *args);
PyObject *opreg__py_torch_stable_impl(PyObject *m, PyObject *args);
PyObject *opreg__py_torch_stable_close(PyObject *m, PyObject *args);

/* ---- torch tensors through libtorch's C accessors (torch_tensor.c) ------------ */

/* An entry point of a loaded library, and where a table of function
 * pointers keeps it. */
struct opreg__py_symbol {
    const char *name;
    size_t offset;
};

/* Look each of the @p n symbols up in @p lib (a dlopen() handle) and store
 * it at its offset in @p table: NULL, or the name of the first one @p lib
 * lacks (the table then holds only some). */
const char *opreg__py_find_symbols(void *lib, void *table, const struct opreg__py_symbol *s,
                                   size_t n);

/* The aoti_torch_* accessors of the libtorch this process has loaded, and
 * the numbers torch gives its CPU and CUDA device types and the strided
 * layout. Filled once, by opreg__py_torch_open(). */
struct opreg__py_torch_abi {
    bool open;
    int32_t (*get_data_ptr)(void *t, void **out);
    int32_t (*get_dim)(void *t, int64_t *out);
    int32_t (*get_sizes)(void *t, int64_t **out);
    int32_t (*get_strides)(void *t, int64_t **out);
    int32_t (*get_dtype)(void *t, int32_t *out);
    int32_t (*get_device_type)(void *t, int32_t *out);
    int32_t (*get_device_index)(void *t, int32_t *out);
    int32_t (*get_layout)(void *t, int32_t *out);
    int32_t device_cpu, device_cuda, layout_strided;
};
extern struct opreg__py_torch_abi opreg__py_torch;

/* Look the accessors up in @p lib (a dlopen() handle of libtorch_cpu):
 * NULL, or the name of the first entry point it lacks (nothing is kept
 * then). Does nothing once open. */
const char *opreg__py_torch_open(void *lib);

enum {
    OPREG__PY_TORCH_OK,
    OPREG__PY_TORCH_UNDESCRIBED, /* an accessor failed (no storage, ...) */
    OPREG__PY_TORCH_LAYOUT,      /* not strided; *what is torch's layout */
    OPREG__PY_TORCH_DTYPE,       /* no opreg dtype; *what is torch's ScalarType */
    OPREG__PY_TORCH_DEVICE,      /* neither CPU nor CUDA; *what is torch's type */
};

/* Describe the tensor of @p handle (an AtenTensorHandle) in @p dl, whose
 * shape and strides then borrow torch's arrays (valid while the tensor is
 * neither freed nor resized). Returns one of the codes above; *what says
 * more for some of them. */
int opreg__py_torch_describe(DLTensor *dl, void *handle, int32_t *what);

/* The handle of a torch.Tensor or torch.nn.Parameter object (its type
 * exactly), or NULL where torch's accessors or the object's layout cannot
 * be used (then DLPack's exchange API reads it). While the path is being
 * checked, each handle's address is compared with the object's `_cdata`. */
void *opreg__py_torch_handle(PyObject *obj);

/* While the path is checked (the first few tensors of the process): true.
 * The caller then reads the tensor both ways and calls
 * opreg__py_torch_verify(mine, the exchange API's), which counts a match
 * and switches the path off for good on a mismatch (returning false). */
bool opreg__py_torch_verifying(void);
bool opreg__py_torch_verify(const DLTensor *mine, const DLTensor *theirs);

/* A torch.Tensor or torch.nn.Parameter object (its type exactly) of a torch
 * without the accessors (1.x), described from torch's private layout where
 * opreg knows it (torch_tensor.c says how it is checked): into @p dl, whose
 * shape and strides are then @p shape and @p strides (OPREG__PY_INLINE_DIMS
 * each), with the tensor's dispatch key set in *kind. Returns 0 when the
 * path is off or declines the tensor (another device, a dtype torch's
 * DLPack export lacks, a subclass of TensorImpl), 1 when the description
 * can be used alone, and 2 when the caller must also read the tensor
 * through torch's DLPack export, use that reading, and pass both to
 * opreg__py_torch_fields_verify (which switches the path off for good on a
 * mismatch, returning false). */
int opreg__py_torch_fields(PyObject *obj, DLTensor *dl, int64_t *shape, int64_t *strides,
                           uint64_t *kind);
bool opreg__py_torch_fields_verify(const DLTensor *mine, const DLTensor *theirs, uint64_t kind);

/* torch_direct(on=None) -> "on", "checking", "off", "unavailable" or
 * "unknown" (no torch tensor seen yet): the state of the path, after
 * switching it on or off when `on` is given. */
PyObject *opreg__py_torch_direct(PyObject *m, PyObject *args);

/* ---- ops (op.c) ------------------------------------------------------------------ */

/* Create the type opreg._opreg.Op. -1 with an exception on failure. */
int opreg__py_op_type_init(PyObject *module);

/* ---- errors (errors.c) ---------------------------------------------------------- */

/* opreg.Error (a RuntimeError subclass), created by opreg._opreg's init
 * (opreg._bench takes the same class from it). */
extern PyObject *opreg__py_error;

/* Raise opreg.Error for `status` with opreg's last error message, or with
 * `fallback` when the message is empty. Returns NULL. */
PyObject *opreg__py_raise(opreg_status status, const char *fallback);

/* Raise opreg.Error for `status` with a formatted message. Returns NULL. */
PyObject *opreg__py_raisef(opreg_status status, const char *fmt, ...);

/* The name of an object's type, for messages, into `buf`. */
void opreg__py_type_name(PyObject *obj, char *buf, size_t cap);

#endif
