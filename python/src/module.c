/* The module opreg._opreg: opreg.Error, the queries of the default registry
 * (list_ops, schema, is_op_supported, explain), load_plugin, and the types
 * Op and Tensor. The Python package `opreg` (python/opreg/__init__.py) builds
 * `opreg.ops.<namespace>.<op>` on top. */
#include "python/src/binding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

PyObject *opreg__py_error;

/* ---- errors ------------------------------------------------------------------- */

static PyObject *raise_text(opreg_status status, const char *text) {
    PyObject *msg = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
    PyObject *exc = msg ? PyObject_CallFunctionObjArgs(opreg__py_error, msg, NULL) : NULL;
    Py_XDECREF(msg);
    if (!exc) return NULL;
    PyObject *code = PyLong_FromLong((long)status);
    PyObject *name = PyUnicode_FromString(opreg_status_name(status));
    if (code && name && PyObject_SetAttrString(exc, "status", code) == 0 &&
        PyObject_SetAttrString(exc, "status_name", name) == 0)
        PyErr_SetObject(opreg__py_error, exc);
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_DECREF(exc);
    return NULL;
}

PyObject *opreg__py_raise(opreg_status status, const char *fallback) {
    const char *m = opreg_last_error();
    if (!m || !*m) m = fallback ? fallback : opreg_status_str(status);
    return raise_text(status, m);
}

PyObject *opreg__py_raisef(opreg_status status, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_text(status, buf);
}

void opreg__py_where_text(const opreg__py_where *w, char *buf, size_t cap) {
    if (w->item >= 0)
        snprintf(buf, cap, "%s: argument '%s' (position %d) item %d", w->op, w->arg, w->position,
                 w->item);
    else
        snprintf(buf, cap, "%s: argument '%s' (position %d)", w->op, w->arg, w->position);
}

void opreg__py_type_name(PyObject *obj, char *buf, size_t cap) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *type = (PyObject *)Py_TYPE(obj);
    PyObject *mod = PyObject_GetAttrString(type, "__module__");
    PyObject *name = PyObject_GetAttrString(type, "__qualname__");
    PyObject *m8 = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8String(mod) : NULL;
    PyObject *n8 = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8String(name) : NULL;
    const char *ms = m8 ? PyBytes_AsString(m8) : NULL;
    const char *ns = n8 ? PyBytes_AsString(n8) : "?";
    if (ms && strcmp(ms, "builtins") != 0)
        snprintf(buf, cap, "%s.%s", ms, ns);
    else
        snprintf(buf, cap, "%s", ns);
    Py_XDECREF(m8);
    Py_XDECREF(n8);
    Py_XDECREF(mod);
    Py_XDECREF(name);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* ---- queries -------------------------------------------------------------------- */

static opreg_registry *registry(void) {
    opreg_registry *reg = opreg_registry_default();
    if (!reg) opreg__py_raise(OPREG_ERR_INTERNAL, "the default registry could not be created");
    return reg;
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
    opreg_registry *reg = registry();
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
    opreg_registry *reg = registry();
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
    opreg_registry *reg = registry();
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
    opreg_registry *reg = registry();
    if (!reg) return NULL;
    const opreg_op *op;
    opreg_status st = opreg_op_find(&op, reg, name);
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
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

/* A kernel that does nothing, for _define_bench_op(). */
static opreg_status null_kernel(void *context, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)context;
    (void)op;
    (void)args;
    (void)rets;
    return OPREG_OK;
}

/* _define_bench_op() -> str: defines `_opreg_bench::rms_norm`, rms_norm's
 * schema with a CPU kernel that does nothing, once per process, and returns
 * its name. tools/bench_python.py calls it to measure what the binding and
 * the dispatcher cost without the kernel's work. */
static PyObject *py_define_bench_op(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    static opreg_library *lib;
    static const char *name = "_opreg_bench::rms_norm";
    if (!lib) {
        opreg_registry *reg = registry();
        if (!reg) return NULL;
        opreg_library *l;
        opreg_status st = opreg_library_create(&l, reg, OPREG_LIBRARY_DEF, "_opreg_bench",
                                               OPREG_KEY_CPU, __FILE__, __LINE__);
        if (st == OPREG_OK)
            st = opreg_library_def(
                NULL, l, "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
        if (st == OPREG_OK)
            st = opreg_library_impl_fn(l, "rms_norm", OPREG_KEY_CPU, null_kernel, NULL);
        if (st != OPREG_OK) {
            PyObject *r = opreg__py_raise(st, NULL);
            opreg_library_close(l);
            return r;
        }
        lib = l; /* open for the life of the process */
    }
    return PyUnicode_FromString(name);
}

static PyObject *py_version(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(opreg_version());
}

static PyMethodDef module_methods[] = {
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
    { "version", py_version, METH_NOARGS, "version() -> str\nopreg's run-time version." },
    { "_define_bench_op", py_define_bench_op, METH_NOARGS,
      "_define_bench_op() -> str\n"
      "Define _opreg_bench::rms_norm, whose CPU kernel does nothing (benchmarks)." },
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
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
