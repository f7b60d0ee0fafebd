/* opreg's ops as C kernels of torch's dispatcher, through PyTorch's stable C
 * ABI (libtorch 2.10 and later: torch_library_impl, which takes a boxed C
 * function). opreg.torch registers an op's CPU kernel here when torch has
 * that ABI, so a call through torch.ops reaches opreg's registry without
 * Python in between; elsewhere it keeps its Python kernels.
 *
 * Nothing here links against libtorch or includes its headers: the library
 * that torch has already loaded is opened with RTLD_NOLOAD and the entry
 * points below are looked up by name. Their C signatures are libtorch's
 * stable ABI (torch/csrc/inductor/aoti_torch/c/shim.h and
 * torch/csrc/stable/c/shim.h); the encoding of values on the boxed stack
 * (StableIValue, 64 bits) is the one torch's stable library uses since
 * 2.13, which added torch_delete_stable_ivalue:
 *   Tensor        an owning AtenTensorHandle (the kernel deletes it)
 *   int, float    the int64 or double's bits; bool its first byte
 *   T?            0 for None, else an owning pointer to a StableIValue of T
 *   T[]           an owning StableListHandle of StableIValues
 *   str           an owning StringHandle
 * A kernel reports a failure by calling aoti_torch_check(false, ...), which
 * throws torch's exception through this frame: everything the call owns is
 * released before (the file is compiled with unwind tables).
 *
 * torch's boxed kernels get no user pointer, so each registered op takes a
 * slot, and each slot has its own entry point (a table of SLOTS functions
 * that differ only in the slot they pass on). The interpreter lock is not
 * needed by a call: it touches no Python object. */
#include "python/src/binding.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t ts_value; /* StableIValue */
typedef void *ts_handle;   /* AtenTensorHandle, StableListHandle, StringHandle, ... */
typedef int32_t ts_err;    /* AOTITorchError: 0 is success */
typedef void (*ts_boxed)(ts_value *stack, uint64_t nargs, uint64_t nouts);

/* The version of torch's stable ABI that the encoding above is (2.13.0),
 * in TORCH_ABI_VERSION's layout: major, minor, patch in the top bytes. */
#define TS_ABI_VERSION ((2ull << 56) | (13ull << 48))

#define SLOTS    256
#define MAX_ARGS 64

static struct ts_abi {
    bool open;
    ts_err (*library_init_impl)(const char *ns, const char *key, const char *file, uint32_t line,
                                ts_handle *out);
    ts_err (*library_impl)(ts_handle lib, const char *name, ts_boxed fn, uint64_t version);
    ts_err (*delete_library)(ts_handle lib);
    ts_err (*delete_tensor)(ts_handle t);
    ts_err (*delete_ivalue)(ts_value *v);
    ts_err (*list_size)(ts_handle list, size_t *out);
    ts_err (*list_get_item)(ts_handle list, size_t i, ts_value *out);
    ts_err (*delete_list)(ts_handle list);
    ts_err (*string_length)(ts_handle s, size_t *out);
    ts_err (*string_c_str)(ts_handle s, const char **out);
    ts_err (*delete_string)(ts_handle s);
    void (*check)(bool cond, const char *func, const char *file, uint32_t line, const char *msg);
} ts; /* tensors are read through opreg__py_torch (torch_tensor.c) */

/* What an argument is on the stack. */
enum ts_kind { K_TENSOR, K_TENSOR_LIST, K_INT, K_FLOAT, K_BOOL, K_STR, K_INT_LIST };

struct ts_arg {
    uint8_t kind;
    bool optional;
    const char *name; /* the registry's, as long as the definition lives */
};

/* One registered op: its opreg op and how to read its arguments. */
static struct ts_slot {
    const opreg_op *op;
    size_t nargs, ntensors;
    struct ts_arg args[MAX_ARGS];
} slots[SLOTS];
static int nslots;

/* ---- opening libtorch ---------------------------------------------------------- */

/* torch_stable_open(library): look the stable ABI up in libtorch (a path or a
 * soname of a library this process has loaded). Raises opreg.Error naming
 * the first missing entry point, or the loader's reason. */
