/* libFuzzer target for values that hold other values: str[] lists, lists of
 * values and tuples, nested, with NULL item arrays, NULL strings, kinds
 * outside the enum and nesting past the limit, all decoded from the input.
 *
 * Each decoded value goes through
 *  - opreg_value_pack(), which must succeed exactly when the value is well
 *    formed (this file's own judgement), give a deep copy (same kinds,
 *    lengths and bytes, strings NUL-terminated, nothing pointing into the
 *    original), and leave nothing behind after opreg_value_release();
 *  - a boxed call of fzv::f, whose schema has a str[], an int[][], an
 *    int?[], a tuple, an Any and a Scalar[], which must succeed exactly
 *    when every value matches its type (again this file's judgement,
 *    written apart from registry/call.c), run the kernel with the values as
 *    passed, and otherwise refuse with a message, the kernel not run.
 * Every array and string is allocated at exactly its size, so ASan sees a
 * read past the end. */
#include "fuzz_input.h"
#include "opreg/opreg.h"

#include <stdio.h>
#include <string.h>

#define MAX_NEST   32 /* opreg's limit on nesting, for both pack and calls */
#define MAX_DECODE 40 /* how deep the decoder goes */
#define NARGS      7

static DLTensor dummy; /* a tensor the kernel never reads */

/* A string of exactly its length (not NUL-terminated), or NULL. */
static const char *bytes_of(reader *r, size_t *len) {
    uint8_t f = u8(r);
    if (f % 8 == 0) {
        *len = f % 3; /* NULL, with or without a length */
        return NULL;
    }
    *len = u8(r) % 8;
    char *s = alloc(*len);
    for (size_t i = 0; i < *len; i++)
        s[i] = (char)u8(r);
    return s;
}

static opreg_value decode(reader *r, int depth);

/* The length of a list, and whether its item array is left NULL. */
static size_t list_len(reader *r, bool *null_items) {
    uint8_t b = u8(r);
    *null_items = b >= 240;
    return b % 5;
}

static opreg_value decode(reader *r, int depth) {
    opreg_value v;
    memset(&v, 0, sizeof v);
    uint8_t b = u8(r);
    uint32_t kind = b % 16;
    if (depth >= MAX_DECODE && kind >= OPREG_VALUE_STR_LIST) kind = OPREG_VALUE_INT;
    v.kind = kind;
    bool null_items = false;
    size_t n;
    switch (kind) {
    case OPREG_VALUE_NONE:
        break;
    case OPREG_VALUE_TENSOR:
        v.u.tensor = u8(r) & 1 ? &dummy : NULL;
        break;
    case OPREG_VALUE_INT:
        v.u.i = (int64_t)u8(r) - 128;
        break;
    case OPREG_VALUE_FLOAT:
        v.u.f = u8(r) / 7.0;
        break;
    case OPREG_VALUE_BOOL:
        v.u.b = u8(r) & 1;
        break;
    case OPREG_VALUE_STR:
        v.u.s.ptr = bytes_of(r, &v.u.s.len);
        break;
    case OPREG_VALUE_SCALAR_TYPE:
        v.u.dtype = (opreg_dtype)(u8(r) % 8);
        break;
    case OPREG_VALUE_DEVICE:
        v.u.device.device_type = kDLCPU;
        break;
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        n = list_len(r, &null_items);
        size_t size = kind == OPREG_VALUE_TENSOR_LIST ? sizeof(DLTensor *)
                      : kind == OPREG_VALUE_BOOL_LIST ? sizeof(bool)
                                                      : 8;
        unsigned char *items = null_items ? NULL : alloc(n * size);
        for (size_t i = 0; items && i < n; i++) {
            if (kind == OPREG_VALUE_TENSOR_LIST)
                ((DLTensor **)(void *)items)[i] = u8(r) & 1 ? &dummy : NULL;
            else if (kind == OPREG_VALUE_BOOL_LIST)
                ((bool *)items)[i] = u8(r) & 1;
            else if (kind == OPREG_VALUE_INT_LIST)
                ((int64_t *)(void *)items)[i] = u8(r);
            else
                ((double *)(void *)items)[i] = u8(r) / 3.0;
        }
        v.u.ints.items = (const int64_t *)(const void *)items; /* one layout for all four */
        v.u.ints.len = n;
        break;
    }
    case OPREG_VALUE_STR_LIST: {
        n = list_len(r, &null_items);
        opreg_str *items = null_items ? NULL : alloc(n * sizeof *items);
        for (size_t i = 0; items && i < n; i++)
            items[i].ptr = bytes_of(r, &items[i].len);
        v.u.strs.items = items;
        v.u.strs.len = n;
        break;
    }
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE: {
        n = list_len(r, &null_items);
        opreg_value *items = null_items ? NULL : alloc(n * sizeof *items);
        for (size_t i = 0; items && i < n; i++)
            items[i] = decode(r, depth + 1);
        v.u.list.items = items;
        v.u.list.len = n;
        break;
    }
    default:
        v.kind = b & 16 ? 15u : 0xffffffffu; /* no kind at all */
        break;
    }
    return v;
}

