/* Default values: PyTorch's parseDefaultValue and parseSingleConstant. As
 * there, defaults are untyped and lexical: the kind of a number comes from
 * its text (`.`, `e`, `j`) and from the argument's "fake" type, enum-like
 * names become ints, and Device defaults are validated device strings. */
#define _GNU_SOURCE
#include "common/dtype_list.h"
#include "schemas/internal.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A sized list default given as one value is repeated N times; this bounds N. */
#define MAX_REPEATED_DEFAULT 65536

int opreg__fake_kind(const opreg_type *type) {
    switch (type->kind) {
    case OPREG_TYPE_SCALAR_TYPE:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
    case OPREG_TYPE_SYMINT:
        return OPREG_TYPE_INT;
    case OPREG_TYPE_SYMBOOL:
        return OPREG_TYPE_BOOL;
    default:
        return type->kind;
    }
}

/* ---- numbers as std::stod and std::stoll read them ---------------------------------- */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) {
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* std::stod: strtod in the C locale; no digits, overflow or underflow throw. */
static bool stod(const char *s, double *out) {
    pthread_once(&c_locale_once, make_c_locale);
    char *end;
    errno = 0;
    double v = c_locale ? strtod_l(s, &end, c_locale) : strtod(s, &end);
    if (end == s || errno == ERANGE) return false;
    *out = v;
    return true;
}

/* std::stoll in base 10: optional blanks and sign, digits, then anything. */
static bool stoll(const char *s, int64_t *out) {
    while (*s == ' ' || *s == '\t')
        s++;
    bool neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (*s < '0' || *s > '9') return false;
    uint64_t v = 0;
    const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (limit - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* ---- enum-like names ---------------------------------------------------------------- */

/* c10::getStringToDtypeMap(): names and legacy names of ScalarType values,
 * in two tables. Those of opreg's dtypes come from common/dtype_list.h
 * (their numbers are opreg_dtype's; ALIAS is NULL for a dtype with one
 * spelling); the others are the ScalarTypes that opreg has no dtype for,
 * which a schema's default may name all the same. */
struct scalar_type_name {
    const char *name;
    int value;
};

#define TORCH_NAMES(arg, D, CODE, BITS, NAME, TORCH, ALIAS)                                        \
    { TORCH, OPREG_DTYPE_##D }, { ALIAS, OPREG_DTYPE_##D },
static const struct scalar_type_name dtype_names[] = { OPREG__DTYPE_LIST(TORCH_NAMES, 0) };

static const struct scalar_type_name other_names[] = {
    { "complex32", 8 },
    { "chalf", 8 },
    { "complex64", 9 },
    { "cfloat", 9 },
    { "complex128", 10 },
    { "cdouble", 10 },
    { "qint8", 12 },
    { "quint8", 13 },
    { "qint32", 14 },
    { "quint4x2", 16 },
    { "quint2x4", 17 },
    { "bits1x8", 18 },
    { "bits2x4", 19 },
    { "bits4x2", 20 },
    { "bits8", 21 },
    { "bits16", 22 },
    { "float8_e5m2fnuz", 25 },
    { "float8_e4m3fnuz", 26 },
    { "uint16", 27 },
    { "uint32", 28 },
    { "uint64", 29 },
    { "uint1", 30 },
    { "bit", 30 },
    { "uint2", 31 },
    { "uint3", 32 },
    { "uint4", 33 },
    { "uint5", 34 },
    { "uint6", 35 },
    { "uint7", 36 },
    { "int1", 37 },
    { "int2", 38 },
    { "int3", 39 },
    { "int4", 40 },
    { "int5", 41 },
    { "int6", 42 },
    { "int7", 43 },
};

static bool is_possibly_optional_scalar_type(const opreg_type *t) {
    if (t->kind == OPREG_TYPE_OPTIONAL) t = t->elems[0];
    return t->kind == OPREG_TYPE_SCALAR_TYPE;
}

static bool text_is(const char *s, uint32_t n, const char *word) {
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* The ScalarType named by the @p n bytes at @p s, or NULL. */
static const struct scalar_type_name *scalar_type_named(const char *s, uint32_t n) {
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (dtype_names[i].name && text_is(s, n, dtype_names[i].name)) return &dtype_names[i];
    for (size_t i = 0; i < sizeof other_names / sizeof other_names[0]; i++)
        if (text_is(s, n, other_names[i].name)) return &other_names[i];
    return NULL;
}

/* ---- single constants and lists ------------------------------------------------------ */

static opreg_default *new_value(opreg__parser *p, opreg_default_kind kind) {
    opreg_default *v = opreg__arena_alloc(p, sizeof *v);
    memset(v, 0, sizeof *v);
    v->kind = (uint8_t)kind;
    v->device_index = -1;
    return v;
}

static void single_constant(opreg__parser *p, int kind, const opreg_type *real, opreg_default *v) {
    memset(v, 0, sizeof *v);
    v->device_index = -1;
    switch (p->cur.kind) {
    case TK_TRUE:
    case TK_FALSE:
        v->kind = OPREG_DEFAULT_BOOL;
        v->u.b = p->cur.kind == TK_TRUE;
        opreg__lex_next(p);
        return;
    case TK_NONE:
        v->kind = OPREG_DEFAULT_NONE;
        opreg__lex_next(p);
        return;
    case TK_STRINGLITERAL: {
        opreg__token t = opreg__lex_next(p);
        v->kind = OPREG_DEFAULT_STRING;
        v->u.str.s = opreg__parse_string_literal(p, &t, &v->u.str.len);
        return;
    }
    case TK_IDENT: {
        opreg__token t = opreg__lex_next(p);
        const char *s = p->src + t.start;
        static const struct {
            const char *name;
            int value;
        } legacy[] = { { "float", 6 },   { "complex", 9 }, { "long", 4 },
                       { "strided", 0 }, { "Mean", 1 },    { "contiguous_format", 0 } };
        v->kind = OPREG_DEFAULT_INT;
        for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
            if (text_is(s, t.len, legacy[i].name)) {
                v->u.i = legacy[i].value;
                v->spelling = legacy[i].name;
                return;
            }
        }
        if (is_possibly_optional_scalar_type(real)) {
            const struct scalar_type_name *named = scalar_type_named(s, t.len);
            if (named) {
                v->u.i = named->value;
                v->spelling = named->name;
                return;
            }
        }
        /* PyTorch reports this one at the token after the name. */
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, p->cur.start, p->cur.len,
                          "invalid numeric default value");
    }
    default: {
        opreg__token minus = p->cur;
        bool neg = p->cur.kind == '-';
        if (neg) opreg__lex_next(p);
        if (p->cur.kind != TK_NUMBER) opreg__parse_expected(p, "number");
        opreg__token t = opreg__lex_next(p);
        char text[128];
        uint32_t n = t.len < sizeof text - 2 ? t.len : (uint32_t)sizeof text - 2;
        uint32_t at = 0;
        if (neg) text[at++] = '-';
        memcpy(text + at, p->src + t.start, n);
        at += n;
        text[at] = '\0';
        uint32_t from = neg ? minus.start : t.start;
        uint32_t span = t.start + t.len - from;
        if (kind == OPREG_TYPE_COMPLEX || memchr(text, 'j', at)) {
            text[at - 1] = '\0';
            v->kind = OPREG_DEFAULT_COMPLEX;
            if (!stod(text, &v->u.f))
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, from, span, "stod");
        } else if (kind == OPREG_TYPE_FLOAT || memchr(text, '.', at) || memchr(text, 'e', at)) {
            v->kind = OPREG_DEFAULT_FLOAT;
            if (!stod(text, &v->u.f))
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, from, span, "stod");
        } else {
            v->kind = OPREG_DEFAULT_INT;
            if (!stoll(text, &v->u.i))
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, from, span, "stoll");
        }
        return;
    }
    }
}

