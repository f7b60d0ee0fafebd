/* Schema errors: status, PyTorch's wording and the position of every error,
 * and robustness against hostile input (deep nesting, NUL bytes, inputs that
 * are not NUL-terminated, every prefix of a schema).
 *
 * The cases come from corpus/edge_cases.oracle-1.13.tsv (rows with ERR; the
 * column is where PyTorch's `~~~ <--- HERE` caret starts, plus one) and from
 * schema-language.md §1-§8. Where PyTorch 2.x differs from the 1.13 oracle,
 * 2.x wins. Every input is parsed from a malloc'd buffer of exactly its length
 * so that AddressSanitizer catches any read past the end. */
#include "test.h"

#include "opreg/schema.h"

#include <stdbool.h>

#define TV  OPREG_SCHEMA_ALLOW_TYPEVARS
#define S   OPREG_SCHEMA_STRICT
#define SYN OPREG_ERR_SCHEMA_SYNTAX
#define INV OPREG_ERR_SCHEMA_INVALID

struct err_case {
    const char *text;    /* the input (its length is strlen(text)) */
    unsigned flags;      /* parse flags */
    opreg_status status; /* expected status */
    const char *message; /* must occur in err.message; NULL: not checked */
    int line;            /* expected err.line; 0: not checked */
    int column;          /* expected err.column (1-based); 0: not checked */
    int length;          /* expected err.length; -1: not checked */
};

