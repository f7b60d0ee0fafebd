/* The schema parser: PyTorch's FunctionSchema grammar (function_schema_parser
 * and schema_type_parser), with its checks and its error messages. Errors
 * unwind with longjmp to opreg_schema_parse(); everything allocated lives in
 * the schema's arena, so a failed parse frees one chain of chunks. */
#include "schemas/internal.h"
#include "common/thread_keys.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting beyond this is refused rather than recursed into. PyTorch has no
 * limit; no real schema comes near it. */
#define MAX_TYPE_DEPTH 200
#define MAX_INPUT_LEN  (UINT32_MAX / 2)

/* ---- arena ---------------------------------------------------------------------- */

void *opreg__arena_alloc(opreg__parser *p, size_t size) {
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct opreg__chunk *c = p->schema->chunks;
    if (c->cap - c->used < size) {
        /* The new chunk becomes the head; the first chunk, which holds the
         * schema itself, stays at the tail of the list. */
        size_t cap = c->cap * 2 > size ? c->cap * 2 : size;
        c = malloc(sizeof *c + cap);
        if (!c) opreg__parse_fail(p, OPREG_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
        c->cap = cap;
        c->used = 0;
        c->next = p->schema->chunks;
        p->schema->chunks = c;
    }
    void *r = (char *)c->data + c->used;
    c->used += size;
    return r;
}

const char *opreg__arena_strdup(opreg__parser *p, const char *s, size_t len) {
    char *d = opreg__arena_alloc(p, len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* ---- errors --------------------------------------------------------------------- */

_Noreturn void opreg__parse_fail(opreg__parser *p, opreg_status status, uint32_t start,
                                 uint32_t len, const char *fmt, ...) {
    opreg_schema_error *e = p->err;
    e->status = status;
    e->offset = start;
    e->length = len;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    longjmp(p->fail, 1);
}

_Noreturn void opreg__parse_expected(opreg__parser *p, const char *what) {
    char buf[2];
    opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                      "expected %s but found '%s' here", what,
                      opreg__token_kind_name(p, &p->cur, buf));
}

static opreg__token expect(opreg__parser *p, int kind) {
    if (p->cur.kind != kind) {
        char name[2];
        opreg__token want = { kind, 0, 0, 0 };
        opreg__parse_expected(p, opreg__token_kind_name(p, &want, name));
    }
    return opreg__lex_next(p);
}

static bool next_if(opreg__parser *p, int kind) {
    if (p->cur.kind != kind) return false;
    opreg__lex_next(p);
    return true;
}

static bool token_is_n(const opreg__parser *p, const opreg__token *t, const char *word, size_t n) {
    return t->kind == TK_IDENT && t->len == n && memcmp(p->src + t->start, word, n) == 0;
}
#define token_is(p, t, lit) token_is_n(p, t, lit, sizeof lit - 1)

/* A name, NUL-terminated in the arena's copy of the source: the byte after a
 * name never belongs to another name, so it can take the NUL. */
static const char *token_text(opreg__parser *p, const opreg__token *t) {
    p->copy[t->start + t->len] = '\0';
    return p->copy + t->start;
}

/* ---- small growable arrays, backed by the arena ------------------------------------ */

typedef struct ptr_vec {
    const void **items;
    uint32_t n;
    uint32_t cap;
} ptr_vec;

static void vec_push(opreg__parser *p, ptr_vec *v, const void *item) {
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 4;
        const void **items = opreg__arena_alloc(p, cap * sizeof *items);
        if (v->n) memcpy(items, v->items, v->n * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = item;
}

/* ---- alias annotations ------------------------------------------------------------- */

static bool set_contains(const ptr_vec *v, const char *name) {
    for (uint32_t i = 0; i < v->n; i++)
        if (strcmp(v->items[i], name) == 0) return true;
    return false;
}

/* One `|`-separated list of sets. After a `*`, later names are not consumed,
 * exactly as PyTorch's parseList callback skips them. */
static void parse_alias_sets(opreg__parser *p, ptr_vec *sets) {
    bool wildcard = false;
    do {
        if (next_if(p, '*')) {
            if (!set_contains(sets, "*")) vec_push(p, sets, "*");
            wildcard = true;
        } else if (!wildcard) {
            opreg__token t = expect(p, TK_IDENT);
            const char *name = token_text(p, &t);
            if (!set_contains(sets, name)) vec_push(p, sets, name);
        }
    } while (next_if(p, '|'));
}

static const opreg_alias *parse_alias_annotation(opreg__parser *p) {
    if (next_if(p, '(')) {
        opreg_alias *a = opreg__arena_alloc(p, sizeof *a);
        ptr_vec before = { 0 }, after = { 0 };
        parse_alias_sets(p, &before);
        a->is_write = next_if(p, '!');
        a->is_fresh = false;
        a->before = (const char **)before.items;
        a->n_before = before.n;
        if (next_if(p, TK_ARROW)) {
            parse_alias_sets(p, &after);
            a->after = (const char **)after.items;
            a->n_after = after.n;
        } else {
            a->after = a->before;
            a->n_after = a->n_before;
        }
        expect(p, ')');
        return a;
    }
    if (next_if(p, '!')) {
        opreg_alias *a = opreg__arena_alloc(p, sizeof *a);
        char name[16];
        int n = snprintf(name, sizeof name, "$%d", p->next_fresh++);
        const char **sets = opreg__arena_alloc(p, sizeof *sets);
        sets[0] = opreg__arena_strdup(p, name, (size_t)n);
        a->before = sets;
        a->n_before = 1;
        a->after = NULL;
        a->n_after = 0;
        a->is_write = true;
        a->is_fresh = true;
        return a;
    }
    return NULL;
}

/* ---- types ------------------------------------------------------------------------- */

/* The names a type can start with: PyTorch's type_map (each with the real
 * type it stands for: Dimname is str, DeviceIndex is int) and the structural
 * forms, in a table probed by (first + 23 * last + 12 * length) mod 64, which
 * has no collisions. */
enum { ATOM_TENSOR = 100, ATOM_FUTURE, ATOM_AWAIT, ATOM_RREF, ATOM_DICT, ATOM_UNION, ATOM_CLASS };

static const struct {
    char spelling[24]; /* zero-padded */
    uint8_t len;
    uint8_t code; /* an opreg_type_kind, or ATOM_* */
} type_names[64] = {
    [0] = { "Layout", 6, OPREG_TYPE_LAYOUT },
    [1] = { "NoneType", 8, OPREG_TYPE_NONE },
    [4] = { "Any", 3, OPREG_TYPE_ANY },
    [6] = { "bool", 4, OPREG_TYPE_BOOL },
    [7] = { "SymInt", 6, OPREG_TYPE_SYMINT },
    [9] = { "MemoryFormat", 12, OPREG_TYPE_MEMORY_FORMAT },
    [13] = { "ConstQuantizerPtr", 17, OPREG_TYPE_INT },
    [14] = { "float", 5, OPREG_TYPE_FLOAT },
    [16] = { "DeviceIndex", 11, OPREG_TYPE_INT },
    [17] = { "None", 4, OPREG_TYPE_NONE },
    [20] = { "__torch__", 9, ATOM_CLASS },
    [21] = { "str", 3, OPREG_TYPE_STR },
    [24] = { "AnyEnumType", 11, OPREG_TYPE_ANY_ENUM },
    [25] = { "Scalar", 6, OPREG_TYPE_SCALAR },
    [26] = { "Tensor", 6, ATOM_TENSOR },
    [27] = { "SymBool", 7, OPREG_TYPE_SYMBOOL },
    [30] = { "ScalarType", 10, OPREG_TYPE_SCALAR_TYPE },
    [31] = { "Device", 6, OPREG_TYPE_DEVICE },
    [32] = { "Dict", 4, ATOM_DICT },
    [33] = { "Future", 6, ATOM_FUTURE },
    [36] = { "AnyClassType", 12, OPREG_TYPE_ANY_CLASS },
    [38] = { "Stream", 6, OPREG_TYPE_STREAM },
    [41] = { "Await", 5, ATOM_AWAIT },
    [42] = { "Capsule", 7, OPREG_TYPE_CAPSULE },
    [43] = { "Dimname", 7, OPREG_TYPE_STR },
    [44] = { "RRef", 4, ATOM_RREF },
    [49] = { "Generator", 9, OPREG_TYPE_GENERATOR },
    [51] = { "Union", 5, ATOM_UNION },
    [56] = { "QScheme", 7, OPREG_TYPE_QSCHEME },
    [57] = { "int", 3, OPREG_TYPE_INT },
    [58] = { "Storage", 7, OPREG_TYPE_STORAGE },
    [59] = { "Quantizer", 9, OPREG_TYPE_QUANTIZER },
    [63] = { "complex", 7, OPREG_TYPE_COMPLEX },
};

/* The code of a type name at s, in the padded copy of the source, or -1. */
static int type_name_code(const char *s, uint32_t n) {
    if (n == 0 || n > 23) return -1;
    unsigned h = ((unsigned char)s[0] + 23u * (unsigned char)s[n - 1] + 12u * n) & 63;
    const char *want = type_names[h].spelling;
    if (type_names[h].len != n) return -1;
    for (uint32_t i = 0; i < n; i += 8) {
        if (opreg__first_bytes(opreg__load8(s + i), n - i) != opreg__load8(want + i)) return -1;
    }
    return type_names[h].code;
}

/* Shared, immutable leaf nodes without annotations: most types of a schema
 * are one of these, and they cost no allocation. */
static const opreg_type leaf_types[] = {
#define LEAF(kind, name)                                                                           \
    { kind, 0, NULL, -1, name, NULL }
    LEAF(OPREG_TYPE_TENSOR, "Tensor"),
    LEAF(OPREG_TYPE_INT, "int"),
    LEAF(OPREG_TYPE_SYMINT, "SymInt"),
    LEAF(OPREG_TYPE_SYMBOOL, "SymBool"),
    LEAF(OPREG_TYPE_FLOAT, "float"),
    LEAF(OPREG_TYPE_COMPLEX, "complex"),
    LEAF(OPREG_TYPE_BOOL, "bool"),
    LEAF(OPREG_TYPE_STR, "str"),
    LEAF(OPREG_TYPE_SCALAR, "Scalar"),
    LEAF(OPREG_TYPE_SCALAR_TYPE, "ScalarType"),
    LEAF(OPREG_TYPE_LAYOUT, "Layout"),
    LEAF(OPREG_TYPE_MEMORY_FORMAT, "MemoryFormat"),
    LEAF(OPREG_TYPE_DEVICE, "Device"),
    LEAF(OPREG_TYPE_GENERATOR, "Generator"),
    LEAF(OPREG_TYPE_STORAGE, "Storage"),
    LEAF(OPREG_TYPE_STREAM, "Stream"),
    LEAF(OPREG_TYPE_QSCHEME, "QScheme"),
    LEAF(OPREG_TYPE_QUANTIZER, "Quantizer"),
    LEAF(OPREG_TYPE_CAPSULE, "Capsule"),
    LEAF(OPREG_TYPE_ANY, "Any"),
    LEAF(OPREG_TYPE_ANY_CLASS, "AnyClassType"),
    LEAF(OPREG_TYPE_ANY_ENUM, "AnyEnumType"),
    LEAF(OPREG_TYPE_NONE, "NoneType"),
#undef LEAF
};

static opreg_type *node(opreg__parser *p, opreg_type_kind kind, uint32_t n_elems) {
    opreg_type *t = opreg__arena_alloc(p, sizeof *t + n_elems * sizeof(opreg_type *));
    t->kind = (uint8_t)kind;
    t->n_elems = n_elems;
    t->elems = (const opreg_type **)(t + 1);
    t->list_size = -1;
    t->name = NULL;
    t->alias = NULL;
    return t;
}

static opreg_type *wrap(opreg__parser *p, opreg_type_kind kind, const opreg_type *elem) {
    opreg_type *t = node(p, kind, 1);
    t->elems[0] = elem;
    return t;
}

static void enter(opreg__parser *p) {
    if (++p->depth > MAX_TYPE_DEPTH)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                          "type nested too deeply (more than %d levels)", MAX_TYPE_DEPTH);
}

static const opreg_type *parse_type(opreg__parser *p, bool keep_alias);

static const opreg_type *parse_base_type(opreg__parser *p) {
    opreg__token t = p->cur;
    if (!next_if(p, TK_NONE) && !next_if(p, TK_NONE_TYPE)) expect(p, TK_IDENT);
    const char *s = p->src + t.start;
    int code = type_name_code(p->copy + t.start, t.len);
    if (code >= 0 && code < ATOM_TENSOR) return &leaf_types[code];
    if (p->allow_typevars && t.len > 0 && s[0] >= 'a' && s[0] <= 'z') {
        opreg_type *v = node(p, OPREG_TYPE_VAR, 0);
        v->name = token_text(p, &t);
        p->schema->has_typevars = true;
        return v;
    }
    if (t.len == 6 && memcmp(s, "double", 6) == 0)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t.start, t.len,
                          "Use `float` instead of `double` in an operator's schema string. "
                          "`float` in schema corresponds to the double type in C++");
    if (t.len == 7 && memcmp(s, "int64_t", 7) == 0)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t.start, t.len,
                          "Use `SymInt` or `int` instead of `int64_t` in an operator's schema "
                          "string. `SymInt` corresponds to c10::SymInt in C++ while `int` in "
                          "schema corresponds to the int64_t type in C++.");
    opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t.start, t.len,
                      "unknown type specifier. Common valid schema types include Tensor, SymInt, "
                      "int, float, bool, Scalar; for a full list, please see "
                      "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/"
                      "README.md#func");
}

