/* torch tensors described through libtorch's stable C ABI (the aoti_torch_*
 * accessors of torch/csrc/inductor/aoti_torch/c/shim.h, PyTorch 2.x): the
 * reader that torch_stable.c's kernels use for the handles on torch's stack,
 * and that tensor_in.c uses for torch tensors passed to an opreg op.
 *
 * Nothing links against libtorch: the library torch has already loaded is
 * opened with RTLD_NOLOAD and the accessors are looked up by name. Each one
 * catches torch's exceptions and returns nonzero, so a tensor the accessors
 * cannot describe (no storage, a nested tensor) is reported, never thrown.
 *
 * From Python, the accessors need the tensor's AtenTensorHandle, which is an
 * `at::Tensor *`. A torch.Tensor object keeps its at::Tensor right after the
 * object header (THPVariable's `cdata`; PyTorch 2.15 stores it there by
 * value, one pointer to the TensorImpl). That is torch's private layout, so
 * it is never trusted unchecked: before a tensor object is read this way,
 * the word there must equal the object's `_cdata` (torch's public address of
 * the TensorImpl, read through Python) and the description must equal the
 * one DLPack's exchange API gives, for the first CHECKS torch tensors of the
 * process. One mismatch turns the path off for good; every tensor the path
 * declines (not CPU, no storage, an unusual dtype, a subclass of
 * torch.Tensor) goes through the exchange API, which then decides.
 *
 * Torch 1.13 has neither the accessors nor the exchange API: there the
 * TensorImpl's fields are read at offsets this file knows for that
 * version, under the checks the section on it describes. */
#include "python/src/binding.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

struct opreg__py_torch_abi opreg__py_torch;

const char *opreg__py_find_symbols(void *lib, void *table, const struct opreg__py_symbol *s,
                                   size_t n) {
    for (size_t i = 0; i < n; i++) {
        void *fn = dlsym(lib, s[i].name);
        if (!fn) return s[i].name;
        memcpy((char *)table + s[i].offset, &fn, sizeof fn);
    }
    return NULL;
}

const char *opreg__py_torch_open(void *lib) {
    if (opreg__py_torch.open) return NULL;
    static const struct opreg__py_symbol fns[] = {
#define TT_FN(member, symbol) { #symbol, offsetof(struct opreg__py_torch_abi, member) }
        TT_FN(get_data_ptr, aoti_torch_get_data_ptr),
        TT_FN(get_dim, aoti_torch_get_dim),
        TT_FN(get_sizes, aoti_torch_get_sizes),
        TT_FN(get_strides, aoti_torch_get_strides),
        TT_FN(get_dtype, aoti_torch_get_dtype),
        TT_FN(get_device_type, aoti_torch_get_device_type),
        TT_FN(get_device_index, aoti_torch_get_device_index),
        TT_FN(get_layout, aoti_torch_get_layout),
#undef TT_FN
    };
    struct opreg__py_torch_abi abi = { 0 };
    const char *lacks = opreg__py_find_symbols(lib, &abi, fns, sizeof fns / sizeof fns[0]);
    if (lacks) return lacks;
    /* torch's dtype numbers are its ScalarType numbers, as opreg's are
     * (checked on three of them); device types and the strided layout are
     * asked for by name. */
    int32_t (*num)(void);
    static const struct {
        const char *name;
        int32_t want;
    } dtypes[] = { { "aoti_torch_dtype_float32", OPREG_DTYPE_F32 },
                   { "aoti_torch_dtype_bfloat16", OPREG_DTYPE_BF16 },
                   { "aoti_torch_dtype_float8_e4m3fn", OPREG_DTYPE_F8_E4M3FN } };
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        void *fn = dlsym(lib, dtypes[i].name);
        memcpy(&num, &fn, sizeof fn);
        if (!fn || num() != dtypes[i].want) return dtypes[i].name;
    }
    static const struct {
        const char *name;
        size_t offset;
    } nums[] = {
        { "aoti_torch_device_type_cpu", offsetof(struct opreg__py_torch_abi, device_cpu) },
        { "aoti_torch_device_type_cuda", offsetof(struct opreg__py_torch_abi, device_cuda) },
        { "aoti_torch_layout_strided", offsetof(struct opreg__py_torch_abi, layout_strided) },
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        void *fn = dlsym(lib, nums[i].name);
        if (!fn) return nums[i].name;
        memcpy(&num, &fn, sizeof fn);
        int32_t v = num();
        memcpy((char *)&abi + nums[i].offset, &v, sizeof v);
    }
    abi.open = true;
    opreg__py_torch = abi;
    return NULL;
}

