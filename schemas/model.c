/* Read-only accessors of the schema model, structural equality and hashing. */
#include "schemas/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- schema ------------------------------------------------------------------------- */

const char *opreg_schema_namespace(const opreg_schema *s) {
    return s->ns;
}
const char *opreg_schema_name(const opreg_schema *s) {
    return s->name;
}
const char *opreg_schema_overload(const opreg_schema *s) {
    return s->overload;
}
size_t opreg_schema_num_arguments(const opreg_schema *s) {
    return s->n_args;
}
const opreg_argument *opreg_schema_argument(const opreg_schema *s, size_t i) {
    return i < s->n_args ? &s->args[i] : NULL;
}
size_t opreg_schema_num_returns(const opreg_schema *s) {
    return s->n_rets;
}
const opreg_argument *opreg_schema_return(const opreg_schema *s, size_t i) {
    return i < s->n_rets ? &s->rets[i] : NULL;
}
bool opreg_schema_is_vararg(const opreg_schema *s) {
    return s->is_vararg;
}
bool opreg_schema_is_varret(const opreg_schema *s) {
    return s->is_varret;
}
bool opreg_schema_has_type_variables(const opreg_schema *s) {
    return s->has_typevars;
}
bool opreg_schema_is_mutable(const opreg_schema *s) {
    for (size_t i = 0; i < s->n_args; i++)
        if (opreg_argument_is_write(&s->args[i])) return true;
    return false;
}

/* ---- types and aliases ---------------------------------------------------------------- */

opreg_type_kind opreg_type_get_kind(const opreg_type *t) {
    return (opreg_type_kind)t->kind;
}
size_t opreg_type_num_elements(const opreg_type *t) {
    return t->n_elems;
}
const opreg_type *opreg_type_element(const opreg_type *t, size_t i) {
    return i < t->n_elems ? t->elems[i] : NULL;
}
int64_t opreg_type_list_size(const opreg_type *t) {
    return t->kind == OPREG_TYPE_LIST ? t->list_size : -1;
}
const char *opreg_type_name(const opreg_type *t) {
    return t->name;
}
const opreg_alias *opreg_type_alias(const opreg_type *t) {
    return t->alias;
}

/* Append @p text at offset @p n of @p buf (cut at @p cap); n plus its length. */
static size_t put(char *buf, size_t cap, size_t n, const char *text) {
    size_t len = strlen(text);
    if (buf && n < cap) {
        size_t room = cap - n - 1, m = len < room ? len : room;
        memcpy(buf + n, text, m);
        buf[n + m] = '\0';
    }
    return n + len;
}

static size_t format_at(const opreg_type *t, char *buf, size_t cap, size_t n) {
    opreg_type_kind k = opreg_type_get_kind(t);
    if (k == OPREG_TYPE_LIST || k == OPREG_TYPE_OPTIONAL) {
        n = format_at(opreg_type_element(t, 0), buf, cap, n);
        char tail[24] = "?";
        if (k == OPREG_TYPE_LIST) {
            int64_t size = opreg_type_list_size(t);
            if (size >= 0)
                snprintf(tail, sizeof tail, "[%lld]", (long long)size);
            else
                snprintf(tail, sizeof tail, "[]");
        }
        return put(buf, cap, n, tail);
    }
    if (k == OPREG_TYPE_TUPLE) {
        n = put(buf, cap, n, "(");
        for (size_t i = 0; i < opreg_type_num_elements(t); i++) {
            if (i) n = put(buf, cap, n, ", ");
            n = format_at(opreg_type_element(t, i), buf, cap, n);
        }
        return put(buf, cap, n, ")");
    }
    const char *name = opreg_type_name(t);
    return put(buf, cap, n, name ? name : "(composite type)");
}

size_t opreg_type_format(const opreg_type *t, char *buf, size_t cap) {
    if (buf && cap) buf[0] = '\0';
    return t ? format_at(t, buf, cap, 0) : 0;
}

size_t opreg_alias_num_before(const opreg_alias *a) {
    return a->n_before;
}
const char *opreg_alias_before(const opreg_alias *a, size_t i) {
    return i < a->n_before ? a->before[i] : NULL;
}
size_t opreg_alias_num_after(const opreg_alias *a) {
    return a->n_after;
}
const char *opreg_alias_after(const opreg_alias *a, size_t i) {
    return i < a->n_after ? a->after[i] : NULL;
}
bool opreg_alias_is_write(const opreg_alias *a) {
    return a->is_write;
}
bool opreg_alias_is_fresh(const opreg_alias *a) {
    return a->is_fresh;
}

/* ---- arguments ---------------------------------------------------------------------- */

