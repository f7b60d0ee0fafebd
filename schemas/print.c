/* The two printers. TORCH reproduces PyTorch's operator<< for FunctionSchema,
 * Argument, AliasInfo and IValue byte for byte. CANONICAL prints the same,
 * except where PyTorch's output would not parse back to an equal schema:
 * `!` and alias-set order as written, quoted strings and devices, `2.j`,
 * enum-like defaults by name, int lists collapsed only when sized to fit. */
#include "schemas/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output buffer -------------------------------------------------------------------- */

void opreg__out_put(opreg__out *o, const char *s, size_t n) {
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

void opreg__out_str(opreg__out *o, const char *s) {
    opreg__out_put(o, s, strlen(s));
}

void opreg__out_char(opreg__out *o, char c) {
    opreg__out_put(o, &c, 1);
}

void opreg__out_fmt(opreg__out *o, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) opreg__out_put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void opreg__out_double(opreg__out *o, double d) {
    int c = fpclassify(d);
    if ((c == FP_NORMAL || c == FP_ZERO) && d >= -9223372036854775808.0 &&
        d < 9223372036854775808.0) {
        int64_t i = (int64_t)d;
        if ((double)i == d) {
            opreg__out_fmt(o, "%lld.", (long long)i);
            return;
        }
    }
    opreg__out_fmt(o, "%.17g", d);
}

/* ---- alias annotations ------------------------------------------------------------------ */

static bool same_set_lists(const opreg_alias *a) {
    if (a->n_before != a->n_after) return false;
    for (uint32_t i = 0; i < a->n_before; i++) {
        bool found = false;
        for (uint32_t j = 0; j < a->n_after && !found; j++)
            found = strcmp(a->before[i], a->after[j]) == 0;
        if (!found) return false;
    }
    return true;
}

/* PyTorch keeps alias sets in unordered_sets, which iterate here in reverse
 * insertion order; canonical printing keeps the source order. */
static void put_sets(opreg__out *o, const char *const *sets, uint32_t n, bool reverse) {
    for (uint32_t i = 0; i < n; i++) {
        if (i) opreg__out_char(o, '|');
        opreg__out_str(o, sets[reverse ? n - 1 - i : i]);
    }
}

/* `(sets[!][ -> sets])`: PyTorch's AliasInfo operator<<. A NULL alias with
 * write set is the container PyTorch synthesises for an annotated element. */
static void put_alias(opreg__out *o, const opreg_alias *a, bool write, bool torch) {
    opreg__out_char(o, '(');
    if (a) {
        put_sets(o, a->before, a->n_before, torch);
        if (a->is_write) opreg__out_char(o, '!');
        if (!same_set_lists(a)) {
            opreg__out_str(o, " -> ");
            put_sets(o, a->after, a->n_after, torch);
        }
    } else if (write) {
        opreg__out_char(o, '!');
    }
    opreg__out_char(o, ')');
}

static void put_canonical_alias(opreg__out *o, const opreg_alias *a) {
    if (!a) return;
    if (a->is_fresh)
        opreg__out_char(o, '!');
    else
        put_alias(o, a, a->is_write, false);
}

/* ---- types -------------------------------------------------------------------------------- */

static void put_type(opreg__out *o, const opreg_type *t, bool canonical);

static void put_elems(opreg__out *o, const opreg_type *t, const char *open, bool canonical) {
    opreg__out_str(o, open);
    for (uint32_t i = 0; i < t->n_elems; i++) {
        if (i) opreg__out_str(o, ", ");
        put_type(o, t->elems[i], canonical);
    }
    opreg__out_char(o, ')');
}

/* A type as c10's Type::str() prints it (no annotations), or, canonically,
 * in source form with its annotations and a sized list's N. */
static void put_type(opreg__out *o, const opreg_type *t, bool canonical) {
    switch (t->kind) {
    case OPREG_TYPE_LIST:
        put_type(o, t->elems[0], canonical);
        if (canonical && t->list_size >= 0)
            opreg__out_fmt(o, "[%lld]", (long long)t->list_size);
        else
            opreg__out_str(o, "[]");
        break;
    case OPREG_TYPE_OPTIONAL:
        put_type(o, t->elems[0], canonical);
        opreg__out_char(o, '?');
        return;
    case OPREG_TYPE_TUPLE:
        put_elems(o, t, "(", canonical);
        break;
    case OPREG_TYPE_DICT:
        put_elems(o, t, "Dict(", canonical);
        break;
    case OPREG_TYPE_UNION:
        put_elems(o, t, "Union(", canonical);
        break;
    case OPREG_TYPE_FUTURE:
        put_elems(o, t, "Future(", canonical);
        break;
    case OPREG_TYPE_RREF:
        put_elems(o, t, "RRef(", canonical);
        break;
    case OPREG_TYPE_AWAIT:
        put_elems(o, t, "Await(", canonical);
        break;
    default:
        opreg__out_str(o, t->name);
        break;
    }
    if (canonical) put_canonical_alias(o, t->alias);
}

/* PyTorch's per-argument AliasInfo, rebuilt from the annotated type spine:
 * the outermost annotation, and the element's AliasInfo it contains. */
typedef struct torch_alias {
    const opreg_alias *own; /* NULL: a container PyTorch made up for an annotated element */
    bool write;
    const struct torch_alias *contained;
} torch_alias;

static const torch_alias *torch_alias_of(const opreg_type *t, torch_alias *slots, int *n) {
    if (t->kind == OPREG_TYPE_OPTIONAL) return torch_alias_of(t->elems[0], slots, n);
    const torch_alias *inner = NULL;
    if (t->kind == OPREG_TYPE_LIST) inner = torch_alias_of(t->elems[0], slots, n);
    if (!t->alias && !inner) return NULL;
    torch_alias *a = &slots[(*n)++];
    a->own = t->alias;
    a->write = t->alias ? t->alias->is_write : inner->write;
    a->contained = inner;
    return a;
}

/* ---- defaults --------------------------------------------------------------------------- */

/* c10's printQuotedString, including its octal escapes of a signed char
 * (bytes >= 0x80 come out as odd digits). Canonically, \r and high bytes
 * use proper octal so that the parser reads them back. */
static void put_quoted(opreg__out *o, const char *s, size_t n, bool torch) {
    opreg__out_char(o, '"');
    for (size_t i = 0; i < n; i++) {
        signed char c = (signed char)s[i];
        switch (c) {
        case '\\':
            opreg__out_str(o, "\\\\");
            continue;
        case '\'':
            opreg__out_str(o, "\\'");
            continue;
        case '"':
            opreg__out_str(o, "\\\"");
            continue;
        case '\a':
            opreg__out_str(o, "\\a");
            continue;
        case '\b':
            opreg__out_str(o, "\\b");
            continue;
        case '\f':
            opreg__out_str(o, "\\f");
            continue;
        case '\n':
            opreg__out_str(o, "\\n");
            continue;
        case '\t':
            opreg__out_str(o, "\\t");
            continue;
        case '\v':
            opreg__out_str(o, "\\v");
            continue;
        case '\r':
            if (torch) {
                opreg__out_str(o, "\\r");
                continue;
            }
            break;
        default:
            if (c >= 0x20 && c < 0x7f) {
                opreg__out_char(o, (char)c);
                continue;
            }
            break;
        }
        char buf[5] = "\\000";
        if (torch) {
            int v = c;
            buf[3] = (char)('0' + v % 8), v /= 8;
            buf[2] = (char)('0' + v % 8), v /= 8;
            buf[1] = (char)('0' + v);
        } else {
            unsigned v = (unsigned char)c;
            buf[3] = (char)('0' + v % 8), v /= 8;
            buf[2] = (char)('0' + v % 8), v /= 8;
            buf[1] = (char)('0' + v);
        }
        opreg__out_put(o, buf, 4);
    }
    opreg__out_char(o, '"');
}

/* IValue's operator<<, or its canonical variant. */
static void put_value(opreg__out *o, const opreg_default *v, bool torch) {
    switch (v->kind) {
    case OPREG_DEFAULT_NONE:
        opreg__out_str(o, "None");
        break;
    case OPREG_DEFAULT_BOOL:
        opreg__out_str(o, v->u.b ? "True" : "False");
        break;
    case OPREG_DEFAULT_INT:
        /* A name such as `Mean` reads back as the same int whatever the
         * argument's type, where `1` would read back as 1.0 for a float. */
        if (!torch && v->spelling)
            opreg__out_str(o, v->spelling);
        else
            opreg__out_fmt(o, "%lld", (long long)v->u.i);
        break;
    case OPREG_DEFAULT_FLOAT:
        opreg__out_double(o, v->u.f);
        break;
    case OPREG_DEFAULT_COMPLEX:
        if (torch) {
            opreg__out_str(o, "0.");
            opreg__out_char(o, v->u.f >= 0 ? '+' : '-');
            opreg__out_double(o, fabs(v->u.f));
        } else {
            opreg__out_double(o, v->u.f);
        }
        opreg__out_char(o, 'j');
        break;
    case OPREG_DEFAULT_STRING:
        if (torch)
            opreg__out_put(o, v->u.str.s, v->u.str.len);
        else
            put_quoted(o, v->u.str.s, v->u.str.len, false);
        break;
    case OPREG_DEFAULT_DEVICE:
        if (!torch) opreg__out_char(o, '"');
        opreg__out_str(o, v->u.str.s);
        if (v->device_index >= 0) opreg__out_fmt(o, ":%lld", (long long)v->device_index);
        if (!torch) opreg__out_char(o, '"');
        break;
    case OPREG_DEFAULT_LIST:
        opreg__out_char(o, '[');
        for (size_t i = 0; i < v->u.list.n; i++) {
            if (i) opreg__out_str(o, ", ");
            put_value(o, &v->u.list.items[i], torch);
        }
        opreg__out_char(o, ']');
        break;
    }
}

static void put_default(opreg__out *o, const opreg_type *type, const opreg_default *v, bool torch) {
    const opreg_type *unopt = type->kind == OPREG_TYPE_OPTIONAL ? type->elems[0] : type;
    if (v->kind == OPREG_DEFAULT_STRING &&
        (type->kind == OPREG_TYPE_STR ||
         (unopt->kind == OPREG_TYPE_STR && v->kind != OPREG_DEFAULT_NONE))) {
        put_quoted(o, v->u.str.s, v->u.str.len, torch);
        return;
    }
    /* native_functions.yaml spells `int[2] stride=1`; PyTorch prints a list of
     * equal ints that way. Canonically only where it reads back the same. */
    if (type->kind == OPREG_TYPE_LIST && type->elems[0]->kind == OPREG_TYPE_INT &&
        v->kind == OPREG_DEFAULT_LIST && v->u.list.n > 1) {
        bool same = true;
        for (size_t i = 1; i < v->u.list.n && same; i++)
            same = v->u.list.items[i].u.i == v->u.list.items[0].u.i;
        if (same && (torch || (size_t)type->list_size == v->u.list.n)) {
            put_value(o, &v->u.list.items[0], torch);
            return;
        }
    }
    put_value(o, v, torch);
}

/* ---- arguments and schemas ----------------------------------------------------------------- */

static void put_argument(opreg__out *o, const opreg_argument *a, bool torch) {
    const opreg_type *type = a->type;
    if (!torch) {
        put_type(o, type, true);
    } else {
        bool is_opt = type->kind == OPREG_TYPE_OPTIONAL;
        const opreg_type *unopt = is_opt ? type->elems[0] : type;
        torch_alias slots[2 * 256];
        int n = 0;
        const torch_alias *top = torch_alias_of(type, slots, &n);
        if (unopt->kind == OPREG_TYPE_LIST) {
            put_type(o, unopt->elems[0], false);
            if (top && top->contained)
                put_alias(o, top->contained->own, top->contained->write, true);
            if (unopt->list_size >= 0)
                opreg__out_fmt(o, "[%lld]", (long long)unopt->list_size);
            else
                opreg__out_str(o, "[]");
        } else {
            put_type(o, unopt, false);
        }
        if (top && top->own && top->own->n_before) put_alias(o, top->own, top->write, true);
        if (is_opt) opreg__out_char(o, '?');
    }
    if (a->name[0]) {
        opreg__out_char(o, ' ');
        opreg__out_str(o, a->name);
    }
    if (a->def) {
        opreg__out_char(o, '=');
        put_default(o, type, a->def, torch);
    }
}

static void put_schema(opreg__out *o, const opreg_schema *s, bool torch) {
    if (s->ns[0]) {
        opreg__out_str(o, s->ns);
        opreg__out_str(o, "::");
    }
    opreg__out_str(o, s->name);
    if (s->overload[0]) {
        opreg__out_char(o, '.');
        opreg__out_str(o, s->overload);
    }
    opreg__out_char(o, '(');
    bool seen_kwarg_only = false;
    for (size_t i = 0; i < s->n_args; i++) {
        if (i) opreg__out_str(o, ", ");
        if (s->args[i].kwarg_only && !seen_kwarg_only) {
            opreg__out_str(o, "*, ");
            seen_kwarg_only = true;
        }
        put_argument(o, &s->args[i], torch);
    }
    if (s->is_vararg) opreg__out_str(o, s->n_args ? ", ..." : "...");
    opreg__out_str(o, ") -> ");

    bool paren = !((s->n_rets == 1 && !s->is_varret) || (s->n_rets == 0 && s->is_varret));
    if (s->n_rets == 1 && !paren) {
        /* A single return whose text starts with '(' (a tuple) needs wrapping. */
        char first[1];
        opreg__out probe = { first, 1, 0 };
        put_argument(&probe, &s->rets[0], torch);
        paren = probe.len > 0 && first[0] == '(';
    }
    if (paren) opreg__out_char(o, '(');
    for (size_t i = 0; i < s->n_rets; i++) {
        if (i) opreg__out_str(o, ", ");
        put_argument(o, &s->rets[i], torch);
    }
    if (s->is_varret) opreg__out_str(o, s->n_rets ? ", ..." : "...");
    if (paren) opreg__out_char(o, ')');
}

size_t opreg_schema_format(const opreg_schema *schema, opreg_schema_style style, char *buf,
                           size_t cap) {
    if (!schema) return 0;
    opreg__out o = { buf, cap ? cap - 1 : 0, 0 };
    if (!buf) o.cap = 0;
    put_schema(&o, schema, style == OPREG_SCHEMA_TORCH);
    if (buf && cap) buf[o.len < cap - 1 ? o.len : cap - 1] = '\0';
    return o.len;
}

char *opreg_schema_to_string(const opreg_schema *schema, opreg_schema_style style) {
    if (!schema) return NULL;
    size_t n = opreg_schema_format(schema, style, NULL, 0);
    char *s = malloc(n + 1);
    if (!s) {
        opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_schema_to_string: out of memory");
        return NULL;
    }
    opreg_schema_format(schema, style, s, n + 1);
    return s;
}