/* ---- this file's judgement ----------------------------------------------------- */

static bool has_tensor(const opreg_value *v) {
    if (v->kind == OPREG_VALUE_TENSOR) return v->u.tensor != NULL;
    if (v->kind == OPREG_VALUE_TENSOR_LIST && v->u.tensors.items)
        for (size_t i = 0; i < v->u.tensors.len; i++)
            if (v->u.tensors.items[i]) return true;
    if ((v->kind == OPREG_VALUE_LIST || v->kind == OPREG_VALUE_TUPLE) && v->u.list.items)
        for (size_t i = 0; i < v->u.list.len; i++)
            if (has_tensor(&v->u.list.items[i])) return true;
    return false;
}

static bool is_list_kind(uint32_t k) {
    return k == OPREG_VALUE_TENSOR_LIST ||
           (k >= OPREG_VALUE_INT_LIST && k <= OPREG_VALUE_BOOL_LIST) || k >= OPREG_VALUE_STR_LIST;
}

/* What opreg_value_pack() accepts: known kinds, items wherever a list has a
 * length, bytes wherever a string has one, at most MAX_NEST deep. */
static bool packable(const opreg_value *v, int depth) {
    if (depth > MAX_NEST || v->kind > OPREG_VALUE_TUPLE) return false;
    if (v->kind == OPREG_VALUE_STR) return v->u.s.ptr || !v->u.s.len;
    if (!is_list_kind(v->kind)) return true;
    if (v->u.ints.len && !v->u.ints.items) return false;
    if (v->kind == OPREG_VALUE_STR_LIST)
        for (size_t i = 0; i < v->u.strs.len; i++)
            if (!v->u.strs.items[i].ptr && v->u.strs.items[i].len) return false;
    if (v->kind == OPREG_VALUE_LIST || v->kind == OPREG_VALUE_TUPLE)
        for (size_t i = 0; i < v->u.list.len; i++)
            if (!packable(&v->u.list.items[i], depth + 1)) return false;
    return true;
}

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && (!alen || memcmp(a, b, alen) == 0);
}

