/* opreg.opcheck(): opreg_opcheck() (opreg/opcheck.h) on the default
 * registry, its report as a list of dicts, and an AssertionError naming
 * every failure unless the caller asks for the report alone. */
#include "python/src/binding.h"
#include "opreg/opcheck.h"

#include <string.h>

static int set_str(PyObject *d, const char *key, const char *value) {
    PyObject *v = PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
    int rc = v ? PyDict_SetItemString(d, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

static PyObject *report_to_list(const opreg_check_report *r) {
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < opreg_check_report_count(r); i++) {
        const opreg_check_item *it = opreg_check_report_item(r, i);
        PyObject *d = PyDict_New();
        if (!d || set_str(d, "op", it->op) || set_str(d, "key", it->key) ||
            set_str(d, "check", opreg_check_kind_name(it->check)) ||
            set_str(d, "result", opreg_check_result_name(it->result)) ||
            set_str(d, "message", it->message) || PyList_Append(list, d)) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    return list;
}

PyObject *opreg__py_opcheck(PyObject *m, PyObject *args, PyObject *kwargs) {
    static const char *kwlist[] = { "pattern", "checks", "dtypes",           "sizes",
                                    "keys",    "seed",   "raise_on_failure", NULL };
    const char *pattern = "*", *checks = NULL, *dtypes = NULL, *sizes = NULL, *keys = NULL;
    unsigned long long seed = 1;
    int raise_on_failure = 1;
    opreg_opcheck_options o;
    opreg_check_report *r = NULL;
    (void)m;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s$zzzzKp", (char **)kwlist, &pattern, &checks,
                                     &dtypes, &sizes, &keys, &seed, &raise_on_failure))
        return NULL;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.seed = seed;
    o.sizes = sizes;
    if ((checks && opreg_check_kinds_parse(&o.checks, checks) != OPREG_OK) ||
        (dtypes && opreg_check_dtypes_parse(&o.dtypes, dtypes) != OPREG_OK) ||
        (keys && opreg_check_keys_parse(&o.keys, keys) != OPREG_OK)) {
        PyErr_Format(PyExc_ValueError, "opcheck: %s", opreg_last_error());
        return NULL;
    }
    opreg_status st;
    Py_BEGIN_ALLOW_THREADS st = opreg_opcheck(opreg__py_registry(), pattern, &o, &r);
    Py_END_ALLOW_THREADS if (st != OPREG_OK) return opreg__py_raise(st, "opcheck failed");
    PyObject *list = report_to_list(r);
    size_t failed = opreg_check_report_tally(r, OPREG_CHECK_FAILED);
    if (list && raise_on_failure && failed) {
        char text[4096];
        size_t len = (size_t)snprintf(text, sizeof text, "opcheck: %zu check(s) failed:", failed);
        for (size_t i = 0; i < opreg_check_report_count(r) && len < sizeof text; i++) {
            const opreg_check_item *it = opreg_check_report_item(r, i);
            if (it->result == OPREG_CHECK_FAILED)
                len +=
                    (size_t)snprintf(text + len, sizeof text - len, "\n  %s on %s, %s: %s", it->op,
                                     it->key, opreg_check_kind_name(it->check), it->message);
        }
        PyErr_SetString(PyExc_AssertionError, text);
        Py_CLEAR(list);
    }
    opreg_check_report_free(r);
    return list;
}
