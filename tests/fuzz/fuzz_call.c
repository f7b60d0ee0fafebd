/* libFuzzer target for the call path: opreg_call_boxed() and
 * opreg_call_boxed_key() on every op of the default registry (the _C
 * catalogue, plus a few fz:: ops whose schemas use every value kind,
 * defaults, keyword-only arguments, returns and 64 arguments), with
 * arguments decoded from the input (the format is above run()).
 *
 * Tensors get their own buffers, each between two ASan-poisoned guard
 * zones, sized exactly to the bytes the tensor's shape, strides and offset
 * span. A tensor whose extent no buffer could have (a negative size, a size
 * product or stride span past int64, an unknown element size, a missing
 * shape) gets a 16-byte buffer: opreg can see that it is invalid, so any
 * read through it is a bug. Tensors off the host (Meta, CUDA without a GPU,
 * unknown devices) also get 16 bytes or NULL. Host tensors that are valid
 * but large are shrunk (largest dim halved) until they fit the op's budget
 * (32 KiB; 128 elements for the GEMMs and attention, whose work, and
 * linear's result, grow as products of sizes), which keeps one run well
 * below 10 ms.
 *
 * Invariants (each an abort, besides ASan and UBSan's own reports):
 *  - a refusal returns a known status with a message, and leaves every
 *    buffer byte, every tensor's metadata and every return slot as it was;
 *  - a call that opreg_call_boxed() must refuse (arity, unknown or repeated
 *    names, a missing argument, a value of the wrong kind, a NULL tensor,
 *    list or string, a read-only tensor for Tensor!, too few return slots,
 *    a key that is not a backend key) is refused;
 *  - a success writes only buffers reachable from written (Tensor!)
 *    arguments, changes no tensor's metadata, and returns a tensor in each
 *    Tensor return slot;
 *  - the fz:: kernels receive each argument as passed, and each one left
 *    out as the schema's default.
 *
 * OPREG_FUZZ_PRINT=1 prints each decoded call (to turn a crash into a
 * reproducer); OPREG_FUZZ_WRITE_SEEDS=DIR writes one input per op that
 * decodes into a valid call, then exits. */
#define _POSIX_C_SOURCE 200809L

#include "common/dtype_access.h"
#include "fuzz_input.h"
#include "opreg/opreg.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define FZ_ASAN 1
#endif
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TENSORS 64
#define MAX_BUFS    MAX_TENSORS
#define MAX_VALUES  80 /* positional + keyword */
#define MAX_RETS    8
#define GUARD       64 /* poisoned bytes on each side of a buffer */
#define TINY        16 /* the buffer of a tensor that claims what no buffer holds */
#define VALUE_CAP   (32 * 1024)
#define GEMM_ELEMS  128 /* per tensor of GEMMs and attention: their work grows faster */
#define WANT_SCALAR 100 /* `Scalar`: int, float or bool */
#define WANT_NONE   101 /* a type no value carries (Generator, Any, ...) */

/* ---- failing ---------------------------------------------------------------- */

static char call_text[16384]; /* the decoded call, printed with any failure */
static size_t call_len;

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (call_len < sizeof call_text) {
        int n = vsnprintf(call_text + call_len, sizeof call_text - call_len, fmt, ap);
        if (n > 0) call_len += (size_t)n;
    }
    va_end(ap);
}

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_call: invariant violated: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  last error: %s\n  call:\n%.*s\n", opreg_last_error(),
            (int)(call_len < sizeof call_text ? call_len : sizeof call_text), call_text);
    __builtin_trap();
}

/* ---- poisoning ------------------------------------------------------------- */

static void poison(const void *p, size_t n) {
#ifdef FZ_ASAN
    __asan_poison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}

static void unpoison(const void *p, size_t n) {
#ifdef FZ_ASAN
    __asan_unpoison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}

/* ---- reading the input ------------------------------------------------------- */

static uint64_t u64(reader *r) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)u8(r) << (8 * i);
    return v;
}

/* ---- the ops ------------------------------------------------------------------- */

/* What the harness knows of one argument, from the schema alone. */
typedef struct arg_info {
    const char *name;
    uint8_t want;     /* opreg_value_kind, WANT_SCALAR or WANT_NONE */
    bool optional;    /* None accepted */
    bool elem_opt;    /* Tensor?[] */
    bool write;       /* Tensor! or Tensor(a!)[] */
    bool kwarg_only;  /* after `*` */
    bool has_default; /* a default with a value form */
    opreg_value def;  /* that default; list items in def_items */
    uint64_t def_items[8];
} arg_info;

typedef struct op_info {
    const opreg_op *op;
    const char *name;
    size_t nargs, npositional, nreturns;
    bool returns_tensor[MAX_RETS];
    size_t cap; /* bytes per host buffer */
    bool gemm;  /* elements per host buffer: GEMM_ELEMS */
    bool fz;    /* one of ours: the kernel checks what it receives */
    arg_info args[64];
} op_info;

static op_info *ops;
static size_t nops;

static uint8_t leaf_want(opreg_type_kind k) {
    switch (k) {
    case OPREG_TYPE_TENSOR:
        return OPREG_VALUE_TENSOR;
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
        return OPREG_VALUE_INT;
    case OPREG_TYPE_FLOAT:
        return OPREG_VALUE_FLOAT;
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_SYMBOOL:
        return OPREG_VALUE_BOOL;
    case OPREG_TYPE_STR:
        return OPREG_VALUE_STR;
    case OPREG_TYPE_SCALAR_TYPE:
        return OPREG_VALUE_SCALAR_TYPE;
    case OPREG_TYPE_DEVICE:
        return OPREG_VALUE_DEVICE;
    case OPREG_TYPE_SCALAR:
        return WANT_SCALAR;
    default:
        return WANT_NONE;
    }
}

static uint8_t list_want(const opreg_type *elem, bool *elem_opt) {
    opreg_type_kind k = opreg_type_get_kind(elem);
    if (k == OPREG_TYPE_OPTIONAL &&
        opreg_type_get_kind(opreg_type_element(elem, 0)) == OPREG_TYPE_TENSOR) {
        *elem_opt = true;
        return OPREG_VALUE_TENSOR_LIST;
    }
    switch (leaf_want(k)) {
    case OPREG_VALUE_TENSOR:
        return OPREG_VALUE_TENSOR_LIST;
    case OPREG_VALUE_INT:
        return OPREG_VALUE_INT_LIST;
    case OPREG_VALUE_FLOAT:
        return OPREG_VALUE_FLOAT_LIST;
    case OPREG_VALUE_BOOL:
        return OPREG_VALUE_BOOL_LIST;
    default:
        return WANT_NONE;
    }
}

/* One list item of a default, into the 8-byte slot @p slot. */
static bool default_item(uint8_t want, const opreg_default *d, uint64_t *slot, size_t i) {
    opreg_default_kind k = opreg_default_get_kind(d);
    if (want == OPREG_VALUE_INT_LIST && k == OPREG_DEFAULT_INT) {
        int64_t x = opreg_default_int(d);
        memcpy(slot, &x, 8);
    } else if (want == OPREG_VALUE_FLOAT_LIST &&
               (k == OPREG_DEFAULT_INT || k == OPREG_DEFAULT_FLOAT)) {
        double x = k == OPREG_DEFAULT_INT ? (double)opreg_default_int(d) : opreg_default_float(d);
        memcpy(slot, &x, 8);
    } else if (want == OPREG_VALUE_BOOL_LIST && k == OPREG_DEFAULT_BOOL) {
        ((bool *)(void *)slot)[i] = opreg_default_bool(d);
        return true;
    } else {
        return false;
    }
    (void)i;
    return true;
}

/* The value a call passes for a left-out argument, as docs/registry.md
 * says: None for optionals, ints for int, ints or floats for float, a
 * scalar repeated for `int[N] x=v`, and so on. False: it has none. */