/* clang-format off */
static const struct err_case oracle_cases[] = {
    /* generated from the ERR and CRASH rows of edge_cases.oracle-1.13.tsv;
     * the rows that 2.x accepts (Await, SymBool, DeviceIndex, dtype-name
     * defaults) are in test_schema_constructs.c instead */
    {"foo(int a=1, ...) -> ()", TV, SYN, "schemas with vararg (...) can't have default value args", 1, 19, 2},
    {"foo(..., int a) -> ()", TV, SYN, "... must be the last element of the argument list", 1, 10, 3},
    {"foo() -> (..., int)", TV, SYN, "... must be the last element of the return list", 1, 16, 3},
    {"foo(Tensor(*|a) x) -> ()", TV, SYN, "expected ) but found 'ident' here", 1, 14, 1},
    {"foo(Tensor(!) x) -> ()", TV, SYN, "expected ident but found '!' here", 1, 12, 1},
    {"foo(Tensor() x) -> ()", TV, SYN, "expected ident but found ')' here", 1, 12, 1},
    {"foo(Tensor!)[] x) -> ()", TV, SYN, "expected ident but found ')' here", 1, 12, 1},
    {"foo(Tensor?(a!) x) -> ()", TV, SYN, "expected ident but found '(' here", 1, 12, 1},
    {"foo() -> (str, t)[]", TV, SYN, "expected eof but found '[' here", 1, 18, 1},
    {"foo(int r=Sum) -> ()", TV, SYN, "invalid numeric default value", 1, 14, 1},
    {"foo(complex c=1) -> ()", TV, SYN, NULL, 0, 0, -1},
    {"foo(GraphModule g) -> ()", TV, SYN, "unknown type specifier", 1, 5, 11},
    {"foo(int x=9223372036854775808) -> ()", TV, SYN, NULL, 0, 0, -1},
    {"foo(int x=+1) -> ()", TV, SYN, "expected number but found '+' here", 1, 11, 1},
    {"foo(float x=inf) -> ()", TV, SYN, "invalid numeric default value", 1, 16, 1},
    {"foo(float x=-inf) -> ()", TV, SYN, "expected number but found 'ident' here", 1, 14, 3},
    {"foo(float x=nan) -> ()", TV, SYN, "invalid numeric default value", 1, 16, 1},
    {"foo(bool x=true) -> ()", TV, SYN, "invalid numeric default value", 1, 16, 1},
    {"foo(str s=\"\\x41\") -> ()", TV, SYN, "unsupported hex specifier", 1, 11, 6},
    {"foo(str s=\"\\u0041\") -> ()", TV, SYN, "unsupported unicode specifier", 1, 11, 8},
    {"foo(str[] s=[\"a\"]) -> ()", TV, SYN, "lists are only supported for float, int and complex types", 1, 13, 1},
    {"foo(str s=abc) -> ()", TV, SYN, "invalid numeric default value", 1, 14, 1},
    {"foo(Tensor t=1) -> ()", TV, SYN, "expected None but found 'number' here", 1, 14, 1},
    {"foo(Tensor[] t=[]) -> ()", TV, SYN, "lists are only supported for float, int and complex types", 1, 16, 1},
    {"foo(int[] x=1) -> ()", TV, SYN, "expected [ but found 'number' here", 1, 13, 1},
    {"foo(int[] x=None) -> ()", TV, SYN, "expected [ but found 'None' here", 1, 13, 4},
    {"foo(int[4][] x) -> ()", TV, SYN, "expected ident but found '[' here", 1, 11, 1},
    {"foo(int x=1, int y) -> ()", TV, INV, "Non-default positional argument follows default argument. Parameter y in foo(int x=1, int y) -> ()", 0, 0, -1},
    {"foo(int x,) -> ()", TV, SYN, "expected ident but found ')' here", 1, 11, 1},
    {"foo(,int x) -> ()", TV, SYN, "expected ident but found ',' here", 1, 5, 1},
    {"foo(int) -> ()", TV, SYN, "expected ident but found ')' here", 1, 8, 1},
    {"foo(int x) -> (int y,)", TV, SYN, "expected ident but found ')' here", 1, 22, 1},
    {"foo(int x) -> int y z", TV, SYN, "expected eof but found 'ident' here", 1, 21, 1},
    {"foo(Tensor in) -> ()", TV, SYN, "expected ident but found 'in' here", 1, 12, 2},
    {"foo(Tensor is) -> ()", TV, SYN, "expected ident but found 'is' here", 1, 12, 2},
    {"foo(Tensor if) -> ()", TV, SYN, "expected ident but found 'if' here", 1, 12, 2},
    {"foo(Tensor not) -> ()", TV, SYN, "expected ident but found 'not' here", 1, 12, 3},
    {"foo(Tensor and) -> ()", TV, SYN, "expected ident but found 'and' here", 1, 12, 3},
    {"foo(Tensor or) -> ()", TV, SYN, "expected ident but found 'or' here", 1, 12, 2},
    {"foo(Tensor def) -> ()", TV, SYN, "expected ident but found 'def' here", 1, 12, 3},
    {"foo(Tensor None) -> ()", TV, SYN, "expected ident but found 'None' here", 1, 12, 4},
    {"foo(Tensor True) -> ()", TV, SYN, "expected ident but found 'True' here", 1, 12, 4},
    {"foo(Tensor 1x) -> ()", TV, SYN, "expected ident but found 'number' here", 1, 12, 1},
    {"foo.default(Tensor x) -> Tensor", TV, INV, "default is not a legal overload name for aten operators", 0, 0, -1},
    {"foo.__bar__(Tensor x) -> Tensor", TV, INV, "__bar__ is not a legal overload name for aten operators", 0, 0, -1},
    {"foo.1(Tensor x) -> Tensor", TV, SYN, "expected eof but found 'number' here", 1, 4, 2},
    {"foo.bar.baz(Tensor x) -> Tensor", TV, SYN, "expected eof but found '.' here", 1, 8, 1},
    {"ns::ns2::foo(Tensor x) -> Tensor", TV, SYN, "expected eof but found ':' here", 1, 8, 1},
    {"ns:foo(Tensor x) -> Tensor", TV, SYN, "expected : but found 'ident' here", 1, 4, 3},
    {"::foo(Tensor x) -> Tensor", TV, SYN, "expected ident but found ':' here", 1, 1, 1},
    {"__torch__.torch.classes.ns.Cls(Tensor x) -> Tensor", TV, SYN, "expected eof but found '.' here", 1, 16, 1},
    {"in(Tensor x) -> Tensor", TV, SYN, "expected ident but found 'in' here", 1, 1, 2},
    {"if::foo(Tensor x) -> Tensor", TV, SYN, "expected ident but found 'if' here", 1, 1, 2},
    {"foo(Tensor x) ->", TV, SYN, "expected ident but found 'eof' here", 1, 17, 0},
    {"foo", TV, SYN, "Tried to parse a function schema but only the operator name was given", 0, 0, -1},
    {"foo.overload", TV, SYN, "Tried to parse a function schema but only the operator name was given", 0, 0, -1},
    {"foo(Tensor x)", TV, SYN, "expected arrow but found 'eof' here", 1, 14, 0},
    {"foo(Tensor x) => Tensor", TV, SYN, "expected arrow but found '=' here", 1, 15, 1},
    {"foo(Tensor x) -> Tensor;", TV, SYN, "expected a valid token but found ';' here", 1, 24, 1},
    {"foo(Float x) -> ()", TV, SYN, "unknown type specifier", 1, 5, 5},
    {"foo(T x) -> ()", TV, SYN, "unknown type specifier", 1, 5, 1},
    {"foo(Optional[Tensor] x) -> ()", TV, SYN, "unknown type specifier", 1, 5, 8},
    {"foo(List[int] x) -> ()", TV, SYN, "unknown type specifier", 1, 5, 4},
    {"foo(Tensor x) -> Tensor\nbar(Tensor y) -> Tensor", TV, SYN, "expected eof but found 'ident' here", 2, 1, 3},
    {"foo(Tensor x) ->\n Tensor", TV, SYN, "expected ident but found 'indent' here", 0, 0, -1},
    {"foo(Tensor?(a!)[] x) -> ()", TV, SYN, "expected ident but found '(' here", 1, 12, 1},
    {"foo(Tensor($0! -> ) x) -> ()", TV, SYN, "expected a valid token but found '$' here", 1, 12, 1},
    {"foo(Device d=cpu) -> ()", TV, SYN, "expected string_literal but found 'ident' here", 1, 14, 3},
    {"foo(complex c=0.+2.j) -> ()", TV, SYN, "expected ) but found '+' here", 1, 17, 1},
    {"foo(float x=1_000.0) -> ()", TV, SYN, "expected ) but found 'ident' here", 1, 14, 4},
    {"foo(int[2] x=[1,]) -> ()", TV, SYN, "expected number but found ']' here", 1, 17, 1},
    {"foo(int[]? x=[1,2]) -> ()", TV, SYN, "expected number but found '[' here", 1, 14, 1},
    {"foo(str s=\"a\\rb\") -> ()", TV, SYN, "ill formed octal specifier", 1, 11, 6},
    {"foo(Tensor(a)! x) -> ()", TV, SYN, "expected ident but found '!' here", 1, 14, 1},
    {"foo(Tensor!(a) x) -> ()", TV, SYN, "expected ident but found '(' here", 1, 12, 1},
    {"foo(int? x=[1]) -> ()", TV, SYN, "expected number but found '[' here", 1, 12, 1},
    {"foo(Tensor[] x=None) -> ()", TV, SYN, "expected [ but found 'None' here", 1, 16, 4},
    {"foo(Device d=\"foo\") -> ()", TV, SYN, "device type at start of device string", 0, 0, -1},
    {"foo(Device d=None) -> ()", TV, SYN, "expected string_literal but found 'None' here", 1, 14, 4},
    {"foo(bool[] m=[True, 1]) -> ()", TV, SYN, NULL, 0, 0, -1},
    {"foo(str s='\\x41') -> ()", TV, SYN, "unsupported hex specifier", 1, 11, 6},
    {"foo(Tensor(a) x) -> Tensor(a) # type: ignore", TV, SYN, "expected eof but found 'type comment' here", 1, 31, -1},
    {"foo(Tensor(a.b) x) -> ()", TV, SYN, "expected ) but found '.' here", 1, 13, 1},
    {"foo(Tensor(a!|b) x) -> ()", TV, SYN, "expected ) but found '|' here", 1, 14, 1},
    {"foo(Tensor(a -> ) x) -> ()", TV, SYN, "expected ident but found ')' here", 1, 17, 1},
    {"foo(Tensor(a->*|b) x) -> ()", TV, SYN, "expected ) but found 'ident' here", 1, 17, 1},
    {"foo(Union(int) u) -> ()", TV, SYN, NULL, 0, 0, -1},
    {"foo((int,) t) -> ()", TV, SYN, "expected ident but found ')' here", 1, 10, 1},
};

