/* Every construct of the schema language (schema-language.md §1-§7, §11),
 * checked through the accessors of opreg/schema.h, and both printers.
 *
 * Type trees, alias annotations and default values are rendered into short
 * descriptions so that each case is one table row:
 *   types    Tensor, int, var t, class <name>, List(T), List[N](T),
 *            Optional(T), Tuple(A, B), Dict(K, V), Union(A, B), Future(T),
 *            RRef(T), Await(T); an annotation follows its node as
 *            `(before|sets[!] -> after|sets)`, plus `F` for the `!` shorthand.
 *   defaults None, True, False, int:N, float:%.17g, complex:%.17gj,
 *            str:<bytes>, device:<type>/<index>, [item,item]. */
#include "test.h"

#include "opreg/schema.h"

#include <stdarg.h>
#include <stdbool.h>

#define TV OPREG_SCHEMA_ALLOW_TYPEVARS

/* ---- helpers ------------------------------------------------------------- */

struct sbuf {
    char buf[8192];
    size_t n;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) {
    if (b->n >= sizeof b->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->buf + b->n, sizeof b->buf - b->n, fmt, ap);
    va_end(ap);
    if (k > 0) b->n += (size_t)k;
    if (b->n >= sizeof b->buf) b->n = sizeof b->buf - 1;
}

static void sb_bytes(struct sbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\')
            sb_printf(b, "\\\\");
        else if (c < 0x20 || c >= 0x7f)
            sb_printf(b, "\\x%02x", c);
        else
            sb_printf(b, "%c", c);
    }
}

/* Parse text (from an exact-size heap copy); report and return NULL on failure. */
static opreg_schema *parse_or_report(const char *text, unsigned flags) {
    size_t len = strlen(text);
    char *buf = malloc(len ? len : 1);
    if (!buf) abort();
    memcpy(buf, text, len);
    opreg_schema *s = NULL;
    opreg_schema_error err;
    memset(&err, 0, sizeof err);
    opreg_status st = opreg_schema_parse(&s, buf, len, flags, &err);
    free(buf);
    if (st != OPREG_OK || !s) {
        fprintf(stderr, "  parse(\"%s\", flags %u) failed: %s: %s (line %zu, column %zu)\n", text,
                flags, opreg_status_name(st), err.message, err.line, err.column);
        test_current_failed = 1;
        return NULL;
    }
    return s;
}

static void mismatch(const char *text, const char *what, const char *expected, const char *actual) {
    fprintf(stderr, "  input    \"%s\"\n  check    %s\n  expected \"%s\"\n  actual   \"%s\"\n",
            text, what, expected, actual ? actual : "(null)");
    test_current_failed = 1;
}

static const char *const leaf_names[] = {
    "Tensor",  "int",       "SymInt",       "SymBool",     "float",    "complex",
    "bool",    "str",       "Scalar",       "ScalarType",  "Layout",   "MemoryFormat",
    "Device",  "Generator", "Storage",      "Stream",      "QScheme",  "Quantizer",
    "Capsule", "Any",       "AnyClassType", "AnyEnumType", "NoneType",
};

static void desc_alias(struct sbuf *b, const opreg_alias *a) {
    if (!a) return;
    sb_printf(b, "(");
    for (size_t i = 0; i < opreg_alias_num_before(a); i++) {
        const char *name = opreg_alias_before(a, i);
        sb_printf(b, "%s%s", i ? "|" : "", name ? name : "(null)");
    }
    if (opreg_alias_before(a, opreg_alias_num_before(a)) != NULL)
        sb_printf(b, "<before out of range>");
    sb_printf(b, "%s -> ", opreg_alias_is_write(a) ? "!" : "");
    for (size_t i = 0; i < opreg_alias_num_after(a); i++) {
        const char *name = opreg_alias_after(a, i);
        sb_printf(b, "%s%s", i ? "|" : "", name ? name : "(null)");
    }
    if (opreg_alias_after(a, opreg_alias_num_after(a)) != NULL)
        sb_printf(b, "<after out of range>");
    sb_printf(b, ")%s", opreg_alias_is_fresh(a) ? "F" : "");
}

static void desc_type(struct sbuf *b, const opreg_type *t) {
    if (!t) {
        sb_printf(b, "(null)");
        return;
    }
    opreg_type_kind k = opreg_type_get_kind(t);
    size_t n = opreg_type_num_elements(t);
    const char *composite = NULL;
    switch (k) {
    case OPREG_TYPE_LIST:
        composite = "List";
        break;
    case OPREG_TYPE_OPTIONAL:
        composite = "Optional";
        break;
    case OPREG_TYPE_TUPLE:
        composite = "Tuple";
        break;
    case OPREG_TYPE_DICT:
        composite = "Dict";
        break;
    case OPREG_TYPE_UNION:
        composite = "Union";
        break;
    case OPREG_TYPE_FUTURE:
        composite = "Future";
        break;
    case OPREG_TYPE_RREF:
        composite = "RRef";
        break;
    case OPREG_TYPE_AWAIT:
        composite = "Await";
        break;
    case OPREG_TYPE_VAR:
        sb_printf(b, "var %s", opreg_type_name(t) ? opreg_type_name(t) : "(null)");
        break;
    case OPREG_TYPE_CLASS:
        sb_printf(b, "class %s", opreg_type_name(t) ? opreg_type_name(t) : "(null)");
        break;
    default:
        if ((int)k >= 0 && (size_t)k < sizeof leaf_names / sizeof leaf_names[0])
            sb_printf(b, "%s", leaf_names[k]);
        else
            sb_printf(b, "<kind %d>", (int)k);
        break;
    }
    if (composite) {
        sb_printf(b, "%s", composite);
        if (k == OPREG_TYPE_LIST && opreg_type_list_size(t) >= 0)
            sb_printf(b, "[%" PRId64 "]", opreg_type_list_size(t));
        sb_printf(b, "(");
        for (size_t i = 0; i < n; i++) {
            if (i) sb_printf(b, ", ");
            desc_type(b, opreg_type_element(t, i));
        }
        sb_printf(b, ")");
        if (opreg_type_element(t, n) != NULL) sb_printf(b, "<element out of range>");
    } else if (n != 0) {
        sb_printf(b, "<leaf with %zu elements>", n);
    }
    if (k != OPREG_TYPE_LIST && opreg_type_list_size(t) != -1)
        sb_printf(b, "<list size on non-list>");
    desc_alias(b, opreg_type_alias(t));
}

static void desc_default(struct sbuf *b, const opreg_default *d) {
    if (!d) {
        sb_printf(b, "-");
        return;
    }
    size_t len = 0;
    const char *s;
    int64_t index = -2;
    switch (opreg_default_get_kind(d)) {
    case OPREG_DEFAULT_NONE:
        sb_printf(b, "None");
        break;
    case OPREG_DEFAULT_BOOL:
        sb_printf(b, "%s", opreg_default_bool(d) ? "True" : "False");
        break;
    case OPREG_DEFAULT_INT:
        sb_printf(b, "int:%" PRId64, opreg_default_int(d));
        break;
    case OPREG_DEFAULT_FLOAT:
        sb_printf(b, "float:%.17g", opreg_default_float(d));
        break;
    case OPREG_DEFAULT_COMPLEX:
        sb_printf(b, "complex:%.17gj", opreg_default_float(d));
        break;
    case OPREG_DEFAULT_STRING:
        s = opreg_default_string(d, &len);
        sb_printf(b, "str:");
        if (s) sb_bytes(b, s, len);
        if (s && s[len] != '\0') sb_printf(b, "<not NUL-terminated>");
        break;
    case OPREG_DEFAULT_DEVICE:
        s = opreg_default_device(d, &index);
        sb_printf(b, "device:%s/%" PRId64, s ? s : "(null)", index);
        break;
    case OPREG_DEFAULT_LIST:
        sb_printf(b, "[");
        for (size_t i = 0; i < opreg_default_list_size(d); i++) {
            if (i) sb_printf(b, ",");
            desc_default(b, opreg_default_list_item(d, i));
        }
        sb_printf(b, "]");
        if (opreg_default_list_item(d, opreg_default_list_size(d)) != NULL)
            sb_printf(b, "<item out of range>");
        break;
    default:
        sb_printf(b, "<kind %d>", (int)opreg_default_get_kind(d));
    }
}

/* ---- types and alias annotations ----------------------------------------- */

enum { ARG = 0, RET = 1 };

struct type_case {
    const char *text;
    unsigned flags;
    int which; /* ARG or RET */
    size_t index;
    const char *expect;
};

