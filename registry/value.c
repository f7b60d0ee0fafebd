/* Values: kind names, the one constructor that is not inline, and owned
 * values: opreg_value_pack() copies a value's strings, lists and tuples into
 * one allocation (a kernel's return), opreg_value_release() frees it with
 * the tensors it took. */
#include "registry/internal.h"

#include <stdlib.h>
#include <string.h>

const char *opreg_value_kind_name(opreg_value_kind kind) {
    switch (kind) {
    case OPREG_VALUE_NONE:
        return "None";
    case OPREG_VALUE_TENSOR:
        return "Tensor";
    case OPREG_VALUE_TENSOR_LIST:
        return "Tensor[]";
    case OPREG_VALUE_INT:
        return "int";
    case OPREG_VALUE_FLOAT:
        return "float";
    case OPREG_VALUE_BOOL:
        return "bool";
    case OPREG_VALUE_STR:
        return "str";
    case OPREG_VALUE_INT_LIST:
        return "int[]";
    case OPREG_VALUE_FLOAT_LIST:
        return "float[]";
    case OPREG_VALUE_BOOL_LIST:
        return "bool[]";
    case OPREG_VALUE_SCALAR_TYPE:
        return "ScalarType";
    case OPREG_VALUE_DEVICE:
        return "Device";
    case OPREG_VALUE_STR_LIST:
        return "str[]";
    case OPREG_VALUE_LIST:
        return "list";
    case OPREG_VALUE_TUPLE:
        return "tuple";
    }
    return "?";
}

opreg_value opreg_str_value(const char *s) {
    opreg_value v = { OPREG_VALUE_STR, 0, { 0 } };
    v.u.s.ptr = s;
    v.u.s.len = s ? strlen(s) : 0;
    return v;
}

/* ---- owned values --------------------------------------------------------- */

static size_t round8(size_t n) {
    return (n + 7) & ~(size_t)7;
}

/* The item size of the flat lists, whose payloads share one layout (an item
 * pointer, then a length); 0 for every other kind. */
static size_t flat_item_size(uint32_t kind) {
    switch (kind) {
    case OPREG_VALUE_TENSOR_LIST:
        return sizeof(DLTensor *);
    case OPREG_VALUE_INT_LIST:
        return sizeof(int64_t);
    case OPREG_VALUE_FLOAT_LIST:
        return sizeof(double);
    case OPREG_VALUE_BOOL_LIST:
        return sizeof(bool);
    default:
        return 0;
    }
}

/* Add to *need the bytes that the payload of @p v takes in a packed block
 * (nothing for kinds whose payload is inline). */
static opreg_status measure(const opreg_value *v, int depth, size_t *need) {
    if (depth > OPREG__MAX_NESTING)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_value_pack: lists and tuples nest deeper than %d",
                           OPREG__MAX_NESTING);
    size_t len = 0, item_size = 0;
    const void *items = NULL;
    switch (v->kind) {
    case OPREG_VALUE_NONE:
    case OPREG_VALUE_TENSOR:
    case OPREG_VALUE_INT:
    case OPREG_VALUE_FLOAT:
    case OPREG_VALUE_BOOL:
    case OPREG_VALUE_SCALAR_TYPE:
    case OPREG_VALUE_DEVICE:
        return OPREG_OK;
    case OPREG_VALUE_STR:
        len = v->u.s.len, items = v->u.s.ptr, item_size = 1;
        if (items || !len) {
            *need += round8(len + 1);
            return OPREG_OK;
        }
        break;
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST:
        len = v->u.ints.len, items = v->u.ints.items, item_size = flat_item_size(v->kind);
        break;
    case OPREG_VALUE_STR_LIST:
        len = v->u.strs.len, items = v->u.strs.items;
        if (!items && len) break;
        *need += round8(sizeof(opreg_str) * len);
        for (size_t i = 0; i < len; i++) {
            const opreg_str *x = &v->u.strs.items[i];
            if (!x->ptr && x->len)
                return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                                   "opreg_value_pack: str[] item %zu has %zu bytes but a NULL "
                                   "pointer",
                                   i, x->len);
            *need += round8(x->len + 1);
        }
        return OPREG_OK;
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        len = v->u.list.len, items = v->u.list.items;
        if (!items && len) break;
        *need += round8(sizeof(opreg_value) * len);
        for (size_t i = 0; i < len; i++)
            OPREG__TRY(measure(&v->u.list.items[i], depth + 1, need));
        return OPREG_OK;
    default:
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_value_pack: %u is not a value kind",
                           v->kind);
    }
    if (!items && len)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_value_pack: a %s value has %zu items but a NULL item array",
                           opreg_value_kind_name((opreg_value_kind)v->kind), len);
    *need += round8(item_size * len);
    return OPREG_OK;
}