static bool schema_default(arg_info *a, const opreg_argument *arg) {
    const opreg_default *d = opreg_argument_default(arg);
    if (!d) return false;
    opreg_default_kind k = opreg_default_get_kind(d);
    opreg_value *v = &a->def;
    memset(v, 0, sizeof *v);
    if (k == OPREG_DEFAULT_NONE) {
        v->kind = OPREG_VALUE_NONE;
        return a->optional;
    }
    switch (a->want) {
    case OPREG_VALUE_INT:
        v->kind = OPREG_VALUE_INT;
        v->u.i = opreg_default_int(d);
        return k == OPREG_DEFAULT_INT;
    case OPREG_VALUE_FLOAT:
        v->kind = OPREG_VALUE_FLOAT;
        v->u.f = k == OPREG_DEFAULT_INT ? (double)opreg_default_int(d) : opreg_default_float(d);
        return k == OPREG_DEFAULT_INT || k == OPREG_DEFAULT_FLOAT;
    case OPREG_VALUE_BOOL:
        v->kind = OPREG_VALUE_BOOL;
        v->u.b = k == OPREG_DEFAULT_BOOL && opreg_default_bool(d);
        return k == OPREG_DEFAULT_BOOL;
    case WANT_SCALAR:
        if (k == OPREG_DEFAULT_INT) {
            v->kind = OPREG_VALUE_INT;
            v->u.i = opreg_default_int(d);
        } else if (k == OPREG_DEFAULT_FLOAT) {
            v->kind = OPREG_VALUE_FLOAT;
            v->u.f = opreg_default_float(d);
        } else if (k == OPREG_DEFAULT_BOOL) {
            v->kind = OPREG_VALUE_BOOL;
            v->u.b = opreg_default_bool(d);
        } else {
            return false;
        }
        return true;
    case OPREG_VALUE_STR:
        if (k != OPREG_DEFAULT_STRING) return false;
        v->kind = OPREG_VALUE_STR;
        v->u.s.ptr = opreg_default_string(d, &v->u.s.len);
        return true;
    case OPREG_VALUE_SCALAR_TYPE:
        if (k != OPREG_DEFAULT_INT || !opreg_dtype_name((opreg_dtype)opreg_default_int(d)))
            return false;
        v->kind = OPREG_VALUE_SCALAR_TYPE;
        v->u.dtype = (opreg_dtype)opreg_default_int(d);
        return true;
    case OPREG_VALUE_DEVICE: {
        int64_t index = -1;
        opreg_dispatch_key key;
        if (k != OPREG_DEFAULT_DEVICE) return false;
        const char *type = opreg_default_device(d, &index);
        if (opreg_key_find(&key, type) != OPREG_OK || key == OPREG_KEY_COMPOSITE) return false;
        v->kind = OPREG_VALUE_DEVICE;
        v->u.device.device_type = (DLDeviceType)opreg_key_backend(key)->device_type;
        v->u.device.device_id = (int32_t)(index < 0 ? 0 : index);
        return true;
    }
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        size_t n;
        bool is_list = k == OPREG_DEFAULT_LIST;
        if (is_list) {
            n = opreg_default_list_size(d);
        } else {
            int64_t size = opreg_type_list_size(opreg_argument_type(arg));
            if (opreg_type_get_kind(opreg_argument_type(arg)) == OPREG_TYPE_OPTIONAL) size = -1;
            n = size > 0 ? (size_t)size : 1;
        }
        if (n > 8) return false; /* none of ours is longer */
        for (size_t i = 0; i < n; i++) {
            const opreg_default *item = is_list ? opreg_default_list_item(d, i) : d;
            if (!default_item(a->want, item,
                              a->want == OPREG_VALUE_BOOL_LIST ? a->def_items : &a->def_items[i],
                              i))
                return false;
        }
        v->kind = a->want;
        v->u.ints.items = (const int64_t *)(const void *)a->def_items;
        v->u.ints.len = n;
        return true;
    }
    default:
        return false;
    }
}

static void describe_op(op_info *o) {
    const opreg_schema *s = opreg_op_schema(o->op);
    o->name = opreg_op_name(o->op);
    o->cap = VALUE_CAP;
    o->gemm = strstr(o->name, "_mm") || strstr(o->name, "linear") || strstr(o->name, "attention");
    o->fz = strncmp(o->name, "fz::", 4) == 0;
    if (!s) return;
    o->nargs = opreg_schema_num_arguments(s);
    o->nreturns = opreg_schema_num_returns(s);
    if (o->nargs > 64 || o->nreturns > MAX_RETS) abort();
    for (size_t i = 0; i < o->nreturns; i++) {
        const opreg_argument *r = opreg_schema_return(s, i);
        o->returns_tensor[i] = opreg_type_get_kind(opreg_argument_type(r)) == OPREG_TYPE_TENSOR;
    }
    for (size_t i = 0; i < o->nargs; i++) {
        const opreg_argument *arg = opreg_schema_argument(s, i);
        arg_info *a = &o->args[i];
        const opreg_type *t = opreg_argument_type(arg);
        a->name = opreg_argument_name(arg);
        if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) {
            a->optional = true;
            t = opreg_type_element(t, 0);
        }
        a->want = opreg_type_get_kind(t) == OPREG_TYPE_LIST
                      ? list_want(opreg_type_element(t, 0), &a->elem_opt)
                      : leaf_want(opreg_type_get_kind(t));
        a->write = opreg_argument_is_write(arg);
        a->kwarg_only = opreg_argument_is_kwarg_only(arg);
        if (!a->kwarg_only) o->npositional++;
        a->has_default = schema_default(a, arg);
    }
}

/* ---- the fz:: ops and their kernel --------------------------------------------- */

/* What the kernel of an fz:: op must receive, set before each call. */
static struct {
    const op_info *op;
    const opreg_value *passed[64]; /* NULL: left out, the default is due */
    int calls;
} expect;

static bool same_value(const opreg_value *a, const opreg_value *b, bool deep) {
    if (a->kind != b->kind || a->flags != b->flags) return false;
    switch (a->kind) {
    case OPREG_VALUE_NONE:
        return true;
    case OPREG_VALUE_TENSOR:
        return a->u.tensor == b->u.tensor;
    case OPREG_VALUE_TENSOR_LIST:
        return a->u.tensors.items == b->u.tensors.items && a->u.tensors.len == b->u.tensors.len;
    case OPREG_VALUE_INT:
        return a->u.i == b->u.i;
    case OPREG_VALUE_FLOAT:
        return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
    case OPREG_VALUE_BOOL:
        return a->u.b == b->u.b;
    case OPREG_VALUE_STR:
        if (a->u.s.len != b->u.s.len) return false;
        if (!deep) return a->u.s.ptr == b->u.s.ptr;
        return a->u.s.ptr && b->u.s.ptr && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len + 1) == 0;
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        size_t item = a->kind == OPREG_VALUE_BOOL_LIST ? sizeof(bool) : 8;
        if (a->u.ints.len != b->u.ints.len) return false;
        if (!deep) return a->u.ints.items == b->u.ints.items;
        return a->u.ints.len == 0 ||
               (a->u.ints.items && b->u.ints.items &&
                memcmp(a->u.ints.items, b->u.ints.items, a->u.ints.len * item) == 0);
    }
    case OPREG_VALUE_SCALAR_TYPE:
        return a->u.dtype == b->u.dtype;
    case OPREG_VALUE_DEVICE:
        return a->u.device.device_type == b->u.device.device_type &&
               a->u.device.device_id == b->u.device.device_id;
    }
    return false;
}

/* Touch every byte a value points to, so that ASan sees a bad pointer. */
static volatile uint64_t sink;

static void touch(const opreg_value *v, const arg_info *a) {
    switch (v->kind) {
    case OPREG_VALUE_TENSOR:
        if (!v->u.tensor) fail("kernel got a NULL tensor for '%s'", a->name);
        sink += (uint64_t)v->u.tensor->ndim;
        break;
    case OPREG_VALUE_TENSOR_LIST:
        if (v->u.tensors.len && !v->u.tensors.items)
            fail("kernel got a NULL tensor list for '%s'", a->name);
        for (size_t i = 0; i < v->u.tensors.len; i++) {
            const DLTensor *t = v->u.tensors.items[i];
            if (!t && !a->elem_opt) fail("kernel got a NULL item in '%s'", a->name);
            if (t) sink += (uint64_t)t->ndim;
        }
        break;
    case OPREG_VALUE_STR:
        if (!v->u.s.ptr) fail("kernel got a NULL string for '%s'", a->name);
        if (strlen(v->u.s.ptr) != v->u.s.len) fail("string length of '%s' is wrong", a->name);
        break;
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        size_t item = v->kind == OPREG_VALUE_BOOL_LIST ? sizeof(bool) : 8;
        if (v->u.ints.len && !v->u.ints.items) fail("kernel got a NULL list for '%s'", a->name);
        const uint8_t *p = (const uint8_t *)v->u.ints.items;
        for (size_t i = 0; i < v->u.ints.len * item; i++)
            sink += p[i];
        break;
    }
    default:
        break;
    }
}

static opreg_status fz_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    const op_info *o = expect.op;
    (void)ctx;
    if (!o || o->op != op) fail("an fz kernel ran for an op that was not called");
    expect.calls++;
    if (o->nargs && !args) fail("kernel got NULL args");
    for (size_t i = 0; i < o->nargs; i++) {
        const arg_info *a = &o->args[i];
        const opreg_value *v = &args[i];
        const opreg_value *want = expect.passed[i];
        if (want ? !same_value(v, want, false) : !a->has_default || !same_value(v, &a->def, true))
            fail("kernel got another value for '%s' (kind %u) than %s", a->name, v->kind,
                 want ? "was passed" : "its default");
        bool kind_ok = v->kind == a->want || (v->kind == OPREG_VALUE_NONE && a->optional) ||
                       (a->want == WANT_SCALAR &&
                        (v->kind == OPREG_VALUE_INT || v->kind == OPREG_VALUE_FLOAT ||
                         v->kind == OPREG_VALUE_BOOL));
        if (!kind_ok) fail("kernel got kind %u for '%s'", v->kind, a->name);
        touch(v, a);
    }
    if (o->nreturns) {
        /* fz::ret: a tensor on the device of its argument. */
        const DLTensor *x = args[0].u.tensor;
        int64_t one = 1;
        DLTensor *out;
        if (!rets) fail("kernel got NULL rets");
        opreg_status st = opreg_tensor_empty(&out, x->device, OPREG_DTYPE_F32, 1, &one);
        if (st != OPREG_OK) return st;
        rets[0] = opreg_tensor_value(out);
    }
    return OPREG_OK;
}

