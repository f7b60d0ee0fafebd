/* The schema layer's private model, arena, lexer and printer helpers. */
#ifndef OPREG_SCHEMAS_INTERNAL_H
#define OPREG_SCHEMAS_INTERNAL_H

#include "opreg/schema.h"
#include "common/internal.h"

#include <setjmp.h>
#include <string.h>

/* ---- model ------------------------------------------------------------------ */

struct opreg_alias {
    const char **before; /* deduplicated, in source order; "*" is the wildcard */
    const char **after;  /* == before when the text has no "->" */
    uint32_t n_before;
    uint32_t n_after;
    bool is_write;
    bool is_fresh; /* the `!` shorthand: before = { "$N" }, no after-sets */
};

struct opreg_type {
    uint8_t kind;     /* opreg_type_kind */
    uint32_t n_elems; /* element types (list, optional, tuple, ...) */
    const opreg_type **elems;
    int64_t list_size; /* N of a sized list `T[N]`, else -1 */
    const char *name;  /* leaf spelling, type variable or class name */
    const opreg_alias *alias;
};

struct opreg_default {
    uint8_t kind; /* opreg_default_kind */
    union {
        bool b;
        int64_t i;
        double f; /* float, or the imaginary part of a complex */
        struct {
            const char *s;
            size_t len;
        } str; /* string, or a device's type name */
        struct {
            const opreg_default *items;
            size_t n;
        } list;
    } u;
    int64_t device_index; /* -1 when not given */
    const char *spelling; /* an int given by name (`Mean`, `float32`): the name */
};

struct opreg_argument {
    const char *name; /* "" for an unnamed return */
    const opreg_type *type;
    const opreg_default *def;
    bool kwarg_only;
    uint32_t src_start; /* the argument's first token, for messages */
    uint32_t src_len;
};

struct opreg__chunk;

struct opreg_schema {
    const char *ns;
    const char *name;
    const char *overload;
    opreg_argument *args;
    opreg_argument *rets;
    size_t n_args;
    size_t n_rets;
    bool is_vararg;
    bool is_varret;
    bool has_typevars;
    struct opreg__chunk *chunks; /* the arena that owns everything above */
};

/* ---- arena ------------------------------------------------------------------ */

struct opreg__chunk {
    struct opreg__chunk *next;
    size_t used;
    size_t cap;
    max_align_t data[];
};

/* ---- lexer ------------------------------------------------------------------ */

/* Token kinds: single characters stand for themselves; the rest follow. */
enum {
    TK_EOF = 256,
    TK_NUMBER,
    TK_NEWLINE,
    TK_INDENT,
    TK_DEDENT,
    TK_IDENT,
    TK_STRINGLITERAL,
    TK_ARROW,
    TK_DOTS,
    TK_TYPE_COMMENT,
    TK_OPERATOR, /* a multi-character operator that schemas never use: `==`, `**`, ... */
    TK_KEYWORD,  /* a reserved word other than those below */
    TK_TRUE,
    TK_FALSE,
    TK_NONE,
    TK_NONE_TYPE,
};

/* 16 bytes, so that a token passes in two registers. */
typedef struct opreg__token {
    int32_t kind;
    uint32_t start;
    uint32_t len;
    uint32_t unused;
} opreg__token;

/* The parse context: lexer state, arena and error target. */
typedef struct opreg__parser {
    const char *src;
    uint32_t len;
    uint32_t pos;
    uint32_t line_start; /* [line_start, line_end]: a cached line, line_end at its '\n' */
    uint32_t line_end;
    int nesting;
    uint32_t indent[8];
    int n_indent;
    opreg__token cur;
    opreg__token peek; /* the lookahead, when has_peek */
    bool has_peek;
    opreg__token pending[4]; /* DEDENTs that follow a NEWLINE */
    int n_pending;

    opreg_schema *schema;
    char *copy; /* the source, copied into the arena; names point into it */
    bool allow_typevars;
    int next_fresh;
    int depth;

    opreg_schema_error *err;
    jmp_buf fail;
} opreg__parser;

void opreg__lex_init(opreg__parser *p);
opreg__token opreg__lex_next(opreg__parser *p);        /* returns the current token, advances */
const opreg__token *opreg__lex_peek(opreg__parser *p); /* the token after the current one */
const char *opreg__token_kind_name(const opreg__parser *p, const opreg__token *t, char buf[2]);

/* Record an error at [start, start+len) and unwind to the parse entry point. */
_Noreturn void opreg__parse_fail(opreg__parser *p, opreg_status status, uint32_t start,
                                 uint32_t len, const char *fmt, ...) OPREG__PRINTF(5, 6);
_Noreturn void opreg__parse_expected(opreg__parser *p, const char *what);

void *opreg__arena_alloc(opreg__parser *p, size_t size);
const char *opreg__arena_strdup(opreg__parser *p, const char *s, size_t len);

/* Unescape a string literal token (quotes included) into the arena. */
const char *opreg__parse_string_literal(opreg__parser *p, const opreg__token *t, size_t *len);

/* Parse a default value after `=` for an argument of the given type. */
const opreg_default *opreg__parse_default(opreg__parser *p, const opreg_type *type);

/* The kind a default value is parsed by: ScalarType, Layout, MemoryFormat and
 * SymInt count as int, SymBool as bool (PyTorch's "fake" type). */
int opreg__fake_kind(const opreg_type *type);

/* Structural equality of types, alias annotations and defaults (model.c). */
bool opreg__type_equal(const opreg_type *a, const opreg_type *b);

/* A word keeping only the first n (<= 8) bytes, in memory order. */
static inline uint64_t opreg__first_bytes(uint64_t w, uint32_t n) {
    if (n >= 8) return w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return n ? w & (~0ull << (64 - 8 * n)) : 0;
#else
    return w & ((1ull << (8 * n)) - 1);
#endif
}

/* Bytes of zeros after the arena's copy of the source, so that a word can be
 * loaded at any position of it. */
#define OPREG__COPY_PADDING 16

/* ---- printing ----------------------------------------------------------------- */

typedef struct opreg__out {
    char *buf;
    size_t cap;
    size_t len; /* the full length, even past cap */
} opreg__out;

void opreg__out_put(opreg__out *o, const char *s, size_t n);
void opreg__out_str(opreg__out *o, const char *s);
void opreg__out_char(opreg__out *o, char c);
void opreg__out_fmt(opreg__out *o, const char *fmt, ...) OPREG__PRINTF(2, 3);

/* Print a double as PyTorch's IValue printer does: `2.`, or %.17g. */
void opreg__out_double(opreg__out *o, double d);

#endif