/* `__torch__.torch.classes.ns.Cls`: any such class is accepted, since opreg
 * has no class registry to check it against. */
static const opreg_type *parse_custom_class(opreg__parser *p) {
    opreg__token first = opreg__lex_next(p);
    expect(p, '.');
    opreg__token torch = expect(p, TK_IDENT);
    if (!token_is(p, &torch, "torch"))
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, torch.start, torch.len,
                          "Expected classes namespace but got %.*s", (int)torch.len,
                          p->src + torch.start);
    expect(p, '.');
    opreg__token classes = expect(p, TK_IDENT);
    if (!token_is(p, &classes, "classes"))
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, classes.start, classes.len,
                          "Expected classes namespace but got %.*s", (int)classes.len,
                          p->src + classes.start);
    expect(p, '.');
    opreg__token ns = expect(p, TK_IDENT);
    expect(p, '.');
    opreg__token cls = expect(p, TK_IDENT);
    (void)first;
    opreg_type *t = node(p, OPREG_TYPE_CLASS, 0);
    size_t n = sizeof "__torch__.torch.classes." - 1;
    char *name = opreg__arena_alloc(p, n + ns.len + 1 + cls.len + 1);
    memcpy(name, "__torch__.torch.classes.", n);
    memcpy(name + n, p->src + ns.start, ns.len);
    name[n + ns.len] = '.';
    memcpy(name + n + ns.len + 1, p->src + cls.start, cls.len);
    name[n + ns.len + 1 + cls.len] = '\0';
    t->name = name;
    return t;
}

