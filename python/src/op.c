/* opreg._opreg.Op: one op of the default registry, callable from Python.
 *
 * The object holds the op's plan (python/src/plan.c): its handle, found
 * once and valid for the registry's life, and the registry's plan of each
 * argument, read again when the op's definition changes. Calling it is the
 * call path of call.c; this file is the type and its attributes.
 *
 * Python subclasses (opreg.OpOverloadPacket) add attribute access to
 * overloads; the call itself stays this type's tp_call. */
#include "python/src/binding.h"

#include <string.h>

typedef struct op_object {
    PyObject ob_base;
    opreg__py_plan plan;
} op_object;

static PyObject *op_call(PyObject *obj, PyObject *args, PyObject *kwargs) {
    return opreg__py_call_op(&((op_object *)(void *)obj)->plan, args, kwargs);
}

static int op_init(PyObject *obj, PyObject *args, PyObject *kwargs) {
    static char *names[] = { "name", NULL };
    const char *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s:Op", names, &name)) return -1;
    op_object *self = (op_object *)(void *)obj;
    const opreg_op *op = opreg__py_find_op(name);
    if (!op) return -1;
    opreg__py_plan_clear(&self->plan);
    self->plan.op = op;
    return opreg__py_plan_read(&self->plan, opreg_op_schema(op));
}

static void op_dealloc(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    opreg__py_plan_clear(&((op_object *)(void *)obj)->plan);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(obj);
    Py_DECREF(tp);
}

static bool check_bound(const op_object *self) {
    if (self->plan.op) return true;
    PyErr_SetString(PyExc_RuntimeError, "opreg op object is not initialised");
    return false;
}

static PyObject *op_get_name(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    return PyUnicode_FromString(opreg_op_name(self->plan.op));
}

static PyObject *op_get_schema(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    const opreg_schema *s = opreg_op_schema(self->plan.op);
    if (!s) Py_RETURN_NONE;
    char *text = opreg_schema_to_string(s, OPREG_SCHEMA_CANONICAL);
    if (!text) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(text);
    opreg_string_free(text);
    return r;
}

static PyObject *op_get_overload(PyObject *obj, void *closure) {
    (void)closure;
    op_object *self = (op_object *)(void *)obj;
    if (!check_bound(self)) return NULL;
    const char *name = opreg_op_name(self->plan.op);
    const char *sep = strstr(name, "::");
    const char *dot = strchr(sep ? sep + 2 : name, '.');
    return PyUnicode_FromString(dot ? dot + 1 : "");
}

static PyObject *op_repr(PyObject *obj) {
    op_object *self = (op_object *)(void *)obj;
    if (!self->plan.op) return PyUnicode_FromString("<opreg op (uninitialised)>");
    return PyUnicode_FromFormat("<opreg op %s>", opreg_op_name(self->plan.op));
}

/* _explain(*args, **kwargs): opreg_explain_call() on the arguments as a call
 * would convert them, for the key of the tensors' device. Nothing runs. */
static PyObject *op_explain(PyObject *obj, PyObject *args, PyObject *kwargs) {
    return opreg__py_explain_call(&((op_object *)(void *)obj)->plan, args, kwargs);
}

/* _meta(*args, **kwargs): the op's Meta kernel (its checks, its returns'
 * shapes) on these arguments, whatever their device; tensors need no data. */
static PyObject *op_meta(PyObject *obj, PyObject *args, PyObject *kwargs) {
    return opreg__py_call_op_key(&((op_object *)(void *)obj)->plan, OPREG_KEY_META, args, kwargs);
}

static PyMethodDef op_methods[] = {
    { "_meta", (PyCFunction)(void (*)(void))op_meta, METH_VARARGS | METH_KEYWORDS,
      "_meta(*args, **kwargs)\n"
      "Run the op's Meta kernel on these arguments, whatever their device (tensors need no\n"
      "data: opreg._opreg.meta_tensor): its checks, and returns with the shapes it computes." },
    { "_explain", (PyCFunction)(void (*)(void))op_explain, METH_VARARGS | METH_KEYWORDS,
      "_explain(*args, **kwargs) -> str\n"
      "Which provider would run these arguments, and why each earlier one declined (see "
      "opreg.explain)." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef op_getset[] = {
    { "name", op_get_name, NULL, "The op's full name, 'ns::name' or 'ns::name.overload'.", NULL },
    { "schema", op_get_schema, NULL, "The op's schema (canonical form), None when undefined.",
      NULL },
    { "overload", op_get_overload, NULL, "The overload name ('' for none).", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot op_slots[] = {
    { Py_tp_init, (void *)op_init },
    { Py_tp_new, (void *)PyType_GenericNew },
    { Py_tp_dealloc, (void *)op_dealloc },
    { Py_tp_call, (void *)op_call },
    { Py_tp_repr, (void *)op_repr },
    { Py_tp_getset, op_getset },
    { Py_tp_methods, op_methods },
    { Py_tp_doc, "Op(name): an op of the default registry, by its full name.\n"
                 "Calling it runs the op: positional and keyword arguments as its schema says." },
    { 0, NULL },
};

static PyType_Spec op_spec = {
    "opreg._opreg.Op", sizeof(op_object), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, op_slots,
};

int opreg__py_op_type_init(PyObject *module) {
    PyObject *type = PyType_FromSpec(&op_spec);
    if (!type) return -1;
    if (PyModule_AddObject(module, "Op", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}