PyObject *opreg__py_torch_stable_open(PyObject *m, PyObject *args) {
    const char *path;
    (void)m;
    if (!PyArg_ParseTuple(args, "s:torch_stable_open", &path)) return NULL;
    if (ts.open) Py_RETURN_NONE;
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED, "torch's stable ABI: %s is not loaded (%s)",
                                path, dlerror());
    static const struct opreg__py_symbol fns[] = {
#define TS_FN(member, symbol) { #symbol, offsetof(struct ts_abi, member) }
        TS_FN(library_init_impl, aoti_torch_library_init_impl),
        TS_FN(library_impl, torch_library_impl),
        TS_FN(delete_library, aoti_torch_delete_library_object),
        TS_FN(delete_tensor, aoti_torch_delete_tensor_object),
        TS_FN(delete_ivalue, torch_delete_stable_ivalue),
        TS_FN(list_size, torch_list_size),
        TS_FN(list_get_item, torch_list_get_item),
        TS_FN(delete_list, torch_delete_list),
        TS_FN(string_length, torch_string_length),
        TS_FN(string_c_str, torch_string_c_str),
        TS_FN(delete_string, torch_delete_string),
        TS_FN(check, aoti_torch_check),
#undef TS_FN
    };
    struct ts_abi found = { 0 };
    const char *lacks = opreg__py_find_symbols(lib, &found, fns, sizeof fns / sizeof fns[0]);
    if (lacks) {
        dlclose(lib);
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch's stable ABI: %s has no %s (PyTorch 2.13 or later has it)",
                                path, lacks);
    }
    const char *missing = opreg__py_torch_open(lib);
    if (missing) {
        dlclose(lib);
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch's stable ABI: %s has no %s, or not with the meaning opreg "
                                "reads (PyTorch 2.13 or later has it)",
                                path, missing);
    }
    ts = found;
    ts.open = true; /* the handle is kept: torch stays loaded for the process */
    Py_RETURN_NONE;
}

/* ---- an op's plan ---------------------------------------------------------------- */

/* How an argument travels on torch's stack, from the registry's plan of it
 * (opreg_op_arg_plan(), the same one a call is checked against); -1 for a
 * type this path does not carry. */
static int kind_of(const opreg_arg_plan *p) {
    const opreg_type *t = p->type;
    if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) t = opreg_type_element(t, 0);
    switch (p->kind) {
    case OPREG_VALUE_TENSOR:
        return K_TENSOR;
    case OPREG_VALUE_TENSOR_LIST:
        return p->optional || p->elem_optional ? -1 : K_TENSOR_LIST;
    case OPREG_VALUE_INT: /* int and SymInt; Layout and MemoryFormat travel otherwise */
        return opreg_type_get_kind(t) == OPREG_TYPE_INT ||
                       opreg_type_get_kind(t) == OPREG_TYPE_SYMINT
                   ? K_INT
                   : -1;
    case OPREG_VALUE_FLOAT:
        return K_FLOAT;
    case OPREG_VALUE_BOOL:
        return K_BOOL;
    case OPREG_VALUE_STR:
        return K_STR;
    case OPREG_VALUE_INT_LIST:
        return p->optional ? -1 : K_INT_LIST;
    default:
        return -1;
    }
}

/* Fill @p s for @p op; NULL, or why the op cannot take this path. */
static const char *plan(struct ts_slot *s, const opreg_op *op, char *why, size_t cap) {
    const opreg_schema *sc = opreg_op_schema(op);
    s->op = op;
    s->nargs = sc ? opreg_schema_num_arguments(sc) : 0;
    s->ntensors = 0;
    if (!sc) return "it is not defined";
    if (opreg_schema_num_returns(sc) != 0) return "it returns values";
    if (opreg_schema_is_vararg(sc)) return "its arguments are variadic";
    if (s->nargs > MAX_ARGS) return "it has too many arguments";
    for (size_t i = 0; i < s->nargs; i++) {
        opreg_arg_plan p = { .struct_size = sizeof p };
        if (opreg_op_arg_plan(&p, op, i) != OPREG_OK || p.schema != sc)
            return "its definition changed while it was read";
        int k = kind_of(&p);
        if (k < 0) {
            snprintf(why, cap, "argument '%s' is a %s", p.name, p.type_text);
            return why;
        }
        s->args[i].kind = (uint8_t)k;
        s->args[i].optional = p.optional;
        s->args[i].name = p.name;
        s->ntensors += k == K_TENSOR;
    }
    return NULL;
}

/* ---- a call ---------------------------------------------------------------------- */