/* The atom of a type, before any `[]` or `?` suffix. */
static const opreg_type *parse_atom(opreg__parser *p, const opreg_alias **alias) {
    *alias = NULL;
    if (p->cur.kind == '(') {
        opreg__lex_next(p);
        ptr_vec elems = { 0 };
        if (p->cur.kind != ')') {
            do {
                vec_push(p, &elems, parse_type(p, false));
            } while (next_if(p, ','));
        }
        expect(p, ')');
        opreg_type *t = node(p, OPREG_TYPE_TUPLE, elems.n);
        if (elems.n) memcpy(t->elems, elems.items, elems.n * sizeof *t->elems);
        return t;
    }
    if (p->cur.kind != TK_IDENT) return parse_base_type(p);
    int code = type_name_code(p->copy + p->cur.start, p->cur.len);
    if (code == ATOM_FUTURE || code == ATOM_AWAIT || code == ATOM_RREF) {
        opreg_type_kind kind = code == ATOM_FUTURE  ? OPREG_TYPE_FUTURE
                               : code == ATOM_AWAIT ? OPREG_TYPE_AWAIT
                                                    : OPREG_TYPE_RREF;
        opreg__lex_next(p);
        expect(p, '(');
        const opreg_type *elem = parse_type(p, false);
        expect(p, ')');
        return wrap(p, kind, elem);
    }
    if (code == ATOM_TENSOR) {
        opreg__lex_next(p);
        *alias = parse_alias_annotation(p);
        return &leaf_types[OPREG_TYPE_TENSOR];
    }
    if (code == ATOM_DICT) {
        opreg__lex_next(p);
        expect(p, '(');
        opreg_type *t = node(p, OPREG_TYPE_DICT, 2);
        t->elems[0] = parse_type(p, false);
        expect(p, ',');
        t->elems[1] = parse_type(p, false);
        expect(p, ')');
        *alias = parse_alias_annotation(p);
        return t;
    }
    if (code == ATOM_UNION) {
        opreg__token at = opreg__lex_next(p);
        expect(p, '(');
        ptr_vec members = { 0 };
        vec_push(p, &members, parse_type(p, false));
        while (p->cur.kind != ')') {
            expect(p, ',');
            const opreg_type *m = parse_type(p, false);
            bool dup = false;
            for (uint32_t i = 0; i < members.n && !dup; i++)
                dup = opreg__type_equal(members.items[i], m);
            if (!dup) vec_push(p, &members, m);
        }
        expect(p, ')');
        if (members.n < 2)
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, at.start, at.len,
                              "a Union needs at least two distinct member types");
        opreg_type *t = node(p, OPREG_TYPE_UNION, members.n);
        memcpy(t->elems, members.items, members.n * sizeof *t->elems);
        *alias = parse_alias_annotation(p);
        return t;
    }
    if (code == ATOM_CLASS) return parse_custom_class(p);
    const opreg_type *base = parse_base_type(p);
    *alias = parse_alias_annotation(p);
    return base;
}

