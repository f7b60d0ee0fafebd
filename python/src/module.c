/* The module opreg._opreg: the queries of the default registry (list_ops,
 * schema, is_op_supported, explain), load_plugin, version, and its init,
 * which creates opreg.Error and the types Op and Tensor. The Python package
 * `opreg` (python/opreg/__init__.py) builds `opreg.ops.<namespace>.<op>` on
 * top. */
#include "python/src/binding.h"

#include <stdio.h>
#include <string.h>

/* ---- queries -------------------------------------------------------------------- */

opreg_registry *opreg__py_registry(void) {
    opreg_registry *reg = opreg_registry_default();
    if (!reg) opreg__py_raise(OPREG_ERR_INTERNAL, "the default registry could not be created");
    return reg;
}

const opreg_op *opreg__py_find_op(const char *name) {
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    const opreg_op *op;
    opreg_status st = opreg_op_find(&op, reg, name);
    if (st != OPREG_OK) {
        opreg__py_raise(st, NULL);
        return NULL;
    }
    return op;
}

/* A device given as None, a str ("cpu", "cuda:1") or an object whose str()
 * is one (torch.device). 1 when given, 0 for None, -1 on error. */
static int parse_device(PyObject *o, DLDevice *out) {
    if (!o || o == Py_None) return 0;
    PyObject *s = PyObject_Str(o);
    PyObject *b = s ? PyUnicode_AsUTF8String(s) : NULL;
    Py_XDECREF(s);
    if (!b) return -1;
    opreg_status st = opreg_device_parse(out, PyBytes_AsString(b));
    Py_DECREF(b);
    if (st != OPREG_OK) {
        opreg__py_raise(st, NULL);
        return -1;
    }
    return 1;
}

static PyObject *py_is_op_supported(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *names[] = { "name", "device", NULL };
    const char *name;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|O:is_op_supported", names, &name, &device))
        return NULL;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    DLDevice d;
    int has = parse_device(device, &d);
    if (has < 0) return NULL;
    bool ok = has ? opreg_is_op_supported_on(reg, name, d) : opreg_is_op_supported(reg, name);
    return PyBool_FromLong(ok);
}

static PyObject *py_explain(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *names[] = { "name", "device", NULL };
    const char *name;
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|O:explain", names, &name, &device))
        return NULL;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    DLDevice d;
    int has = parse_device(device, &d);
    if (has < 0) return NULL;
    opreg_support_info info;
    opreg_status st = opreg_explain_support(&info, reg, name, has ? &d : NULL);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    return PyUnicode_FromString(info.message);
}