/* A packed copy: the same value, and none of it in the original's memory. */
static bool same_copy(const opreg_value *c, const opreg_value *v) {
    if (c->kind != v->kind) return false;
    switch (v->kind) {
    case OPREG_VALUE_STR:
        return c->u.s.ptr && c->u.s.ptr != v->u.s.ptr && c->u.s.ptr[v->u.s.len] == '\0' &&
               same_bytes(c->u.s.ptr, c->u.s.len, v->u.s.ptr, v->u.s.len);
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        size_t size = v->kind == OPREG_VALUE_TENSOR_LIST ? sizeof(DLTensor *)
                      : v->kind == OPREG_VALUE_BOOL_LIST ? sizeof(bool)
                                                         : 8;
        return c->u.ints.len == v->u.ints.len && c->u.ints.items &&
               (v->u.ints.len == 0 ||
                (c->u.ints.items != v->u.ints.items &&
                 memcmp(c->u.ints.items, v->u.ints.items, size * v->u.ints.len) == 0));
    }
    case OPREG_VALUE_STR_LIST:
        if (c->u.strs.len != v->u.strs.len || !c->u.strs.items) return false;
        for (size_t i = 0; i < v->u.strs.len; i++) {
            const opreg_str *x = &c->u.strs.items[i], *y = &v->u.strs.items[i];
            if (!x->ptr || x->ptr[y->len] != '\0' || !same_bytes(x->ptr, x->len, y->ptr, y->len))
                return false;
        }
        return true;
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        if (c->u.list.len != v->u.list.len || !c->u.list.items) return false;
        for (size_t i = 0; i < v->u.list.len; i++)
            if (!same_copy(&c->u.list.items[i], &v->u.list.items[i])) return false;
        return true;
    default:
        return memcmp(&c->u, &v->u, sizeof v->u) == 0;
    }
}

/* The argument types of fzv::f, as this file reads them. */
enum ty { T_STR_LIST, T_INT_LIST_LIST, T_OPT_INT_LIST, T_TUPLE, T_ANY, T_SCALAR_LIST, T_OPT_STR };

static bool any_ok(const opreg_value *v, int depth);

static bool str_ok(const opreg_value *v) {
    return v->kind == OPREG_VALUE_STR && v->u.s.ptr;
}

static bool items_ok(const opreg_value *v) {
    return !v->u.ints.len || v->u.ints.items;
}

static bool str_list_ok(const opreg_value *v) {
    if (v->kind != OPREG_VALUE_STR_LIST || !items_ok(v)) return false;
    for (size_t i = 0; i < v->u.strs.len; i++)
        if (!v->u.strs.items[i].ptr && v->u.strs.items[i].len) return false;
    return true;
}

static bool number_list_ok(const opreg_value *v, uint32_t kind) {
    return v->kind == kind && items_ok(v);
}

/* `Any`: None, or a value of a known kind, well formed all the way down. */
static bool any_ok(const opreg_value *v, int depth) {
    if (depth > MAX_NEST || v->kind > OPREG_VALUE_TUPLE) return false;
    switch (v->kind) {
    case OPREG_VALUE_STR:
        return v->u.s.ptr != NULL;
    case OPREG_VALUE_TENSOR:
        return v->u.tensor != NULL;
    case OPREG_VALUE_STR_LIST:
        return str_list_ok(v);
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        if (!items_ok(v)) return false;
        for (size_t i = 0; i < v->u.list.len; i++)
            if (!any_ok(&v->u.list.items[i], depth + 1)) return false;
        return true;
    default:
        return !is_list_kind(v->kind) || items_ok(v);
    }
}

static bool matches(enum ty t, const opreg_value *v) {
    switch (t) {
    case T_STR_LIST:
        return str_list_ok(v);
    case T_INT_LIST_LIST: /* int[][] */
        if (v->kind != OPREG_VALUE_LIST || !items_ok(v)) return false;
        for (size_t i = 0; i < v->u.list.len; i++)
            if (!number_list_ok(&v->u.list.items[i], OPREG_VALUE_INT_LIST)) return false;
        return true;
    case T_OPT_INT_LIST: /* int?[] */
        if (v->kind != OPREG_VALUE_LIST || !items_ok(v)) return false;
        for (size_t i = 0; i < v->u.list.len; i++) {
            uint32_t k = v->u.list.items[i].kind;
            if (k != OPREG_VALUE_NONE && k != OPREG_VALUE_INT) return false;
        }
        return true;
    case T_TUPLE: /* (str, int?, float[]) */
        if (v->kind != OPREG_VALUE_TUPLE || !items_ok(v) || v->u.list.len != 3) return false;
        return str_ok(&v->u.list.items[0]) &&
               (v->u.list.items[1].kind == OPREG_VALUE_NONE ||
                v->u.list.items[1].kind == OPREG_VALUE_INT) &&
               number_list_ok(&v->u.list.items[2], OPREG_VALUE_FLOAT_LIST);
    case T_ANY:
        return v->kind == OPREG_VALUE_NONE || any_ok(v, 0);
    case T_SCALAR_LIST: /* Scalar[] */
        if (v->kind != OPREG_VALUE_LIST || !items_ok(v)) return false;
        for (size_t i = 0; i < v->u.list.len; i++) {
            uint32_t k = v->u.list.items[i].kind;
            if (k != OPREG_VALUE_INT && k != OPREG_VALUE_FLOAT && k != OPREG_VALUE_BOOL)
                return false;
        }
        return true;
    case T_OPT_STR:
        return v->kind == OPREG_VALUE_NONE || str_ok(v);
    }
    return false;
}