/* Schemas of the fz:: ops. Together they hold every value kind, optional
 * and list forms, defaults of each kind, keyword-only arguments, a return,
 * a type no value carries, and the most arguments an op may have. */
static const char *const fz_schemas[] = {
    ("every(Tensor a, Tensor? b, Tensor[] c, Tensor?[] d, int e, float f, bool g, str h, "
     "int[] i, float[] j, bool[] k, ScalarType l, Device m, Scalar n, SymInt o, int? p, "
     "Tensor(a!)[] q, Tensor(b!) r) -> ()"),
    ("defaults(Tensor a, int[2] s=1, float[] f=[1.5, 2], bool[2] b=[True, False], "
     "str mode=\"fast\", ScalarType? dtype=None, int? n=None, *, Scalar alpha=2, float beta=1, "
     "bool flag=False, int[] empty=[], Device dev=\"cpu\", int[3] pad=[1, 2, 3], "
     "ScalarType st=float32) -> ()"),
    "kwonly(*, Tensor x, Tensor[] ys, int n, str? s=None) -> ()",
    "ret(Tensor x, *, int n=3) -> Tensor",
    ("odd(Tensor x, Generator? g=None, Layout? layout=None, MemoryFormat mf=0, "
     "Storage? y=None) -> ()"),
    "mixed(Tensor a, Tensor(a!) b) -> ()",
};

static void define_fz(opreg_registry *reg) {
    opreg_library *lib;
    if (opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "fz", OPREG_KEY_NONE, __FILE__,
                             __LINE__) != OPREG_OK)
        abort();
    char wide[4096];
    size_t n = (size_t)snprintf(wide, sizeof wide, "wide(");
    for (int i = 0; i < 64; i++)
        n += (size_t)snprintf(wide + n, sizeof wide - n, "%sint a%d%s", i ? ", " : "", i,
                              i >= 60 ? "=7" : "");
    snprintf(wide + n, sizeof wide - n, ") -> ()");
    for (size_t i = 0; i <= sizeof fz_schemas / sizeof *fz_schemas; i++) {
        const char *s = i < sizeof fz_schemas / sizeof *fz_schemas ? fz_schemas[i] : wide;
        const opreg_op *op;
        if (opreg_library_def(&op, lib, s) != OPREG_OK) {
            fprintf(stderr, "fuzz_call: def %s: %s\n", s, opreg_last_error());
            abort();
        }
        char name[64];
        snprintf(name, sizeof name, "%s", opreg_op_name(op) + 4);
        opreg_kernel k = { fz_kernel, NULL, NULL,
                           strcmp(name, "mixed") == 0 ? OPREG_KERNEL_MIXED_DEVICES : 0 };
        if (opreg_library_impl(lib, name, OPREG_KEY_CPU, &k) != OPREG_OK ||
            opreg_library_impl(lib, name, OPREG_KEY_META, &k) != OPREG_OK ||
            opreg_library_impl(lib, name, OPREG_KEY_COMPOSITE, &k) != OPREG_OK)
            abort();
    }
    /* An op withdrawn again: its record stays, undefined. */
    opreg_library *gone;
    if (opreg_library_create(&gone, reg, OPREG_LIBRARY_DEF, "fzgone", OPREG_KEY_NONE, __FILE__,
                             __LINE__) != OPREG_OK ||
        opreg_library_def(NULL, gone, "gone(Tensor x) -> ()") != OPREG_OK)
        abort();
    opreg_library_close(gone);
}

/* ---- values ------------------------------------------------------------------------ */

static const opreg_dtype dtypes[12] = {
    OPREG_DTYPE_F32, OPREG_DTYPE_F16,  OPREG_DTYPE_BF16,      OPREG_DTYPE_F64,
    OPREG_DTYPE_I8,  OPREG_DTYPE_U8,   OPREG_DTYPE_I16,       OPREG_DTYPE_I32,
    OPREG_DTYPE_I64, OPREG_DTYPE_BOOL, OPREG_DTYPE_F8_E4M3FN, OPREG_DTYPE_F8_E5M2,
};

static const int64_t special_sizes[] = {
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    9,
    15,
    16,
    17,
    31,
    32,
    33,
    64,
    100,
    127,
    128,
    255,
    256,
    1000,
    1024,
    4096,
    65536,
    (int64_t)1 << 20,
    (int64_t)1 << 31,
    (int64_t)1 << 32,
    3037000500,
    (int64_t)1 << 40,
    (int64_t)1 << 62,
    INT64_MAX,
    INT64_MAX - 1,
    INT32_MAX,
    (int64_t)INT32_MAX + 1,
    -1,
    -2,
    -64,
    INT64_MIN,
    INT64_MIN + 1,
    -((int64_t)1 << 32),
};
#define NSPECIAL_SIZES (sizeof special_sizes / sizeof *special_sizes)

static const double special_floats[] = {
    1e-6,     1e-5,      0.5,     1,        2,       -1,     -0.0,  0,      NAN,     -NAN,
    INFINITY, -INFINITY, DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324, 1e300, 1e-300, 6.8e38,  3.4028235e38,
    65504,    448,       57344,   127,      128,     1e10,   -1e10, 9.3e18, -9.3e18, 4294967296.0,
};
#define NSPECIAL_FLOATS (sizeof special_floats / sizeof *special_floats)

static char long_text[301];

static const char *const strings[] = {
    "auto",     "fp8",       "fp8_e4m3",    "fp8_e5m2", "",       "x",
    "Auto",     "fp8_e4m3 ", "fp8_e5m2fp8", "cpu",      "cuda:0", "meta",
    "\xff\xfe", "float32",   "fp8\x01",     long_text,  NULL,
};
#define NSTRINGS (sizeof strings / sizeof *strings)

static const char *const odd_names[] = {
    "", "nope", NULL, "out ", "OUT", "input_", "x", long_text, "a0", "self",
};
#define NODD_NAMES (sizeof odd_names / sizeof *odd_names)

/* One input's decoded call. */
typedef struct tensor_rec {
    DLTensor t;
    int buf;         /* -1: data NULL */
    size_t need;     /* bytes of the buffer the elements reach */
    bool host;       /* a kernel may read it */
    bool written_ok; /* reachable from a written argument */
    DLTensor saved;  /* metadata before the call */
    int64_t *saved_dims;
} tensor_rec;

typedef struct buffer_rec {
    uint8_t *base, *data, *snap;
    size_t size, need;
    uint8_t fill;
    DLDataType dtype;
    bool written_ok;
} buffer_rec;

typedef struct call {
    const op_info *op;
    int64_t pool[8];
    size_t cap;
    bool gemm;
    tensor_rec t[MAX_TENSORS];
    size_t nt;
    buffer_rec b[MAX_BUFS];
    size_t nb;
} call;

static int64_t size_value(reader *r, const call *c) {
    uint8_t b = u8(r);
    if (b < 64) return b;
    if (b < 128) return c ? c->pool[b & 7] : b & 7;
    return special_sizes[(b - 128) % NSPECIAL_SIZES];
}

static int64_t int_value(reader *r, const call *c) {
    uint8_t b = u8(r);
    if (b < 64) return b;
    if (b < 128) return c->pool[b & 7];
    if (b < 255) return special_sizes[(b - 128) % NSPECIAL_SIZES];
    return (int64_t)u64(r);
}

static double float_value(reader *r, const call *c) {
    uint8_t b = u8(r);
    if (b < 64) return b / 8.0;
    if (b < 128) return (double)c->pool[b & 7];
    if (b < 255) return special_floats[(b - 128) % NSPECIAL_FLOATS];
    uint64_t bits = u64(r);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* A copy of @p s in an allocation of exactly its size. */
static const char *exact_string(const char *s, size_t len) {
    char *d = alloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static const char *string_value(reader *r) {
    uint8_t b = u8(r);
    if (b >= 240) { /* text from the input, without NUL bytes */
        size_t n = u8(r) % 48;
        char tmp[48];
        for (size_t i = 0; i < n; i++) {
            tmp[i] = (char)u8(r);
            if (!tmp[i]) tmp[i] = '?';
        }
        return exact_string(tmp, n);
    }
    const char *s = strings[b % NSTRINGS];
    return s ? exact_string(s, strlen(s)) : NULL;
}

/* Element bytes of a DLPack type, 0 when it has none. */
static size_t elem_size(DLDataType d) {
    if (d.lanes == 0 || d.bits == 0 || d.bits % 8 != 0) return 0;
    return (size_t)d.bits / 8 * d.lanes;
}

/* The span of a tensor in elements from its first one: [lo, hi]. False when
 * no buffer can hold it (negative size, overflow, no shape). *empty when it
 * has no element. */
static bool extent(const DLTensor *t, size_t elem, int64_t *lo, int64_t *hi, bool *empty) {
    int64_t numel = 1, neg = 0, pos = 0;
    bool overflow = false;
    *empty = false;
    *lo = *hi = 0;
    if (t->ndim < 0 || (t->ndim > 0 && !t->shape) || elem == 0) return false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0) return false;
        if (t->shape[d] == 0) *empty = true;
        overflow |= __builtin_mul_overflow(numel, t->shape[d], &numel);
    }
    if (*empty) return true;
    if (overflow || __builtin_mul_overflow(numel, (int64_t)elem, &numel)) return false;
    if (!t->strides) {
        *hi = numel / (int64_t)elem - 1;
        return true;
    }
    for (int d = 0; d < t->ndim; d++) {
        int64_t span;
        if (t->shape[d] <= 1) continue;
        if (__builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &span)) return false;
        if (span < 0 ? __builtin_add_overflow(neg, span, &neg)
                     : __builtin_add_overflow(pos, span, &pos))
            return false;
    }
    int64_t total;
    if (__builtin_sub_overflow(pos, neg, &total) || __builtin_add_overflow(total, 1, &total) ||
        __builtin_mul_overflow(total, (int64_t)elem, &total))
        return false;
    *lo = neg;
    *hi = pos;
    return true;
}