/* What one call owns: the stack's handles and the arrays made for lists. */
struct ts_call {
    DLTensor inline_tensors[16];
    DLTensor *tensors; /* inline_tensors, or malloc'd when more */
    size_t ntensors;
    opreg_value values[MAX_ARGS];
    void *lists[MAX_ARGS]; /* malloc'd arrays of list arguments */
};

static _Thread_local char ts_message[1024];

/* A torch tensor as a DLTensor that borrows its sizes and strides (valid
 * while the handle lives). Returns false with a message. */
static bool to_dl(DLTensor *dl, ts_handle h, const char *arg) {
    int32_t what;
    memset(dl, 0, sizeof *dl);
    switch (opreg__py_torch_describe(dl, h, &what)) {
    case OPREG__PY_TORCH_OK:
        return true;
    case OPREG__PY_TORCH_LAYOUT:
        snprintf(ts_message, sizeof ts_message, "argument '%s': torch's layout %d is not strided",
                 arg, (int)what);
        return false;
    case OPREG__PY_TORCH_DTYPE:
        snprintf(ts_message, sizeof ts_message,
                 "argument '%s': torch's dtype %d has no opreg dtype", arg, (int)what);
        return false;
    case OPREG__PY_TORCH_DEVICE:
        snprintf(ts_message, sizeof ts_message,
                 "argument '%s': torch's device type %d is neither CPU nor CUDA", arg, (int)what);
        return false;
    default:
        snprintf(ts_message, sizeof ts_message, "argument '%s': torch could not describe it", arg);
        return false;
    }
}

/* Release what the stack owns from argument @p from on: torch hands every
 * handle, box and list to the kernel. */
static void release_stack(const struct ts_slot *s, ts_value *stack, size_t from) {
    for (size_t i = from; i < s->nargs; i++) {
        ts_value v = stack[i];
        ts_value *box = NULL;
        if (s->args[i].optional) {
            memcpy(&box, &v, sizeof box);
            if (!box) continue;
            v = *box;
        }
        ts_handle h;
        memcpy(&h, &v, sizeof h);
        switch (s->args[i].kind) {
        case K_TENSOR:
            ts.delete_tensor(h);
            break;
        case K_TENSOR_LIST:
        case K_INT_LIST: {
            size_t n = 0;
            ts.list_size(h, &n);
            for (size_t k = 0; s->args[i].kind == K_TENSOR_LIST && k < n; k++) {
                ts_value e;
                ts_handle eh;
                if (ts.list_get_item(h, k, &e) == 0) {
                    memcpy(&eh, &e, sizeof eh);
                    ts.delete_tensor(eh);
                }
            }
            ts.delete_list(h);
            break;
        }
        case K_STR:
            ts.delete_string(h);
            break;
        default:
            break;
        }
        if (box) ts.delete_ivalue(box);
    }
}