int opreg__py_torch_describe(DLTensor *dl, void *handle, int32_t *what) {
    const struct opreg__py_torch_abi *a = &opreg__py_torch;
    int32_t layout, dtype, dev, index = 0;
    int64_t dim;
    void *data;
    *what = 0;
    if (a->get_layout(handle, &layout) || a->get_dtype(handle, &dtype) ||
        a->get_device_type(handle, &dev))
        return OPREG__PY_TORCH_UNDESCRIBED;
    if (layout != a->layout_strided) {
        *what = layout;
        return OPREG__PY_TORCH_LAYOUT;
    }
    if (dtype < 0 || opreg_dtype_size((opreg_dtype)dtype) == 0) {
        *what = dtype;
        return OPREG__PY_TORCH_DTYPE;
    }
    if (dev == a->device_cpu) {
        dl->device = (DLDevice){ kDLCPU, 0 };
    } else if (dev == a->device_cuda) {
        if (a->get_device_index(handle, &index)) return OPREG__PY_TORCH_UNDESCRIBED;
        dl->device = (DLDevice){ kDLCUDA, index };
    } else {
        *what = dev;
        return OPREG__PY_TORCH_DEVICE;
    }
    if (a->get_data_ptr(handle, &data) || a->get_dim(handle, &dim) ||
        a->get_sizes(handle, &dl->shape) || a->get_strides(handle, &dl->strides))
        return OPREG__PY_TORCH_UNDESCRIBED;
    dl->data = data;
    dl->ndim = (int32_t)dim;
    dl->dtype = opreg_dtype_to_dlpack((opreg_dtype)dtype);
    dl->byte_offset = 0; /* torch's data pointer includes the storage offset */
    return OPREG__PY_TORCH_OK;
}

/* ---- torch tensor objects ------------------------------------------------------ */

/* Torch tensors whose reading is compared with the exchange API's before
 * the path is trusted on its own. */
#define CHECKS 8

/* A library this process has already loaded whose file name is @p stem or
 * @p stem followed by a version ("libc10.so", "libc10.so.1.13"), opened
 * again (dlclose() it); NULL when none is. Distributions name torch's
 * libraries by their version, which dlopen(stem, RTLD_NOLOAD) misses. */
struct loaded_search {
    const char *stem;
    const char *path;
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg) {
    struct loaded_search *q = arg;
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    size_t n = strlen(q->stem);
    if (!base || strncmp(base, q->stem, n) != 0 || (base[n] != '\0' && base[n] != '.')) return 0;
    q->path = info->dlpi_name;
    return 1;
}

static void *open_loaded(const char *stem) {
    struct loaded_search q = { stem, NULL };
    dl_iterate_phdr(find_loaded, &q);
    return q.path ? dlopen(q.path, RTLD_NOW | RTLD_NOLOAD) : NULL;
}

static int direct = 0; /* 0: not yet set up, 1: on, -1: off */
static int checked;    /* tensors read both ways, and equal */
static bool switched_off;
static PyObject *str_cdata;

/* Open the accessors in the libtorch that this process has loaded, and
 * check that a torch.Tensor object has room for the handle. */
/* The interned "_cdata", made once and kept for the process. */
static bool intern_cdata(void) {
    if (!str_cdata) str_cdata = PyUnicode_InternFromString("_cdata");
    return str_cdata != NULL;
}

static bool set_up(PyObject *type) {
    if (switched_off) return false;
    /* PyPI's wheels split libtorch_cpu out; a build of libtorch as one
     * library has it all in libtorch.so. */
    static const char *const libs[] = { "libtorch_cpu.so", "libtorch.so" };
    for (size_t i = 0; !opreg__py_torch.open && i < sizeof libs / sizeof libs[0]; i++) {
        void *lib = open_loaded(libs[i]);
        if (lib && opreg__py_torch_open(lib) != NULL) dlclose(lib);
    }
    if (!opreg__py_torch.open) return false;
    if (!intern_cdata()) return false;
    PyObject *size = PyObject_GetAttrString(type, "__basicsize__");
    long basic = size && PyLong_Check(size) ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    PyErr_Clear();
    return basic >= (long)(sizeof(PyObject) + sizeof(void *));
}

/* Whether @p impl is the TensorImpl address torch gives for @p obj
 * (`_cdata`, read through Python). */
static bool is_cdata(PyObject *obj, const void *impl) {
    PyObject *cdata = PyObject_GetAttr(obj, str_cdata);
    void *theirs = cdata && PyLong_Check(cdata) ? PyLong_AsVoidPtr(cdata) : NULL;
    Py_XDECREF(cdata);
    PyErr_Clear();
    return theirs && theirs == impl;
}