/* clang-format off */
static const struct type_case type_cases[] = {
    {"foo(Tensor x) -> Tensor", 0, ARG, 0, "Tensor"},
    {"foo(Tensor x) -> Tensor", 0, RET, 0, "Tensor"},
    /* §4 alias annotations */
    {"foo(Tensor(a!) x) -> Tensor(a!)", 0, ARG, 0, "Tensor(a! -> a)"},
    {"foo(Tensor(a!) x) -> Tensor(a!)", 0, RET, 0, "Tensor(a! -> a)"},
    {"foo(Tensor(a) x) -> Tensor(a)", 0, ARG, 0, "Tensor(a -> a)"},
    {"foo(Tensor(a -> *) x) -> ()", 0, ARG, 0, "Tensor(a -> *)"},
    {"foo(Tensor(a! -> *) x) -> Tensor(*)", 0, ARG, 0, "Tensor(a! -> *)"},
    {"foo(Tensor(a! -> *) x) -> Tensor(*)", 0, RET, 0, "Tensor(* -> *)"},
    {"foo(Tensor(a! -> a|b) x) -> ()", 0, ARG, 0, "Tensor(a! -> a|b)"},
    {"foo(Tensor(a|b) x) -> Tensor(a|b)", 0, ARG, 0, "Tensor(a|b -> a|b)"},
    {"foo(Tensor(a|b|c) x) -> ()", 0, ARG, 0, "Tensor(a|b|c -> a|b|c)"},
    {"foo(Tensor(a|b -> c|d) x) -> ()", 0, ARG, 0, "Tensor(a|b -> c|d)"},
    {"foo(Tensor(a|b!) x) -> ()", 0, ARG, 0, "Tensor(a|b! -> a|b)"},
    {"foo(Tensor(*) x) -> Tensor(*)", 0, ARG, 0, "Tensor(* -> *)"},
    {"foo(Tensor(a|*) x) -> ()", 0, ARG, 0, "Tensor(a|* -> a|*)"},
    {"foo(Tensor(A) x, Tensor(ab!) y, Tensor(a0!) z) -> ()", 0, ARG, 0, "Tensor(A -> A)"},
    {"foo(Tensor(A) x, Tensor(ab!) y, Tensor(a0!) z) -> ()", 0, ARG, 1, "Tensor(ab! -> ab)"},
    {"foo(Tensor(A) x, Tensor(ab!) y, Tensor(a0!) z) -> ()", 0, ARG, 2, "Tensor(a0! -> a0)"},
    {"foo(Tensor(a!->b) x) -> ()", 0, ARG, 0, "Tensor(a! -> b)"},
    {"foo(Tensor (b!) z) -> ()", 0, ARG, 0, "Tensor(b! -> b)"},
    {"foo(Tensor(a) x) -> Tensor(b)", 0, RET, 0, "Tensor(b -> b)"},
    /* the `!` shorthand: a fresh set $N, written, no after-set */
    {"foo(Tensor! x, Tensor! y) -> (Tensor, Tensor)", 0, ARG, 0, "Tensor($0! -> )F"},
    {"foo(Tensor! x, Tensor! y) -> (Tensor, Tensor)", 0, ARG, 1, "Tensor($1! -> )F"},
    {"foo(Tensor![] x) -> ()", 0, ARG, 0, "List(Tensor($0! -> )F)"},
    {"foo(Tensor x, *, Tensor! out) -> Tensor", 0, ARG, 1, "Tensor($0! -> )F"},
    {"foo(Tensor[]! x, Tensor! y) -> ()", 0, ARG, 0, "List(Tensor)($0! -> )F"},
    {"foo(Tensor[]! x, Tensor! y) -> ()", 0, ARG, 1, "Tensor($1! -> )F"},
    /* annotations on elements and on lists */
    {"foo(Tensor(a!)[] x) -> ()", 0, ARG, 0, "List(Tensor(a! -> a))"},
    {"foo(Tensor(a)[] x) -> Tensor(a)[]", 0, RET, 0, "List(Tensor(a -> a))"},
    {"foo(Tensor[](a!) x) -> ()", 0, ARG, 0, "List(Tensor)(a! -> a)"},
    {"foo(Tensor x) -> Tensor[](a)", 0, RET, 0, "List(Tensor)(a -> a)"},
    {"foo(Tensor(b|c)[](a!) x) -> ()", 0, ARG, 0, "List(Tensor(b|c -> b|c))(a! -> a)"},
    {"foo(Tensor(b -> b|c)[](a!) x) -> ()", 0, ARG, 0, "List(Tensor(b -> b|c))(a! -> a)"},
    {"foo(Tensor(a!)? x) -> ()", 0, ARG, 0, "Optional(Tensor(a! -> a))"},
    {"foo(Tensor(a!)?[] x) -> ()", 0, ARG, 0, "List(Optional(Tensor(a! -> a)))"},
    {"foo(Tensor(a!)[]? x) -> ()", 0, ARG, 0, "Optional(List(Tensor(a! -> a)))"},
    {"foo(Tensor[](a!)? x) -> ()", 0, ARG, 0, "Optional(List(Tensor)(a! -> a))"},
    {"foo(Tensor(a)[](b)[](c) x) -> ()", 0, ARG, 0, "List(List(Tensor(a -> a))(b -> b))(c -> c)"},
    /* annotations on other atoms */
    {"foo(int(a) x) -> int(a)", 0, ARG, 0, "int(a -> a)"},
    {"foo(int[](a!) x) -> ()", 0, ARG, 0, "List(int)(a! -> a)"},
    {"foo(Any(a) x) -> Any(a)", 0, ARG, 0, "Any(a -> a)"},
    {"foo(Dict(str, t)(a!) d) -> ()", TV, ARG, 0, "Dict(str, var t)(a! -> a)"},
    {"foo(t[](a!) l, t(b -> *) el) -> t[](a!)", TV, ARG, 0, "List(var t)(a! -> a)"},
    {"foo(t[](a!) l, t(b -> *) el) -> t[](a!)", TV, ARG, 1, "var t(b -> *)"},
    {"foo(t[](a!) l, t(b -> *) el) -> t[](a!)", TV, RET, 0, "List(var t)(a! -> a)"},
    {"foo(t(a) x) -> t(a)", TV, RET, 0, "var t(a -> a)"},
    /* §3 structural types */
    {"foo(Dict(str, Tensor) d) -> Dict(str, Tensor)", 0, ARG, 0, "Dict(str, Tensor)"},
    {"foo(Dict(int, Tensor[]) d) -> ()", 0, ARG, 0, "Dict(int, List(Tensor))"},
    {"foo(Dict(str, Tensor)? d=None) -> ()", 0, ARG, 0, "Optional(Dict(str, Tensor))"},
    {"foo(Dict(str, Dict(int, str)?[])[] a) -> ()", 0, ARG, 0, "List(Dict(str, List(Optional(Dict(int, str)))))"},
    {"foo((int, float) x) -> ((int, float))", 0, ARG, 0, "Tuple(int, float)"},
    {"foo((int, float) x) -> ((int, float))", 0, RET, 0, "Tuple(int, float)"},
    {"foo((int, float) x) -> (int, float)", 0, RET, 1, "float"},
    {"foo((Tensor, Tensor)[] x) -> ()", 0, ARG, 0, "List(Tuple(Tensor, Tensor))"},
    {"foo(() x) -> (())", 0, ARG, 0, "Tuple()"},
    {"foo(() x) -> (())", 0, RET, 0, "Tuple()"},
    {"foo(int x) -> ((), int)", 0, RET, 0, "Tuple()"},
    {"foo((int) t) -> (int)", 0, ARG, 0, "Tuple(int)"},
    {"foo((int) t) -> (int)", 0, RET, 0, "int"},
    {"foo() -> ((str, t)[])", TV, RET, 0, "List(Tuple(str, var t))"},
    {"foo(Future(int) f) -> Future(Tensor[])", 0, ARG, 0, "Future(int)"},
    {"foo(Future(int) f) -> Future(Tensor[])", 0, RET, 0, "Future(List(Tensor))"},
    {"foo(Await(t) a) -> t", TV, ARG, 0, "Await(var t)"},
    {"foo(Await(Tensor) a) -> ()", 0, ARG, 0, "Await(Tensor)"},
    {"foo(RRef(t) r) -> t", TV, ARG, 0, "RRef(var t)"},
    {"foo(Union(int, str) u) -> Union(int, str, Tensor)", 0, ARG, 0, "Union(int, str)"},
    {"foo(Union(int, str) u) -> Union(int, str, Tensor)", 0, RET, 0, "Union(int, str, Tensor)"},
    {"foo(Union(int, str)? u) -> ()", 0, ARG, 0, "Optional(Union(int, str))"},
    /* aliases of other types */
    {"foo(Dimname d, Dimname[] ds, Dimname[1]? dd) -> ()", 0, ARG, 0, "str"},
    {"foo(Dimname d, Dimname[] ds, Dimname[1]? dd) -> ()", 0, ARG, 1, "List(str)"},
    {"foo(Dimname d, Dimname[] ds, Dimname[1]? dd) -> ()", 0, ARG, 2, "Optional(List[1](str))"},
    {"foo(ConstQuantizerPtr q, DeviceIndex d) -> ()", 0, ARG, 0, "int"},
    {"foo(ConstQuantizerPtr q, DeviceIndex d) -> ()", 0, ARG, 1, "int"},
    {"foo(None x) -> None", 0, ARG, 0, "NoneType"},
    {"foo(None x) -> None", 0, RET, 0, "NoneType"},
    /* §2 list, sized list and optional suffixes */
    {"foo(int?[] x) -> ()", 0, ARG, 0, "List(Optional(int))"},
    {"foo(int[][] x) -> ()", 0, ARG, 0, "List(List(int))"},
    {"foo(int[][4] x) -> ()", 0, ARG, 0, "List[4](List(int))"},
    {"foo(int?[2] x) -> ()", 0, ARG, 0, "List[2](Optional(int))"},
    {"foo(int[2]? x=None) -> ()", 0, ARG, 0, "Optional(List[2](int))"},
    {"foo(int[4](a) x) -> ()", 0, ARG, 0, "List[4](int)(a -> a)"},
    {"foo(Tensor[2](a!) x) -> ()", 0, ARG, 0, "List[2](Tensor)(a! -> a)"},
    {"foo(bool[0] a) -> bool[0]", 0, ARG, 0, "List[0](bool)"},
    {"foo(bool[0] a) -> bool[0]", 0, RET, 0, "List[0](bool)"},
    {"foo(Tensor?? x) -> ()", 0, ARG, 0, "Optional(Tensor)"},
    {"foo(int?? x=None) -> ()", 0, ARG, 0, "Optional(int)"},
    {"foo(Tensor?[]? x=None) -> ()", 0, ARG, 0, "Optional(List(Optional(Tensor)))"},
    {"foo(SymInt[] z, SymInt[]? v=None) -> SymInt[]", 0, ARG, 1, "Optional(List(SymInt))"},
    /* custom classes and type variables */
    {"foo(__torch__.torch.classes.ns.Cls c) -> __torch__.torch.classes.ns.Cls", 0, ARG, 0, "class __torch__.torch.classes.ns.Cls"},
    {"foo(__torch__.torch.classes.ns.Cls c) -> __torch__.torch.classes.ns.Cls", 0, RET, 0, "class __torch__.torch.classes.ns.Cls"},
    {"foo(t x) -> t", TV, ARG, 0, "var t"},
    {"foo(double x, int64_t y, tensor z) -> ()", TV, ARG, 0, "var double"},
    {"foo(double x, int64_t y, tensor z) -> ()", TV, ARG, 1, "var int64_t"},
    {"foo(double x, int64_t y, tensor z) -> ()", TV, ARG, 2, "var tensor"},
    {"aten::foo(t x) -> t", 0, ARG, 0, "var t"},
    {"prim::foo(t[] x) -> t", 0, ARG, 0, "List(var t)"},
    {"aten::foo(double x) -> ()", 0, ARG, 0, "var double"},
    /* §1 whitespace, comments, newlines inside parentheses */
    {"foo(Tensor x,\n int y) -> ()", 0, ARG, 1, "int"},
    {"foo(Tensor x, # comment\n int y) -> ()", 0, ARG, 1, "int"},
    {"foo(Tensor\tx)\t->\tTensor", 0, RET, 0, "Tensor"},
    {"foo(Tensor\r\n x) -> Tensor\r\n", 0, ARG, 0, "Tensor"},
    {"foo(Tensor x) -> \\\n Tensor", 0, RET, 0, "Tensor"},
    {"foo(Tensor x) -> Tensor\n", 0, RET, 0, "Tensor"},
    {"foo(Tensor x) -> Tensor # hi", 0, RET, 0, "Tensor"},
};
/* clang-format on */