static const struct err_case spec_cases[] = {
    /* §2: the empty input and whitespace only */
    {"", S, SYN, "expected ident but found 'eof' here", 1, 1, 0},
    {"   ", S, SYN, "expected ident but found 'eof' here", 0, 0, 0},
    /* §3, §8: PyTorch 2.x messages in registration (strict) mode */
    {"foo(double x) -> ()", S, SYN, "Use `float` instead of `double` in an operator's schema string. `float` in schema corresponds to the double type in C++", 1, 5, 6},
    {"foo(int64_t x) -> ()", S, SYN, "Use `SymInt` or `int` instead of `int64_t` in an operator's schema string. `SymInt` corresponds to c10::SymInt in C++ while `int` in schema corresponds to the int64_t type in C++.", 1, 5, 7},
    {"foo(tensor x) -> ()", S, SYN, "unknown type specifier. Common valid schema types include Tensor, SymInt, int, float, bool, Scalar; for a full list, please see https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/README.md#func", 1, 5, 6},
    {"foo(t x) -> t", S, SYN, "unknown type specifier", 1, 5, 1},
    {"ns::foo(Tensor x) -> t", S, SYN, "unknown type specifier", 1, 22, 1},
    {"foo(Dict(str, t) d) -> ()", S, SYN, "unknown type specifier", 1, 15, 1},
    {"foo(Tensor x) -> Tensor(a) y, t", S, SYN, "expected eof but found ',' here", 1, 29, 1},
    {"foo(T x) -> ()", S, SYN, "unknown type specifier", 1, 5, 1},
    {"foo(GraphModule g) -> ()", S, SYN, "unknown type specifier", 1, 5, 11},
    /* §8.2: FunctionSchema's check; list-typed and kwarg-only arguments are exempt, optional lists are not */
    {"foo(int x=1, int y) -> ()", S, INV, "Non-default positional argument follows default argument. Parameter y in foo(int x=1, int y) -> ()", 0, 0, -1},
    {"foo(Tensor a, int x=1, Tensor b) -> ()", S, INV, "Non-default positional argument follows default argument. Parameter b in foo(Tensor a, int x=1, Tensor b) -> ()", 0, 0, -1},
    {"foo(int x=1, int[]? y) -> ()", S, INV, "Non-default positional argument follows default argument. Parameter y in foo(int x=1, int[]? y) -> ()", 0, 0, -1},
    {"foo(Tensor? x=None, Tensor y) -> ()", S, INV, "Parameter y in foo(Tensor? x=None, Tensor y) -> ()", 0, 0, -1},
    /* §6: illegal overload names */
    {"dummy.__name__(Tensor self) -> Tensor", S, INV, "__name__ is not a legal overload name for aten operators", 0, 0, -1},
    {"ns::foo.default(Tensor x) -> Tensor", S, INV, "default is not a legal overload name for aten operators", 0, 0, -1},
    {"foo.__(Tensor x) -> Tensor", S, INV, "__ is not a legal overload name for aten operators", 0, 0, -1},
    /* §6: varargs */
    {"foo(..., ...) -> ()", S, SYN, "... must be the last element of the argument list", 1, 10, 3},
    {"foo(int x) -> (..., ...)", S, SYN, "... must be the last element of the return list", 1, 21, 3},
    {"foo(*, int x=1, ...) -> ()", S, SYN, "schemas with vararg (...) can't have default value args", 1, 22, 2},
    {"any.foo(int arg1, int arg2=0, ...)", S, SYN, "schemas with vararg (...) can't have default value args", 1, 35, 0},
    /* §2: sized lists, optional and alias order, structural types */
    {"foo(int[2]?[] x) -> ()", S, SYN, "expected ident but found '[' here", 1, 12, 1},
    {"foo((int, int)(a) x) -> ()", S, SYN, "expected ident but found '(' here", 1, 15, 1},
    {"foo(Future(int)(a) x) -> ()", S, SYN, "expected ident but found '(' here", 1, 16, 1},
    {"foo(Dict(str) d) -> ()", S, SYN, "expected , but found ')' here", 1, 13, 1},
    {"foo(Union() u) -> ()", S, SYN, "expected ident but found ')' here", 1, 11, 1},
    {"foo(Tensor(a|) x) -> ()", S, SYN, "expected ident but found ')' here", 1, 14, 1},
    {"foo(Tensor x) -> (Tensor", S, SYN, "expected ) but found 'eof' here", 1, 25, 0},
    /* §1: reserved words are not identifiers anywhere */
    {"foo(Tensor(in) x) -> ()", S, SYN, "expected ident but found 'in' here", 1, 12, 2},
    {"foo.if(Tensor x) -> ()", S, SYN, "expected ident but found 'if' here", 1, 5, 2},
    {"foo() -> Tensor in", S, SYN, "expected eof but found 'in' here", 1, 17, 2},
    {"foo(Tensor x,\n      Tensor in) -> ()", S, SYN, "expected ident but found 'in' here", 2, 14, 2},
    /* §2: returns have names but no defaults; one declaration only */
    {"foo(int x) -> int y=1", S, SYN, "expected eof but found '=' here", 1, 20, 1},
    {"foo(int x) -> () extra", S, SYN, "expected eof but found 'ident' here", 1, 18, 5},
    {"foo(Tensor x) -> Tensor # type: int", S, SYN, "expected eof but found 'type comment' here", 1, 25, -1},
    {"foo(Tensor x)\n -> Tensor", S, SYN, "expected arrow but found 'indent' here", 0, 0, -1},
    /* §1: strings */
    {"foo(str s='a''b') -> ()", S, SYN, "expected ) but found 'string_literal' here", 1, 14, 3},
    {"foo(str s=\"\\U00000041\") -> ()", S, SYN, "unsupported unicode specifier", 1, 11, 12},
    {"foo(str s=\"\\q\") -> ()", S, SYN, "ill formed octal specifier", 1, 11, 4},
    {"foo(str s=\"\\1\") -> ()", S, SYN, "ill formed octal specifier", 1, 11, 4},
    {"foo(str s=\"\\400\") -> ()", S, SYN, "ill formed octal specifier", 1, 11, 6},
    {"foo(str s=\"abc) -> ()", S, SYN, "expected a valid token", 1, 11, 1},
    {"foo(str s=\"a\nb\") -> ()", S, SYN, "expected a valid token", 1, 11, 1},
    /* §5: defaults */
    {"foo(Device d=1) -> ()", S, SYN, "expected string_literal but found 'number' here", 1, 14, 1},
    {"foo(int x=float32) -> ()", S, SYN, "invalid numeric default value", 1, 18, 1},
    {"foo(ScalarType s=float128) -> ()", S, SYN, "invalid numeric default value", 1, 26, 1},
    {"foo(ScalarType? s=Float) -> ()", S, SYN, "invalid numeric default value", 1, 24, 1},
    {"foo(Layout l=sparse) -> ()", S, SYN, "invalid numeric default value", 1, 20, 1},
    {"foo(complex c=1) -> ()", S, SYN, NULL, 0, 0, -1},
    {"foo(int x=9223372036854775808) -> ()", S, SYN, NULL, 0, 0, -1},
    {"foo(Tensor(a!)[] x=[]) -> ()", S, SYN, "lists are only supported for float, int and complex types", 1, 20, 1},
    {"foo(Dict(str, int) d=None) -> ()", S, SYN, NULL, 0, 0, -1},
    /* std::stod and std::stoll throw out_of_range on ERANGE */
    {"foo(float x=1e400) -> ()", S, SYN, NULL, 0, 0, -1},
    {"foo(float x=5e-324) -> ()", S, SYN, NULL, 0, 0, -1},
    {"foo(int x=-9223372036854775809) -> ()", S, SYN, NULL, 0, 0, -1},
};
/* clang-format on */