/* The bytes a host tensor costs: its extent, or for an empty one what its
 * sizes other than 0 would span (an op's result may be shaped by them, as
 * _C::linear's is by an empty weight [N, 0]). */
static uint64_t budget(const DLTensor *t, size_t elem, bool empty, int64_t lo, int64_t hi) {
    if (!empty) return (uint64_t)(hi - lo + 1) * elem;
    uint64_t n = elem;
    for (int d = 0; d < t->ndim; d++) {
        uint64_t s = t->shape[d] > 1 ? (uint64_t)t->shape[d] : 1;
        n = n > UINT64_MAX / s ? UINT64_MAX : n * s;
    }
    return n;
}

static bool is_host(DLDevice d) {
    return d.device_type == kDLCPU || d.device_type == kDLCUDAHost;
}

static DLDevice device_value(reader *r) {
    uint8_t b = u8(r);
    DLDevice d = { kDLCPU, 0 };
    if (b < 160) return d;
    if (b < 192) {
        d.device_type = OPREG_DEVICE_META;
    } else if (b < 208) {
        d.device_type = kDLCUDA;
    } else if (b < 216) {
        d.device_type = kDLCUDAHost;
    } else if (b < 224) {
        d.device_id = 1;
    } else if (b < 232) {
        d.device_type = kDLOpenCL;
    } else if (b < 240) {
        d.device_type = (DLDeviceType)33;
    } else if (b < 248) {
        d.device_type = (DLDeviceType)1000;
    } else {
        d.device_type =
            (DLDeviceType)(int32_t)(u8(r) | (uint32_t)u8(r) << 8 | (uint32_t)u8(r) << 24);
        d.device_id = (int32_t)(int8_t)u8(r);
    }
    return d;
}

static int64_t *shape_array(int n) {
    return n > 0 ? alloc((size_t)n * sizeof(int64_t)) : NULL;
}

/* Strides: the row-major ones, changed as the mode byte says. */
static int64_t *strides_value(reader *r, const call *c, int ndim, const int64_t *shape) {
    uint8_t b = u8(r);
    if (b < 160 || ndim <= 0 || !shape) return NULL;
    int64_t *s = shape_array(ndim), row = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        s[d] = row;
        row = (int64_t)((uint64_t)row * (uint64_t)(shape[d] > 0 ? shape[d] : 1));
    }
    int d = (int)(u8(r) % (unsigned)ndim);
    if (b < 176) {        /* as they are */
    } else if (b < 192) { /* rows padded: a gap after each row */
        int64_t k = 1 + (b & 3);
        for (int i = 0; i + 1 < ndim; i++)
            s[i] = (int64_t)((uint64_t)s[i] * (uint64_t)k + (uint64_t)(b & 4 ? 1 : 0));
    } else if (b < 208) { /* one dim walked backwards */
        s[d] = (int64_t)(0 - (uint64_t)s[d]);
    } else if (b < 224) { /* one dim broadcast */
        s[d] = 0;
    } else if (b < 232) { /* the last two dims stored transposed (column-major) */
        if (ndim >= 2) {
            int64_t a = shape[ndim - 1] > 0 ? shape[ndim - 1] : 1;
            int64_t bb = shape[ndim - 2] > 0 ? shape[ndim - 2] : 1;
            int64_t outer = (int64_t)((uint64_t)a * (uint64_t)bb);
            s[ndim - 2] = 1;
            s[ndim - 1] = bb;
            for (int i = ndim - 3; i >= 0; i--) {
                s[i] = outer;
                outer = (int64_t)((uint64_t)outer * (uint64_t)(shape[i] > 0 ? shape[i] : 1));
            }
        }
    } else { /* each from the input */
        for (int i = 0; i < ndim; i++) {
            uint8_t x = u8(r);
            s[i] = x < 128 ? (int64_t)(x % 17) - 8 : size_value(r, c);
        }
    }
    return s;
}

static DLTensor *tensor_value(reader *r, call *c) {
    uint8_t kind = u8(r);
    if (kind >= 248) return NULL;
    if (kind >= 200 && kind < 232 && c->nt) return &c->t[u8(r) % c->nt].t; /* the same object */
    if (c->nt == MAX_TENSORS) return &c->t[MAX_TENSORS - 1].t;
    int share = -1;
    if (kind >= 232 && c->nt) share = (int)(u8(r) % c->nt); /* a view of another's buffer */
    tensor_rec *rec = &c->t[c->nt++];
    DLTensor *t = &rec->t;
    uint8_t db = u8(r);
    if (db < 192) {
        t->dtype = opreg_dtype_to_dlpack(dtypes[db % 12]);
    } else {
        t->dtype.code = u8(r);
        t->dtype.bits = u8(r);
        t->dtype.lanes = (uint16_t)(u8(r) % 4);
    }
    t->device = device_value(r);
    uint8_t nb = u8(r);
    bool no_shape = false;
    if (nb < 224) {
        t->ndim = nb % 7;
    } else {
        static const int32_t odd[8] = { -1, 7, 8, 16, 17, 64, 65, 2 };
        t->ndim = odd[nb % 8];
        no_shape = nb % 8 == 7;
    }
    int64_t *shape = shape_array(t->ndim);
    for (int d = 0; d < t->ndim; d++)
        shape[d] = d < 8 ? size_value(r, c) : 1;
    t->shape = no_shape ? NULL : shape;
    t->strides = strides_value(r, c, t->ndim, t->shape);
    uint8_t ob = u8(r);
    uint8_t fill = u8(r);
    size_t elem = elem_size(t->dtype);
    int64_t lo, hi;
    bool empty, valid = extent(t, elem, &lo, &hi, &empty);
    rec->host = is_host(t->device);
    if (valid && rec->host) { /* shrink until it fits the budget */
        size_t cap = c->gemm ? GEMM_ELEMS * elem : c->cap;
        while (budget(t, elem, empty, lo, hi) > cap) {
            int big = 0;
            for (int d = 1; d < t->ndim; d++)
                if (shape[d] > shape[big]) big = d;
            shape[big] /= 2;
            valid = extent(t, elem, &lo, &hi, &empty);
            if (!valid) break;
        }
    }
    uint64_t first = (uint64_t)(ob & 7) * (elem ? elem : 1);
    if (valid && rec->host && !empty) {
        first += (uint64_t)(-lo) * elem;
        rec->need = (size_t)(first + (uint64_t)(hi + 1) * elem);
    }
    bool no_data = rec->host ? (ob & 0xF8) == 0xF8 : !(ob & 0x20);
    if (no_data) {
        rec->buf = -1;
    } else if (share >= 0 && c->t[share].buf >= 0) {
        rec->buf = c->t[share].buf;
    } else {
        rec->buf = (int)c->nb++;
        c->b[rec->buf].fill = fill;
        c->b[rec->buf].dtype = t->dtype;
    }
    t->byte_offset = first; /* data is set once the buffers exist */
    if (ob & 0x40 && rec->buf >= 0) t->byte_offset = ~(uint64_t)0; /* data at the first element */
    if (rec->buf >= 0 && rec->need > c->b[rec->buf].need) c->b[rec->buf].need = rec->need;
    say("    t%zu: dtype (%u,%u,%u) device (%d,%d) ndim %d shape", c->nt - 1, t->dtype.code,
        t->dtype.bits, t->dtype.lanes, (int)t->device.device_type, t->device.device_id, t->ndim);
    for (int d = 0; t->shape && d < t->ndim; d++)
        say(" %" PRId64, t->shape[d]);
    say(" strides");
    for (int d = 0; t->strides && d < t->ndim; d++)
        say(" %" PRId64, t->strides[d]);
    if (!t->strides) say(" -");
    say(" offset %" PRIu64 " buf %d need %zu%s\n", first, rec->buf, rec->need,
        valid ? "" : " (no buffer can hold it)");
    return t;
}

static opreg_value value_of_kind(reader *r, call *c, uint32_t kind);

/* A value for argument @p a (NULL: an argument that the schema does not
 * have): mostly of the kind it wants, sometimes None or any other kind. */