TEST(types_and_aliases) {
    for (size_t i = 0; i < sizeof type_cases / sizeof type_cases[0]; i++) {
        const struct type_case *c = &type_cases[i];
        opreg_schema *s = parse_or_report(c->text, c->flags);
        if (!s) continue;
        const opreg_argument *a =
            c->which == ARG ? opreg_schema_argument(s, c->index) : opreg_schema_return(s, c->index);
        struct sbuf b = { .n = 0 };
        if (a)
            desc_type(&b, opreg_argument_type(a));
        else
            sb_printf(&b, "(no %s %zu)", c->which == ARG ? "argument" : "return", c->index);
        if (strcmp(b.buf, c->expect) != 0) {
            char what[64];
            snprintf(what, sizeof what, "type of %s %zu", c->which == ARG ? "argument" : "return",
                     c->index);
            mismatch(c->text, what, c->expect, b.buf);
        }
        opreg_schema_free(s);
    }
}

/* Every leaf type: its kind, no elements, no annotation, its spelling. */
TEST(leaf_types) {
    static const char *text =
        "foo(Tensor a, int b, SymInt c, SymBool d, float e, complex f, bool g, str h, Scalar i, "
        "ScalarType j, Layout k, MemoryFormat l, Device m, Generator n, Storage o, Stream p, "
        "QScheme q, Quantizer r, Capsule s, Any t, AnyClassType u, AnyEnumType v, NoneType w) "
        "-> ()";
    opreg_schema *s = parse_or_report(text, 0);
    CHECK(s != NULL);
    CHECK_EQ_INT(opreg_schema_num_arguments(s), 23);
    for (size_t i = 0; i < 23; i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        CHECK(a != NULL);
        const opreg_type *t = opreg_argument_type(a);
        CHECK(t != NULL);
        char expect_name[2] = { (char)('a' + i), '\0' };
        CHECK_EQ_STR(opreg_argument_name(a), expect_name);
        CHECK_EQ_INT(opreg_type_get_kind(t), (opreg_type_kind)i);
        CHECK_EQ_INT(opreg_type_num_elements(t), 0);
        CHECK(opreg_type_element(t, 0) == NULL);
        CHECK_EQ_INT(opreg_type_list_size(t), -1);
        CHECK(opreg_type_alias(t) == NULL);
        CHECK_EQ_STR(opreg_type_name(t), leaf_names[i]);
        CHECK(opreg_argument_default(a) == NULL);
        CHECK(!opreg_argument_is_kwarg_only(a));
        CHECK(!opreg_argument_is_write(a));
        CHECK(!opreg_argument_is_out(a));
    }
    CHECK(opreg_schema_argument(s, 23) == NULL);
    CHECK(opreg_schema_return(s, 0) == NULL);
    opreg_schema_free(s);
}

/* Composite kinds have no spelling; elements, list sizes and out-of-range. */
TEST(composite_types) {
    opreg_schema *s = parse_or_report(
        "foo(int[3] a, Tensor? b, (int, str) c, Dict(str, int) d, Union(int, str) e, "
        "Future(int) f) -> t",
        TV);
    CHECK(s != NULL);
    static const opreg_type_kind kinds[] = {
        OPREG_TYPE_LIST, OPREG_TYPE_OPTIONAL, OPREG_TYPE_TUPLE,
        OPREG_TYPE_DICT, OPREG_TYPE_UNION,    OPREG_TYPE_FUTURE
    };
    static const size_t counts[] = { 1, 1, 2, 2, 2, 1 };
    for (size_t i = 0; i < 6; i++) {
        const opreg_type *t = opreg_argument_type(opreg_schema_argument(s, i));
        CHECK_EQ_INT(opreg_type_get_kind(t), kinds[i]);
        CHECK(opreg_type_name(t) == NULL);
        CHECK_EQ_INT(opreg_type_num_elements(t), counts[i]);
        CHECK(opreg_type_element(t, counts[i]) == NULL);
        CHECK(opreg_type_element(t, (size_t)-1) == NULL);
        CHECK_EQ_INT(opreg_type_list_size(t), i == 0 ? 3 : -1);
    }
    const opreg_type *d = opreg_argument_type(opreg_schema_argument(s, 3));
    CHECK_EQ_INT(opreg_type_get_kind(opreg_type_element(d, 0)), OPREG_TYPE_STR);
    CHECK_EQ_INT(opreg_type_get_kind(opreg_type_element(d, 1)), OPREG_TYPE_INT);
    const opreg_type *r = opreg_argument_type(opreg_schema_return(s, 0));
    CHECK_EQ_INT(opreg_type_get_kind(r), OPREG_TYPE_VAR);
    CHECK_EQ_STR(opreg_type_name(r), "t");
    opreg_schema_free(s);
}

/* ---- schema-level properties --------------------------------------------- */

struct schema_case {
    const char *text;
    unsigned flags;
    const char *ns, *name, *overload;
    size_t nargs, nrets;
    bool vararg, varret, is_mutable, typevars;
};

/* clang-format off */
static const struct schema_case schema_cases[] = {
    {"foo(Tensor x) -> Tensor", 0, "", "foo", "", 1, 1, false, false, false, false},
    {"ns::foo.overload(Tensor x) -> Tensor", 0, "ns", "foo", "overload", 1, 1, false, false, false, false},
    {"_C::rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()", 0, "_C", "rms_norm", "", 4, 0, false, false, true, false},
    {"aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", 0, "aten", "add", "Tensor", 3, 1, false, false, false, false},
    {"ns: :foo(Tensor x) -> Tensor", 0, "ns", "foo", "", 1, 1, false, false, false, false},
    {"ns :: foo . bar (Tensor x) -> Tensor", 0, "ns", "foo", "bar", 1, 1, false, false, false, false},
    {"foo._bar(Tensor x) -> Tensor", 0, "", "foo", "_bar", 1, 1, false, false, false, false},
    {"from.lambda(Tensor self, Tensor _, Tensor _0, Tensor input, Tensor None_, Tensor format) -> Tensor out", 0, "", "from", "lambda", 6, 1, false, false, false, false},
    {"foo() -> ()", 0, "", "foo", "", 0, 0, false, false, false, false},
    {"foo() -> ...", 0, "", "foo", "", 0, 0, false, true, false, false},
    {"foo(...) -> ...", 0, "", "foo", "", 0, 0, true, true, false, false},
    {"foo(int a, ...) -> (int, ...)", 0, "", "foo", "", 1, 1, true, true, false, false},
    {"foo(int a, ...) -> (...)", 0, "", "foo", "", 1, 0, true, true, false, false},
    {"foo(...) -> (int, ...)", 0, "", "foo", "", 0, 1, true, true, false, false},
    {"foo(*, int y, ...) -> ()", 0, "", "foo", "", 1, 0, true, false, false, false},
    {"foo() -> (Tensor)", 0, "", "foo", "", 0, 1, false, false, false, false},
    {"foo() -> (Tensor a, Tensor b)", 0, "", "foo", "", 0, 2, false, false, false, false},
    {"foo() -> ((int, int))", 0, "", "foo", "", 0, 1, false, false, false, false},
    {"foo(int x, *) -> ()", 0, "", "foo", "", 1, 0, false, false, false, false},
    {"foo(*) -> ()", 0, "", "foo", "", 0, 0, false, false, false, false},
    {"foo(*, *, int y) -> ()", 0, "", "foo", "", 1, 0, false, false, false, false},
    {"foo(int x, int x) -> ()", 0, "", "foo", "", 2, 0, false, false, false, false},
    {"foo(int x=1, *, int y) -> ()", 0, "", "foo", "", 2, 0, false, false, false, false},
    {"foo(int x=1, int[] y) -> ()", 0, "", "foo", "", 2, 0, false, false, false, false},
    {"foo(int x=1, Tensor[] y, SymInt[2] z, *, int k, int w=2, Tensor v) -> ()", 0, "", "foo", "", 6, 0, false, false, false, false},
    {"   foo(  Tensor   x ,int  y  =  1 )   ->   (  Tensor ,  int  )   ", 0, "", "foo", "", 2, 2, false, false, false, false},
    {"foo(Tensor x) -> Tensor # trailing comment", 0, "", "foo", "", 1, 1, false, false, false, false},
    /* is_mutable looks at arguments only */
    {"foo(Tensor x) -> Tensor(a!)", 0, "", "foo", "", 1, 1, false, false, false, false},
    {"foo(Tensor(a) x) -> Tensor(a)", 0, "", "foo", "", 1, 1, false, false, false, false},
    {"foo(Tensor(a -> *) x) -> ()", 0, "", "foo", "", 1, 0, false, false, false, false},
    {"foo(Tensor(a!)[] x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(Tensor(a!)?[] x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(Tensor(a!)? x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(Tensor[](a!) x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(Tensor(b|c)[](a!) x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(int(a!) x) -> ()", 0, "", "foo", "", 1, 0, false, false, true, false},
    {"foo(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", 0, "", "foo", "", 2, 1, false, false, true, false},
    /* type variables anywhere, returns included */
    {"foo(t x) -> t", TV, "", "foo", "", 1, 1, false, false, false, true},
    {"foo() -> t", TV, "", "foo", "", 0, 1, false, false, false, true},
    {"foo(Dict(str, t) d) -> ()", TV, "", "foo", "", 1, 0, false, false, false, true},
    {"foo(Tensor?[] x, (int, t[]) y) -> ()", TV, "", "foo", "", 2, 0, false, false, false, true},
    {"foo(Tensor x) -> Tensor", TV, "", "foo", "", 1, 1, false, false, false, false},
    {"aten::foo(t x) -> ()", 0, "aten", "foo", "", 1, 0, false, false, false, true},
    {"foo(__torch__.torch.classes.ns.Cls c) -> ()", 0, "", "foo", "", 1, 0, false, false, false, false},
};
/* clang-format on */

TEST(schema_properties) {
    for (size_t i = 0; i < sizeof schema_cases / sizeof schema_cases[0]; i++) {
        const struct schema_case *c = &schema_cases[i];
        opreg_schema *s = parse_or_report(c->text, c->flags);
        if (!s) continue;
        char exp[512], act[512];
        snprintf(exp, sizeof exp,
                 "ns=%s name=%s ov=%s args=%zu rets=%zu vararg=%d varret=%d mut=%d tv=%d", c->ns,
                 c->name, c->overload, c->nargs, c->nrets, c->vararg, c->varret, c->is_mutable,
                 c->typevars);
        const char *ns = opreg_schema_namespace(s), *nm = opreg_schema_name(s),
                   *ov = opreg_schema_overload(s);
        snprintf(act, sizeof act,
                 "ns=%s name=%s ov=%s args=%zu rets=%zu vararg=%d varret=%d mut=%d tv=%d",
                 ns ? ns : "(null)", nm ? nm : "(null)", ov ? ov : "(null)",
                 opreg_schema_num_arguments(s), opreg_schema_num_returns(s),
                 opreg_schema_is_vararg(s), opreg_schema_is_varret(s), opreg_schema_is_mutable(s),
                 opreg_schema_has_type_variables(s));
        if (strcmp(exp, act) != 0) mismatch(c->text, "schema properties", exp, act);
        if (opreg_schema_argument(s, opreg_schema_num_arguments(s)) != NULL ||
            opreg_schema_return(s, opreg_schema_num_returns(s)) != NULL)
            mismatch(c->text, "out-of-range argument/return", "NULL", "non-NULL");
        opreg_schema_free(s);
    }
}