/* The same node with an annotation: leaves are shared, so copy. */
static const opreg_type *annotate(opreg__parser *p, const opreg_type *t, const opreg_alias *alias) {
    opreg_type *n = opreg__arena_alloc(p, sizeof *n);
    *n = *t;
    n->alias = alias;
    return n;
}

/* A type with its `[]` (each with an optional container annotation) and `?`
 * suffixes, in any order. keep_alias is false inside tuples, dicts, unions
 * and futures, where PyTorch drops annotations (a `!` still numbers its
 * fresh set). */
static const opreg_type *parse_type(opreg__parser *p, bool keep_alias) {
    int depth = p->depth;
    enter(p);
    const opreg_alias *alias;
    const opreg_type *t = parse_atom(p, &alias);
    if (alias && keep_alias) t = annotate(p, t, alias);
    for (;;) {
        if (p->cur.kind == '[' && opreg__lex_peek(p)->kind == ']') {
            opreg__lex_next(p);
            opreg__lex_next(p);
            enter(p);
            opreg_type *list = wrap(p, OPREG_TYPE_LIST, t);
            const opreg_alias *container = parse_alias_annotation(p);
            if (keep_alias) list->alias = container;
            t = list;
        } else if (next_if(p, '?')) {
            enter(p);
            if (t->kind != OPREG_TYPE_OPTIONAL) t = wrap(p, OPREG_TYPE_OPTIONAL, t);
        } else {
            break;
        }
    }
    p->depth = depth;
    return t;
}