/* Copy @p in's payload to *at (advancing it), as measure() sized it. */
static void fill(opreg_value *out, const opreg_value *in, char **at) {
    *out = *in;
    out->flags = 0;
    switch (in->kind) {
    case OPREG_VALUE_STR: {
        char *s = *at;
        if (in->u.s.len) memcpy(s, in->u.s.ptr, in->u.s.len);
        s[in->u.s.len] = '\0';
        out->u.s.ptr = s;
        *at += round8(in->u.s.len + 1);
        return;
    }
    case OPREG_VALUE_TENSOR_LIST:
    case OPREG_VALUE_INT_LIST:
    case OPREG_VALUE_FLOAT_LIST:
    case OPREG_VALUE_BOOL_LIST: {
        size_t n = in->u.ints.len * flat_item_size(in->kind);
        if (n) memcpy(*at, in->u.ints.items, n);
        out->u.ints.items = (const int64_t *)(const void *)*at;
        *at += round8(n);
        return;
    }
    case OPREG_VALUE_STR_LIST: {
        opreg_str *items = (opreg_str *)(void *)*at;
        *at += round8(sizeof(opreg_str) * in->u.strs.len);
        for (size_t i = 0; i < in->u.strs.len; i++) {
            const opreg_str *x = &in->u.strs.items[i];
            char *s = *at;
            if (x->len) memcpy(s, x->ptr, x->len);
            s[x->len] = '\0';
            items[i].ptr = s;
            items[i].len = x->len;
            *at += round8(x->len + 1);
        }
        out->u.strs.items = items;
        return;
    }
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE: {
        opreg_value *items = (opreg_value *)(void *)*at;
        *at += round8(sizeof(opreg_value) * in->u.list.len);
        for (size_t i = 0; i < in->u.list.len; i++)
            fill(&items[i], &in->u.list.items[i], at);
        out->u.list.items = items;
        return;
    }
    default:
        return; /* inline payloads: copied with *out = *in */
    }
}

/* The kinds whose payload lives in a packed block (even an empty one). */
static bool has_block(uint32_t kind) {
    return kind == OPREG_VALUE_STR || kind == OPREG_VALUE_TENSOR_LIST ||
           kind == OPREG_VALUE_INT_LIST || kind == OPREG_VALUE_FLOAT_LIST ||
           kind == OPREG_VALUE_BOOL_LIST || kind == OPREG_VALUE_STR_LIST ||
           kind == OPREG_VALUE_LIST || kind == OPREG_VALUE_TUPLE;
}

opreg_status opreg_value_pack(opreg_value *out, const opreg_value *in) {
    if (!out || !in) {
        if (out) *out = opreg_none();
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_value_pack: %s is NULL",
                           out ? "in" : "out");
    }
    size_t need = 0;
    opreg_status st = measure(in, 0, &need);
    if (st != OPREG_OK) {
        *out = opreg_none();
        return st;
    }
    if (!has_block(in->kind)) {
        *out = *in; /* a tensor, a scalar or None: nothing to copy */
        out->flags = 0;
        return OPREG_OK;
    }
    char *block = malloc(need ? need : 1);
    if (!block) {
        *out = opreg_none();
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_value_pack: out of memory (%zu bytes)",
                           need);
    }
    char *at = block;
    opreg_value v;
    fill(&v, in, &at);
    v.flags = OPREG_VALUE_OWNED;
    *out = v;
    return OPREG_OK;
}

/* Free the tensors that a packed value took. */
static void free_tensors(const opreg_value *v) {
    switch (v->kind) {
    case OPREG_VALUE_TENSOR:
        opreg_tensor_free(v->u.tensor);
        return;
    case OPREG_VALUE_TENSOR_LIST:
        for (size_t i = 0; i < v->u.tensors.len; i++)
            opreg_tensor_free(v->u.tensors.items[i]);
        return;
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        for (size_t i = 0; i < v->u.list.len; i++)
            free_tensors(&v->u.list.items[i]);
        return;
    default:
        return;
    }
}

/* Where a packed value's block starts: its outermost payload. */
static void *block_of(const opreg_value *v) {
    const void *p;
    switch (v->kind) {
    case OPREG_VALUE_STR:
        p = v->u.s.ptr;
        break;
    case OPREG_VALUE_STR_LIST:
        p = v->u.strs.items;
        break;
    case OPREG_VALUE_LIST:
    case OPREG_VALUE_TUPLE:
        p = v->u.list.items;
        break;
    default:
        p = v->u.ints.items; /* the numeric and tensor lists share the layout */
        break;
    }
    return (void *)(uintptr_t)p;
}

void opreg_value_release(opreg_value *v) {
    if (!v) return;
    if (v->kind == OPREG_VALUE_TENSOR) {
        opreg_tensor_free(v->u.tensor);
    } else if ((v->flags & OPREG_VALUE_OWNED) && has_block(v->kind)) {
        free_tensors(v);
        /* The block starts with the payload of the outermost value. */
        free(block_of(v));
    }
    *v = opreg_none();
}