static opreg_value value(reader *r, call *c, const arg_info *a) {
    uint8_t sel = u8(r);
    uint32_t kind;
    if (a && sel < 176 && a->want != WANT_NONE) {
        kind = a->want == WANT_SCALAR ? (uint32_t)(OPREG_VALUE_INT + sel % 3) : a->want;
    } else if (sel < 208 && sel >= 176) {
        kind = OPREG_VALUE_NONE;
    } else if (sel < 248) {
        kind = sel % 12;
    } else {
        static const uint32_t bad[8] = { 15, 16, 64, 100, 101, 102, 0x7fffffffu, 0xffffffffu };
        opreg_value v;
        memset(&v, 0, sizeof v);
        v.kind = bad[sel % 8];
        v.u.i = int_value(r, c);
        say("    kind %u\n", v.kind);
        return v;
    }
    return value_of_kind(r, c, kind);
}

static opreg_value value_of_kind(reader *r, call *c, uint32_t kind) {
    opreg_value v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    switch (kind) {
    case OPREG_VALUE_NONE:
        say("    None\n");
        break;
    case OPREG_VALUE_TENSOR: {
        uint8_t fl = u8(r);
        v.flags = fl < 224 ? 0 : fl < 240 ? OPREG_VALUE_READONLY : (uint32_t)fl << 8 | (fl & 1);
        say("    Tensor flags %u\n", v.flags);
        v.u.tensor = tensor_value(r, c);
        break;
    }
    case OPREG_VALUE_TENSOR_LIST: {
        uint8_t lb = u8(r), fl = u8(r);
        static const size_t longer[5] = { 8, 64, 1000, 2, 0 };
        size_t len = lb < 200 ? lb % 6 : longer[(lb - 200) % 5];
        v.flags = fl < 240 ? 0 : OPREG_VALUE_READONLY;
        say("    Tensor[] len %zu flags %u%s\n", len, v.flags, lb >= 252 ? " items NULL" : "");
        if (lb >= 252 && len) { /* items NULL */
            v.u.tensors.len = len;
            break;
        }
        DLTensor **items = alloc(len * sizeof *items);
        for (size_t i = 0; i < len; i++) {
            if (i >= 6) {
                items[i] = items[i % 6];
                continue;
            }
            uint8_t ib = u8(r);
            if (ib < 224)
                items[i] = tensor_value(r, c);
            else if (ib < 240)
                items[i] = NULL;
            else
                items[i] = i ? items[i - 1] : NULL;
            if (ib >= 224) say("    item %zu: %s\n", i, items[i] ? "repeated" : "NULL");
        }
        v.u.tensors.items = items;
        v.u.tensors.len = len;
        break;
    }
    case OPREG_VALUE_INT:
        v.u.i = int_value(r, c);
        say("    int %" PRId64 "\n", v.u.i);
        break;
    case OPREG_VALUE_FLOAT:
        v.u.f = float_value(r, c);
        say("    float %g\n", v.u.f);
        break;
    case OPREG_VALUE_BOOL:
        v.u.b = u8(r) & 1;
        say("    bool %d\n", (int)v.u.b);
        break;
    case OPREG_VALUE_STR:
        v.u.s.ptr = string_value(r);
        v.u.s.len = v.u.s.ptr ? strlen(v.u.s.ptr) : 0;
        say("    str \"%.40s\" (%zu bytes)\n", v.u.s.ptr ? v.u.s.ptr : "(NULL)", v.u.s.len);
        break;
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        uint8_t lb = u8(r);
        static const size_t longer[5] = { 16, 64, 1000, 5000, 3 };
        size_t len = lb < 200 ? lb % 9 : longer[(lb - 200) % 5];
        size_t item = kind == OPREG_VALUE_BOOL_LIST ? sizeof(bool) : 8;
        say("    %s len %zu%s:", opreg_value_kind_name((opreg_value_kind)kind), len,
            lb >= 252 ? " items NULL" : "");
        v.u.ints.len = len;
        if (lb >= 252 && len) {
            say("\n");
            break;
        }
        uint8_t *items = alloc(len * item);
        for (size_t i = 0; i < len; i++) {
            if (i >= 16) {
                memcpy(items + i * item, items + (i % 16) * item, item);
                continue;
            }
            if (kind == OPREG_VALUE_INT_LIST) {
                int64_t x = int_value(r, c);
                memcpy(items + i * 8, &x, 8);
                say(" %" PRId64, x);
            } else if (kind == OPREG_VALUE_FLOAT_LIST) {
                double x = float_value(r, c);
                memcpy(items + i * 8, &x, 8);
                say(" %g", x);
            } else {
                ((bool *)(void *)items)[i] = u8(r) & 1;
                say(" %d", (int)((bool *)(void *)items)[i]);
            }
        }
        say("\n");
        v.u.ints.items = (const int64_t *)(const void *)items;
        break;
    }
    case OPREG_VALUE_SCALAR_TYPE: {
        uint8_t b = u8(r);
        static const int odd[6] = { 8, 9, 99, -1, 255, 100000 };
        v.u.dtype = b < 192 ? dtypes[b % 12] : (opreg_dtype)odd[b % 6];
        say("    ScalarType %d\n", (int)v.u.dtype);
        break;
    }
    case OPREG_VALUE_DEVICE:
        v.u.device = device_value(r);
        say("    Device (%d,%d)\n", (int)v.u.device.device_type, v.u.device.device_id);
        break;
    }
    return v;
}

static const char *kwarg_name(reader *r, const op_info *o, int *index) {
    uint8_t b = u8(r);
    *index = -1;
    if (b < 192 && o->nargs) {
        *index = (int)(b % o->nargs);
        return o->args[*index].name;
    }
    const char *s = odd_names[b % NODD_NAMES];
    /* a name that is the prefix or an extension of a real one */
    if (b >= 240 && o->nargs) {
        const char *real = o->args[b % o->nargs].name;
        size_t n = strlen(real);
        char tmp[80];
        snprintf(tmp, sizeof tmp, "%.*s%s", (int)(b & 1 ? n - 1 : n), real, b & 1 ? "" : "_");
        return exact_string(tmp, strlen(tmp));
    }
    return s ? exact_string(s, strlen(s)) : NULL;
}

/* ---- buffers --------------------------------------------------------------------- */

static void fill_buffer(buffer_rec *b) {
    size_t n = b->size;
    uint8_t mode = b->fill & 7, k = (uint8_t)((b->fill >> 3) + 1);
    size_t elem = elem_size(b->dtype);
    opreg_dtype dt;
    bool known;
    if (elem == 0 || elem > 8) elem = 1;
    known = opreg_dtype_from_dlpack(&dt, b->dtype) == OPREG_OK && opreg_dtype_size(dt) == elem;
    memset(b->data, 0, n);
    for (size_t i = 0; i + elem <= n; i += elem) {
        uint64_t e = i / elem, v;
        switch (mode) {
        case 2:
        case 3: /* small integers, in the dtype of the buffer's first tensor */
            if (known) {
                opreg__st(b->data + i, dt, 0, (double)(e % k));
            } else {
                v = e % k;
                memcpy(b->data + i, &v, elem);
            }
            break;
        case 4: /* a byte pattern */
            for (size_t j = 0; j < elem; j++)
                b->data[i + j] = (uint8_t)((i + j) * 37 + b->fill);
            break;
        case 5:
            memset(b->data + i, 0xff, elem);
            break;
        case 6: /* ones */
            if (known)
                opreg__st(b->data + i, dt, 0, 1.0);
            else
                b->data[i] = 1;
            break;
        case 7:
            for (size_t j = 0; j < elem; j++)
                b->data[i + j] = (uint8_t)(((e + j) * 0x9E3779B1u) >> 24);
            break;
        default:
            break;
        }
    }
}

static void make_buffers(call *c) {
    for (size_t i = 0; i < c->nb; i++) {
        buffer_rec *b = &c->b[i];
        void *base;
        b->size = b->need > TINY ? b->need : TINY;
        size_t total = GUARD + ((b->size + 63) & ~(size_t)63) + GUARD;
        if (posix_memalign(&base, 64, total) != 0) abort();
        b->base = base;
        b->data = b->base + GUARD;
        memset(b->base, 0xA5, total);
        fill_buffer(b);
        poison(b->base, GUARD);
        poison(b->data + b->size, total - GUARD - b->size);
        b->snap = alloc(b->size);
        memcpy(b->snap, b->data, b->size);
    }
    for (size_t i = 0; i < c->nt; i++) {
        tensor_rec *rec = &c->t[i];
        DLTensor *t = &rec->t;
        if (rec->buf >= 0) {
            t->data = c->b[rec->buf].data;
            if (t->byte_offset == ~(uint64_t)0) { /* data at the first element */
                size_t elem = elem_size(t->dtype);
                int64_t lo, hi;
                bool empty;
                uint64_t first = 0;
                if (extent(t, elem, &lo, &hi, &empty) && rec->host && !empty)
                    first = (uint64_t)(-lo) * elem;
                t->data = (char *)t->data + first;
                t->byte_offset = 0;
            }
        }
        rec->saved = *t;
        int n = t->ndim > 0 ? t->ndim : 0;
        rec->saved_dims = shape_array(2 * n);
        for (int d = 0; d < n; d++) {
            rec->saved_dims[d] = t->shape ? t->shape[d] : 0;
            rec->saved_dims[n + d] = t->strides ? t->strides[d] : 0;
        }
    }
}