/* PyTorch's convertToList: every element must already be of the list's kind. */
static const opreg_default *make_list(opreg__parser *p, int kind, const opreg__token *at,
                                      opreg_default *items, size_t n) {
    opreg_default_kind want;
    const char *check;
    switch (kind) {
    case OPREG_TYPE_COMPLEX:
        want = OPREG_DEFAULT_COMPLEX, check = "isComplexDouble()";
        break;
    case OPREG_TYPE_FLOAT:
        want = OPREG_DEFAULT_FLOAT, check = "isDouble()";
        break;
    case OPREG_TYPE_INT:
        want = OPREG_DEFAULT_INT, check = "isInt()";
        break;
    case OPREG_TYPE_BOOL:
        want = OPREG_DEFAULT_BOOL, check = "isBool()";
        break;
    default:
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, at->start, at->len,
                          "lists are only supported for float, int and complex types");
    }
    for (size_t i = 0; i < n; i++) {
        if (items[i].kind != want)
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, at->start, at->len,
                              "%s INTERNAL ASSERT FAILED: element %zu of the default list does "
                              "not have the list's element type",
                              check, i);
    }
    opreg_default *v = new_value(p, OPREG_DEFAULT_LIST);
    v->u.list.items = items;
    v->u.list.n = n;
    return v;
}