/* Read argument @p i into c->values[i]; false with a message. */
static bool read_arg(const struct ts_slot *s, struct ts_call *c, ts_value *stack, size_t i) {
    const char *name = s->args[i].name;
    ts_value v = stack[i];
    opreg_value *out = &c->values[i];
    if (s->args[i].optional) {
        ts_value *box;
        memcpy(&box, &v, sizeof box);
        if (!box) {
            *out = opreg_none();
            return true;
        }
        v = *box;
    }
    ts_handle h;
    memcpy(&h, &v, sizeof h);
    switch (s->args[i].kind) {
    case K_TENSOR: {
        DLTensor *t = &c->tensors[c->ntensors++];
        if (!to_dl(t, h, name)) return false;
        *out = opreg_tensor_value(t);
        return true;
    }
    case K_TENSOR_LIST:
    case K_INT_LIST: {
        size_t n = 0;
        if (ts.list_size(h, &n)) {
            snprintf(ts_message, sizeof ts_message, "argument '%s': torch's list failed", name);
            return false;
        }
        bool tensors = s->args[i].kind == K_TENSOR_LIST;
        size_t each = tensors ? sizeof(DLTensor) + sizeof(DLTensor *) : sizeof(int64_t);
        char *mem = malloc(n * each + 1);
        if (!mem) {
            snprintf(ts_message, sizeof ts_message, "argument '%s': out of memory", name);
            return false;
        }
        c->lists[i] = mem;
        DLTensor **ptrs = (DLTensor **)(void *)mem;
        DLTensor *dls = (DLTensor *)(void *)(mem + n * sizeof(DLTensor *));
        int64_t *ints = (int64_t *)(void *)mem;
        for (size_t k = 0; k < n; k++) {
            ts_value e;
            if (ts.list_get_item(h, k, &e)) {
                snprintf(ts_message, sizeof ts_message, "argument '%s': torch's list failed", name);
                return false;
            }
            if (tensors) {
                ts_handle eh;
                memcpy(&eh, &e, sizeof eh);
                if (!to_dl(&dls[k], eh, name)) return false;
                ptrs[k] = &dls[k];
            } else {
                memcpy(&ints[k], &e, sizeof ints[k]);
            }
        }
        *out = tensors ? opreg_tensor_list_value(ptrs, n) : opreg_int_list_value(ints, n);
        return true;
    }
    case K_INT: {
        int64_t x;
        memcpy(&x, &v, sizeof x);
        *out = opreg_int_value(x);
        return true;
    }
    case K_FLOAT: {
        double x;
        memcpy(&x, &v, sizeof x);
        *out = opreg_float_value(x);
        return true;
    }
    case K_BOOL: {
        unsigned char b;
        memcpy(&b, &v, 1); /* the bool's byte, first on a little-endian machine */
        *out = opreg_bool_value(b != 0);
        return true;
    }
    case K_STR: {
        const char *p = NULL;
        size_t n = 0;
        if (ts.string_c_str(h, &p) || ts.string_length(h, &n)) {
            snprintf(ts_message, sizeof ts_message, "argument '%s': torch's string failed", name);
            return false;
        }
        out->kind = OPREG_VALUE_STR;
        out->flags = 0;
        out->u.s.ptr = p;
        out->u.s.len = n;
        return true;
    }
    default:
        return false;
    }
}

static void ts_call(int slot, ts_value *stack, uint64_t nargs, uint64_t nouts) {
    const struct ts_slot *s = &slots[slot];
    struct ts_call c;
    bool ok = true;
    (void)nouts;
    c.ntensors = 0;
    c.tensors = c.inline_tensors;
    memset(c.lists, 0, sizeof(void *) * s->nargs);
    if (nargs != s->nargs) {
        snprintf(ts_message, sizeof ts_message,
                 "%s: torch passed %llu arguments, the schema has %zu", opreg_op_name(s->op),
                 (unsigned long long)nargs, s->nargs);
        ts.check(false, "opreg", __FILE__, __LINE__, ts_message); /* throws */
        return;
    }
    if (s->ntensors > sizeof c.inline_tensors / sizeof c.inline_tensors[0]) {
        c.tensors = malloc(s->ntensors * sizeof(DLTensor));
        if (!c.tensors) {
            snprintf(ts_message, sizeof ts_message, "%s: out of memory", opreg_op_name(s->op));
            ok = false;
        }
    }
    for (size_t i = 0; ok && i < s->nargs; i++)
        ok = read_arg(s, &c, stack, i);
    if (ok && opreg_call_boxed(s->op, c.values, s->nargs, NULL, 0, NULL, 0) != OPREG_OK) {
        snprintf(ts_message, sizeof ts_message, "%s", opreg_last_error());
        ok = false;
    }
    release_stack(s, stack, 0);
    for (size_t i = 0; i < s->nargs; i++)
        free(c.lists[i]);
    if (c.tensors != c.inline_tensors) free(c.tensors);
    if (!ok) ts.check(false, "opreg", __FILE__, __LINE__, ts_message); /* throws */
}

/* The slots' entry points: a table of functions that differ only in the
 * slot number they pass to ts_call. */
#define TS_ENTRY(n)                                                                                \
    static void ts_entry_##n(ts_value *stack, uint64_t nargs, uint64_t nouts) {                    \
        ts_call(0x##n, stack, nargs, nouts);                                                       \
    }
