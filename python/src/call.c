/* The call path: a call converts the positional values in schema order,
 * hands keyword values to opreg by name, and makes one opreg_call_boxed(),
 * which binds keywords and defaults, checks every value (a `Tensor!` given
 * a read-only tensor included) and dispatches; its errors come back as
 * opreg.Error with opreg's message. Nothing is looked up by name: the plan
 * holds the op's handle. */
#include "python/src/binding.h"

/* A call whose tensors hold at least this many elements lets other Python
 * threads run while the kernel does. Below it, releasing and taking the
 * interpreter lock would cost more than it frees. */
#define RELEASE_GIL_NUMEL (1 << 15)

static int find_keyword(const opreg__py_plan *plan, PyObject *key) {
    for (uint32_t j = 0; j < plan->nargs; j++)
        if (plan->args[j].pyname == key) return (int)j;
    for (uint32_t j = 0; j < plan->nargs; j++) {
        int c = PyUnicode_Compare(plan->args[j].pyname, key);
        if (c == 0) return (int)j;
        if (c == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    return -1;
}

static int convert_keywords(const opreg__py_plan *plan, opreg__py_call *c, PyObject *kwargs,
                            const char *op_name) {
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (PyDict_Next(kwargs, &pos, &key, &val)) {
        if (c->nkw == OPREG__PY_MAX_ARGS) {
            opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: more than %d keyword arguments",
                             op_name, OPREG__PY_MAX_ARGS);
            return -1;
        }
        int j = find_keyword(plan, key);
        opreg_kwarg *k = &c->kw[c->nkw++];
        if (j < 0) {
            /* Not an argument of the op: opreg says so, naming it. */
            PyObject *b = PyUnicode_AsUTF8String(key);
            if (!b || opreg__py_frame_keep(&c->f, b) < 0) return -1;
            k->name = PyBytes_AsString(b);
            k->value = opreg_none();
            continue;
        }
        const opreg_arg_plan *a = &plan->args[j].p;
        opreg__py_where w = { op_name, a->name, j, -1 };
        k->name = a->name;
        if (opreg__py_value_from(&c->f, a, val, &w, &k->value) < 0) return -1;
    }
    return 0;
}

int opreg__py_call_prepare(opreg__py_call *c, opreg__py_plan *plan, PyObject *args,
                           PyObject *kwargs) {
    opreg__py_frame_init(&c->f);
    c->nkw = 0;
    c->nargs = 0;
    if (opreg__py_plan_current(plan) < 0) return -1;
    const char *op_name = opreg_op_name(plan->op);
    Py_ssize_t n = PyTuple_Size(args);
    if (n > OPREG__PY_MAX_ARGS) {
        opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "%s: takes %u arguments but %zd were given",
                         op_name, plan->nargs, n);
        return -1;
    }
    if (plan->nreturns > OPREG__PY_MAX_RETS) {
        opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                         "%s: returns %u values; the Python binding takes at most %d", op_name,
                         plan->nreturns, OPREG__PY_MAX_RETS);
        return -1;
    }
    c->nargs = (size_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint32_t)i >= plan->nargs) {
            c->vals[i] = opreg_none(); /* too many: opreg says how many it takes */
            continue;
        }
        const opreg_arg_plan *a = &plan->args[i].p;
        opreg__py_where w = { op_name, a->name, (int)i, -1 };
        if (opreg__py_value_from(&c->f, a, PyTuple_GetItem(args, i), &w, &c->vals[i]) < 0)
            return -1;
    }
    if (kwargs && PyDict_Size(kwargs) > 0 && convert_keywords(plan, c, kwargs, op_name) < 0)
        return -1;
    return 0;
}

/* One boxed call: dispatched by the tensors' device, or on `key`. */
static opreg_status call_boxed(const opreg__py_plan *plan, opreg_dispatch_key key,
                               const opreg__py_call *c, opreg_value *rets) {
    if (key == OPREG_KEY_NONE)
        return opreg_call_boxed(plan->op, c->vals, c->nargs, c->kw, c->nkw, rets, plan->nreturns);
    return opreg_call_boxed_key(plan->op, key, c->vals, c->nargs, c->kw, c->nkw, rets,
                                plan->nreturns);
}

PyObject *opreg__py_call_op(opreg__py_plan *plan, PyObject *args, PyObject *kwargs) {
    return opreg__py_call_op_key(plan, OPREG_KEY_NONE, args, kwargs);
}

PyObject *opreg__py_call_op_key(opreg__py_plan *plan, opreg_dispatch_key key, PyObject *args,
                                PyObject *kwargs) {
    opreg__py_call c;
    PyObject *result = NULL;
    if (opreg__py_call_prepare(&c, plan, args, kwargs) == 0) {
        opreg_value rets[OPREG__PY_MAX_RETS];
        opreg_status st;
        /* CUDA tensors whose producer named its work stream: the call is
         * queued on that stream, then the thread's own comes back. */
        void *prev_stream = NULL;
        if (c.f.has_stream) {
            prev_stream = opreg_cuda_stream(c.f.stream_device);
            if (opreg_cuda_set_stream(c.f.stream_device, c.f.stream) != OPREG_OK)
                c.f.has_stream = false; /* a device opreg cannot hold: the call says why */
        }
        if (c.f.numel >= RELEASE_GIL_NUMEL) {
            Py_BEGIN_ALLOW_THREADS;
            st = call_boxed(plan, key, &c, rets);
            Py_END_ALLOW_THREADS;
        } else {
            st = call_boxed(plan, key, &c, rets);
        }
        if (c.f.has_stream) opreg_cuda_set_stream(c.f.stream_device, prev_stream);
        if (st == OPREG_OK)
            result = opreg__py_returns_to(rets, plan->nreturns);
        else
            opreg__py_raise(st, NULL);
    }
    if (result)
        opreg__py_frame_release(&c.f);
    else
        opreg__py_frame_release_keeping_error(&c.f);
    return result;
}

/* For the key of the tensors' device: which provider would run and why each
 * earlier one declined, as text. */
PyObject *opreg__py_explain_call(opreg__py_plan *plan, PyObject *args, PyObject *kwargs) {
    opreg__py_call c;
    PyObject *result = NULL;
    if (opreg__py_call_prepare(&c, plan, args, kwargs) == 0) {
        opreg_call_explanation *x = PyMem_Malloc(sizeof *x);
        if (!x) {
            PyErr_NoMemory();
        } else {
            opreg_status st =
                opreg_explain_call(x, plan->op, OPREG_KEY_NONE, c.vals, c.nargs, c.kw, c.nkw);
            if (st == OPREG_OK)
                result = PyUnicode_FromString(x->message);
            else
                opreg__py_raise(st, NULL);
            PyMem_Free(x);
        }
    }
    if (result)
        opreg__py_frame_release(&c.f);
    else
        opreg__py_frame_release_keeping_error(&c.f);
    return result;
}
