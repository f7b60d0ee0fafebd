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
 * torch.Tensor) goes through the exchange API, which then decides. */
#include "python/src/binding.h"

#include <dlfcn.h>
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

static int direct = 0; /* 0: not yet set up, 1: on, -1: off */
static int checked;    /* tensors read both ways, and equal */
static bool switched_off;
static PyObject *str_cdata;

/* Open the accessors in the libtorch that this process has loaded, and
 * check that a torch.Tensor object has room for the handle. */
static bool set_up(PyObject *type) {
    if (switched_off) return false;
    /* PyPI's wheels split libtorch_cpu out; a build of libtorch as one
     * library has it all in libtorch.so. */
    static const char *const libs[] = { "libtorch_cpu.so", "libtorch.so" };
    for (size_t i = 0; !opreg__py_torch.open && i < sizeof libs / sizeof libs[0]; i++) {
        void *lib = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
        if (lib && opreg__py_torch_open(lib) != NULL) dlclose(lib);
    }
    if (!opreg__py_torch.open) return false;
    str_cdata = PyUnicode_InternFromString("_cdata");
    PyObject *size = PyObject_GetAttrString(type, "__basicsize__");
    long basic = size && PyLong_Check(size) ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    PyErr_Clear();
    return str_cdata && basic >= (long)(sizeof(PyObject) + sizeof(void *));
}

void *opreg__py_torch_handle(PyObject *obj) {
    if (direct == 0) direct = set_up((PyObject *)Py_TYPE(obj)) ? 1 : -1;
    if (direct < 0) return NULL;
    void *handle = (char *)obj + sizeof(PyObject);
    if (checked < CHECKS) {
        PyObject *cdata = PyObject_GetAttr(obj, str_cdata);
        void *impl = cdata && PyLong_Check(cdata) ? PyLong_AsVoidPtr(cdata) : NULL;
        Py_XDECREF(cdata);
        PyErr_Clear();
        void *word;
        memcpy(&word, handle, sizeof word);
        if (!impl || word != impl) {
            direct = -1;
            return NULL;
        }
    }
    return handle;
}

bool opreg__py_torch_verify(const DLTensor *mine, const DLTensor *theirs) {
    if (checked >= CHECKS) return true;
    bool same = mine->data == theirs->data && mine->ndim == theirs->ndim &&
                mine->byte_offset == theirs->byte_offset &&
                mine->device.device_type == theirs->device.device_type &&
                mine->device.device_id == theirs->device.device_id &&
                mine->dtype.code == theirs->dtype.code && mine->dtype.bits == theirs->dtype.bits &&
                mine->dtype.lanes == theirs->dtype.lanes;
    for (int i = 0; same && i < mine->ndim; i++)
        same = mine->shape[i] == theirs->shape[i] &&
               (theirs->strides ? theirs->strides[i] : 0) == mine->strides[i];
    if (!same) {
        direct = -1;
        return false;
    }
    checked++;
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