/* ---- arguments and the declaration ---------------------------------------------------- */

/* The N of `T[N]`: std::stoll on the number's text, kept as int32 as PyTorch does. */
static int64_t parse_list_size(opreg__parser *p, const opreg__token *t) {
    const char *s = p->src + t->start;
    uint32_t i = 0;
    int64_t v = 0;
    bool overflow = false;
    while (i < t->len && s[i] >= '0' && s[i] <= '9') {
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
        i++;
    }
    if (overflow) opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len, "stoll");
    if (i == 0) opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len, "stoll");
    int32_t n = (int32_t)(uint32_t)(uint64_t)v;
    if (n < 0) /* PyTorch would go on with a negative size */
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "list size %.*s does not fit in 31 bits", (int)t->len, p->src + t->start);
    return n;
}

static void parse_argument(opreg__parser *p, opreg_argument *arg, bool is_return, bool kwarg_only) {
    const opreg_type *type = parse_type(p, true);
    if (next_if(p, '[')) {
        opreg__token n = expect(p, TK_NUMBER);
        expect(p, ']');
        opreg_type *list = wrap(p, OPREG_TYPE_LIST, type);
        list->list_size = parse_list_size(p, &n);
        list->alias = parse_alias_annotation(p);
        type = list;
        if (next_if(p, '?')) type = wrap(p, OPREG_TYPE_OPTIONAL, type);
    }
    arg->type = type;
    arg->def = NULL;
    arg->kwarg_only = !is_return && kwarg_only;
    if (is_return) {
        if (p->cur.kind == TK_IDENT) {
            opreg__token t = opreg__lex_next(p);
            arg->name = token_text(p, &t);
        } else {
            arg->name = "";
        }
        return;
    }
    opreg__token t = expect(p, TK_IDENT);
    arg->name = token_text(p, &t);
    if (next_if(p, '=')) arg->def = opreg__parse_default(p, type);
}