/* A copy of text[0..len) in a malloc'd buffer of exactly len bytes. */
static char *exact_copy(const char *text, size_t len) {
    char *buf = malloc(len ? len : 1);
    if (!buf) abort();
    if (len) memcpy(buf, text, len);
    return buf;
}

static opreg_status parse_exact(const char *text, size_t len, unsigned flags, opreg_schema **out,
                                opreg_schema_error *err) {
    char *buf = exact_copy(text, len);
    opreg_status st = opreg_schema_parse(out, buf, len, flags, err);
    free(buf);
    return st;
}

/* The line of text (1-based) into *start, *n. */
static bool source_line(const char *text, size_t line, const char **start, size_t *n) {
    const char *p = text;
    for (size_t l = 1; l < line; l++) {
        p = strchr(p, '\n');
        if (!p) return false;
        p++;
    }
    const char *e = strchr(p, '\n');
    *start = p;
    *n = e ? (size_t)(e - p) : strlen(p);
    return true;
}

/* opreg_last_error() must hold the source line (possibly indented) on a line
 * of its own and, on the next line, a caret (`~` or `^`) under the offending
 * column. */
static bool check_caret(const char *last, const char *text, size_t line, size_t column, char *why,
                        size_t why_cap) {
    const char *src;
    size_t n;
    if (!source_line(text, line, &src, &n) || n == 0) return true;
    for (const char *ls = last; ls && *ls; ls = strchr(ls, '\n') ? strchr(ls, '\n') + 1 : NULL) {
        const char *le = strchr(ls, '\n');
        size_t ll = le ? (size_t)(le - ls) : strlen(ls);
        if (!le || ll < n || memcmp(ls + ll - n, src, n) != 0) continue;
        size_t indent = ll - n;
        bool blank = true;
        for (size_t i = 0; i < indent; i++)
            blank = blank && ls[i] == ' ';
        if (!blank) continue;
        const char *caret = le + 1;
        size_t spaces = 0;
        while (caret[spaces] == ' ')
            spaces++;
        if (spaces == indent + column - 1 && (caret[spaces] == '~' || caret[spaces] == '^'))
            return true;
        snprintf(why, why_cap, "caret line has %zu spaces before '%c', expected %zu", spaces,
                 caret[spaces] ? caret[spaces] : '0', indent + column - 1);
        return false;
    }
    snprintf(why, why_cap, "the source line is not on a line of its own");
    return false;
}