/* ---- arguments: names, kwarg-only, write, out ---------------------------- */

struct arg_case {
    const char *text;
    int which;
    size_t index;
    const char *name;
    bool kwarg_only, is_write, is_out;
};

/* clang-format off */
static const struct arg_case arg_cases[] = {
    {"foo.Tensor_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", ARG, 0, "self", false, false, false},
    {"foo.Tensor_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", ARG, 1, "out", true, true, true},
    {"foo.Tensor_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", RET, 0, "", false, true, false},
    {"foo(Tensor(a!) x) -> ()", ARG, 0, "x", false, true, false},
    {"foo(Tensor(a) x) -> ()", ARG, 0, "x", false, false, false},
    {"foo(*, Tensor! out) -> ()", ARG, 0, "out", true, true, true},
    {"foo(*, Tensor(a!)? out=None) -> ()", ARG, 0, "out", true, true, true},
    {"foo(*, Tensor(a!)[] outs) -> ()", ARG, 0, "outs", true, true, true},
    {"foo(*, Tensor![] outs) -> ()", ARG, 0, "outs", true, true, true},
    {"foo(*, Tensor[]! outs) -> ()", ARG, 0, "outs", true, true, true},
    {"foo(*, Tensor[](a!) outs) -> ()", ARG, 0, "outs", true, true, true},
    {"foo(*, Tensor(a!)?[] outs) -> ()", ARG, 0, "outs", true, true, true},
    {"foo(*, Tensor(b|c)[](a!) x) -> ()", ARG, 0, "x", true, true, true},
    {"foo(*, Tensor(a) view) -> ()", ARG, 0, "view", true, false, false},
    {"foo(*, Tensor(a -> *) x) -> ()", ARG, 0, "x", true, false, false},
    {"foo(*, int(a!) x) -> ()", ARG, 0, "x", true, true, true},
    {"foo(Tensor x, *, int y) -> ()", ARG, 1, "y", true, false, false},
    {"foo(int x, *, int y, *, int z) -> ()", ARG, 0, "x", false, false, false},
    {"foo(int x, *, int y, *, int z) -> ()", ARG, 2, "z", true, false, false},
    {"foo() -> (Tensor a, Tensor b)", RET, 0, "a", false, false, false},
    {"foo() -> (Tensor a, Tensor b)", RET, 1, "b", false, false, false},
    {"foo() -> Tensor", RET, 0, "", false, false, false},
    {"foo(Tensor _0) -> Tensor _0", RET, 0, "_0", false, false, false},
    {"foo(Tensor x) -> Tensor(a!) out", RET, 0, "out", false, true, false},
    {"foo(Tensor(a!) x) -> Tensor(a!)[]", RET, 0, "", false, true, false},
};
/* clang-format on */

TEST(arguments) {
    for (size_t i = 0; i < sizeof arg_cases / sizeof arg_cases[0]; i++) {
        const struct arg_case *c = &arg_cases[i];
        opreg_schema *s = parse_or_report(c->text, 0);
        if (!s) continue;
        const opreg_argument *a =
            c->which == ARG ? opreg_schema_argument(s, c->index) : opreg_schema_return(s, c->index);
        char exp[256], act[256];
        snprintf(exp, sizeof exp, "name=%s kwarg_only=%d write=%d out=%d", c->name, c->kwarg_only,
                 c->is_write, c->is_out);
        if (a) {
            const char *nm = opreg_argument_name(a);
            snprintf(act, sizeof act, "name=%s kwarg_only=%d write=%d out=%d", nm ? nm : "(null)",
                     opreg_argument_is_kwarg_only(a), opreg_argument_is_write(a),
                     opreg_argument_is_out(a));
        } else {
            snprintf(act, sizeof act, "(missing)");
        }
        char what[64];
        snprintf(what, sizeof what, "%s %zu", c->which == ARG ? "argument" : "return", c->index);
        if (strcmp(exp, act) != 0) mismatch(c->text, what, exp, act);
        opreg_schema_free(s);
    }
}

/* ---- default values (§5) -------------------------------------------------- */

struct default_case {
    const char *text;
    size_t index;
    const char *expect;
};

/* clang-format off */
static const struct default_case default_cases[] = {
    {"foo(int x) -> ()", 0, "-"},
    {"foo(int x=0, int y=-1, int z=9223372036854775807) -> ()", 0, "int:0"},
    {"foo(int x=0, int y=-1, int z=9223372036854775807) -> ()", 1, "int:-1"},
    {"foo(int x=0, int y=-1, int z=9223372036854775807) -> ()", 2, "int:9223372036854775807"},
    {"foo(int x=-9223372036854775808) -> ()", 0, "int:-9223372036854775808"},
    {"foo(int x=- 1) -> ()", 0, "int:-1"},
    {"foo(int x=-0) -> ()", 0, "int:0"},
    {"foo(int x=007) -> ()", 0, "int:7"},
    /* untyped, lexical classification of numbers */
    {"foo(int x=1.5) -> ()", 0, "float:1.5"},
    {"foo(int x=1e3) -> ()", 0, "float:1000"},
    {"foo(int x=1E3) -> ()", 0, "int:1"},
    {"foo(int x=0x10) -> ()", 0, "int:0"},
    {"foo(float x=0x1p3) -> ()", 0, "float:8"},
    {"foo(int x=True) -> ()", 0, "True"},
    {"foo(int x=\"s\") -> ()", 0, "str:s"},
    {"foo(bool x=1) -> ()", 0, "int:1"},
    {"foo(float? x=1) -> ()", 0, "int:1"},
    {"foo(float? x=None) -> ()", 0, "None"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 0, "float:0.5"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 1, "float:1.0000000000000001e-05"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 2, "float:-1e-08"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 3, "float:2"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 4, "float:0.5"},
    {"foo(float x=0.5, float y=1e-5, float z=-1e-08, float w=2, float v=.5, float u=5.) -> ()", 5, "float:5"},
    {"foo(float x=1E-5) -> ()", 0, "float:1.0000000000000001e-05"},
    {"foo(float x=1.0e+2, float y=1e+2, float z=1.e2) -> ()", 2, "float:100"},
    {"foo(float x=-0.0) -> ()", 0, "float:-0"},
    {"foo(Scalar s=1, Scalar t=1.5, Scalar u=-2, Scalar v=True, Scalar? w=None) -> Scalar", 0, "int:1"},
    {"foo(Scalar s=1, Scalar t=1.5, Scalar u=-2, Scalar v=True, Scalar? w=None) -> Scalar", 1, "float:1.5"},
    {"foo(Scalar s=1, Scalar t=1.5, Scalar u=-2, Scalar v=True, Scalar? w=None) -> Scalar", 2, "int:-2"},
    {"foo(Scalar s=1, Scalar t=1.5, Scalar u=-2, Scalar v=True, Scalar? w=None) -> Scalar", 3, "True"},
    {"foo(Scalar s=1, Scalar t=1.5, Scalar u=-2, Scalar v=True, Scalar? w=None) -> Scalar", 4, "None"},
    {"foo(Scalar s=\"x\") -> ()", 0, "str:x"},
    {"foo(bool x=True, bool y=False, bool? z=None) -> bool", 1, "False"},
    /* complex: the imaginary part */
    {"foo(complex c=2j, complex d=1.5j, complex e=-1j) -> complex", 0, "complex:2j"},
    {"foo(complex c=2j, complex d=1.5j, complex e=-1j) -> complex", 1, "complex:1.5j"},
    {"foo(complex c=2j, complex d=1.5j, complex e=-1j) -> complex", 2, "complex:-1j"},
    {"foo(Scalar c=3j) -> ()", 0, "complex:3j"},
    /* lists */
    {"foo(complex[] c=[1j, 2j]) -> ()", 0, "[complex:1j,complex:2j]"},
    {"foo(float[] x=[1, 2.5, -3]) -> ()", 0, "[float:1,float:2.5,float:-3]"},
    {"foo(float[2] x=0.5) -> ()", 0, "[float:0.5,float:0.5]"},
    {"foo(SymInt x, SymInt? y=None, SymInt[] z, SymInt[2] w=1, SymInt[]? v=None) -> SymInt[]", 3, "[int:1,int:1]"},
    {"foo(SymInt x, SymInt? y=None, SymInt[] z, SymInt[2] w=1, SymInt[]? v=None) -> SymInt[]", 4, "None"},
    {"foo(SymInt[1] w=[0]) -> ()", 0, "[int:0]"},
    {"foo(int[] x=[]) -> ()", 0, "[]"},
    {"foo(int[] x=[ ]) -> ()", 0, "[]"},
    {"foo(int[] x=[1,2]) -> ()", 0, "[int:1,int:2]"},
    {"foo(int[] x=[-2, -1]) -> ()", 0, "[int:-2,int:-1]"},
    {"foo(int[2] x=1) -> ()", 0, "[int:1,int:1]"},
    {"foo(int[2] x=[3, 3]) -> ()", 0, "[int:3,int:3]"},
    {"foo(int[1] x=0) -> ()", 0, "[int:0]"},
    {"foo(int[2] x=[1,2,3]) -> ()", 0, "[int:1,int:2,int:3]"},
    {"foo(int[2]? x=1) -> ()", 0, "int:1"},
    {"foo(int[1]? x=None) -> ()", 0, "None"},
    {"foo(int[]? x=None) -> ()", 0, "None"},
    {"foo(bool[3] m=[True, False, True]) -> ()", 0, "[True,False,True]"},
    {"foo(bool[2] m=True) -> ()", 0, "[True,True]"},
    /* strings, unescaped */
    {"foo(str s=\"abc\", str t='abc', str? u=None) -> str", 0, "str:abc"},
    {"foo(str s=\"abc\", str t='abc', str? u=None) -> str", 1, "str:abc"},
    {"foo(str s=\"abc\", str t='abc', str? u=None) -> str", 2, "None"},
    {"foo(str s=\"a\\\"b\\\\c\\n\\t\") -> ()", 0, "str:a\"b\\\\c\\x0a\\x09"},
    {"foo(str s='it\\'s') -> ()", 0, "str:it's"},
    {"foo(str s=\"it\\'s\") -> ()", 0, "str:it's"},
    {"foo(str s=\"\"\"triple\"\"\") -> ()", 0, "str:triple"},
    {"foo(str s='''tri'ple''') -> ()", 0, "str:tri'ple"},
    {"foo(str s=\"\\101\") -> ()", 0, "str:A"},
    {"foo(str s=\"a\\000b\") -> ()", 0, "str:a\\x00b"},
    {"foo(str s='\\a\\b\\f\\v') -> ()", 0, "str:\\x07\\x08\\x0c\\x0b"},
    {"foo(str s=\"say 'hi'\") -> ()", 0, "str:say 'hi'"},
    {"foo(str s=\"\") -> ()", 0, "str:"},
    {"foo(str s=None) -> ()", 0, "None"},
    {"foo(str? order=\"NCHW\") -> ()", 0, "str:NCHW"},
    /* None for tensors and generators */
    {"foo(Tensor t=None) -> ()", 0, "None"},
    {"foo(Tensor? t=None) -> ()", 0, "None"},
    {"foo(Generator? g=None) -> ()", 0, "None"},
    {"foo(Generator g=None) -> ()", 0, "None"},
    {"foo(Tensor[]? t=None) -> ()", 0, "None"},
    /* devices */
    {"foo(Device d=\"cpu\") -> ()", 0, "device:cpu/-1"},
    {"foo(Device d=\"cuda:0\") -> ()", 0, "device:cuda/0"},
    {"foo(Device i='cpu:0') -> ()", 0, "device:cpu/0"},
    {"foo(Device d=\"meta\") -> ()", 0, "device:meta/-1"},
    /* an optional Device takes any constant: the string is not validated */
    {"foo(Device? d=\"cuda:1\") -> ()", 0, "str:cuda:1"},
    {"foo(Device? d=\"foo\") -> ()", 0, "str:foo"},
    {"foo(Device? d=None) -> ()", 0, "None"},
    /* enum-like identifiers, stored as ints */
    {"foo(ScalarType s=float, ScalarType t=long, ScalarType u=complex) -> ()", 0, "int:6"},
    {"foo(ScalarType s=float, ScalarType t=long, ScalarType u=complex) -> ()", 1, "int:4"},
    {"foo(ScalarType s=float, ScalarType t=long, ScalarType u=complex) -> ()", 2, "int:9"},
    {"foo(Layout l=strided, Layout? m=None) -> ()", 0, "int:0"},
    {"foo(MemoryFormat m=contiguous_format) -> ()", 0, "int:0"},
    {"foo(MemoryFormat? m=contiguous_format) -> ()", 0, "int:0"},
    {"foo(int r=Mean) -> ()", 0, "int:1"},
    {"foo(int s=long) -> ()", 0, "int:4"},
    {"foo(int s=float) -> ()", 0, "int:6"},
    /* 2.x: dtype names for ScalarType and ScalarType? */
    {"foo(ScalarType s=float32, ScalarType t=bfloat16, ScalarType u=int32) -> ()", 0, "int:6"},
    {"foo(ScalarType s=float32, ScalarType t=bfloat16, ScalarType u=int32) -> ()", 1, "int:15"},
    {"foo(ScalarType s=float32, ScalarType t=bfloat16, ScalarType u=int32) -> ()", 2, "int:3"},
    {"foo(ScalarType? s=bfloat16) -> ()", 0, "int:15"},
    {"foo(ScalarType s=uint8) -> ()", 0, "int:0"},
    {"foo(ScalarType s=int64) -> ()", 0, "int:4"},
    {"foo(ScalarType s=float16) -> ()", 0, "int:5"},
    {"foo(ScalarType s=half) -> ()", 0, "int:5"},
    {"foo(ScalarType s=float64) -> ()", 0, "int:7"},
    {"foo(ScalarType s=double) -> ()", 0, "int:7"},
    {"foo(ScalarType s=complex64) -> ()", 0, "int:9"},
    {"foo(ScalarType s=bool) -> ()", 0, "int:11"},
    {"foo(ScalarType s=int) -> ()", 0, "int:3"},
};
/* clang-format on */