/* Without ASan the guard zones are only a byte pattern: check it. */
static void free_buffers(call *c) {
    for (size_t i = 0; i < c->nb; i++) {
        buffer_rec *b = &c->b[i];
        size_t total = GUARD + ((b->size + 63) & ~(size_t)63) + GUARD;
        unpoison(b->base, total);
#ifndef FZ_ASAN
        for (size_t j = 0; j < total; j++)
            if ((j < GUARD || j >= GUARD + b->size) && b->base[j] != 0xA5)
                fail("a guard byte of buffer %zu was written", i);
#endif
        free(b->base);
    }
}

static void check_metadata(const call *c) {
    for (size_t i = 0; i < c->nt; i++) {
        const tensor_rec *rec = &c->t[i];
        const DLTensor *t = &rec->t, *s = &rec->saved;
        bool same = t->data == s->data && t->ndim == s->ndim && t->shape == s->shape &&
                    t->strides == s->strides && t->byte_offset == s->byte_offset &&
                    t->dtype.code == s->dtype.code && t->dtype.bits == s->dtype.bits &&
                    t->dtype.lanes == s->dtype.lanes &&
                    t->device.device_type == s->device.device_type &&
                    t->device.device_id == s->device.device_id;
        int n = t->ndim > 0 ? t->ndim : 0;
        for (int d = 0; same && d < n; d++)
            same = (!t->shape || t->shape[d] == rec->saved_dims[d]) &&
                   (!t->strides || t->strides[d] == rec->saved_dims[n + d]);
        if (!same) fail("the metadata of tensor t%zu changed", i);
    }
}

/* ---- the call ---------------------------------------------------------------------- */

typedef struct kwarg_rec {
    opreg_kwarg kw;
    int index; /* the argument it names, -1 for none */
} kwarg_rec;

static const opreg_dispatch_key call_keys[] = {
    OPREG_KEY_CPU,
    OPREG_KEY_META,
    OPREG_KEY_REFERENCE,
    OPREG_KEY_CUDA,
    OPREG_KEY_COMPOSITE,
    OPREG_KEY_NONE,
    4,
    31,
    32,
    INT32_MAX,
    INT32_MIN,
};

/* Whether opreg_call_boxed() must refuse the value @p v for argument @p a. */
static bool bad_value(const opreg_value *v, const arg_info *a) {
    if (v->kind == OPREG_VALUE_NONE) return !a->optional;
    if (a->want == WANT_SCALAR)
        return v->kind != OPREG_VALUE_INT && v->kind != OPREG_VALUE_FLOAT &&
               v->kind != OPREG_VALUE_BOOL;
    if (v->kind != a->want) return true;
    switch (v->kind) {
    case OPREG_VALUE_TENSOR:
        return !v->u.tensor || (a->write && (v->flags & OPREG_VALUE_READONLY));
    case OPREG_VALUE_TENSOR_LIST:
        if (a->write && (v->flags & OPREG_VALUE_READONLY)) return true;
        if (v->u.tensors.len && !v->u.tensors.items) return true;
        for (size_t i = 0; !a->elem_opt && i < v->u.tensors.len; i++)
            if (!v->u.tensors.items[i]) return true;
        return false;
    case OPREG_VALUE_STR:
        return !v->u.s.ptr;
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
        return v->u.ints.len && !v->u.ints.items;
    default:
        return false;
    }
}

static void mark_written(call *c, const opreg_value *v) {
    size_t n = v->kind == OPREG_VALUE_TENSOR        ? 1
               : v->kind == OPREG_VALUE_TENSOR_LIST ? v->u.tensors.len
                                                    : 0;
    if (v->kind == OPREG_VALUE_TENSOR_LIST && !v->u.tensors.items) n = 0;
    for (size_t j = 0; j < n; j++) {
        const DLTensor *x = v->kind == OPREG_VALUE_TENSOR ? v->u.tensor : v->u.tensors.items[j];
        for (size_t i = 0; x && i < c->nt; i++)
            if (&c->t[i].t == x && c->t[i].buf >= 0) c->b[c->t[i].buf].written_ok = true;
    }
}

static bool print_calls;

/* The input, one byte at a time (0 once it runs out), so that decoding is
 * deterministic and every byte string is a call:
 *   op          index into the registry's ops (one more: a NULL op)
 *   call        < 192 opreg_call_boxed; else opreg_call_boxed_key, then a key byte
 *   pool        8 sizes that dims and ints may refer to (so sizes can agree)
 *   layout      < 224: the schema's order (>= 160: fewer positional values),
 *               then a byte per argument left (< 192: passed by name), then a
 *               byte for up to 4 more names; else up to 31 positional values
 *               and up to 7 names, any of them made up
 *   values      each: a selector (the wanted kind, None, any kind, a kind
 *               outside the enum), then its payload; a tensor: flags, then
 *               new / the same object / a view of another's buffer / NULL,
 *               dtype, device, rank, sizes, a strides mode, offset, fill
 *   rets        < 224: as many slots as the schema returns; else fewer, more
 *               or NULL
 * seed_*() below write valid calls in this format. */
static void run(reader *r) {
    static call c;
    opreg_value args[MAX_VALUES];
    kwarg_rec kws[MAX_VALUES];
    opreg_value rets[MAX_RETS], rets_before[MAX_RETS];
    size_t nargs = 0, nkw = 0;

    memset(&c, 0, sizeof c);
    call_len = 0;
    uint8_t ob = u8(r);
    const op_info *o = &ops[ob % (nops + 1) < nops ? ob % (nops + 1) : 0];
    bool null_op = ob % (nops + 1) == nops;
    uint8_t cb = u8(r);
    bool by_key = cb >= 192;
    opreg_dispatch_key key = OPREG_KEY_CPU;
    if (by_key) {
        uint8_t kb = u8(r);
        key = kb < 200 ? call_keys[kb % (sizeof call_keys / sizeof *call_keys)]
                       : opreg_key_count() - 1;
    }
    c.op = o;
    c.cap = o->cap;
    c.gemm = o->gemm;
    for (int i = 0; i < 8; i++)
        c.pool[i] = size_value(r, NULL);
    say("  op %s%s%s key %d\n", null_op ? "(NULL) " : "", o->name, by_key ? " by key" : "",
        (int)key);

    uint8_t layout = u8(r);
    if (layout < 224) { /* in the schema's order */
        size_t npos = o->npositional;
        if (layout >= 160) npos -= (layout - 160) % (o->npositional + 1);
        for (size_t i = 0; i < npos; i++) {
            say("  [%zu] %s:\n", i, o->args[i].name);
            args[nargs++] = value(r, &c, &o->args[i]);
        }
        for (size_t i = npos; i < o->nargs; i++) {
            if (u8(r) >= 192) continue; /* left out */
            say("  %s=\n", o->args[i].name);
            kws[nkw].kw.name = o->args[i].name;
            kws[nkw].index = (int)i;
            kws[nkw].kw.value = value(r, &c, &o->args[i]);
            nkw++;
        }
        uint8_t extra = u8(r);
        for (int i = 0; extra >= 240 && i < (extra - 240) % 4 + 1; i++) {
            kws[nkw].kw.name = kwarg_name(r, o, &kws[nkw].index);
            say("  %s= (extra)\n", kws[nkw].kw.name ? kws[nkw].kw.name : "(NULL)");
            kws[nkw].kw.value = value(r, &c, kws[nkw].index >= 0 ? &o->args[kws[nkw].index] : NULL);
            nkw++;
        }
    } else { /* any number of positional values, then any names */
        size_t n = (size_t)(layout - 224) % 32;
        if (n > o->nargs + 3) n = o->nargs + 3;
        if (layout == 255) n = o->nargs + 1 > 66 ? 66 : o->nargs + 1;
        for (size_t i = 0; i < n; i++) {
            say("  [%zu]:\n", i);
            args[nargs++] = value(r, &c, i < o->nargs ? &o->args[i] : NULL);
        }
        size_t m = u8(r) % 8;
        for (size_t i = 0; i < m; i++) {
            kws[nkw].kw.name = kwarg_name(r, o, &kws[nkw].index);
            say("  %s=\n", kws[nkw].kw.name ? kws[nkw].kw.name : "(NULL)");
            kws[nkw].kw.value = value(r, &c, kws[nkw].index >= 0 ? &o->args[kws[nkw].index] : NULL);
            nkw++;
        }
    }
    uint8_t rb = u8(r);
    size_t nrets = o->nreturns;
    bool null_rets = false;
    if (rb >= 224) {
        static const int odd[4] = { 0, -1, 1, 8 };
        long n = rb % 5 == 4 ? (long)o->nreturns : (long)o->nreturns + odd[rb % 5 % 4];
        if (rb % 5 == 0) n = 0;
        nrets = n < 0 ? 0 : n > MAX_RETS ? MAX_RETS : (size_t)n;
        null_rets = rb % 5 == 4 || (rb & 32);
    }
    say("  rets %zu%s\n", nrets, null_rets ? " (NULL)" : "");

    /* What a correct binder makes of it, and whether it must refuse. */
    const opreg_value *bound[64] = { NULL };
    bool must_refuse = null_op || !opreg_op_is_defined(o->op) || nargs > o->npositional ||
                       nrets < o->nreturns || (o->nreturns && null_rets) ||
                       (by_key && (key < 0 || key >= opreg_key_count()));
    for (size_t i = 0; i < nargs && i < o->nargs; i++)
        bound[i] = &args[i];
    for (size_t k = 0; k < nkw; k++) {
        int j = kws[k].index;
        if (j < 0 && kws[k].kw.name) /* a made-up name may still be a real one */
            for (size_t i = 0; i < o->nargs; i++)
                if (strcmp(o->args[i].name, kws[k].kw.name) == 0) j = (int)i;
        if (j < 0 || bound[j]) {
            must_refuse = true;
            continue;
        }
        bound[j] = &kws[k].kw.value;
    }
    for (size_t j = 0; j < o->nargs; j++) {
        if (!bound[j] ? !o->args[j].has_default : bad_value(bound[j], &o->args[j]))
            must_refuse = true;
        if (bound[j] && o->args[j].write) mark_written(&c, bound[j]);
    }

    make_buffers(&c);
    opreg_kwarg kw[MAX_VALUES];
    for (size_t k = 0; k < nkw; k++)
        kw[k] = kws[k].kw;
    memset(rets, 0xEE, sizeof rets);
    memcpy(rets_before, rets, sizeof rets);
    memset(&expect, 0, sizeof expect);
    expect.op = o;
    for (size_t j = 0; j < o->nargs; j++)
        expect.passed[j] = bound[j];
    if (print_calls) fprintf(stderr, "%.*s", (int)call_len, call_text);

    opreg_clear_error();
    const opreg_op *op = null_op ? NULL : o->op;
    opreg_value *rp = null_rets ? NULL : rets;
    opreg_status st = by_key ? opreg_call_boxed_key(op, key, args, nargs, kw, nkw, rp, nrets)
                             : opreg_call_boxed(op, args, nargs, kw, nkw, rp, nrets);
    if (print_calls) fprintf(stderr, "  -> %s: %s\n", opreg_status_name(st), opreg_last_error());

    check_metadata(&c);
    if (st == OPREG_OK) {
        if (must_refuse) fail("the call was accepted, but opreg_call_boxed must refuse it");
        if (o->fz && expect.calls != 1) fail("an fz kernel ran %d times", expect.calls);
        for (size_t i = 0; i < c.nb; i++)
            if (!c.b[i].written_ok && memcmp(c.b[i].data, c.b[i].snap, c.b[i].size) != 0)
                fail("buffer %zu, which no written argument reaches, changed", i);
        for (size_t i = 0; i < MAX_RETS; i++) {
            if (i < o->nreturns && o->returns_tensor[i]) {
                if (rets[i].kind != OPREG_VALUE_TENSOR || !rets[i].u.tensor)
                    fail("return %zu is not a tensor", i);
                sink += (uint64_t)opreg_tensor_nbytes(rets[i].u.tensor);
                opreg_tensor_free(rets[i].u.tensor);
            } else if (i >= o->nreturns && memcmp(&rets[i], &rets_before[i], sizeof *rets) != 0) {
                fail("return slot %zu, past the op's returns, was written", i);
            }
        }
    } else {
        if (!opreg_status_name(st) || (int)st <= 0 || (int)st > OPREG_ERR_MUTATION)
            fail("unknown status %d", (int)st);
        if (!opreg_last_error()[0]) fail("refused with %s and no message", opreg_status_name(st));
        for (size_t i = 0; i < c.nb; i++)
            if (memcmp(c.b[i].data, c.b[i].snap, c.b[i].size) != 0)
                fail("refused with %s, but buffer %zu changed", opreg_status_name(st), i);
        if (memcmp(rets, rets_before, sizeof rets) != 0)
            fail("refused with %s, but a return slot was written", opreg_status_name(st));
    }
    free_buffers(&c);
    free_allocs();
}