typedef struct arg_vec {
    opreg_argument *items;
    uint32_t n;
    uint32_t cap;
} arg_vec;

static opreg_argument *arg_push(opreg__parser *p, arg_vec *v) {
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        opreg_argument *items = opreg__arena_alloc(p, cap * sizeof *items);
        if (v->n) memcpy(items, v->items, v->n * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    return &v->items[v->n++];
}

static void parse_name(opreg__parser *p) {
    opreg_schema *s = p->schema;
    opreg__token first = expect(p, TK_IDENT);
    s->ns = "";
    s->name = token_text(p, &first);
    if (next_if(p, ':')) {
        expect(p, ':');
        opreg__token name = expect(p, TK_IDENT);
        s->ns = s->name;
        s->name = token_text(p, &name);
    }
    s->overload = "";
    if (next_if(p, '.')) {
        opreg__token ov = expect(p, TK_IDENT);
        s->overload = token_text(p, &ov);
        if (strcmp(s->overload, "default") == 0 || strncmp(s->overload, "__", 2) == 0)
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_INVALID, ov.start, ov.len,
                              "%s is not a legal overload name for aten operators", s->overload);
    }
}

/* PyTorch's FunctionSchema::checkSchema: a positional argument without a
 * default may not follow one with a default, except lists. */
static void check_schema(opreg__parser *p, const arg_vec *args) {
    bool seen_default = false;
    for (uint32_t i = 0; i < args->n; i++) {
        const opreg_argument *a = &args->items[i];
        if (a->def) {
            seen_default = true;
        } else if (a->type->kind != OPREG_TYPE_LIST && seen_default && !a->kwarg_only) {

            p->schema->args = args->items;
            p->schema->n_args = args->n;
            char printed[300];
            size_t n = opreg_schema_format(p->schema, OPREG_SCHEMA_TORCH, printed, sizeof printed);
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_INVALID, a->src_start, a->src_len,
                              "Non-default positional argument follows default argument. "
                              "Parameter %s in %s%s",
                              a->name, printed, n >= sizeof printed ? "..." : "");
        }
    }
}