const char *opreg_argument_name(const opreg_argument *a) {
    return a->name;
}
const opreg_type *opreg_argument_type(const opreg_argument *a) {
    return a->type;
}
bool opreg_argument_is_kwarg_only(const opreg_argument *a) {
    return a->kwarg_only;
}
const opreg_default *opreg_argument_default(const opreg_argument *a) {
    return a->def;
}

/* PyTorch keeps one AliasInfo per argument: the outermost annotation along
 * the optional/list spine, where an unannotated list takes its element's
 * write flag. */
bool opreg_argument_is_write(const opreg_argument *a) {
    for (const opreg_type *t = a->type; t;) {
        if (t->alias) return t->alias->is_write;
        if (t->kind == OPREG_TYPE_OPTIONAL || t->kind == OPREG_TYPE_LIST)
            t = t->elems[0];
        else
            break;
    }
    return false;
}
bool opreg_argument_is_out(const opreg_argument *a) {
    return a->kwarg_only && opreg_argument_is_write(a);
}

/* ---- defaults ----------------------------------------------------------------------- */

opreg_default_kind opreg_default_get_kind(const opreg_default *v) {
    return (opreg_default_kind)v->kind;
}
bool opreg_default_bool(const opreg_default *v) {
    return v->kind == OPREG_DEFAULT_BOOL && v->u.b;
}
int64_t opreg_default_int(const opreg_default *v) {
    return v->kind == OPREG_DEFAULT_INT ? v->u.i : 0;
}
double opreg_default_float(const opreg_default *v) {
    return (v->kind == OPREG_DEFAULT_FLOAT || v->kind == OPREG_DEFAULT_COMPLEX) ? v->u.f : 0.0;
}
const char *opreg_default_string(const opreg_default *v, size_t *len) {
    bool has = v->kind == OPREG_DEFAULT_STRING || v->kind == OPREG_DEFAULT_DEVICE;
    if (len) *len = has ? v->u.str.len : 0;
    return has ? v->u.str.s : NULL;
}
const char *opreg_default_device(const opreg_default *v, int64_t *index) {
    bool is = v->kind == OPREG_DEFAULT_DEVICE;
    if (index) *index = is ? v->device_index : -1;
    return is ? v->u.str.s : NULL;
}
size_t opreg_default_list_size(const opreg_default *v) {
    return v->kind == OPREG_DEFAULT_LIST ? v->u.list.n : 0;
}
const opreg_default *opreg_default_list_item(const opreg_default *v, size_t i) {
    return v->kind == OPREG_DEFAULT_LIST && i < v->u.list.n ? &v->u.list.items[i] : NULL;
}

/* ---- equality ----------------------------------------------------------------------- */

static bool same_str(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Alias sets are sets: order does not matter (the lists are deduplicated). */
static bool same_sets(const char *const *a, uint32_t na, const char *const *b, uint32_t nb) {
    if (na != nb) return false;
    for (uint32_t i = 0; i < na; i++) {
        bool found = false;
        for (uint32_t j = 0; j < nb && !found; j++)
            found = strcmp(a[i], b[j]) == 0;
        if (!found) return false;
    }
    return true;
}

/* A fresh set (`!`) is unique to its annotation, and its number only says
 * where it came in the text, so fresh sets are equal whatever their numbers. */
static bool alias_equal(const opreg_alias *a, const opreg_alias *b) {
    if (!a || !b) return a == b;
    if (a->is_fresh || b->is_fresh) return a->is_fresh == b->is_fresh;
    return a->is_write == b->is_write && a->is_fresh == b->is_fresh &&
           same_sets(a->before, a->n_before, b->before, b->n_before) &&
           same_sets(a->after, a->n_after, b->after, b->n_after);
}

bool opreg__type_equal(const opreg_type *a, const opreg_type *b) {
    if (a == b) return true;
    if (a->kind != b->kind || a->n_elems != b->n_elems || a->list_size != b->list_size)
        return false;
    if ((a->kind == OPREG_TYPE_VAR || a->kind == OPREG_TYPE_CLASS) && !same_str(a->name, b->name))
        return false;
    if (!alias_equal(a->alias, b->alias)) return false;
    for (uint32_t i = 0; i < a->n_elems; i++)
        if (!opreg__type_equal(a->elems[i], b->elems[i])) return false;
    return true;
}

static bool default_equal(const opreg_default *a, const opreg_default *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case OPREG_DEFAULT_NONE:
        return true;
    case OPREG_DEFAULT_BOOL:
        return a->u.b == b->u.b;
    case OPREG_DEFAULT_INT:
        return a->u.i == b->u.i;
    case OPREG_DEFAULT_FLOAT:
    case OPREG_DEFAULT_COMPLEX:
        return a->u.f == b->u.f;
    case OPREG_DEFAULT_DEVICE:
        if (a->device_index != b->device_index) return false;
        /* fall through */
    case OPREG_DEFAULT_STRING:
        return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case OPREG_DEFAULT_LIST:
        if (a->u.list.n != b->u.list.n) return false;
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!default_equal(&a->u.list.items[i], &b->u.list.items[i])) return false;
        return true;
    }
    return false;
}