/* ---- seeds ------------------------------------------------------------------------- */

/* One valid call of each op, in the input format, so that fuzzing starts
 * past the checks. Each tensor is new, on the CPU, row-major, no offset. */
typedef struct seed {
    uint8_t b[1024];
    size_t n;
} seed;

static void put(seed *s, int v) {
    if (s->n < sizeof s->b) s->b[s->n++] = (uint8_t)v;
}

enum { F32 = 0, F16 = 1, BF16 = 2, I8 = 4, I32 = 7, I64 = 8, E4M3 = 10 };
enum { ZEROS = 0, SMALL = 2, ONES = 6 }; /* fill modes; SMALL | (k - 1) << 3: values i % k */

static void seed_begin(seed *s, const char *op) {
    size_t i = 0;
    while (i < nops && strcmp(ops[i].name, op) != 0)
        i++;
    if (i == nops) {
        fprintf(stderr, "fuzz_call: no op %s for a seed\n", op);
        abort();
    }
    s->n = 0;
    put(s, (int)i);
    put(s, 0); /* boxed */
    for (int k = 0; k < 8; k++)
        put(s, k + 1); /* pool */
    put(s, 0);         /* every positional argument in order */
}

/* A positional tensor: dtype, fill, rank, sizes; strides by @p smode (0: none). */
static void seed_tensor_s(seed *s, int dtype, int fill, int smode, int ndim, ...) {
    va_list ap;
    put(s, 0); /* the wanted kind */
    put(s, 0); /* flags */
    put(s, 0); /* a new tensor */
    put(s, dtype);
    put(s, 0); /* cpu */
    put(s, ndim);
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++)
        put(s, va_arg(ap, int));
    va_end(ap);
    put(s, smode);
    if (smode) put(s, 0);
    put(s, 0); /* offset */
    put(s, fill);
}

#define seed_tensor(s, dtype, fill, ...) seed_tensor_s(s, dtype, fill, 0, __VA_ARGS__)

static void seed_int(seed *s, int v) { /* 0..63 */
    put(s, 0);
    put(s, v);
}

static void seed_float(seed *s, int eighths) { /* 0..63 eighths */
    put(s, 0);
    put(s, eighths);
}

static void seed_str(seed *s, int index) {
    put(s, 0);
    put(s, index);
}

static void seed_none(seed *s) {
    put(s, 176);
}

static void seed_write(const char *dir, const char *name, seed *s) {
    char path[4096];
    put(s, 0); /* no extra keywords */
    put(s, 0); /* rets as the schema says */
    for (int i = 0; i < 16; i++)
        put(s, 0);
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f) != 0) {
        fprintf(stderr, "fuzz_call: cannot write %s\n", path);
        exit(1);
    }
}