static void print_escaped(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
}

static void fail_case(const struct err_case *c, const char *what) {
    fprintf(stderr, "  input \"");
    print_escaped(c->text, strlen(c->text));
    fprintf(stderr, "\" (flags %u): %s\n", c->flags, what);
    test_current_failed = 1;
}

static void run_case(const struct err_case *c) {
    static char dummy;
    opreg_schema *s = (opreg_schema *)(void *)&dummy;
    opreg_schema_error err;
    char why[1024];
    memset(&err, 0, sizeof err);
    opreg_clear_error();
    size_t len = strlen(c->text);
    opreg_status st = parse_exact(c->text, len, c->flags, &s, &err);
    if (st == OPREG_OK) {
        char *p = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
        snprintf(why, sizeof why, "accepted, prints \"%s\"; expected %s", p ? p : "(null)",
                 opreg_status_name(c->status));
        fail_case(c, why);
        opreg_string_free(p);
        opreg_schema_free(s);
        return;
    }
    if (s != NULL) fail_case(c, "*out is not NULL after a failure");
    if (st != c->status) {
        snprintf(why, sizeof why, "status %s, expected %s (message \"%s\")", opreg_status_name(st),
                 opreg_status_name(c->status), err.message);
        fail_case(c, why);
    }
    if (err.status != st) {
        snprintf(why, sizeof why, "err.status %s != returned %s", opreg_status_name(err.status),
                 opreg_status_name(st));
        fail_case(c, why);
    }
    if (memchr(err.message, '\0', sizeof err.message) == NULL) {
        fail_case(c, "err.message is not NUL-terminated");
        return;
    }
    if (err.message[0] == '\0') fail_case(c, "err.message is empty");
    if (strchr(err.message, '\n')) {
        snprintf(why, sizeof why, "err.message is not one line: \"%s\"", err.message);
        fail_case(c, why);
    }
    if (c->message && !strstr(err.message, c->message)) {
        snprintf(why, sizeof why, "message \"%s\" lacks \"%s\"", err.message, c->message);
        fail_case(c, why);
    }
    if (err.offset > len) {
        snprintf(why, sizeof why, "err.offset %zu is past the input (%zu bytes)", err.offset, len);
        fail_case(c, why);
    }
    if (c->line && err.line != (size_t)c->line) {
        snprintf(why, sizeof why, "err.line %zu, expected %d (message \"%s\")", err.line, c->line,
                 err.message);
        fail_case(c, why);
    }
    if (c->column && err.column != (size_t)c->column) {
        snprintf(why, sizeof why, "err.column %zu, expected %d (message \"%s\")", err.column,
                 c->column, err.message);
        fail_case(c, why);
    }
    if (c->line == 1 && c->column && err.offset != (size_t)c->column - 1) {
        snprintf(why, sizeof why, "err.offset %zu, expected %d", err.offset, c->column - 1);
        fail_case(c, why);
    }
    if (c->length >= 0 && err.length != (size_t)c->length) {
        snprintf(why, sizeof why, "err.length %zu, expected %d", err.length, c->length);
        fail_case(c, why);
    }
    const char *last = opreg_last_error();
    if (!last || !strstr(last, err.message)) {
        snprintf(why, sizeof why, "opreg_last_error() \"%s\" lacks the message \"%s\"",
                 last ? last : "(null)", err.message);
        fail_case(c, why);
    } else if (c->line && c->column && c->length > 0 &&
               !check_caret(last, c->text, (size_t)c->line, (size_t)c->column, why, sizeof why)) {
        char buf[1400];
        snprintf(buf, sizeof buf, "opreg_last_error() \"%s\": %s", last, why);
        fail_case(c, buf);
    }
}