static void parse_declaration(opreg__parser *p) {
    opreg_schema *s = p->schema;
    parse_name(p);
    if (p->cur.kind != '(') {
        /* A bare name is a whole declaration of its own: the input must end. */
        next_if(p, TK_NEWLINE);
        expect(p, TK_EOF);
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, 0, 0,
                          "Tried to parse a function schema but only the operator name was given");
    }

    arg_vec args = { 0 };
    bool kwarg_only = false;
    expect(p, '(');
    if (p->cur.kind != ')') {
        do {
            if (s->is_vararg)
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                                  "... must be the last element of the argument list");
            if (next_if(p, '*')) {
                kwarg_only = true;
            } else if (next_if(p, TK_DOTS)) {
                s->is_vararg = true;
            } else {
                opreg_argument *arg = arg_push(p, &args);
                arg->src_start = p->cur.start;
                arg->src_len = p->cur.len;
                parse_argument(p, arg, false, kwarg_only);
            }
        } while (next_if(p, ','));
    }
    expect(p, ')');
    if (s->is_vararg) {
        for (uint32_t i = 0; i < args.n; i++)
            if (args.items[i].def)
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                                  "schemas with vararg (...) can't have default value args");
    }

    arg_vec rets = { 0 };
    expect(p, TK_ARROW);
    if (next_if(p, TK_DOTS)) {
        s->is_varret = true;
    } else if (p->cur.kind == '(') {
        opreg__lex_next(p);
        if (p->cur.kind != ')') {
            do {
                if (s->is_varret)
                    opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                                      "... must be the last element of the return list");
                if (next_if(p, TK_DOTS))
                    s->is_varret = true;
                else
                    parse_argument(p, arg_push(p, &rets), true, false);
            } while (next_if(p, ','));
        }
        expect(p, ')');
    } else {
        parse_argument(p, arg_push(p, &rets), true, false);
    }
    s->rets = rets.items;
    s->n_rets = rets.n;
    check_schema(p, &args);
    s->args = args.items;
    s->n_args = args.n;
    next_if(p, TK_NEWLINE);
    expect(p, TK_EOF);
}

/* ---- a spare first chunk per thread ----------------------------------------------------- */

/* Parsing many schemas in a row is common (registration, tools); each thread
 * keeps the first chunk of its last freed small schema for the next parse,
 * which saves a malloc/free pair. A thread's spare is freed when it exits. */
#define SPARE_CAP 4096

static _Thread_local struct opreg__chunk *spare;
static _Thread_local bool spare_registered;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_release(void *unused) {
    (void)unused;
    free(spare);
    spare = NULL;
}

static void spare_make_key(void) {
    if (opreg__thread_key_create(&spare_key, spare_release) != 0) spare_key = (pthread_key_t)-1;
}

static struct opreg__chunk *take_spare(void) {
    struct opreg__chunk *c = spare;
    if (c) {
        spare = NULL;
        return c;
    }
    return malloc(sizeof *c + SPARE_CAP);
}

static bool keep_spare(struct opreg__chunk *c) {
    if (c->cap != SPARE_CAP || spare) return false;
    if (!spare_registered) {
        pthread_once(&spare_once, spare_make_key);
        if (spare_key == (pthread_key_t)-1 || pthread_setspecific(spare_key, &spare) != 0)
            return false;
        spare_registered = true;
    }
    spare = c;
    return true;
}

/* ---- the entry point ------------------------------------------------------------------ */

/* The full message for opreg_last_error(): the message, then the source line
 * holding the error and a caret line under the offending token. */
