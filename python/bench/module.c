/* opreg._bench: what `opreg bench python` (tools/bench/bench_python.py) has to
 * measure in C, built beside the binding for the benchmark only: the
 * package never imports it and `cmake --install` leaves it out.
 *
 * It is made from the binding's own conversion and call files
 * (python/src), with its own copy of opreg linked in, hence its own default
 * registry: the same built-in ops and kernels as opreg._opreg's, in a
 * separate registry. What it times is that registry's opreg_call_boxed()
 * on arguments converted once, as the binding converts them; the
 * benchmark's null op reaches both registries through the plugin of
 * null_op.c. */
#include "python/src/binding.h"

#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static opreg_registry *registry(void) {
    opreg_registry *reg = opreg_registry_default();
    if (!reg) opreg__py_raise(OPREG_ERR_INTERNAL, "the default registry could not be created");
    return reg;
}

/* Time `iters` calls of `op` with `args` and `kwargs` converted once. */
static PyObject *time_calls(const opreg_op *op, long long iters, PyObject *args, PyObject *kwargs) {
    opreg__py_plan plan = { op, NULL, 0, 0, NULL };
    opreg__py_call c;
    PyObject *result = NULL;
    if (opreg__py_call_prepare(&c, &plan, args, kwargs) == 0) {
        opreg_value rets[OPREG__PY_MAX_RETS];
        opreg_status st = OPREG_OK;
        double t0 = now_ns();
        for (long long i = 0; i < iters && st == OPREG_OK; i++) {
            st = opreg_call_boxed(op, c.vals, c.nargs, c.kw, c.nkw, rets, plan.nreturns);
            for (uint32_t r = 0; st == OPREG_OK && r < plan.nreturns; r++)
                opreg_value_release(&rets[r]);
        }
        double t1 = now_ns();
        if (st == OPREG_OK)
            result = PyFloat_FromDouble((t1 - t0) / (double)iters);
        else
            opreg__py_raise(st, NULL);
    }
    opreg__py_frame_release_keeping_error(&c.f);
    opreg__py_plan_clear(&plan);
    return result;
}

/* time_c(name, n, *args, **kwargs) -> float */
static PyObject *py_time_c(PyObject *m, PyObject *args, PyObject *kwargs) {
    (void)m;
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *name = n >= 2 ? PyUnicode_AsUTF8String(PyTuple_GetItem(args, 0)) : NULL;
    long long iters = name ? PyLong_AsLongLong(PyTuple_GetItem(args, 1)) : -1;
    if (!name || iters < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "time_c(name, n, *args, **kwargs): n >= 1");
        Py_XDECREF(name);
        return NULL;
    }
    opreg_registry *reg = registry();
    const opreg_op *op = NULL;
    opreg_status st = reg ? opreg_op_find(&op, reg, PyBytes_AsString(name)) : OPREG_OK;
    Py_DECREF(name);
    if (!reg) return NULL;
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    PyObject *rest = PyTuple_GetSlice(args, 2, n);
    if (!rest) return NULL;
    PyObject *result = time_calls(op, iters, rest, kwargs);
    Py_DECREF(rest);
    return result;
}

/* load_plugin(path) -> str: into this module's registry. */
static PyObject *py_load_plugin(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:load_plugin", PyUnicode_FSConverter, &path)) return NULL;
    opreg_registry *reg = registry();
    opreg_plugin_info info;
    opreg_status st = reg ? opreg_plugin_load(NULL, reg, PyBytes_AsString(path)) : OPREG_OK;
    Py_DECREF(path);
    if (!reg) return NULL;
    if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    if (opreg_plugin_info_at(&info, reg, opreg_plugin_count(reg) - 1) != OPREG_OK)
        return opreg__py_raise(OPREG_ERR_INTERNAL, NULL);
    return PyUnicode_FromString(info.name);
}

static PyMethodDef module_methods[] = {
    { "time_c", (PyCFunction)(void (*)(void))py_time_c, METH_VARARGS | METH_KEYWORDS,
      "time_c(name, n, *args, **kwargs) -> float\n"
      "Nanoseconds per call of op `name` of this module's registry, called n times from C\n"
      "with the arguments converted once, as the binding converts them." },
    { "load_plugin", py_load_plugin, METH_VARARGS,
      "load_plugin(path) -> str\nLoad a plugin into this module's registry; returns its name." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_bench",
    "What `opreg bench python` measures in C (not part of the package's API).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__bench(void);

PyMODINIT_FUNC PyInit__bench(void) {
    /* Errors are raised as the binding's opreg.Error. */
    if (!opreg__py_error) {
        PyObject *binding = PyImport_ImportModule("opreg._opreg");
        opreg__py_error = binding ? PyObject_GetAttrString(binding, "Error") : NULL;
        Py_XDECREF(binding);
        if (!opreg__py_error) return NULL;
    }
    return PyModule_Create(&module_def);
}