static PyObject *py_list_ops(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    PyObject *list = PyList_New(0);
    size_t n = opreg_registry_num_ops(reg);
    for (size_t i = 0; list && i < n; i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!op || !opreg_op_is_defined(op)) continue;
        PyObject *s = PyUnicode_FromString(opreg_op_name(op));
        if (!s || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    return list;
}

static PyObject *py_schema(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    static char *names[] = { "name", "torch", NULL };
    const char *name;
    int torch = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$p:schema", names, &name, &torch))
        return NULL;
    const opreg_op *op = opreg__py_find_op(name);
    if (!op) return NULL;
    const opreg_schema *s = opreg_op_schema(op);
    if (!s) return opreg__py_raisef(OPREG_ERR_NOT_FOUND, "%s is not defined", name);
    char *text = opreg_schema_to_string(s, torch ? OPREG_SCHEMA_TORCH : OPREG_SCHEMA_CANONICAL);
    if (!text) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(text);
    opreg_string_free(text);
    return r;
}

/* load_plugin(path) -> str: the plugin's name. */
static PyObject *py_load_plugin(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *path;
    opreg_registry *reg = opreg_registry_default();
    opreg_plugin_info info;
    opreg_status st;
    if (!PyArg_ParseTuple(args, "O&:load_plugin", PyUnicode_FSConverter, &path)) return NULL;
    if (!reg) {
        Py_DECREF(path);
        return opreg__py_raise(OPREG_ERR_INTERNAL, "no default registry");
    }
    /* dlopen and the plugin's init may take a while; no Python runs there. */
    Py_BEGIN_ALLOW_THREADS st = opreg_plugin_load(NULL, reg, PyBytes_AsString(path));
    Py_END_ALLOW_THREADS Py_DECREF(path);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    /* The attempt just made is the list's last entry. */
    if (opreg_plugin_info_at(&info, reg, opreg_plugin_count(reg) - 1) != OPREG_OK)
        return opreg__py_raise(OPREG_ERR_INTERNAL, NULL);
    return PyUnicode_FromString(info.name);
}

static PyObject *py_version(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(opreg_version());
}

/* set_num_threads(n): the width of the CPU kernels' pool, 0 for the default. */
static PyObject *py_set_num_threads(PyObject *m, PyObject *args) {
    (void)m;
    int n;
    if (!PyArg_ParseTuple(args, "i:set_num_threads", &n)) return NULL;
    opreg_status st = opreg_set_num_threads(n);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLong(opreg_get_num_threads());
}

/* cuda_set_stream(device, stream): make `stream` (a cudaStream_t as an int, 0
 * for the default stream) the calling thread's current stream of `device`
 * for opreg's CUDA kernels. */
static PyObject *py_cuda_set_stream(PyObject *m, PyObject *args) {
    (void)m;
    int device;
    unsigned long long stream;
    if (!PyArg_ParseTuple(args, "iK:cuda_set_stream", &device, &stream)) return NULL;
    opreg_status st = opreg_cuda_set_stream(device, (void *)(uintptr_t)stream);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *py_cuda_stream(PyObject *m, PyObject *args) {
    (void)m;
    int device;
    if (!PyArg_ParseTuple(args, "i:cuda_stream", &device)) return NULL;
    return PyLong_FromUnsignedLongLong((uintptr_t)opreg_cuda_stream(device));
}

/* ---- the mutation sanitizer (opreg/mutation.h), on the default registry ---- */

static const char *const mutation_modes[] = { "off", "report", "fail" };

static PyObject *py_set_mutation_check(PyObject *m, PyObject *args) {
    (void)m;
    const char *name;
    if (!PyArg_ParseTuple(args, "s:set_mutation_check", &name)) return NULL;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    for (int i = 0; i < 3; i++)
        if (strcmp(name, mutation_modes[i]) == 0) {
            opreg_status st = opreg_registry_set_mutation_check(reg, (opreg_mutation_mode)i);
            if (st != OPREG_OK) return opreg__py_raise(st, NULL);
            Py_RETURN_NONE;
        }
    PyErr_Format(PyExc_ValueError, "set_mutation_check: mode '%s' is not off, report or fail",
                 name);
    return NULL;
}

static PyObject *py_mutation_check(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    int mode = (int)opreg_registry_mutation_check(reg);
    return PyUnicode_FromString(mode >= 0 && mode < 3 ? mutation_modes[mode] : "unknown");
}

/* opreg prints nothing by itself; the module shows its warnings and errors
 * (mutation reports among them) on the process's stderr, from any thread. */
static void log_to_stderr(void *user, opreg_log_level level, const char *message) {
    (void)user;
    (void)level;
    fprintf(stderr, "opreg: %s\n", message);
}

static PyMethodDef module_methods[] = {
    { "cuda_set_stream", py_cuda_set_stream, METH_VARARGS,
      "cuda_set_stream(device, stream)\n"
      "Make `stream` (a cudaStream_t as an int, torch.cuda.Stream.cuda_stream; 0 for the\n"
      "default stream) this thread's current stream of CUDA `device` for opreg's kernels." },
    { "cuda_stream", py_cuda_stream, METH_VARARGS,
      "cuda_stream(device) -> int\nThis thread's current stream of CUDA `device` for opreg." },
    { "is_op_supported", (PyCFunction)(void (*)(void))py_is_op_supported,
      METH_VARARGS | METH_KEYWORDS,
      "is_op_supported(name, device=None) -> bool\n"
      "Whether op `name` is defined and some available backend (or the backend of\n"
      "`device`: 'cpu', 'cuda:1', a torch.device) has a kernel for it." },
    { "explain", (PyCFunction)(void (*)(void))py_explain, METH_VARARGS | METH_KEYWORDS,
      "explain(name, device=None) -> str\n"
      "Which kernel would run for op `name` on `device`, or why none would." },
    { "list_ops", py_list_ops, METH_NOARGS,
      "list_ops() -> list of str\nThe full names of the defined ops." },
    { "schema", (PyCFunction)(void (*)(void))py_schema, METH_VARARGS | METH_KEYWORDS,
      "schema(name, *, torch=False) -> str\n"
      "The op's schema in opreg's canonical form, or as PyTorch prints it." },
    { "load_plugin", py_load_plugin, METH_VARARGS,
      "load_plugin(path) -> str\nLoad a backend plugin (a shared library) into the default "
      "registry;\n"
      "returns its name. Raises opreg.Error with the reason when it is refused." },
    { "set_num_threads", py_set_num_threads, METH_VARARGS,
      "set_num_threads(n)\nThe number of threads opreg's CPU kernels use, the caller included;\n"
      "0 restores the default (OPREG_NUM_THREADS, else the CPUs the process may use)." },
    { "get_num_threads", py_get_num_threads, METH_NOARGS,
      "get_num_threads() -> int\nThe number of threads opreg's CPU kernels use." },
    { "share_openmp", opreg__py_share_openmp, METH_VARARGS,
      "share_openmp(library, threads)\n"
      "Run opreg's CPU loops on the OpenMP team of `library` (a path of an OpenMP runtime\n"
      "this process has loaded, e.g. PyTorch's libgomp), `threads` wide, instead of on\n"
      "opreg's own pool; share_openmp(None) gives opreg its own pool back." },
    { "version", py_version, METH_NOARGS, "version() -> str\nopreg's run-time version." },
    { "torch_stable_open", opreg__py_torch_stable_open, METH_VARARGS,
      "torch_stable_open(library)\n"
      "Look up PyTorch's stable C ABI (torch_library_impl, 2.13 or later) in `library`, a\n"
      "libtorch this process has loaded. Raises opreg.Error naming what is missing." },
    { "torch_stable_library", opreg__py_torch_stable_library, METH_VARARGS,
      "torch_stable_library(namespace, key) -> int\n"
      "A torch IMPL library for `namespace` and dispatch key `key` ('CPU')." },
    { "torch_stable_supports", opreg__py_torch_stable_supports, METH_VARARGS,
      "torch_stable_supports(op) -> str or None\n"
      "None when opreg op `op` can be a C kernel of torch, else why not." },
    { "torch_stable_impl", opreg__py_torch_stable_impl, METH_VARARGS,
      "torch_stable_impl(library, name, op)\n"
      "Register opreg op `op` as the C kernel of torch op `name` in `library`." },
    { "torch_stable_close", opreg__py_torch_stable_close, METH_VARARGS,
      "torch_stable_close(library)\nDelete the library, and its kernels from torch." },
    { "torch_direct", opreg__py_torch_direct, METH_VARARGS,
      "torch_direct(on=None) -> str\n"
      "Whether torch tensors are read through libtorch's C accessors: 'on', 'checking',\n"
      "'off', 'unavailable' or 'unknown'; switched on or off when `on` is given." },
    { "tensor_info", opreg__py_tensor_info, METH_VARARGS,
      "tensor_info(tensor) -> (data, shape, strides, (code, bits, lanes), (device, id), readonly)\n"
      "The DLTensor that an op would see for `tensor` (data as an int)." },
    { "set_mutation_check", py_set_mutation_check, METH_VARARGS,
      "set_mutation_check(mode)\n"
      "Switch the mutation sanitizer of the default registry: 'off', 'report' (every call\n"
      "hashes its read-only tensors before and after the kernel and prints a kernel that\n"
      "changed one on stderr) or 'fail' (the call also raises opreg.Error,\n"
      "OPREG_ERR_MUTATION). OPREG_CHECK_MUTATION sets the mode at start." },
    { "mutation_check", py_mutation_check, METH_NOARGS,
      "mutation_check() -> str\nThe mutation sanitizer's mode: 'off', 'report' or 'fail'." },
    { "meta_tensor", (PyCFunction)(void (*)(void))opreg__py_meta_tensor,
      METH_VARARGS | METH_KEYWORDS,
      "meta_tensor(shape, dtype, strides=None) -> Tensor\n"
      "A tensor on opreg's Meta device (a shape, strides and a dtype, no data): calling an\n"
      "op with Meta tensors runs only its checks and gives its returns' shapes." },
    { "opcheck", (PyCFunction)(void (*)(void))opreg__py_opcheck, METH_VARARGS | METH_KEYWORDS,
      "opcheck(pattern='*', *, checks=None, dtypes=None, sizes=None, keys=None, seed=1,\n"
      "        raise_on_failure=True) -> list of dict\n"
      "Check the contract of every op matching `pattern` ('_C::rms_norm', 'rms_norm',\n"
      "'_C::*', '*') on generated inputs, on every key with a kernel, as `opreg check`\n"
      "does: one dict (op, key, check, result, message) per op, key and check. `checks`,\n"
      "`dtypes` and `keys` are comma-separated names ('mutation,meta', 'f32', 'CPU'),\n"
      "`sizes` is 'tokens=3,hidden=17'. Raises AssertionError listing the failures\n"
      "unless raise_on_failure is False." },
    { "example_inputs", (PyCFunction)(void (*)(void))opreg__py_example_inputs,
      METH_VARARGS | METH_KEYWORDS,
      "example_inputs(name, dtype=None, shape=None, seed=0) -> list\n"
      "Random, valid arguments for a catalogue op, in schema order, as `opreg run` builds\n"
      "them: CPU tensors (opreg.Tensor), ints, floats, strs and lists. `dtype` names the\n"
      "float data's dtype ('bf16', 'float16', ...), `shape` the sizes ('tokens=4,hidden=64')." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_opreg",
    "opreg's C extension (the limited API of CPython 3.8, one binary for every version).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__opreg(void);

PyMODINIT_FUNC PyInit__opreg(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (!opreg__py_error) {
        opreg__py_error = PyErr_NewExceptionWithDoc(
            "opreg.Error",
            "An error that opreg reported: the message is opreg's; `status` is the\n"
            "opreg_status number and `status_name` its name (e.g. 'OPREG_ERR_NOT_FOUND').",
            PyExc_RuntimeError, NULL);
        if (!opreg__py_error) goto fail;
    }
    Py_INCREF(opreg__py_error);
    if (PyModule_AddObject(m, "Error", opreg__py_error) < 0) {
        Py_DECREF(opreg__py_error);
        goto fail;
    }
    if (opreg__py_tensor_type_init(m) < 0 || opreg__py_op_type_init(m) < 0) goto fail;
    opreg_set_log_callback(log_to_stderr, NULL, OPREG_LOG_WARN);
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
