/* opreg.Error raised from opreg's status and message, and the pieces of the
 * binding's own messages: where a value comes from, the name of its type. */
#include "python/src/binding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

PyObject *opreg__py_error;

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