TEST(defaults) {
    for (size_t i = 0; i < sizeof default_cases / sizeof default_cases[0]; i++) {
        const struct default_case *c = &default_cases[i];
        opreg_schema *s = parse_or_report(c->text, 0);
        if (!s) continue;
        const opreg_argument *a = opreg_schema_argument(s, c->index);
        struct sbuf b = { .n = 0 };
        if (a)
            desc_default(&b, opreg_argument_default(a));
        else
            sb_printf(&b, "(no argument %zu)", c->index);
        char what[64];
        snprintf(what, sizeof what, "default of argument %zu", c->index);
        if (strcmp(b.buf, c->expect) != 0) mismatch(c->text, what, c->expect, b.buf);
        /* returns never have defaults */
        for (size_t r = 0; r < opreg_schema_num_returns(s); r++)
            if (opreg_argument_default(opreg_schema_return(s, r)) != NULL)
                mismatch(c->text, "return default", "NULL", "non-NULL");
        opreg_schema_free(s);
    }
}

/* A string default may hold NUL bytes: the length tells. */
TEST(string_with_nul) {
    opreg_schema *s = parse_or_report("foo(str s=\"a\\000b\") -> ()", 0);
    CHECK(s != NULL);
    const opreg_default *d = opreg_argument_default(opreg_schema_argument(s, 0));
    CHECK(d != NULL);
    CHECK_EQ_INT(opreg_default_get_kind(d), OPREG_DEFAULT_STRING);
    size_t len = 0;
    const char *v = opreg_default_string(d, &len);
    CHECK(v != NULL);
    CHECK_EQ_INT(len, 3);
    CHECK(memcmp(v, "a\0b", 4) == 0);
    CHECK(opreg_default_string(d, NULL) == v);
    opreg_schema_free(s);
}

/* ---- printers -------------------------------------------------------------- */

struct print_case {
    const char *text;
    unsigned flags;
    const char *expect;
};

/* clang-format off */
/* OPREG_SCHEMA_TORCH: exactly what str(torch._C.parse_schema(s)) prints (§7;
 * edge_cases.oracle-1.13.tsv; 2.x where it differs). Multi-set annotations
 * print in reverse source order, as PyTorch's unordered_set does. */