static void write_seeds(const char *dir) {
    seed s;
    int small4 = SMALL | 3 << 3, small8 = SMALL | 7 << 3;

    seed_begin(&s, "_C::rms_norm");
    seed_tensor(&s, F32, ZEROS, 2, 4, 8);
    seed_tensor(&s, F32, ONES, 2, 4, 8);
    seed_tensor(&s, F32, ONES, 1, 8);
    seed_float(&s, 1);
    seed_write(dir, "rms_norm", &s);

    seed_begin(&s, "_C::fused_add_rms_norm");
    seed_tensor(&s, BF16, ONES, 2, 4, 8);
    seed_tensor(&s, BF16, small4, 2, 4, 8);
    seed_tensor(&s, BF16, ONES, 1, 8);
    seed_float(&s, 1);
    seed_write(dir, "fused_add_rms_norm", &s);

    const char *gated[3] = { "_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul" };
    for (int i = 0; i < 3; i++) {
        seed_begin(&s, gated[i]);
        seed_tensor(&s, i == 1 ? F16 : F32, ZEROS, 2, 4, 8);
        seed_tensor(&s, i == 1 ? F16 : F32, small4, 2, 4, 16);
        seed_write(dir, gated[i] + 4, &s);
    }
    const char *gelus[3] = { "_C::gelu_new", "_C::gelu_fast", "_C::gelu_quick" };
    for (int i = 0; i < 3; i++) {
        seed_begin(&s, gelus[i]);
        seed_tensor(&s, i == 2 ? BF16 : F32, ZEROS, 2, 4, 8);
        seed_tensor(&s, i == 2 ? BF16 : F32, small4, 2, 4, 8);
        seed_write(dir, gelus[i] + 4, &s);
    }

    for (int batched = 0; batched < 2; batched++) {
        seed_begin(&s, batched ? "_C::batched_rotary_embedding" : "_C::rotary_embedding");
        seed_tensor(&s, I64, small8, 1, 4);     /* positions */
        seed_tensor(&s, F32, ONES, 2, 4, 16);   /* query: 2 heads of 8 */
        seed_tensor(&s, F32, ONES, 2, 4, 16);   /* key */
        seed_int(&s, 8);                        /* head_size */
        seed_tensor(&s, F32, small4, 2, 16, 8); /* cos_sin_cache */
        put(&s, 0), put(&s, batched);           /* is_neox */
        if (batched) {
            seed_int(&s, 8);                   /* rot_dim */
            seed_tensor(&s, I64, ZEROS, 1, 4); /* offsets */
        }
        seed_write(dir, batched ? "batched_rotary_embedding" : "rotary_embedding", &s);
    }

    seed_begin(&s, "_C::reshape_and_cache");
    seed_tensor(&s, F32, ONES, 3, 4, 2, 8);        /* key [T, H, D] */
    seed_tensor(&s, F32, ONES, 3, 4, 2, 8);        /* value */
    seed_tensor(&s, F32, ZEROS, 5, 4, 2, 2, 4, 4); /* key_cache [blocks, H, D/x, bs, x] */
    seed_tensor(&s, F32, ZEROS, 4, 4, 2, 8, 4);    /* value_cache [blocks, H, D, bs] */
    seed_tensor(&s, I64, SMALL | 15 << 3, 1, 4);   /* slot_mapping */
    seed_str(&s, 0);                               /* auto */
    seed_float(&s, 8);
    seed_write(dir, "reshape_and_cache", &s);

    seed_begin(&s, "_C::reshape_and_cache_flash");
    seed_tensor(&s, F32, ONES, 3, 4, 2, 8);
    seed_tensor(&s, F32, ONES, 3, 4, 2, 8);
    seed_tensor(&s, F32, ZEROS, 4, 4, 4, 2, 8); /* [blocks, bs, H, D] */
    seed_tensor(&s, F32, ZEROS, 4, 4, 4, 2, 8);
    seed_tensor(&s, I64, SMALL | 15 << 3, 1, 4);
    seed_str(&s, 0);
    seed_write(dir, "reshape_and_cache_flash", &s);

    seed_begin(&s, "_C::copy_blocks");
    for (int l = 0; l < 2; l++) {
        put(&s, 0), put(&s, 1), put(&s, 0); /* a list of one, no flags */
        put(&s, 0);                         /* a new tensor */
        put(&s, 0), put(&s, F32), put(&s, 0), put(&s, 2), put(&s, 4), put(&s, 8);
        put(&s, 0), put(&s, 0), put(&s, small4);
    }
    seed_tensor(&s, I64, small4, 2, 2, 2); /* block_mapping pairs */
    seed_write(dir, "copy_blocks", &s);

    seed_begin(&s, "_C::swap_blocks");
    seed_tensor(&s, F32, small4, 2, 4, 8);
    seed_tensor(&s, F32, ZEROS, 2, 4, 8);
    seed_tensor(&s, I64, small4, 2, 2, 2);
    seed_write(dir, "swap_blocks", &s);

    const char *quant[4] = { "_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant",
                             "_C::static_scaled_int8_quant", "_C::dynamic_scaled_int8_quant" };
    for (int i = 0; i < 4; i++) {
        seed_begin(&s, quant[i]);
        seed_tensor(&s, i < 2 ? E4M3 : I8, ZEROS, 2, 4, 8);
        seed_tensor(&s, F32, small8, 2, 4, 8);
        seed_tensor(&s, F32, ONES, 1, i == 3 ? 4 : 1);
        seed_write(dir, quant[i] + 4, &s);
    }

    seed_begin(&s, "_C::moe_align_block_size");
    seed_tensor(&s, I32, small4, 2, 4, 2); /* topk_ids: experts 0..3 */
    seed_int(&s, 4);                       /* num_experts */
    seed_int(&s, 4);                       /* block_size */
    seed_tensor(&s, I32, ZEROS, 1, 20);    /* sorted_token_ids: 8 + 4 * 3 */
    seed_tensor(&s, I32, ZEROS, 1, 5);
    seed_tensor(&s, I32, ZEROS, 1, 1);
    seed_write(dir, "moe_align_block_size", &s);

    seed_begin(&s, "_C::topk_softmax");
    seed_tensor(&s, F32, ZEROS, 2, 4, 2);
    seed_tensor(&s, I32, ZEROS, 2, 4, 2);
    seed_tensor(&s, I32, ZEROS, 2, 4, 2);
    seed_tensor(&s, F32, small8, 2, 4, 8);
    seed_write(dir, "topk_softmax", &s);

    seed_begin(&s, "_C::paged_attention_v1");
    seed_tensor(&s, F32, ZEROS, 3, 2, 2, 8);        /* out [S, Hq, D] */
    seed_tensor(&s, F32, small4, 3, 2, 2, 8);       /* query */
    seed_tensor(&s, F32, small4, 5, 2, 2, 2, 4, 4); /* key_cache: 2 blocks */
    seed_tensor(&s, F32, small4, 4, 2, 2, 8, 4);    /* value_cache */
    seed_int(&s, 2);                                /* num_kv_heads */
    seed_float(&s, 1);                              /* scale */
    seed_tensor(&s, I32, SMALL | 1 << 3, 2, 2, 2);  /* block_tables: blocks 0, 1 */
    seed_tensor(&s, I32, SMALL | 7 << 3, 1, 2);     /* seq_lens 0, 1 */
    seed_int(&s, 4);                                /* block_size */
    seed_int(&s, 8);                                /* max_seq_len */
    seed_none(&s);                                  /* alibi_slopes */
    seed_str(&s, 0);
    seed_float(&s, 8);
    for (int i = 0; i < 5; i++)
        seed_int(&s, 0);
    seed_write(dir, "paged_attention_v1", &s);

    seed_begin(&s, "_C::cutlass_scaled_mm");
    seed_tensor(&s, F32, ZEROS, 2, 4, 4);
    seed_tensor(&s, I8, small4, 2, 4, 8);
    seed_tensor_s(&s, I8, small4, 224, 2, 8, 4); /* b column-major */
    seed_tensor(&s, F32, ONES, 1, 1);
    seed_tensor(&s, F32, ONES, 1, 1);
    seed_tensor(&s, F32, ONES, 1, 4);
    seed_write(dir, "cutlass_scaled_mm", &s);

    seed_begin(&s, "_C::linear");
    s.n--;
    put(&s, 161); /* one positional argument fewer: bias takes its default */
    seed_tensor(&s, F32, small4, 2, 4, 8);
    seed_tensor(&s, F32, small4, 2, 4, 8);
    put(&s, 200); /* bias left out */
    seed_write(dir, "linear", &s);

    seed_begin(&s, "fz::defaults");
    s.n--;
    put(&s, 166); /* only a */
    seed_tensor(&s, F32, ZEROS, 1, 4);
    for (int i = 0; i < 13; i++)
        put(&s, 200);
    seed_write(dir, "fz_defaults", &s);

    seed_begin(&s, "fz::every");
    seed_tensor(&s, F32, ZEROS, 1, 4);
    seed_none(&s);
    put(&s, 0), put(&s, 2), put(&s, 0), put(&s, 0), put(&s, 200), put(&s, 0), put(&s, 240);
    put(&s, 0), put(&s, 2), put(&s, 0), put(&s, 230), put(&s, 230); /* [None, None] */
    seed_int(&s, 3);
    seed_float(&s, 4);
    put(&s, 0), put(&s, 1);
    seed_str(&s, 5);
    put(&s, 0), put(&s, 2), put(&s, 1), put(&s, 2);
    put(&s, 0), put(&s, 1), put(&s, 3);
    put(&s, 0), put(&s, 3), put(&s, 1), put(&s, 0), put(&s, 1);
    put(&s, 0), put(&s, 2);
    put(&s, 0), put(&s, 0);
    seed_int(&s, 5);
    seed_int(&s, 6);
    seed_none(&s);
    put(&s, 0), put(&s, 1), put(&s, 0), put(&s, 0), put(&s, 200), put(&s, 0); /* q: [a] */
    seed_tensor(&s, F32, ZEROS, 1, 4);
    seed_write(dir, "fz_every", &s);

    seed_begin(&s, "fz::kwonly"); /* every argument by name */
    put(&s, 0);
    seed_tensor(&s, F32, ZEROS, 1, 4);
    put(&s, 0), put(&s, 0), put(&s, 1), put(&s, 0), put(&s, 0), put(&s, 200), put(&s, 0);
    put(&s, 0);
    seed_int(&s, 3);
    put(&s, 200);
    seed_write(dir, "fz_kwonly", &s);

    seed_begin(&s, "fz::ret");
    seed_tensor(&s, F32, ZEROS, 1, 4);
    put(&s, 200);
    seed_write(dir, "fz_ret", &s);

    seed_begin(&s, "fz::mixed");
    seed_tensor(&s, F32, ZEROS, 1, 4);
    put(&s, 0), put(&s, 0), put(&s, 0), put(&s, F32), put(&s, 192), put(&s, 1), put(&s, 4);
    put(&s, 0), put(&s, 0), put(&s, 0);
    seed_write(dir, "fz_mixed", &s);

    seed_begin(&s, "fz::wide");
    for (int i = 0; i < 64; i++)
        seed_int(&s, i);
    seed_write(dir, "fz_wide", &s);
}

/* ---- libFuzzer -------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    memset(long_text, 'a', sizeof long_text - 1);
    opreg_registry *reg = opreg_registry_default();
    if (!reg) {
        fprintf(stderr, "fuzz_call: no default registry: %s\n", opreg_last_error());
        abort();
    }
    define_fz(reg);
    nops = opreg_registry_num_ops(reg);
    ops = calloc(nops, sizeof *ops);
    if (!ops) abort();
    for (size_t i = 0; i < nops; i++) {
        ops[i].op = opreg_registry_op(reg, i);
        describe_op(&ops[i]);
    }
    print_calls = getenv("OPREG_FUZZ_PRINT") != NULL;
    const char *seeds = getenv("OPREG_FUZZ_WRITE_SEEDS");
    if (seeds) {
        write_seeds(seeds);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = { data, size };
    run(&r);
    return 0;
}