static const void *word_at(const void *base, size_t offset) {
    const void *w;
    memcpy(&w, (const char *)base + offset, sizeof w);
    return w;
}

void *opreg__py_torch_handle(PyObject *obj) {
    if (direct == 0) direct = set_up((PyObject *)Py_TYPE(obj)) ? 1 : -1;
    if (direct < 0) return NULL;
    void *handle = (char *)obj + sizeof(PyObject);
    if (checked < CHECKS && !is_cdata(obj, word_at(handle, 0))) {
        direct = -1;
        return NULL;
    }
    return handle;
}

static bool same_tensor(const DLTensor *mine, const DLTensor *theirs) {
    bool same = mine->data == theirs->data && mine->ndim == theirs->ndim &&
                mine->byte_offset == theirs->byte_offset &&
                mine->device.device_type == theirs->device.device_type &&
                mine->device.device_id == theirs->device.device_id &&
                mine->dtype.code == theirs->dtype.code && mine->dtype.bits == theirs->dtype.bits &&
                mine->dtype.lanes == theirs->dtype.lanes;
    for (int i = 0; same && i < mine->ndim; i++)
        same = mine->shape[i] == theirs->shape[i] &&
               (theirs->strides ? theirs->strides[i] : 0) == mine->strides[i];
    return same;
}

bool opreg__py_torch_verify(const DLTensor *mine, const DLTensor *theirs) {
    if (checked >= CHECKS) return true;
    if (!same_tensor(mine, theirs)) {
        direct = -1;
        return false;
    }
    checked++;
    return true;
}

/* ---- torch without the accessors: its private layout -------------------------- */

/* Before the aoti_torch_* accessors (PyTorch 1.x) libtorch exports no C
 * function that describes a tensor without building another one: its
 * DLPack export makes an as_strided view per call. Where this table knows
 * the layout of the torch that is loaded, the fields are read instead
 * (offsets in bytes, from c10/core/TensorImpl.h and StorageImpl.h of that
 * version, LP64). The reading is trusted only as far as it was checked:
 * - the TensorImpl address must equal `_cdata`, and the description the
 *   one torch's DLPack export gives, for the first CHECKS torch tensors;
 * - the TensorImpl must be a plain one: its vtable is c10::TensorImpl's,
 *   not that of a sparse, opaque (mkldnn), nested, quantized or wrapper
 *   subclass, whose fields mean other things;
 * - its dispatch key set must be one already seen on a tensor read both
 *   ways and found equal. A tensor of a new kind (made in inference mode, a
 *   negated view) is read both ways once more, so the path accepts what
 *   torch's export accepts and describes it as the export does. */
struct torch_layout {
    const char *version;   /* torch.__version__ begins with it */
    size_t impl;           /* the TensorImpl * in the tensor object */
    size_t storage;        /* the StorageImpl * in the TensorImpl */
    size_t dims;           /* SizesAndStrides: a count, then the dims (below) */
    size_t storage_offset; /* int64_t, in elements */
    size_t numel;          /* int64_t */
    size_t dtype;          /* uint16_t: the ScalarType, below scalar_types */
    size_t device;         /* optional<Device>: engaged, type, index (a byte each) */
    size_t key_set;        /* uint64_t: the dispatch key set */
    size_t data;           /* the data pointer in the StorageImpl */
    unsigned scalar_types;
};

static const struct torch_layout layouts[] = {
    /* THPVariable's cdata is a MaybeOwned<Tensor> (a bool, then the Tensor) */
    { "1.13.", 24, 24, 72, 160, 168, 176, 178, 184, 24, 18 },
};

/* SizesAndStrides keeps up to 5 sizes and then 5 strides inline after its
 * count; beyond that a pointer to the sizes, followed by the strides. */
#define INLINE_SIZES 5
/* Key sets that passed the check, and the vtable of a plain TensorImpl. */
#define KINDS 8
static const struct torch_layout *layout;
static const void *plain_vtable;
static uint64_t kinds[KINDS];
static int nkinds;

static bool set_up_layout(void) {
    if (switched_off) return false;
    PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch"); /* borrowed */
    PyObject *s = torch ? PyObject_GetAttrString(torch, "__version__") : NULL;
    PyObject *v = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8String(s) : NULL;
    const char *version = v ? PyBytes_AsString(v) : NULL;
    Py_XDECREF(s);
    layout = NULL;
    for (size_t i = 0; version && !layout && i < sizeof layouts / sizeof layouts[0]; i++)
        if (strncmp(version, layouts[i].version, strlen(layouts[i].version)) == 0)
            layout = &layouts[i];
    Py_XDECREF(v);
    PyErr_Clear();
    if (!layout) return false;
    /* The address a plain TensorImpl's vptr holds: two words into its
     * vtable (after the offset-to-top and the type info). */
    void *lib = open_loaded("libc10.so");
    const char *vtable = lib ? dlsym(lib, "_ZTVN3c1010TensorImplE") : NULL;
    if (lib) dlclose(lib);
    if (!vtable) return false;
    plain_vtable = vtable + 2 * sizeof(void *);
    nkinds = 0;
    return intern_cdata();
}