TEST(oracle_errors) {
    for (size_t i = 0; i < sizeof oracle_cases / sizeof oracle_cases[0]; i++)
        run_case(&oracle_cases[i]);
}

TEST(spec_errors) {
    for (size_t i = 0; i < sizeof spec_cases / sizeof spec_cases[0]; i++)
        run_case(&spec_cases[i]);
}

/* Strict mode fails where the oracle (which allows type variables) fails. */
TEST(oracle_errors_strict) {
    for (size_t i = 0; i < sizeof oracle_cases / sizeof oracle_cases[0]; i++) {
        struct err_case c = oracle_cases[i];
        c.flags = S;
        /* only the outcome and the status: a type variable may fail first */
        opreg_schema *s = NULL;
        opreg_schema_error err;
        opreg_status st = parse_exact(c.text, strlen(c.text), c.flags, &s, &err);
        if (st == OPREG_OK) {
            fail_case(&c, "accepted in strict mode");
            opreg_schema_free(s);
        }
    }
}

/* The message survives a NULL err; opreg_last_error() still has it. */
TEST(null_err_pointer) {
    opreg_schema *s = NULL;
    const char *t = "foo(Tensor in) -> ()";
    opreg_clear_error();
    CHECK_EQ_INT(parse_exact(t, strlen(t), 0, &s, NULL), SYN);
    CHECK(s == NULL);
    CHECK_CONTAINS(opreg_last_error(), "expected ident but found 'in' here");
    CHECK_CONTAINS(opreg_last_error(), t);
}

/* ---- robustness ---------------------------------------------------------- */

/* Parse text[0..len); any outcome but a crash is fine, and a failure must be
 * well formed. Accepted schemas are printed, hashed and compared. */
static void parse_any(const char *text, size_t len, unsigned flags, const char *label) {
    opreg_schema *s = NULL;
    opreg_schema_error err;
    memset(&err, 0, sizeof err);
    opreg_status st = parse_exact(text, len, flags, &s, &err);
    if (st == OPREG_OK) {
        if (!s) {
            TEST_FAIL_AT("%s: OPREG_OK but no schema", label);
            return;
        }
        char *p = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
        char *q = opreg_schema_to_string(s, OPREG_SCHEMA_CANONICAL);
        if (!p || !q) TEST_FAIL_AT("%s: cannot print an accepted schema", label);
        if (!opreg_schema_equal(s, s)) TEST_FAIL_AT("%s: schema not equal to itself", label);
        (void)opreg_schema_hash(s);
        opreg_string_free(p);
        opreg_string_free(q);
        opreg_schema_free(s);
        return;
    }
    if (s) TEST_FAIL_AT("%s: *out not NULL after failure", label);
    if (st != SYN && st != INV)
        TEST_FAIL_AT("%s: status %s (%s)", label, opreg_status_name(st), err.message);
    if (err.offset > len) TEST_FAIL_AT("%s: err.offset %zu > length %zu", label, err.offset, len);
    if (err.offset + err.length > len)
        TEST_FAIL_AT("%s: err.offset+length %zu > length %zu", label, err.offset + err.length, len);
    if (!memchr(err.message, '\0', sizeof err.message) || err.message[0] == '\0')
        TEST_FAIL_AT("%s: bad err.message", label);
    if (err.line < 1 || err.column < 1)
        TEST_FAIL_AT("%s: err.line %zu / err.column %zu not 1-based", label, err.line, err.column);
}