static const struct print_case torch_prints[] = {
    {"rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()", 0,
     "rms_norm(Tensor($0! -> ) out, Tensor input, Tensor weight, float epsilon) -> ()"},
    {"conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor", 0,
     "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"},
    {"avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor", 0,
     "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor"},
    {"allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool", 0,
     "allclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> bool"},
    {"example::op(str? order=\"NCHW\") -> (Tensor)", 0, "example::op(str? order=\"NCHW\") -> Tensor"},
    /* int lists collapse when all elements are equal; SymInt lists do not */
    {"foo(int[] x=[3, 3]) -> ()", 0, "foo(int[] x=3) -> ()"},
    {"foo(int[2] x=[3,3], int[2] y=1, int[1] z=0, int[] w=[-2,-1], int[3] v=[1, 2, 2], int[] u=[]) -> ()", 0,
     "foo(int[2] x=3, int[2] y=1, int[1] z=[0], int[] w=[-2, -1], int[3] v=[1, 2, 2], int[] u=[]) -> ()"},
    {"foo(SymInt[2] s=1, SymInt[] t=[3, 3]) -> ()", 0, "foo(SymInt[2] s=[1, 1], SymInt[] t=[3, 3]) -> ()"},
    /* doubles: N. when integral and normal or zero, else 17 significant digits */
    {"foo(float a=1e-06, float b=1e20, float c=1e10, float d=0.1, float e=1e18, float f=1e19, float g=2.2250738585072014e-308, float h=-2.5) -> ()", 0,
     "foo(float a=9.9999999999999995e-07, float b=1e+20, float c=10000000000., float d=0.10000000000000001, float e=1000000000000000000., float f=1e+19, float g=2.2250738585072014e-308, float h=-2.5) -> ()"},
    {"foo(float x=0.1, float y=0.3333333333333333, float z=1e20, float w=1e10, float v=-0.0) -> ()", 0,
     "foo(float x=0.10000000000000001, float y=0.33333333333333331, float z=1e+20, float w=10000000000., float v=0.) -> ()"},
    {"foo(complex c=2j, complex d=1.5j, complex e=-1j) -> complex", 0,
     "foo(complex c=0.+2.j, complex d=0.+1.5j, complex e=0.-1.j) -> complex"},
    /* strings: double quotes, C escapes, other bytes in octal */
    {"foo(str s='it\\'s', str t=\"a\\\"b\\\\c\\n\\t\", str u=\"\\101\", str v=\"a\\000b\\177\", str w='\\a\\b\\f\\v', str x=\"a\\015b\") -> ()", 0,
     "foo(str s=\"it\\'s\", str t=\"a\\\"b\\\\c\\n\\t\", str u=\"A\", str v=\"a\\000b\\177\", str w=\"\\a\\b\\f\\v\", str x=\"a\\rb\") -> ()"},
    {"foo(str s=\"\"\"triple\"\"\", str? t='x', str u=None) -> ()", 0, "foo(str s=\"triple\", str? t=\"x\", str u=None) -> ()"},
    /* non-str strings and devices print raw */
    {"foo(Device d=\"cpu\", Device? e=\"cuda:0\", Scalar s=\"x\", int i=\"s\") -> ()", 0,
     "foo(Device d=cpu, Device? e=cuda:0, Scalar s=x, int i=s) -> ()"},
    /* enum identifiers print as ints */
    {"foo(Layout l=strided, MemoryFormat m=contiguous_format, ScalarType s=float, ScalarType t=long, ScalarType u=complex, int r=Mean) -> ()", 0,
     "foo(Layout l=0, MemoryFormat m=0, ScalarType s=6, ScalarType t=4, ScalarType u=9, int r=1) -> ()"},
    {"foo(ScalarType s=float32, ScalarType t=bfloat16, ScalarType u=int32, ScalarType? v=float64) -> ()", 0,
     "foo(ScalarType s=6, ScalarType t=15, ScalarType u=3, ScalarType? v=7) -> ()"},
    /* untyped defaults */
    {"foo(int x=True, bool y=1, float? z=1, int w=1.5, int v=1e3, int u=1E3, int t=0x10, float s=0x1p3, int r=- 1, int q=-0, int p=007) -> ()", 0,
     "foo(int x=True, bool y=1, float? z=1, int w=1.5, int v=1000., int u=1, int t=0, float s=8., int r=-1, int q=0, int p=7) -> ()"},
    {"foo(float[] x=[1, 2.5, -3], float[2] y=0.5, bool[2] m=True, complex[] c=[1j, 2j]) -> ()", 0,
     "foo(float[] x=[1., 2.5, -3.], float[2] y=[0.5, 0.5], bool[2] m=[True, True], complex[] c=[0.+1.j, 0.+2.j]) -> ()"},
    {"foo(int x=-9223372036854775808, int y=9223372036854775807) -> ()", 0,
     "foo(int x=-9223372036854775808, int y=9223372036854775807) -> ()"},
    /* real types */
    {"foo(Dimname d, None n, ConstQuantizerPtr q, DeviceIndex i) -> None", 0, "foo(str d, NoneType n, int q, int i) -> NoneType"},
    {"foo(SymBool b) -> SymBool", 0, "foo(SymBool b) -> SymBool"},
    {"foo(Await(t) a) -> t", TV, "foo(Await(t) a) -> t"},
    {"foo(__torch__.torch.classes.ns.Cls c) -> __torch__.torch.classes.ns.Cls", 0,
     "foo(__torch__.torch.classes.ns.Cls c) -> __torch__.torch.classes.ns.Cls"},
    {"foo(Dict(str,Tensor)[] d, Union(int,str)? u) -> Dict(str,Tensor)", 0,
     "foo(Dict(str, Tensor)[] d, Union(int, str)? u) -> Dict(str, Tensor)"},
    {"foo(Tensor?? x, int[2]? y=1, Tensor?[]? z=None) -> ()", 0, "foo(Tensor? x, int[2]? y=1, Tensor?[]? z=None) -> ()"},
    /* alias annotations */
    {"foo(Tensor(a|b) x) -> Tensor(a|b)", 0, "foo(Tensor(b|a) x) -> Tensor(b|a)"},
    {"foo(Tensor(a|b|c) x) -> ()", 0, "foo(Tensor(c|b|a) x) -> ()"},
    {"foo(Tensor(a|b -> c|d) x) -> ()", 0, "foo(Tensor(b|a -> d|c) x) -> ()"},
    {"foo(Tensor(a|b!) x) -> ()", 0, "foo(Tensor(b|a!) x) -> ()"},
    {"foo(Tensor(a! -> a|b) x) -> ()", 0, "foo(Tensor(a! -> b|a) x) -> ()"},
    {"foo(Tensor(a|*) x) -> ()", 0, "foo(Tensor(*|a) x) -> ()"},
    {"foo(Tensor(a!)?[] x) -> ()", 0, "foo(Tensor?(a!)[] x) -> ()"},
    {"foo(Tensor(a!)[]? x, Tensor[](b!)? y, Tensor(c!)? z) -> ()", 0, "foo(Tensor(a!)[]? x, Tensor[](b!)? y, Tensor(c!)? z) -> ()"},
    {"foo(Tensor(b|c)[](a!) x) -> ()", 0, "foo(Tensor(c|b)[](a!) x) -> ()"},
    {"foo(Tensor(b -> b|c)[](a!) x) -> ()", 0, "foo(Tensor(b -> c|b)[](a!) x) -> ()"},
    {"foo(Tensor![] x, *, Tensor! y) -> ()", 0, "foo(Tensor($0! -> )[] x, *, Tensor($1! -> ) y) -> ()"},
    {"foo(Tensor(a!->b) x) -> ()", 0, "foo(Tensor(a! -> b) x) -> ()"},
    {"copy_blocks(Tensor[]! key_caches, Tensor[]! value_caches, Tensor block_mapping) -> ()", 0,
     "copy_blocks(Tensor[]($0! -> ) key_caches, Tensor[]($1! -> ) value_caches, Tensor block_mapping) -> ()"},
    {"foo(int[4](a) x, Tensor[2](a!) y) -> Tensor[](a)", 0, "foo(int[4](a) x, Tensor[2](a!) y) -> Tensor[](a)"},
    {"foo(t[](a!) l, t(b -> *) el) -> t[](a!)", TV, "foo(t[](a!) l, t(b -> *) el) -> t[](a!)"},
    /* kwarg-only markers, varargs, returns, names */
    {"foo(int x, *) -> ()", 0, "foo(int x) -> ()"},
    {"foo(*) -> ()", 0, "foo() -> ()"},
    {"foo(int x, *, int y, *, int z) -> ()", 0, "foo(int x, *, int y, int z) -> ()"},
    {"foo(*, *, int y) -> ()", 0, "foo(*, int y) -> ()"},
    {"foo(...) -> ...", 0, "foo(...) -> ..."},
    {"foo(int a, ...) -> (...)", 0, "foo(int a, ...) -> ..."},
    {"foo(...) -> (int, ...)", 0, "foo(...) -> (int, ...)"},
    {"foo(*, int y, ...) -> ()", 0, "foo(*, int y, ...) -> ()"},
    {"foo() -> ((int, int))", 0, "foo() -> ((int, int))"},
    {"foo((int) t) -> (int)", 0, "foo((int) t) -> int"},
    {"foo(int x) -> (())", 0, "foo(int x) -> (())"},
    {"foo(int x) -> ((), int)", 0, "foo(int x) -> ((), int)"},
    {"foo() -> ((str, t)[])", TV, "foo() -> ((str, t)[])"},
    {"foo() -> (Tensor a, Tensor b)", 0, "foo() -> (Tensor a, Tensor b)"},
    {"foo() -> Tensor a", 0, "foo() -> Tensor a"},
    {"ns :: foo . bar (Tensor x)->Tensor", 0, "ns::foo.bar(Tensor x) -> Tensor"},
    {"   foo(  Tensor   x ,int  y  =  1 )   ->   (  Tensor ,  int  )   ", 0, "foo(Tensor x, int y=1) -> (Tensor, int)"},
    {"foo(Tensor x, # comment\n int y) -> Tensor # trailing\n", 0, "foo(Tensor x, int y) -> Tensor"},
};

/* OPREG_SCHEMA_CANONICAL: PyTorch's form, except what must re-parse. */
static const struct print_case canonical_prints[] = {
    {"foo(Tensor! x, Tensor! y) -> (Tensor, Tensor)", 0, "foo(Tensor! x, Tensor! y) -> (Tensor, Tensor)"},
    {"foo(Tensor![] x, *, Tensor! y) -> ()", 0, "foo(Tensor![] x, *, Tensor! y) -> ()"},
    {"foo(Tensor[]! x) -> ()", 0, "foo(Tensor[]! x) -> ()"},
    {"foo(Tensor(a|b) x) -> Tensor(a|b)", 0, "foo(Tensor(a|b) x) -> Tensor(a|b)"},
    {"foo(Tensor(b|a) x) -> Tensor(b|a)", 0, "foo(Tensor(b|a) x) -> Tensor(b|a)"},
    {"foo(Tensor(a|b|c) x) -> ()", 0, "foo(Tensor(a|b|c) x) -> ()"},
    {"foo(Tensor(a|*) x) -> ()", 0, "foo(Tensor(a|*) x) -> ()"},
    {"foo(Tensor(a|b -> c|d) x) -> ()", 0, "foo(Tensor(a|b -> c|d) x) -> ()"},
    {"foo(Tensor(a|b!) x) -> ()", 0, "foo(Tensor(a|b!) x) -> ()"},
    {"foo(Tensor(a!)?[] x) -> ()", 0, "foo(Tensor(a!)?[] x) -> ()"},
    {"foo(Tensor(b|c)[](a!) x) -> ()", 0, "foo(Tensor(b|c)[](a!) x) -> ()"},
    {"foo(Device d=\"cpu\", Device? e=\"cuda:0\") -> ()", 0, "foo(Device d=\"cpu\", Device? e=\"cuda:0\") -> ()"},
    {"foo(Scalar s=\"x\", int i=\"s\") -> ()", 0, "foo(Scalar s=\"x\", int i=\"s\") -> ()"},
    {"foo(complex c=2j) -> ()", 0, "foo(complex c=2.j) -> ()"},
    {"foo(str s='abc') -> ()", 0, "foo(str s=\"abc\") -> ()"},
    {"foo(float x=1e-5) -> ()", 0, "foo(float x=1.0000000000000001e-05) -> ()"},
    {"foo(Tensor x) -> (Tensor)", 0, "foo(Tensor x) -> Tensor"},
    {"ns :: foo . bar (Tensor x)->Tensor", 0, "ns::foo.bar(Tensor x) -> Tensor"},
    {"foo(Dimname d, None n) -> ()", 0, "foo(str d, NoneType n) -> ()"},
    {"foo(Layout l=strided, int r=Mean, ScalarType s=bfloat16) -> ()", 0, "foo(Layout l=strided, int r=Mean, ScalarType s=bfloat16) -> ()"},
    {"foo(float x=Mean, complex c=long) -> ()", 0, "foo(float x=Mean, complex c=long) -> ()"},
    {"foo(int[] x=[3, 3], int[2] y=[3, 3], int[2] z=[3, 3, 3]) -> ()", 0, "foo(int[] x=[3, 3], int[2] y=3, int[2] z=[3, 3, 3]) -> ()"},
    {"foo(SymInt[2] s=1, int[1] z=0) -> ()", 0, "foo(SymInt[2] s=[1, 1], int[1] z=[0]) -> ()"},
    {"foo(int x, *) -> ()", 0, "foo(int x) -> ()"},
    {"foo(t(a) x) -> t(a)", TV, "foo(t(a) x) -> t(a)"},
};
/* clang-format on */

/* Print with both opreg_schema_to_string and opreg_schema_format. */
static void check_print(const struct print_case *c, opreg_schema_style style, const char *label) {
    opreg_schema *s = parse_or_report(c->text, c->flags);
    if (!s) return;
    char *p = opreg_schema_to_string(s, style);
    if (!p || strcmp(p, c->expect) != 0) mismatch(c->text, label, c->expect, p);
    size_t n = opreg_schema_format(s, style, NULL, 0);
    char *q = malloc(n + 1);
    if (!q) abort();
    size_t n2 = opreg_schema_format(s, style, q, n + 1);
    if (n2 != n || strlen(q) != n || (p && strcmp(p, q) != 0))
        mismatch(c->text, "opreg_schema_format == opreg_schema_to_string", p, q);
    free(q);
    opreg_string_free(p);
    opreg_schema_free(s);
}

TEST(torch_printer) {
    for (size_t i = 0; i < sizeof torch_prints / sizeof torch_prints[0]; i++)
        check_print(&torch_prints[i], OPREG_SCHEMA_TORCH, "OPREG_SCHEMA_TORCH print");
}

TEST(canonical_printer) {
    for (size_t i = 0; i < sizeof canonical_prints / sizeof canonical_prints[0]; i++)
        check_print(&canonical_prints[i], OPREG_SCHEMA_CANONICAL, "OPREG_SCHEMA_CANONICAL print");
}

/* parse(canonical(parse(s))) == parse(s), with equal hashes, and the canonical
 * form is a fixed point. */