static void report(const char *src, size_t len, opreg_schema_error *e) {
    size_t ls = e->offset > len ? len : e->offset;
    while (ls > 0 && src[ls - 1] != '\n')
        ls--;
    size_t le = ls;
    while (le < len && src[le] != '\n')
        le++;
    e->line = 1;
    for (size_t i = 0; i < ls; i++)
        e->line += src[i] == '\n';
    e->column = (e->offset > len ? len : e->offset) - ls + 1;

    char text[4096];
    size_t show = le - ls;
    if (show > 2000) show = 2000;
    int n = snprintf(text, sizeof text, "%s:\n  %.*s\n  ", e->message, (int)show, src + ls);
    size_t at = n < 0 ? 0 : (size_t)n;
    for (size_t i = 0; i + 1 < e->column && at + 8 < sizeof text; i++)
        text[at++] = (i < show && src[ls + i] == '\t') ? '\t' : ' ';
    size_t marks = e->length ? e->length : 1;
    if (e->offset + marks > le) marks = le > e->offset ? le - e->offset : 1;
    for (size_t i = 0; i < marks && at + 8 < sizeof text; i++)
        text[at++] = i ? '~' : '^';
    opreg__fail_text(e->status, text, at);
}

/* Parse, catching errors. Kept apart from the caller so that no local of the
 * function that calls setjmp changes between setjmp and longjmp. */
static bool run(opreg__parser *p) {
    if (setjmp(p->fail)) return false;
    opreg__lex_init(p);
    parse_declaration(p);
    return true;
}

opreg_status opreg_schema_parse(opreg_schema **out, const char *text, size_t len, unsigned flags,
                                opreg_schema_error *err) {
    if (out) *out = NULL;
    if (!out || (!text && len))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_schema_parse: %s is NULL",
                           !out ? "out" : "text");
    if (flags & ~(unsigned)OPREG_SCHEMA_ALLOW_TYPEVARS)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_schema_parse: unknown flags 0x%x",
                           flags & ~(unsigned)OPREG_SCHEMA_ALLOW_TYPEVARS);
    if (len > MAX_INPUT_LEN)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_schema_parse: the schema text is %zu bytes, more than %u", len,
                           (unsigned)MAX_INPUT_LEN);
    opreg_schema_error local;
    opreg__parser p;
    p.err = err ? err : &local;
    p.src = text ? text : "";
    p.len = (uint32_t)len;

    size_t cap = 512 + 7 * len;
    struct opreg__chunk *c = cap <= SPARE_CAP ? take_spare() : malloc(sizeof *c + cap);
    if (c && cap <= SPARE_CAP) cap = SPARE_CAP;
    if (!c) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_schema_parse: out of memory");
    c->next = NULL;
    c->cap = cap;
    c->used = (sizeof(opreg_schema) + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    opreg_schema *s = (opreg_schema *)(void *)c->data;
    memset(s, 0, sizeof *s);
    s->chunks = c;
    p.schema = s;
    p.copy = (char *)c->data + c->used;
    c->used += (len + OPREG__COPY_PADDING + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    if (len) memcpy(p.copy, text, len);
    memset(p.copy + len, 0, OPREG__COPY_PADDING);
    p.allow_typevars =
        (flags & OPREG_SCHEMA_ALLOW_TYPEVARS) ||
        (len >= 6 && (memcmp(text, "aten::", 6) == 0 || memcmp(text, "prim::", 6) == 0));
    p.next_fresh = 0;
    p.depth = 0;

    if (!run(&p)) {
        report(p.src, len, p.err);
        opreg_schema_free(p.schema);
        return p.err->status;
    }
    *out = s;
    return OPREG_OK;
}

void opreg_schema_free(opreg_schema *schema) {
    if (!schema) return;
    struct opreg__chunk *c = schema->chunks;
    while (c) {
        struct opreg__chunk *next = c->next;
        /* The last chunk is the first one allocated, which holds the schema. */
        if (next || !keep_spare(c)) free(c);
        c = next;
    }
}