/* ---- the op ------------------------------------------------------------------------ */

static const opreg_op *op;
static const opreg_value *want;
static int ran;

static opreg_status fzv_kernel(void *ctx, const opreg_op *o, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)o, (void)rets;
    ran++;
    if (memcmp(args, want, NARGS * sizeof *args) != 0) {
        fprintf(stderr, "fzv::f received other values than were passed\n");
        abort();
    }
    return OPREG_OK;
}

static void setup(void) {
    opreg_registry *reg = opreg_registry_default();
    opreg_library *lib = NULL;
    if (!reg ||
        opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "fzv", OPREG_KEY_NONE, __FILE__,
                             __LINE__) != OPREG_OK ||
        opreg_library_def(&op, lib,
                          "f(str[] s, int[][] ii, int?[] oi, (str, int?, float[]) t, Any a, "
                          "Scalar[] sc, str? name) -> ()") != OPREG_OK ||
        opreg_library_impl_fn(lib, "f", OPREG_KEY_CPU, fzv_kernel, NULL) != OPREG_OK) {
        fprintf(stderr, "fuzz_values: setup failed: %s\n", opreg_last_error());
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!op) setup();
    reader r = { data, size };
    opreg_value args[NARGS];
    bool all_match = true;
    for (int i = 0; i < NARGS; i++) {
        args[i] = decode(&r, 0);
        all_match &= matches((enum ty)i, &args[i]);
    }
    for (int i = 0; i < NARGS; i++) {
        if (has_tensor(&args[i])) continue; /* packing would take (free) the dummy */
        opreg_value copy;
        opreg_status st = opreg_value_pack(&copy, &args[i]);
        bool ok = packable(&args[i], 0);
        if ((st == OPREG_OK) != ok || (st != OPREG_OK && !*opreg_last_error())) {
            fprintf(stderr, "opreg_value_pack of argument %d: status %d, expected %s (%s)\n", i,
                    (int)st, ok ? "success" : "a refusal", opreg_last_error());
            abort();
        }
        if (st == OPREG_OK && !same_copy(&copy, &args[i])) {
            fprintf(stderr, "opreg_value_pack of argument %d: the copy differs\n", i);
            abort();
        }
        opreg_value_release(&copy);
        if (copy.kind != OPREG_VALUE_NONE) abort();
    }
    want = args;
    ran = 0;
    opreg_status st = opreg_call_boxed(op, args, NARGS, NULL, 0, NULL, 0);
    if ((st == OPREG_OK) != all_match || ran != (st == OPREG_OK)) {
        fprintf(stderr, "fzv::f: status %d (%s), expected %s; kernel ran %d times\n", (int)st,
                st == OPREG_OK ? "" : opreg_last_error(), all_match ? "success" : "a refusal", ran);
        abort();
    }
    if (st != OPREG_OK && (st != OPREG_ERR_TYPE_MISMATCH && st != OPREG_ERR_INVALID_ARGUMENT)) {
        fprintf(stderr, "fzv::f: unexpected status %d: %s\n", (int)st, opreg_last_error());
        abort();
    }
    free_allocs();
    return 0;
}