static void check_roundtrip(const char *text, unsigned flags) {
    opreg_schema *a = parse_or_report(text, flags);
    if (!a) return;
    char *c1 = opreg_schema_to_string(a, OPREG_SCHEMA_CANONICAL);
    if (!c1) {
        mismatch(text, "canonical print", "a string", NULL);
        opreg_schema_free(a);
        return;
    }
    opreg_schema *b = NULL;
    opreg_schema_error err;
    opreg_status st = opreg_schema_parse(&b, c1, strlen(c1), flags, &err);
    if (st != OPREG_OK) {
        char why[700];
        snprintf(why, sizeof why, "%s: %s (column %zu) on \"%s\"", opreg_status_name(st),
                 err.message, err.column, c1);
        mismatch(text, "re-parse of the canonical form", "OPREG_OK", why);
    } else {
        if (!opreg_schema_equal(a, b)) {
            char *t = opreg_schema_to_string(b, OPREG_SCHEMA_TORCH);
            char *u = opreg_schema_to_string(a, OPREG_SCHEMA_TORCH);
            char why[2048];
            snprintf(why, sizeof why, "not equal; canonical \"%s\"; torch prints \"%s\" vs \"%s\"",
                     c1, u ? u : "(null)", t ? t : "(null)");
            mismatch(text, "parse(canonical(parse(s))) == parse(s)", "equal", why);
            opreg_string_free(t);
            opreg_string_free(u);
        }
        if (opreg_schema_hash(a) != opreg_schema_hash(b))
            mismatch(text, "hash of the re-parsed canonical form", "equal hashes", c1);
        char *c2 = opreg_schema_to_string(b, OPREG_SCHEMA_CANONICAL);
        if (!c2 || strcmp(c1, c2) != 0) mismatch(text, "canonical form is a fixed point", c1, c2);
        opreg_string_free(c2);
        opreg_schema_free(b);
    }
    opreg_string_free(c1);
    opreg_schema_free(a);
}