/* (clang-format moves these rows differently on every pass) */
/* clang-format off */
#define TS_ROW(X, r)                                                                               \
    X(r##0) X(r##1) X(r##2) X(r##3) X(r##4) X(r##5) X(r##6) X(r##7)                                \
    X(r##8) X(r##9) X(r##a) X(r##b) X(r##c) X(r##d) X(r##e) X(r##f)
#define TS_TABLE(X)                                                                                \
    TS_ROW(X, 0) TS_ROW(X, 1) TS_ROW(X, 2) TS_ROW(X, 3) TS_ROW(X, 4) TS_ROW(X, 5) TS_ROW(X, 6)     \
    TS_ROW(X, 7) TS_ROW(X, 8) TS_ROW(X, 9) TS_ROW(X, a) TS_ROW(X, b) TS_ROW(X, c) TS_ROW(X, d)     \
    TS_ROW(X, e) TS_ROW(X, f)
/* clang-format on */
TS_TABLE(TS_ENTRY)
#define TS_POINTER(n) ts_entry_##n,
static const ts_boxed entries[SLOTS] = { TS_TABLE(TS_POINTER) };

/* ---- registering ----------------------------------------------------------------- */

/* torch_stable_library(namespace, key) -> int: a torch IMPL library for the
 * namespace and dispatch key ("CPU"), as a handle for torch_stable_impl. */
PyObject *opreg__py_torch_stable_library(PyObject *m, PyObject *args) {
    const char *ns, *key;
    ts_handle lib = NULL;
    (void)m;
    if (!PyArg_ParseTuple(args, "ss:torch_stable_library", &ns, &key)) return NULL;
    if (!ts.open) return opreg__py_raisef(OPREG_ERR_UNSUPPORTED, "torch's stable ABI is not open");
    if (ts.library_init_impl(ns, key, "opreg/torch.py", 0, &lib) || !lib)
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch could not open an IMPL library for %s (%s)", ns, key);
    return PyLong_FromVoidPtr(lib);
}

/* torch_stable_supports(op) -> str or None: None when opreg op @p op can be
 * registered as a C kernel, else why not. */
PyObject *opreg__py_torch_stable_supports(PyObject *m, PyObject *args) {
    const char *name;
    const opreg_op *op;
    struct ts_slot probe;
    char why[160];
    (void)m;
    if (!PyArg_ParseTuple(args, "s:torch_stable_supports", &name)) return NULL;
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    {
        opreg_status st = opreg_op_find(&op, reg, name);
        if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    }
    const char *no = plan(&probe, op, why, sizeof why);
    if (no) return PyUnicode_FromString(no);
    Py_RETURN_NONE;
}

/* torch_stable_impl(library, name, op): register opreg op @p op as the C
 * kernel of torch op @p name (without namespace) in @p library. */
PyObject *opreg__py_torch_stable_impl(PyObject *m, PyObject *args) {
    PyObject *handle;
    const char *name, *opname;
    const opreg_op *op;
    char why[160];
    (void)m;
    if (!PyArg_ParseTuple(args, "Oss:torch_stable_impl", &handle, &name, &opname)) return NULL;
    ts_handle lib = PyLong_AsVoidPtr(handle);
    if (!lib)
        return PyErr_Occurred()
                   ? NULL
                   : opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "torch_stable_impl: no library");
    opreg_registry *reg = opreg__py_registry();
    if (!reg) return NULL;
    {
        opreg_status st = opreg_op_find(&op, reg, opname);
        if (st != OPREG_OK) return opreg__py_raise(st, NULL);
    }
    if (nslots == SLOTS)
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch_stable_impl: all %d C kernel slots are taken (%s)", SLOTS,
                                opname);
    struct ts_slot *s = &slots[nslots];
    const char *no = plan(s, op, why, sizeof why);
    if (no)
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch_stable_impl: %s cannot be a C kernel: %s", opname, no);
    if (ts.library_impl(lib, name, entries[nslots], TS_ABI_VERSION))
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED,
                                "torch could not register the kernel of %s (%s)", name, opname);
    nslots++;
    Py_RETURN_NONE;
}

/* torch_stable_close(library): delete an IMPL library, which removes its
 * kernels from torch's dispatcher. */
PyObject *opreg__py_torch_stable_close(PyObject *m, PyObject *args) {
    PyObject *handle;
    (void)m;
    if (!PyArg_ParseTuple(args, "O:torch_stable_close", &handle)) return NULL;
    ts_handle lib = PyLong_AsVoidPtr(handle);
    if (!lib)
        return PyErr_Occurred()
                   ? NULL
                   : opreg__py_raisef(OPREG_ERR_INVALID_ARGUMENT, "torch_stable_close: no library");
    /* The slots stay as they are (never reused): a call already inside one
     * of them while torch removes the kernel still finds its op. */
    if (ts.delete_library(lib))
        return opreg__py_raisef(OPREG_ERR_UNSUPPORTED, "torch could not delete an IMPL library");
    Py_RETURN_NONE;
}