enum { DEEP = 100000 };

static char *repeat_into(char *p, const char *piece, size_t times) {
    size_t n = strlen(piece);
    for (size_t i = 0; i < times; i++, p += n)
        memcpy(p, piece, n);
    return p;
}

/* Build head + piece*times + mid + piece2*times + tail; returns its length. */
static char *build(const char *head, const char *piece, const char *mid, const char *piece2,
                   const char *tail, size_t times, size_t *len) {
    size_t n = strlen(head) + (strlen(piece) + strlen(piece2)) * times + strlen(mid) + strlen(tail);
    char *buf = malloc(n + 1);
    if (!buf) abort();
    char *p = buf;
    p = repeat_into(p, head, 1);
    p = repeat_into(p, piece, times);
    p = repeat_into(p, mid, 1);
    p = repeat_into(p, piece2, times);
    p = repeat_into(p, tail, 1);
    *p = '\0';
    *len = n;
    return buf;
}

TEST(deep_list_suffixes) {
    size_t len;
    char *t = build("foo(Tensor", "[]", " x) -> ", "", "()", DEEP, &len);
    opreg_schema *s = NULL;
    opreg_schema_error err;
    opreg_status st = parse_exact(t, len, 0, &s, &err);
    if (st == OPREG_OK) {
        /* accepted: it prints back as exactly what was given */
        char *p = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
        if (!p || strcmp(p, t) != 0)
            TEST_FAIL_AT("deep Tensor[]...[] printed wrongly (%zu bytes, expected %zu)",
                         p ? strlen(p) : 0, len);
        opreg_string_free(p);
        (void)opreg_schema_hash(s);
        opreg_schema_free(s);
    } else {
        CHECK(s == NULL);
        CHECK(st == SYN);
    }
    free(t);
}

TEST(deep_returns_and_optionals) {
    size_t len;
    char *t = build("foo(Tensor x) -> Tensor", "[]", "", "", "", DEEP, &len);
    parse_any(t, len, 0, "deep return list suffixes");
    free(t);
    t = build("foo(Tensor", "?", " x) -> ()", "", "", DEEP, &len);
    parse_any(t, len, 0, "Tensor??...?");
    free(t);
    t = build("foo(Tensor", "[]?", " x) -> ()", "", "", DEEP, &len);
    parse_any(t, len, 0, "Tensor[]?[]?...");
    free(t);
    t = build("foo(Tensor(a)", "[](a)", " x) -> ()", "", "", DEEP, &len);
    parse_any(t, len, 0, "Tensor(a)[](a)[](a)...");
    free(t);
}

TEST(deep_tuples) {
    size_t len;
    char *t = build("foo(", "(", "int", ")", " x) -> ()", DEEP, &len);
    parse_any(t, len, 0, "deep tuple argument");
    free(t);
    t = build("foo() -> (", "(", "int", ")", ")", DEEP, &len);
    parse_any(t, len, 0, "deep tuple return");
    free(t);
    /* unbalanced */
    t = build("foo(", "(", "", "", "", DEEP, &len);
    parse_any(t, len, 0, "(((( unbalanced");
    free(t);
    t = build("foo(", "(int, ", "", "", "", DEEP, &len);
    parse_any(t, len, 0, "(int, (int, ... unbalanced");
    free(t);
}

TEST(deep_containers) {
    size_t len;
    char *t = build("foo(", "Dict(str, ", "int", ")", " x) -> ()", DEEP, &len);
    parse_any(t, len, 0, "deep Dict");
    free(t);
    t = build("foo(", "Future(", "int", ")", " x) -> ()", DEEP, &len);
    parse_any(t, len, 0, "deep Future");
    free(t);
    t = build("foo(", "Union(int, ", "str", ")", " x) -> ()", DEEP, &len);
    parse_any(t, len, 0, "deep Union");
    free(t);
    t = build("foo(int[] x=", "[", "1", "]", ") -> ()", DEEP, &len);
    parse_any(t, len, 0, "deep default list");
    free(t);
    t = build("foo(Tensor(", "a|", "b", "", ") x) -> ()", DEEP, &len);
    parse_any(t, len, 0, "100000 alias sets");
    free(t);
    t = build("foo(", "int x, ", "int y", "", ") -> ()", DEEP, &len);
    parse_any(t, len, 0, "100000 arguments");
    free(t);
    t = build("foo(", "*, ", "int y", "", ") -> ()", DEEP, &len);
    parse_any(t, len, 0, "100000 kwarg markers");
    free(t);
    t = build("foo(", " ", "int x", "\n", ") -> ()", DEEP, &len);
    parse_any(t, len, 0, "long whitespace and newlines");
    free(t);
}