static bool args_equal(const opreg_argument *a, const opreg_argument *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (a[i].kwarg_only != b[i].kwarg_only || strcmp(a[i].name, b[i].name) != 0 ||
            !opreg__type_equal(a[i].type, b[i].type) || !default_equal(a[i].def, b[i].def))
            return false;
    }
    return true;
}

bool opreg_schema_equal(const opreg_schema *a, const opreg_schema *b) {
    if (!a || !b) return a == b;
    return strcmp(a->ns, b->ns) == 0 && strcmp(a->name, b->name) == 0 &&
           strcmp(a->overload, b->overload) == 0 && a->n_args == b->n_args &&
           a->n_rets == b->n_rets && a->is_vararg == b->is_vararg && a->is_varret == b->is_varret &&
           args_equal(a->args, b->args, a->n_args) && args_equal(a->rets, b->rets, a->n_rets);
}

/* ---- hashing (FNV-1a based; order-independent over alias sets) -------------------------- */

#define FNV_PRIME 0x100000001b3ull

static uint64_t mix(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t mix_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FNV_PRIME;
    }
    return mix(h, n);
}

static uint64_t mix_str(uint64_t h, const char *s) {
    return mix_bytes(h, s, strlen(s));
}

static uint64_t hash_sets(const char *const *sets, uint32_t n) {
    uint64_t sum = n;
    for (uint32_t i = 0; i < n; i++)
        sum += mix_str(0xcbf29ce484222325ull, sets[i]);
    return sum;
}

static uint64_t hash_type(uint64_t h, const opreg_type *t) {
    h = mix(h, t->kind);
    h = mix(h, (uint64_t)t->list_size);
    if (t->kind == OPREG_TYPE_VAR || t->kind == OPREG_TYPE_CLASS) h = mix_str(h, t->name);
    if (t->alias && t->alias->is_fresh) {
        h = mix(h, 4u);
    } else if (t->alias) {
        h = mix(h, 1u + t->alias->is_write);
        h = mix(h, hash_sets(t->alias->before, t->alias->n_before));
        h = mix(h, hash_sets(t->alias->after, t->alias->n_after));
    }
    h = mix(h, t->n_elems);
    for (uint32_t i = 0; i < t->n_elems; i++)
        h = hash_type(h, t->elems[i]);
    return h;
}

static uint64_t hash_default(uint64_t h, const opreg_default *v) {
    if (!v) return mix(h, 0xff);
    h = mix(h, v->kind);
    switch (v->kind) {
    case OPREG_DEFAULT_BOOL:
        return mix(h, v->u.b);
    case OPREG_DEFAULT_INT:
        return mix(h, (uint64_t)v->u.i);
    case OPREG_DEFAULT_FLOAT:
    case OPREG_DEFAULT_COMPLEX: {
        double d = v->u.f == 0.0 ? 0.0 : v->u.f; /* -0.0 equals 0.0 */
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(h, bits);
    }
    case OPREG_DEFAULT_DEVICE:
        h = mix(h, (uint64_t)v->device_index); /* fall through */
    case OPREG_DEFAULT_STRING:
        return mix_bytes(h, v->u.str.s, v->u.str.len);
    case OPREG_DEFAULT_LIST:
        h = mix(h, v->u.list.n);
        for (size_t i = 0; i < v->u.list.n; i++)
            h = hash_default(h, &v->u.list.items[i]);
        return h;
    default:
        return h;
    }
}

static uint64_t hash_args(uint64_t h, const opreg_argument *a, size_t n) {
    h = mix(h, n);
    for (size_t i = 0; i < n; i++) {
        h = mix_str(h, a[i].name);
        h = mix(h, a[i].kwarg_only);
        h = hash_type(h, a[i].type);
        h = hash_default(h, a[i].def);
    }
    return h;
}

uint64_t opreg_schema_hash(const opreg_schema *s) {
    if (!s) return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix_str(h, s->ns);
    h = mix_str(h, s->name);
    h = mix_str(h, s->overload);
    h = mix(h, s->is_vararg + 2u * s->is_varret);
    h = hash_args(h, s->args, s->n_args);
    h = hash_args(h, s->rets, s->n_rets);
    return h;
}

void opreg_string_free(char *str) {
    free(str);
}