TEST(canonical_roundtrip) {
    static const struct print_case extra[] = {
        { "foo(int[] x=[3, 3]) -> ()", 0, NULL },
        { "foo(complex c=2j, complex d=-1.5j, complex[] e=[1j, -2j], Scalar f=0j) -> ()", 0, NULL },
        { "foo(str s=\"a\\015b\", str t=\"\\000\\001\\377\", str u=\"\\\\\\\"'\") -> ()", 0, NULL },
        { "foo(float x=-0.0, float y=2.2250738585072014e-308, float z=1e300, float w=0.1, float "
          "v=-1e-300) -> ()",
          0, NULL },
        { "foo(Scalar s=\"a\\\"b\", Scalar t='\\n') -> ()", 0, NULL },
        { "foo(Dict(str, t)(a!) d, t(b -> *) e) -> t[](a!)", TV, NULL },
        { "foo(int? x=True, float? y=None, str? z=\"q\", bool? w=1) -> ()", 0, NULL },
        { "foo(Device d=\"cuda:3\", Device? e=\"meta\") -> ()", 0, NULL },
        { "foo(int x=-9223372036854775808) -> ()", 0, NULL },
        { "foo(Tensor(a!)?[] x, Tensor(b|c)[](a!) y, Tensor! z, Tensor(d|*)? w=None) -> ()", 0,
          NULL },
        { "foo(Tensor(a|*) x, Tensor(a|b -> c|*) y) -> ()", 0, NULL },
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        check_roundtrip(extra[i].text, extra[i].flags);
    for (size_t i = 0; i < sizeof torch_prints / sizeof torch_prints[0]; i++)
        check_roundtrip(torch_prints[i].text, torch_prints[i].flags);
    for (size_t i = 0; i < sizeof canonical_prints / sizeof canonical_prints[0]; i++)
        check_roundtrip(canonical_prints[i].text, canonical_prints[i].flags);
    for (size_t i = 0; i < sizeof type_cases / sizeof type_cases[0]; i++)
        check_roundtrip(type_cases[i].text, type_cases[i].flags);
    for (size_t i = 0; i < sizeof schema_cases / sizeof schema_cases[0]; i++)
        check_roundtrip(schema_cases[i].text, schema_cases[i].flags);
    for (size_t i = 0; i < sizeof default_cases / sizeof default_cases[0]; i++)
        check_roundtrip(default_cases[i].text, 0);
}

/* ---- opreg_schema_format's snprintf contract ----------------------------- */

static void check_format_contract(const char *text, opreg_schema_style style, const char *expect) {
    opreg_schema *s = parse_or_report(text, 0);
    if (!s) return;
    size_t n = strlen(expect);
    char buf[256];
    if (opreg_schema_format(s, style, NULL, 0) != n)
        mismatch(text, "format(NULL, 0) returns the full length", expect, "another length");
    for (size_t cap = 0; cap <= n + 2 && cap < sizeof buf - 1; cap++) {
        memset(buf, 'Z', sizeof buf);
        size_t r = opreg_schema_format(s, style, buf, cap);
        bool ok = r == n;
        if (cap == 0) {
            ok = ok && buf[0] == 'Z';
        } else {
            size_t w = cap - 1 < n ? cap - 1 : n; /* bytes written before the NUL */
            ok = ok && memcmp(buf, expect, w) == 0 && buf[w] == '\0';
            for (size_t j = w + 1; j < sizeof buf; j++)
                ok = ok && buf[j] == 'Z';
        }
        if (!ok) {
            char what[128];
            snprintf(what, sizeof what, "format with cap %zu (returned %zu, expected %zu)", cap, r,
                     n);
            buf[sizeof buf - 1] = '\0';
            mismatch(text, what, expect, buf);
            break;
        }
    }
    opreg_schema_free(s);
}

TEST(format_contract) {
    check_format_contract("foo(Tensor! x, int y=1) -> Tensor", OPREG_SCHEMA_TORCH,
                          "foo(Tensor($0! -> ) x, int y=1) -> Tensor");
    check_format_contract("foo(Tensor! x, int y=1) -> Tensor", OPREG_SCHEMA_CANONICAL,
                          "foo(Tensor! x, int y=1) -> Tensor");
    check_format_contract("f() -> ()", OPREG_SCHEMA_TORCH, "f() -> ()");
}

/* ---- equality and hashing ------------------------------------------------ */

struct eq_case {
    const char *a, *b;
    unsigned flags;
    bool equal;
};

/* clang-format off */
static const struct eq_case eq_cases[] = {
    {"foo(Tensor x) -> Tensor", "foo (Tensor  x)->Tensor", 0, true},
    {"foo() -> (Tensor)", "foo() -> Tensor", 0, true},
    {"foo(Tensor(a|b) x) -> Tensor(a|b)", "foo(Tensor(b|a) x) -> Tensor(b|a)", 0, true},
    {"foo(Tensor(a|b -> c|d) x) -> ()", "foo(Tensor(b|a -> d|c) x) -> ()", 0, true},
    {"foo(Tensor(a|*) x) -> ()", "foo(Tensor(a|*) x) -> ()", 0, true},
    {"foo(Tensor(a!->a) x) -> ()", "foo(Tensor(a!) x) -> ()", 0, true},
    {"foo(int[2] x=1) -> ()", "foo(int[2] x=[1, 1]) -> ()", 0, true},
    {"foo(Dimname d) -> ()", "foo(str d) -> ()", 0, true},
    {"foo(ConstQuantizerPtr q, DeviceIndex d) -> ()", "foo(int q, int d) -> ()", 0, true},
    {"foo(None x) -> None", "foo(NoneType x) -> NoneType", 0, true},
    {"foo(Tensor?? x) -> ()", "foo(Tensor? x) -> ()", 0, true},
    {"foo(int x, *) -> ()", "foo(int x) -> ()", 0, true},
    {"foo(*, *, int y) -> ()", "foo(*, int y) -> ()", 0, true},
    {"foo(str s='abc') -> ()", "foo(str s=\"abc\") -> ()", 0, true},
    {"foo(int x=007) -> ()", "foo(int x=7) -> ()", 0, true},
    {"foo(float x=1e-5) -> ()", "foo(float x=1.0000000000000001e-05) -> ()", 0, true},
    {"foo(ScalarType s=float32) -> ()", "foo(ScalarType s=6) -> ()", 0, true},
    {"foo(int r=Mean) -> ()", "foo(int r=1) -> ()", 0, true},
    /* a fresh set's number only says where it came: the dropped `!` inside the
     * tuple shifts it, the schemas stay equal */
    {"foo((Tensor!, int) x) -> Tensor!", "foo((Tensor, int) x) -> Tensor!", 0, true},
    {"ns : : foo(Tensor x) -> Tensor", "ns::foo(Tensor x) -> Tensor", 0, true},
    {"foo(int a, ...) -> (...)", "foo(int a, ...) -> ...", 0, true},
    {"foo(t x) -> t", "foo(t x) -> t", TV, true},
    {"foo(Tensor x) -> Tensor", "foo(Tensor y) -> Tensor", 0, false},
    {"ns::foo(Tensor x) -> Tensor", "foo(Tensor x) -> Tensor", 0, false},
    {"ns::foo(Tensor x) -> Tensor", "ms::foo(Tensor x) -> Tensor", 0, false},
    {"foo.a(Tensor x) -> Tensor", "foo.b(Tensor x) -> Tensor", 0, false},
    {"foo.a(Tensor x) -> Tensor", "foo(Tensor x) -> Tensor", 0, false},
    {"foo(Tensor x) -> Tensor", "bar(Tensor x) -> Tensor", 0, false},
    {"foo(int x=1) -> ()", "foo(int x=2) -> ()", 0, false},
    {"foo(int x=1) -> ()", "foo(int x) -> ()", 0, false},
    {"foo(int x=1) -> ()", "foo(int x=1.5) -> ()", 0, false},
    {"foo(float x=0.1) -> ()", "foo(float x=0.2) -> ()", 0, false},
    {"foo(str s=\"a\") -> ()", "foo(str s=\"b\") -> ()", 0, false},
    {"foo(str s=\"a\") -> ()", "foo(str s=\"a\\000\") -> ()", 0, false},
    {"foo(int[] x=[1, 2]) -> ()", "foo(int[] x=[2, 1]) -> ()", 0, false},
    {"foo(int[] x=[1, 2]) -> ()", "foo(int[] x=[1, 2, 2]) -> ()", 0, false},
    {"foo(Device d=\"cpu\") -> ()", "foo(Device d=\"cuda\") -> ()", 0, false},
    {"foo(Device d=\"cuda:0\") -> ()", "foo(Device d=\"cuda:1\") -> ()", 0, false},
    {"foo(complex c=1j) -> ()", "foo(complex c=2j) -> ()", 0, false},
    {"foo(int x) -> ()", "foo(*, int x) -> ()", 0, false},
    {"foo(Tensor(a) x) -> ()", "foo(Tensor(a!) x) -> ()", 0, false},
    {"foo(Tensor(a!) x) -> ()", "foo(Tensor(b!) x) -> ()", 0, false},
    {"foo(Tensor! x) -> ()", "foo(Tensor(a!) x) -> ()", 0, false},
    {"foo(Tensor(a -> b) x) -> ()", "foo(Tensor(a) x) -> ()", 0, false},
    {"foo(Tensor(a|b) x) -> ()", "foo(Tensor(a) x) -> ()", 0, false},
    {"foo(Tensor x) -> ()", "foo(Tensor(a) x) -> ()", 0, false},
    {"foo(Tensor[](a!) x) -> ()", "foo(Tensor(a!)[] x) -> ()", 0, false},
    {"foo(int[2] x) -> ()", "foo(int[] x) -> ()", 0, false},
    {"foo(int[2] x) -> ()", "foo(int[3] x) -> ()", 0, false},
    {"foo(Tensor x) -> Tensor a", "foo(Tensor x) -> Tensor b", 0, false},
    {"foo(Tensor x) -> Tensor", "foo(Tensor x) -> (Tensor, Tensor)", 0, false},
    {"foo(Tensor x) -> Tensor", "foo(Tensor x) -> ()", 0, false},
    {"foo(int x) -> ()", "foo(float x) -> ()", 0, false},
    {"foo(int x) -> ()", "foo(SymInt x) -> ()", 0, false},
    {"foo(int? x) -> ()", "foo(int x) -> ()", 0, false},
    {"foo(int[] x) -> ()", "foo(int?[] x) -> ()", 0, false},
    {"foo(int x) -> ()", "foo(int x, int y) -> ()", 0, false},
    {"foo(...) -> ()", "foo() -> ()", 0, false},
    {"foo() -> ...", "foo() -> ()", 0, false},
    {"foo(Dict(str, int) d) -> ()", "foo(Dict(int, str) d) -> ()", 0, false},
    {"foo(Union(int, str) u) -> ()", "foo(Union(int, float) u) -> ()", 0, false},
    {"foo((int, str) u) -> ()", "foo((str, int) u) -> ()", 0, false},
    {"foo(Future(int) f) -> ()", "foo(RRef(int) f) -> ()", 0, false},
    {"foo(t x) -> ()", "foo(u x) -> ()", TV, false},
};
/* clang-format on */

TEST(equality_and_hash) {
    for (size_t i = 0; i < sizeof eq_cases / sizeof eq_cases[0]; i++) {
        const struct eq_case *c = &eq_cases[i];
        opreg_schema *a = parse_or_report(c->a, c->flags);
        opreg_schema *b = parse_or_report(c->b, c->flags);
        if (a && b) {
            if (opreg_schema_equal(a, b) != c->equal || opreg_schema_equal(b, a) != c->equal) {
                fprintf(stderr, "  \"%s\" vs \"%s\": opreg_schema_equal should be %s\n", c->a, c->b,
                        c->equal ? "true" : "false");
                test_current_failed = 1;
            }
            if (c->equal && opreg_schema_hash(a) != opreg_schema_hash(b)) {
                fprintf(stderr, "  \"%s\" vs \"%s\": equal schemas hash differently\n", c->a, c->b);
                test_current_failed = 1;
            }
            if (!opreg_schema_equal(a, a) || opreg_schema_hash(a) != opreg_schema_hash(a)) {
                fprintf(stderr, "  \"%s\": not equal to itself or hash unstable\n", c->a);
                test_current_failed = 1;
            }
        }
        opreg_schema_free(a);
        opreg_schema_free(b);
    }
    /* the same text parsed twice */
    opreg_schema *x = parse_or_report("ns::op.ov(Tensor(a!) x, *, int[2] k=1) -> Tensor(a!)", 0);
    opreg_schema *y = parse_or_report("ns::op.ov(Tensor(a!) x, *, int[2] k=1) -> Tensor(a!)", 0);
    CHECK(x && y);
    CHECK(opreg_schema_equal(x, y));
    CHECK(opreg_schema_hash(x) == opreg_schema_hash(y));
    CHECK(opreg_schema_equal(NULL, NULL));
    CHECK(!opreg_schema_equal(x, NULL));
    CHECK(!opreg_schema_equal(NULL, x));
    CHECK_EQ_INT(opreg_schema_hash(NULL), 0);
    opreg_schema_free(x);
    opreg_schema_free(y);
}

/* ---- strict mode vs OPREG_SCHEMA_ALLOW_TYPEVARS --------------------------- */

struct mode_case {
    const char *text;
    unsigned flags;
    bool ok;
    const char *message; /* for a failure */
};

/* clang-format off */
static const struct mode_case mode_cases[] = {
    {"foo(t x) -> t", 0, false, "unknown type specifier"},
    {"foo(t x) -> t", TV, true, NULL},
    {"foo() -> t", 0, false, "unknown type specifier"},
    {"foo(Dict(str, t) d) -> ()", 0, false, "unknown type specifier"},
    {"foo(t[] x) -> ()", 0, false, "unknown type specifier"},
    {"aten::foo(t x) -> t", 0, true, NULL},
    {"prim::foo(t x) -> t", 0, true, NULL},
    {"aten::foo(double x, int64_t y, tensor z) -> ()", 0, true, NULL},
    {"ns::foo(t x) -> t", 0, false, "unknown type specifier"},
    {"atenx::foo(t x) -> t", 0, false, "unknown type specifier"},
    {"foo(T x) -> ()", TV, false, "unknown type specifier"},
    {"foo(_t x) -> ()", TV, false, "unknown type specifier"},
    {"foo(Float x) -> ()", TV, false, "unknown type specifier"},
    {"foo(GraphModule g) -> ()", TV, false, "unknown type specifier"},
    {"foo(double x) -> ()", 0, false, "Use `float` instead of `double` in an operator's schema string"},
    {"foo(double x) -> ()", TV, true, NULL},
    {"foo(int64_t x) -> ()", 0, false, "Use `SymInt` or `int` instead of `int64_t` in an operator's schema string"},
    {"foo(int64_t x) -> ()", TV, true, NULL},
    {"foo(tensor x) -> ()", 0, false, "unknown type specifier"},
    {"foo(tensor x) -> ()", TV, true, NULL},
    {"foo(Tensor x) -> Tensor", 0, true, NULL},
    {"foo(SymBool b, DeviceIndex d, Await(Tensor) a) -> ()", 0, true, NULL},
    {"foo(__torch__.torch.classes.ns.Cls c) -> ()", 0, true, NULL},
    {"foo(ScalarType s=float32) -> ()", 0, true, NULL},
};
/* clang-format on */

TEST(strict_and_typevars) {
    for (size_t i = 0; i < sizeof mode_cases / sizeof mode_cases[0]; i++) {
        const struct mode_case *c = &mode_cases[i];
        opreg_schema *s = NULL;
        opreg_schema_error err;
        memset(&err, 0, sizeof err);
        opreg_status st = opreg_schema_parse(&s, c->text, strlen(c->text), c->flags, &err);
        if (c->ok) {
            if (st != OPREG_OK) {
                fprintf(stderr, "  \"%s\" (flags %u): rejected: %s\n", c->text, c->flags,
                        err.message);
                test_current_failed = 1;
            }
        } else if (st != OPREG_ERR_SCHEMA_SYNTAX) {
            fprintf(stderr, "  \"%s\" (flags %u): %s, expected OPREG_ERR_SCHEMA_SYNTAX\n", c->text,
                    c->flags, opreg_status_name(st));
            test_current_failed = 1;
        } else if (c->message && !strstr(err.message, c->message)) {
            fprintf(stderr, "  \"%s\" (flags %u): message \"%s\" lacks \"%s\"\n", c->text, c->flags,
                    err.message, c->message);
            test_current_failed = 1;
        }
        opreg_schema_free(s);
    }
}

/* ---- NULL arguments -------------------------------------------------------- */

TEST(null_arguments) {
    static char dummy;
    opreg_schema *s = (opreg_schema *)(void *)&dummy;
    opreg_schema_error err;
    memset(&err, 0, sizeof err);
    const char *t = "foo() -> ()";

    opreg_clear_error();
    CHECK_EQ_INT(opreg_schema_parse(NULL, t, strlen(t), 0, &err), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(opreg_last_error()[0] != '\0');

    opreg_clear_error();
    CHECK_EQ_INT(opreg_schema_parse(&s, NULL, 5, 0, &err), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK(opreg_last_error()[0] != '\0');

    opreg_clear_error();
    CHECK_EQ_INT(opreg_schema_parse(&s, t, strlen(t), 0x80, &err), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK_CONTAINS(opreg_last_error(), "unknown flags 0x80");

    /* err may be NULL */
    CHECK_EQ_INT(opreg_schema_parse(&s, t, strlen(t), 0, NULL), OPREG_OK);
    CHECK(s != NULL);
    opreg_schema_free(s);

    opreg_schema_free(NULL);
    opreg_string_free(NULL);
    opreg_clear_error();
    CHECK_EQ_STR(opreg_last_error(), "");
}

/* A schema outlives its input text; accessors do not allocate or change. */
TEST(schema_outlives_input) {
    char *text = malloc(64);
    CHECK(text != NULL);
    strcpy(text, "ns::op.ov(Tensor(a!) self, str s='x') -> Tensor(a!) out");
    opreg_schema *s = NULL;
    opreg_schema_error err;
    CHECK_EQ_INT(opreg_schema_parse(&s, text, strlen(text), 0, &err), OPREG_OK);
    memset(text, 'X', 63);
    free(text);
    CHECK_EQ_STR(opreg_schema_namespace(s), "ns");
    CHECK_EQ_STR(opreg_schema_name(s), "op");
    CHECK_EQ_STR(opreg_schema_overload(s), "ov");
    CHECK_EQ_STR(opreg_argument_name(opreg_schema_argument(s, 0)), "self");
    CHECK_EQ_STR(opreg_argument_name(opreg_schema_return(s, 0)), "out");
    CHECK_EQ_STR(opreg_default_string(opreg_argument_default(opreg_schema_argument(s, 1)), NULL),
                 "x");
    CHECK_EQ_STR(
        opreg_alias_before(opreg_type_alias(opreg_argument_type(opreg_schema_argument(s, 0))), 0),
        "a");
    char *p = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
    CHECK_EQ_STR(p, "ns::op.ov(Tensor(a!) self, str s=\"x\") -> Tensor(a!) out");
    opreg_string_free(p);
    opreg_schema_free(s);
}

int main(void) {
    RUN(types_and_aliases);
    RUN(leaf_types);
    RUN(composite_types);
    RUN(schema_properties);
    RUN(arguments);
    RUN(defaults);
    RUN(string_with_nul);
    RUN(torch_printer);
    RUN(canonical_printer);
    RUN(canonical_roundtrip);
    RUN(format_contract);
    RUN(equality_and_hash);
    RUN(strict_and_typevars);
    RUN(null_arguments);
    RUN(schema_outlives_input);
    return test_summary();
}