TEST(empty_input) {
    opreg_schema *s = NULL;
    opreg_schema_error err;
    CHECK_EQ_INT(parse_exact("", 0, 0, &s, &err), SYN);
    CHECK(s == NULL);
    CHECK_CONTAINS(err.message, "expected ident but found 'eof' here");
    CHECK_EQ_INT(err.offset, 0);
    CHECK_EQ_INT(err.length, 0);
    /* a non-empty string whose given length is 0 */
    CHECK_EQ_INT(opreg_schema_parse(&s, "foo() -> ()", 0, 0, &err), SYN);
    CHECK(s == NULL);
}

TEST(embedded_nul) {
    static const char t1[] = "foo(Tensor\0x) -> Tensor";
    opreg_schema *s = NULL;
    opreg_schema_error err;
    CHECK_EQ_INT(parse_exact(t1, sizeof t1 - 1, 0, &s, &err), SYN);
    CHECK(s == NULL);
    CHECK_CONTAINS(err.message, "expected a valid token");
    CHECK_EQ_INT(err.offset, 10);
    CHECK_EQ_INT(err.column, 11);

    static const char t2[] = "foo(Tensor x) -> Tensor\0";
    CHECK_EQ_INT(parse_exact(t2, sizeof t2 - 1, 0, &s, &err), SYN);
    CHECK_CONTAINS(err.message, "expected a valid token");
    CHECK_EQ_INT(err.offset, 23);

    static const char t3[] = "\0foo(Tensor x) -> Tensor";
    CHECK_EQ_INT(parse_exact(t3, sizeof t3 - 1, 0, &s, &err), SYN);
    CHECK_EQ_INT(err.offset, 0);

    /* the explicit length wins over a NUL terminator further on, and over
     * whatever follows the given bytes */
    static const char t4[] = "foo(int x) -> int extra";
    CHECK_EQ_INT(opreg_schema_parse(&s, t4, strlen("foo(int x) -> int"), 0, &err), OPREG_OK);
    char *p = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
    CHECK_EQ_STR(p, "foo(int x) -> int");
    opreg_string_free(p);
    opreg_schema_free(s);
}

/* Every prefix of some schemas, each one in an exact-size buffer: the lexer
 * must never read past the end (numbers, strings, comments, `->`, `...`). */
TEST(every_prefix) {
    static const char *const texts[] = {
        "ns::foo.bar(Tensor(a!) x, int[2] y=[1, 2], float z=1.5e-3, complex c=2j, *, "
        "str s=\"a\\n\\101\", str t='''x''', Device d=\"cuda:0\", ScalarType? st=float32, "
        "Tensor(a|b -> *)[]? w=None) -> (Tensor(a!) out, ...) # comment",
        "foo(int x=0x1p3, float y=.5, float z=5., int w=007, int v=-1) -> int",
        "foo(int x=1",
        "foo(float x=1e",
        "foo(float x=1.5j",
        "foo(str s=\"abc",
        "foo(str s=\"\"\"abc\"\"",
        "foo(str s='a\\",
        "foo(Tensor x) -> Tensor \\",
        "foo(Tensor x) -> Tensor # type:",
        "foo(Tensor x) -> Tensor\n",
        "foo(Tensor x) ..",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t n = strlen(texts[i]);
        for (size_t k = 0; k <= n; k++) {
            char label[64];
            snprintf(label, sizeof label, "text %zu prefix %zu", i, k);
            parse_any(texts[i], k, OPREG_SCHEMA_ALLOW_TYPEVARS, label);
        }
    }
    /* the first two are valid in full */
    for (size_t i = 0; i < 2; i++) {
        opreg_schema *s = NULL;
        opreg_schema_error err;
        opreg_status st = parse_exact(texts[i], strlen(texts[i]), 0, &s, &err);
        if (st != OPREG_OK) TEST_FAIL_AT("text %zu rejected: %s", i, err.message);
        opreg_schema_free(s);
    }
}

/* Every byte value at a few places. */
TEST(every_byte) {
    static const char *const shapes[][2] = {
        { "foo(int x", ") -> ()" },       { "foo(str s=\"", "\") -> ()" },
        { "foo(Tensor(a", ") x) -> ()" }, { "foo(int x) -> ()", "" },
        { "", "foo(int x) -> ()" },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int b = 0; b < 256; b++) {
            char buf[64];
            size_t n1 = strlen(shapes[i][0]), n2 = strlen(shapes[i][1]);
            memcpy(buf, shapes[i][0], n1);
            buf[n1] = (char)b;
            memcpy(buf + n1 + 1, shapes[i][1], n2);
            char label[64];
            snprintf(label, sizeof label, "shape %zu byte 0x%02x", i, b);
            parse_any(buf, n1 + 1 + n2, OPREG_SCHEMA_ALLOW_TYPEVARS, label);
        }
    }
}

int main(void) {
    RUN(oracle_errors);
    RUN(spec_errors);
    RUN(oracle_errors_strict);
    RUN(null_err_pointer);
    RUN(deep_list_suffixes);
    RUN(deep_returns_and_optionals);
    RUN(deep_tuples);
    RUN(deep_containers);
    RUN(empty_input);
    RUN(embedded_nul);
    RUN(every_prefix);
    RUN(every_byte);
    return test_summary();
}