static const opreg_default *constant_list(opreg__parser *p, const opreg_type *elem) {
    if (p->cur.kind != '[') opreg__parse_expected(p, "[");
    opreg__token open = opreg__lex_next(p);
    int kind = opreg__fake_kind(elem);
    opreg_default *items = NULL;
    size_t n = 0, cap = 0;
    if (p->cur.kind != ']') {
        do {
            if (n == cap) {
                cap = cap ? cap * 2 : 4;
                opreg_default *grown = opreg__arena_alloc(p, cap * sizeof *grown);
                if (n) memcpy(grown, items, n * sizeof *grown);
                items = grown;
            }
            single_constant(p, kind, elem, &items[n++]);
        } while (p->cur.kind == ',' && (opreg__lex_next(p), true));
    }
    if (p->cur.kind != ']') opreg__parse_expected(p, "]");
    opreg__lex_next(p);
    return make_list(p, kind, &open, items, n);
}

/* ---- devices ------------------------------------------------------------------------- */

static const char *const device_types[] = {
    "cpu",  "cuda", "ipu", "xpu",  "mkldnn", "opengl", "opencl", "ideep", "hip",  "ve",
    "fpga", "maia", "xla", "lazy", "vulkan", "mps",    "meta",   "hpu",   "mtia", "privateuseone",
};

/* c10::Device(string): `type[:index]`, the index without leading zeros and
 * stored in 8 bits, as c10's DeviceIndex is. */
static void parse_device(opreg__parser *p, const opreg__token *t, const char *s, size_t len,
                         opreg_default *v) {
    if (len == 0)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "Device string must not be empty");
    size_t name_len = 0;
    while (name_len < len && s[name_len] != ':') {
        char c = s[name_len];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) break;
        name_len++;
    }
    bool bad = name_len == 0 || (name_len < len && s[name_len] != ':');
    const char *digits = s + name_len + 1;
    size_t n_digits = name_len < len ? len - name_len - 1 : 0;
    if (!bad && name_len < len) {
        bad = n_digits == 0 || (n_digits > 1 && digits[0] == '0');
        for (size_t i = 0; i < n_digits && !bad; i++)
            bad = digits[i] < '0' || digits[i] > '9';
    }
    if (bad)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "Invalid device string: '%.*s'", (int)len, s);
    int64_t index = -1;
    if (name_len < len) {
        int64_t wide = 0;
        for (size_t i = 0; i < n_digits && wide <= INT32_MAX; i++)
            wide = wide * 10 + (digits[i] - '0');
        if (wide > INT32_MAX)
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                              "Could not parse device index '%.*s' in device string '%.*s'",
                              (int)n_digits, digits, (int)len, s);
        index = (int8_t)(uint8_t)(uint32_t)wide;
    }
    const char *type = NULL;
    for (size_t i = 0; i < sizeof device_types / sizeof device_types[0] && !type; i++)
        if (text_is(s, (uint32_t)name_len, device_types[i])) type = device_types[i];
    if (!type)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, "
                          "hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, "
                          "privateuseone device type at start of device string: %.*s",
                          (int)len, s);
    if (index < -1)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "Device index must be -1 or non-negative, got %d", (int)index);
    if (strcmp(type, "cpu") == 0 && index > 0)
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                          "CPU device index must be -1 or zero, got %d", (int)index);
    v->kind = OPREG_DEFAULT_DEVICE;
    v->u.str.s = type;
    v->u.str.len = strlen(type);
    v->device_index = index;
}

/* ---- the entry point ----------------------------------------------------------------- */