int opreg__py_torch_fields(PyObject *obj, DLTensor *dl, int64_t *shape, int64_t *strides,
                           uint64_t *kind) {
    if (direct == 0) direct = set_up_layout() ? 1 : -1;
    if (direct < 0) return 0;
    const struct torch_layout *L = layout;
    const char *impl = word_at(obj, L->impl);
    if (checked < CHECKS && !is_cdata(obj, impl)) {
        direct = -1;
        return 0;
    }
    if (!impl || word_at(impl, 0) != plain_vtable) return 0;
    const char *storage = word_at(impl, L->storage);
    uint16_t dtype;
    uint64_t ndim;
    unsigned char device[3];
    int64_t offset, numel;
    memcpy(&dtype, impl + L->dtype, sizeof dtype);
    memcpy(&ndim, impl + L->dims, sizeof ndim);
    memcpy(device, impl + L->device, sizeof device);
    memcpy(&offset, impl + L->storage_offset, sizeof offset);
    memcpy(&numel, impl + L->numel, sizeof numel);
    memcpy(kind, impl + L->key_set, sizeof *kind);
    /* CPU is device type 0; torch's DLPack export has no bool. */
    size_t size = dtype < L->scalar_types ? opreg_dtype_size((opreg_dtype)dtype) : 0;
    if (!storage || !device[0] || device[1] != 0 || size == 0 || dtype == OPREG_DTYPE_BOOL ||
        ndim > OPREG__PY_INLINE_DIMS)
        return 0;
    const char *sizes = impl + L->dims + sizeof ndim, *strides_at;
    if (ndim > INLINE_SIZES) {
        sizes = word_at(sizes, 0);
        strides_at = sizes + ndim * sizeof(int64_t);
    } else {
        strides_at = sizes + INLINE_SIZES * sizeof(int64_t);
    }
    for (uint64_t i = 0; i < ndim; i++) {
        memcpy(&shape[i], sizes + i * sizeof(int64_t), sizeof(int64_t));
        memcpy(&strides[i], strides_at + i * sizeof(int64_t), sizeof(int64_t));
        /* as torch's export does: a dim of size 0 or 1 has stride 1 */
        if (shape[i] < 2) strides[i] = 1;
    }
    /* as TensorImpl::data() does: no address for an empty tensor */
    const char *data = word_at(storage, L->data);
    dl->data = numel == 0 || !data ? NULL : (void *)(data + offset * (int64_t)size);
    dl->device = (DLDevice){ kDLCPU, 0 };
    dl->ndim = (int32_t)ndim;
    dl->dtype = opreg_dtype_to_dlpack((opreg_dtype)dtype);
    dl->shape = shape;
    dl->strides = strides;
    dl->byte_offset = 0;
    if (checked < CHECKS) return 2;
    for (int i = 0; i < nkinds; i++)
        if (kinds[i] == *kind) return 1;
    return 2;
}

bool opreg__py_torch_fields_verify(const DLTensor *mine, const DLTensor *theirs, uint64_t kind) {
    if (!same_tensor(mine, theirs)) {
        direct = -1;
        return false;
    }
    if (checked < CHECKS) checked++;
    bool known = false;
    for (int i = 0; i < nkinds; i++)
        known = known || kinds[i] == kind;
    if (!known && nkinds < KINDS) kinds[nkinds++] = kind;
    return true;
}

bool opreg__py_torch_verifying(void) {
    return checked < CHECKS;
}

PyObject *opreg__py_torch_direct(PyObject *m, PyObject *args) {
    PyObject *on = Py_None;
    (void)m;
    if (!PyArg_ParseTuple(args, "|O:torch_direct", &on)) return NULL;
    if (on != Py_None) {
        int want = PyObject_IsTrue(on);
        if (want < 0) return NULL;
        switched_off = !want;
        /* Off now; or set up and checked afresh on the next torch tensor. */
        direct = switched_off ? -1 : 0;
        checked = 0;
    }
    const char *state = switched_off ? "off"
                        : direct > 0 ? (checked < CHECKS ? "checking" : "on")
                        : direct < 0 ? "unavailable"
                                     : "unknown";
    return PyUnicode_FromString(state);
}