const opreg_default *opreg__parse_default(opreg__parser *p, const opreg_type *type) {
    opreg__token at = p->cur;
    int kind = opreg__fake_kind(type);
    switch (kind) {
    case OPREG_TYPE_TENSOR:
    case OPREG_TYPE_GENERATOR:
    case OPREG_TYPE_QUANTIZER:
        if (p->cur.kind != TK_NONE) opreg__parse_expected(p, "None");
        opreg__lex_next(p);
        return new_value(p, OPREG_DEFAULT_NONE);
    case OPREG_TYPE_STR:
    case OPREG_TYPE_OPTIONAL:
    case OPREG_TYPE_SCALAR:
    case OPREG_TYPE_INT:
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_FLOAT:
    case OPREG_TYPE_COMPLEX: {
        opreg_default *v = new_value(p, OPREG_DEFAULT_NONE);
        single_constant(p, kind, type, v);
        return v;
    }
    case OPREG_TYPE_DEVICE: {
        if (p->cur.kind != TK_STRINGLITERAL) opreg__parse_expected(p, "string_literal");
        opreg__token t = opreg__lex_next(p);
        size_t len;
        const char *s = opreg__parse_string_literal(p, &t, &len);
        opreg_default *v = new_value(p, OPREG_DEFAULT_DEVICE);
        parse_device(p, &t, s, len, v);
        return v;
    }
    case OPREG_TYPE_LIST: {
        const opreg_type *elem = type->elems[0];
        if (p->cur.kind == TK_IDENT) opreg__parse_expected(p, "None");
        if (type->list_size >= 0 && p->cur.kind != '[') {
            if (type->list_size > MAX_REPEATED_DEFAULT)
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, at.start, at.len,
                                  "a default repeated %lld times is more than %d elements",
                                  (long long)type->list_size, MAX_REPEATED_DEFAULT);
            int ekind = opreg__fake_kind(elem);
            opreg_default one;
            single_constant(p, ekind, elem, &one);
            size_t n = (size_t)type->list_size;
            opreg_default *items = opreg__arena_alloc(p, (n ? n : 1) * sizeof *items);
            for (size_t i = 0; i < n; i++)
                items[i] = one;
            return make_list(p, ekind, &at, items, n);
        }
        return constant_list(p, elem);
    }
    default:
        opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, at.start, at.len,
                          "unexpected type, file a bug report");
    }
}

/* ---- string literals ------------------------------------------------------------------ */

static bool is_octal(char c) {
    return c >= '0' && c <= '7';
}

/* PyTorch's parseStringLiteral: \\ \' \" \a \b \f \n \t \v, backslash-newline
 * (kept as a newline) and three-digit octal; \x, \u and \U are refused, and
 * anything else (\r included) is an ill-formed octal escape. */
const char *opreg__parse_string_literal(opreg__parser *p, const opreg__token *t, size_t *len) {
    const char *s = p->src + t->start;
    size_t q = (t->len >= 6 && s[1] == s[0] && s[2] == s[0]) ? 3 : 1;
    const char *in = s + q;
    size_t n = t->len - 2 * q;
    char *out = opreg__arena_alloc(p, n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        char e = i + 1 < n ? in[i + 1] : '\0';
        switch (e) {
        case '\\':
        case '\'':
        case '"':
        case '\n':
            c = e;
            break;
        case 'a':
            c = '\a';
            break;
        case 'b':
            c = '\b';
            break;
        case 'f':
            c = '\f';
            break;
        case 'n':
            c = '\n';
            break;
        case 'v':
            c = '\v';
            break;
        case 't':
            c = '\t';
            break;
        case 'x':
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                              "unsupported hex specifier");
        case 'u':
        case 'U':
            opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                              "unsupported unicode specifier");
        default:
            /* Three octal digits of a byte: \400 and up are ill formed too. */
            if (i + 3 >= n || !is_octal(in[i + 1]) || !is_octal(in[i + 2]) ||
                !is_octal(in[i + 3]) || in[i + 1] > '3')
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, t->start, t->len,
                                  " ill formed octal specifier");
            c = (char)((in[i + 1] - '0') * 64 + (in[i + 2] - '0') * 8 + (in[i + 3] - '0'));
            out[o++] = c;
            i += 3;
            continue;
        }
        out[o++] = c;
        i++;
    }
    out[o] = '\0';
    *len = o;
    return out;
}
