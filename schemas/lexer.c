/* The lexer of PyTorch's schema language (TorchScript's lexer, as far as a
 * schema can reach it): blanks and comments, newlines that only count outside
 * brackets, numbers as strtod reads them, strings, identifiers, reserved words
 * and operators, each with the name PyTorch's messages give its kind.
 *
 * It is table driven: one character-class lookup picks the branch, reserved
 * words are found with one hash probe, and tokens are 12 bytes. */
#include "schemas/internal.h"

#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- character classes ------------------------------------------------------------- */

enum {
    CC_INVALID,
    CC_IDENT,
    CC_DIGIT,
    CC_DOT,
    CC_QUOTE,
    CC_OPEN,
    CC_CLOSE,
    CC_SINGLE,
    CC_OPERATOR,
    CC_BLANK,
    CC_NEWLINE,
    CC_HASH,
    CC_BACKSLASH
};

#define R2(a)  a, a
#define R4(a)  R2(a), R2(a)
#define R8(a)  R4(a), R4(a)
#define R16(a) R8(a), R8(a)
static const unsigned char char_class[256] = {
    ['a'] = R16(CC_IDENT),
    ['q'] = R8(CC_IDENT),
    ['y'] = R2(CC_IDENT),
    ['A'] = R16(CC_IDENT),
    ['Q'] = R8(CC_IDENT),
    ['Y'] = R2(CC_IDENT),
    ['_'] = CC_IDENT,
    ['0'] = R8(CC_DIGIT),
    ['8'] = R2(CC_DIGIT),
    ['.'] = CC_DOT,
    ['"'] = CC_QUOTE,
    ['\''] = CC_QUOTE,
    ['('] = CC_OPEN,
    ['['] = CC_OPEN,
    ['{'] = CC_OPEN,
    [')'] = CC_CLOSE,
    [']'] = CC_CLOSE,
    ['}'] = CC_CLOSE,
    [','] = CC_SINGLE,
    [':'] = CC_SINGLE,
    ['?'] = CC_SINGLE,
    ['@'] = CC_SINGLE,
    ['~'] = CC_SINGLE,
    /* the first characters of multi-character operators, each a token alone too */
    ['<'] = CC_OPERATOR,
    ['>'] = CC_OPERATOR,
    ['*'] = CC_OPERATOR,
    ['!'] = CC_OPERATOR,
    ['='] = CC_OPERATOR,
    ['/'] = CC_OPERATOR,
    ['+'] = CC_OPERATOR,
    ['-'] = CC_OPERATOR,
    ['%'] = CC_OPERATOR,
    ['|'] = CC_OPERATOR,
    ['&'] = CC_OPERATOR,
    ['^'] = CC_OPERATOR,
    /* isspace() but '\n' */
    [' '] = CC_BLANK,
    ['\t'] = CC_BLANK,
    ['\r'] = CC_BLANK,
    ['\v'] = CC_BLANK,
    ['\f'] = CC_BLANK,
    ['\n'] = CC_NEWLINE,
    ['#'] = CC_HASH,
    ['\\'] = CC_BACKSLASH,
};
#undef R16
#undef R8
#undef R4
#undef R2

static void lex(opreg__parser *p, opreg__token *t);

#if !defined(__SSE2__)
/* Bytes that continue an identifier. */
#define R2(a)  a, a
#define R4(a)  R2(a), R2(a)
#define R8(a)  R4(a), R4(a)
#define R16(a) R8(a), R8(a)
static const bool ident_char[256] = {
    ['a'] = R16(true), ['q'] = R8(true), ['y'] = R2(true), ['A'] = R16(true), ['Q'] = R8(true),
    ['Y'] = R2(true),  ['_'] = true,     ['0'] = R8(true), ['8'] = R2(true),
};
#undef R16
#undef R8
#undef R4
#undef R2
#endif

/* How many identifier bytes start at s, which is in the padded copy of the
 * source: 16 bytes at a time with SSE2, so that the end of a name costs no
 * mispredicted branch; a byte loop elsewhere. */
static uint32_t ident_length(const char *s) {
    uint32_t n = 0;
#if defined(__SSE2__)
    for (;;) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + n));
        __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
        __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                      _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
        __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
        __m128i under = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
        unsigned mask =
            (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), under));
        unsigned run = (unsigned)__builtin_ctz(~mask); /* ~mask has bit 16 set */
        n += run;
        if (run < 16) return n;
    }
#else
    while (ident_char[(unsigned char)s[n]])
        n++;
    return n;
#endif
}

/* How a bracket changes the nesting that makes newlines plain blanks. */
static const signed char nesting_delta[256] = {
    ['('] = 1, ['['] = 1, ['{'] = 1, [')'] = -1, [']'] = -1, ['}'] = -1,
};

static bool is_digit(unsigned char c) {
    return char_class[c] == CC_DIGIT;
}
static bool is_xdigit(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* ---- reserved words and operators ----------------------------------------------------- */

/* Reserved words with their kinds, in a table probed by
 * (first + 7 * last + 56 * length) mod 64, which has no collisions. */
static const struct {
    char word[9]; /* zero-padded */
    uint8_t len;
    int16_t kind;
} reserved[64] = {
    [0] = { "del", 3, TK_KEYWORD },       [2] = { "not", 3, TK_KEYWORD },
    [4] = { "return", 6, TK_KEYWORD },    [5] = { "and", 3, TK_KEYWORD },
    [8] = { "else", 4, TK_KEYWORD },      [13] = { "raise", 5, TK_KEYWORD },
    [15] = { "elif", 4, TK_KEYWORD },     [17] = { "NoneType", 8, TK_NONE_TYPE },
    [18] = { "while", 5, TK_KEYWORD },    [22] = { "def", 3, TK_KEYWORD },
    [27] = { "in", 2, TK_KEYWORD },       [29] = { "assert", 6, TK_KEYWORD },
    [32] = { "class", 5, TK_KEYWORD },    [33] = { "False", 5, TK_FALSE },
    [35] = { "if", 2, TK_KEYWORD },       [37] = { "import", 6, TK_KEYWORD },
    [38] = { "continue", 8, TK_KEYWORD }, [39] = { "break", 5, TK_KEYWORD },
    [42] = { "Ellipsis", 8, TK_KEYWORD }, [43] = { "global", 6, TK_KEYWORD },
    [44] = { "for", 3, TK_KEYWORD },      [47] = { "with", 4, TK_KEYWORD },
    [49] = { "None", 4, TK_NONE },        [53] = { "pass", 4, TK_KEYWORD },
    [54] = { "as", 2, TK_KEYWORD },       [55] = { "True", 4, TK_TRUE },
    [61] = { "or", 2, TK_KEYWORD },       [62] = { "is", 2, TK_KEYWORD },
};

/* s is in the padded copy of the source, n <= 8. */
static int reserved_kind(const char *s, uint32_t n) {
    unsigned h = ((unsigned char)s[0] + 7u * (unsigned char)s[n - 1] + 56u * n) & 63;
    if (reserved[h].len == n &&
        opreg__first_bytes(opreg__load8(s), n) == opreg__load8(reserved[h].word))
        return reserved[h].kind;
    return TK_IDENT;
}

/* Operators of the TorchScript lexer longer than one character, with their
 * kind names as PyTorch's messages print them (lex() matches them itself). */
static const struct {
    const char text[4];
    uint8_t len;
    int16_t kind;
    const char *name;
} operators[] = {
    { "<=>", 3, TK_OPERATOR, "equivalent" },
    { "<<=", 3, TK_OPERATOR, "<<=" },
    { ">>=", 3, TK_OPERATOR, ">>=" },
    { "**=", 3, TK_OPERATOR, "**=" },
    { "...", 3, TK_DOTS, "dots" },
    { "!=", 2, TK_OPERATOR, "ne" },
    { "==", 2, TK_OPERATOR, "eq" },
    { "<=", 2, TK_OPERATOR, "le" },
    { ">=", 2, TK_OPERATOR, "ge" },
    { "//", 2, TK_OPERATOR, "floordiv" },
    { "<<", 2, TK_OPERATOR, "<<" },
    { ">>", 2, TK_OPERATOR, ">>" },
    { "+=", 2, TK_OPERATOR, "+=" },
    { "-=", 2, TK_OPERATOR, "-=" },
    { "*=", 2, TK_OPERATOR, "*=" },
    { "/=", 2, TK_OPERATOR, "/=" },
    { "%=", 2, TK_OPERATOR, "%=" },
    { "|=", 2, TK_OPERATOR, "|=" },
    { "&=", 2, TK_OPERATOR, "&=" },
    { "^=", 2, TK_OPERATOR, "^=" },
    { "**", 2, TK_OPERATOR, "pow operator" },
    { "->", 2, TK_ARROW, "arrow" },
};

_Noreturn static void fail_invalid(opreg__parser *p, uint32_t pos, unsigned char c) {
    char shown[8];
    if (c >= 0x20 && c < 0x7f)
        shown[0] = (char)c, shown[1] = '\0';
    else
        snprintf(shown, sizeof shown, "\\x%02x", c);
    p->pos = pos;
    opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, pos, 1,
                      "expected a valid token but found '%s' here", shown);
}

/* ---- numbers and strings, on the rest of the line --------------------------------------- */

static uint32_t line_end(opreg__parser *p, uint32_t pos) {
    if (pos >= p->line_start && pos <= p->line_end) return p->line_end;
    const char *nl = memchr(p->src + pos, '\n', p->len - pos);
    p->line_start = pos;
    p->line_end = nl ? (uint32_t)(nl - p->src) : p->len;
    return p->line_end;
}

/* How many bytes C's strtod would read at s (bounded by end), plus a
 * trailing 'j'. The first byte is a digit or a '.'. */
static uint32_t scan_number(const char *s, const char *end) {
    const char *q = s;
    if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
        const char *h = q + 2;
        bool digits = false;
        while (h < end && is_xdigit((unsigned char)*h))
            h++, digits = true;
        if (h < end && *h == '.') {
            h++;
            while (h < end && is_xdigit((unsigned char)*h))
                h++, digits = true;
        }
        if (digits) {
            q = h;
            if (q < end && (*q == 'p' || *q == 'P')) {
                const char *e = q + 1;
                if (e < end && (*e == '+' || *e == '-')) e++;
                if (e < end && is_digit((unsigned char)*e)) {
                    while (e < end && is_digit((unsigned char)*e))
                        e++;
                    q = e;
                }
            }
            goto done;
        }
        /* "0x" without hex digits: strtod reads the "0". */
    }
    bool digits = false;
    while (q < end && is_digit((unsigned char)*q))
        q++, digits = true;
    if (q < end && *q == '.') {
        const char *f = q + 1;
        while (f < end && is_digit((unsigned char)*f))
            f++, digits = true;
        if (!digits) return 0;
        q = f;
    }
    if (!digits) return 0;
    if (q < end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < end && (*e == '+' || *e == '-')) e++;
        if (e < end && is_digit((unsigned char)*e)) {
            while (e < end && is_digit((unsigned char)*e))
                e++;
            q = e;
        }
    }
done:
    if (q < end && *q == 'j') q++;
    return (uint32_t)(q - s);
}

/* Length of a string literal at s (quotes included), or 0 if it does not
 * close on this line. A backslash always takes the next character along. */
static uint32_t scan_string(const char *s, const char *end) {
    char quote = *s;
    size_t size = (size_t)(end - s);
    size_t qlen = (size >= 3 && s[1] == quote && s[2] == quote) ? 3 : 1;
    for (size_t i = qlen; i < size; i++) {
        if (s[i] == quote && i + qlen <= size &&
            (qlen == 1 || (s[i + 1] == quote && s[i + 2] == quote)))
            return (uint32_t)(i + qlen);
        if (s[i] == '\\') i++;
    }
    return 0;
}

static bool is_type_comment(const opreg__parser *p, uint32_t pos) {
    return p->len - pos >= 7 && memcmp(p->src + pos, "# type:", 7) == 0;
}

/* ---- whitespace, newlines and indentation ------------------------------------------------- */

/* Skip blanks, comments and line continuations from p->pos. Returns true
 * when a newline outside brackets was crossed (or at the start, when
 * whitespace_token): then *ws_start is where the last line's indentation
 * begins, and p->pos where it ends. */
static bool skip_space(opreg__parser *p, bool whitespace_token, uint32_t *ws_start) {
    uint32_t pos = p->pos;
    const bool continuation = p->nesting > 0;
    uint32_t start;
    for (;;) {
        start = pos;
        while (pos < p->len && char_class[(unsigned char)p->src[pos]] == CC_BLANK)
            pos++;
        if (pos < p->len) {
            char c = p->src[pos];
            if (c == '#' && !is_type_comment(p, pos)) {
                while (pos < p->len && p->src[pos] != '\n')
                    pos++;
                continue;
            }
            if (c == '\\' && pos + 1 < p->len && p->src[pos + 1] == '\n' && !whitespace_token) {
                pos += 2;
                continue;
            }
            if (c == '\n') {
                pos++;
                whitespace_token = !continuation;
                continue;
            }
        }
        break;
    }
    p->pos = pos;
    *ws_start = start;
    return whitespace_token;
}

static void pending_push(opreg__parser *p, int kind, uint32_t start, uint32_t len) {
    if (p->n_pending < (int)(sizeof p->pending / sizeof p->pending[0])) {
        opreg__token t = { kind, start, len, 0 };
        p->pending[p->n_pending++] = t;
    }
}

/* A run of whitespace that crossed a top-level newline: NEWLINE, INDENT, or
 * NEWLINE plus DEDENTs, as the TorchScript lexer makes them. */
static void lex_newline(opreg__parser *p, opreg__token *t, uint32_t start) {
    uint32_t len = p->pos - start;
    uint32_t depth = p->pos < p->len ? len : p->indent[0];
    uint32_t top = p->indent[p->n_indent - 1];
    t->kind = TK_NEWLINE;
    t->start = start;
    t->len = len;
    if (depth > top) {
        if (p->n_indent < (int)(sizeof p->indent / sizeof p->indent[0]))
            p->indent[p->n_indent++] = depth;
        t->kind = TK_INDENT;
    } else if (depth < top) {
        while (p->indent[p->n_indent - 1] != depth) {
            p->n_indent--;
            pending_push(p, TK_DEDENT, start, len);
            if (p->n_indent == 0)
                opreg__parse_fail(p, OPREG_ERR_SCHEMA_SYNTAX, start, len, "invalid indent level %u",
                                  (unsigned)depth);
        }
    }
}

/* ---- tokens ------------------------------------------------------------------------------- */

/* Everything but identifiers and brackets: whitespace that crosses lines or
 * holds comments, the end, numbers, strings, operators and invalid bytes.
 * Kept out of line so that the fast path in lex() stays small. */
__attribute__((noinline)) static void lex_slow(opreg__parser *p, opreg__token *t) {
    uint32_t ws;
    if (skip_space(p, false, &ws)) {
        lex_newline(p, t, ws);
        return;
    }
    uint32_t pos = p->pos;
    t->start = pos;
    if (pos >= p->len) {
        t->kind = TK_EOF;
        t->len = 0;
        return;
    }
    const char *s = p->src + pos;
    unsigned char c = (unsigned char)*s;
    uint32_t n;
    switch (char_class[c]) {
    case CC_IDENT:
    case CC_OPEN:
    case CC_CLOSE:
    case CC_SINGLE:
        lex(p, t); /* after a comment or a line continuation */
        return;
    case CC_DIGIT:
    case CC_DOT:
        /* strtod reads numbers; a lone '.' or "..." is an operator. */
        n = scan_number(s, p->src + line_end(p, pos));
        if (n) {
            t->kind = TK_NUMBER;
            break;
        }
        /* fall through */
    case CC_OPERATOR: {
        char c1 = pos + 1 < p->len ? s[1] : '\0';
        char c2 = pos + 2 < p->len ? s[2] : '\0';
        n = 1;
        t->kind = c;
        switch (c) {
        case '-':
            if (c1 == '>')
                n = 2, t->kind = TK_ARROW;
            else if (c1 == '=')
                n = 2, t->kind = TK_OPERATOR;
            break;
        case '.':
            if (c1 == '.' && c2 == '.') n = 3, t->kind = TK_DOTS;
            break;
        case '*':
        case '<':
        case '>':
            if (c1 == c)
                n = c2 == '=' ? 3 : 2, t->kind = TK_OPERATOR; /* ** **= << <<= >> >>= */
            else if (c == '<' && c1 == '=' && c2 == '>')
                n = 3, t->kind = TK_OPERATOR; /* <=> */
            else if (c1 == '=')
                n = 2, t->kind = TK_OPERATOR;
            break;
        case '/':
            if (c1 == '/' || c1 == '=') n = 2, t->kind = TK_OPERATOR;
            break;
        default: /* ! = + % | & ^ */
            if (c1 == '=') n = 2, t->kind = TK_OPERATOR;
            break;
        }
        break;
    }
    case CC_QUOTE:
        n = scan_string(s, p->src + line_end(p, pos));
        if (!n) fail_invalid(p, pos, c);
        t->kind = TK_STRINGLITERAL;
        break;
    default:
        if (c == '#' && is_type_comment(p, pos)) {
            n = 7;
            t->kind = TK_TYPE_COMMENT;
            break;
        }
        fail_invalid(p, pos, c);
    }
    t->len = n;
    p->pos = pos + n;
}

/* The fast path: blanks, then an identifier, a reserved word or a bracket.
 * It reads the arena's copy of the source, whose terminating NUL (a byte of
 * no class) ends every loop without a bounds check. */
static void lex(opreg__parser *p, opreg__token *t) {
    if (p->n_pending) {
        *t = p->pending[0];
        p->n_pending--;
        memmove(p->pending, p->pending + 1, (size_t)p->n_pending * sizeof *t);
        return;
    }
    const char *src = p->copy;
    uint32_t pos = p->pos;
    /* Tokens are mostly apart by no blank or one: step over one without a
     * branch, loop only for more. */
    pos += char_class[(unsigned char)src[pos]] == CC_BLANK;
    while (char_class[(unsigned char)src[pos]] == CC_BLANK)
        pos++;
    unsigned char c = (unsigned char)src[pos];
    int cls = char_class[c];
    if (cls == CC_IDENT) {
        const char *s = src + pos;
        uint32_t n = 1 + ident_length(s + 1);
        t->kind = n <= 8 ? reserved_kind(s, n) : TK_IDENT;
        /* The trie also knows "is not" and "not in". */
        if (t->kind == TK_KEYWORD &&
            ((n == 2 && s[0] == 'i' && s[1] == 's' && s[2] == ' ' && s[3] == 'n' && s[4] == 'o' &&
              s[5] == 't') ||
             (n == 3 && s[0] == 'n' && s[3] == ' ' && s[4] == 'i' && s[5] == 'n')))
            n = 6;
        t->start = pos;
        t->len = n;
        p->pos = pos + n;
        return;
    }
    if (cls >= CC_OPEN && cls <= CC_SINGLE) {
        p->nesting += nesting_delta[c];
        t->kind = c;
        t->start = pos;
        t->len = 1;
        p->pos = pos + 1;
        return;
    }
    p->pos = pos;
    lex_slow(p, t);
}

void opreg__lex_init(opreg__parser *p) {
    p->pos = 0;
    p->nesting = 0;
    p->n_pending = 0;
    p->has_peek = false;
    p->line_start = 1;
    p->line_end = 0;
    /* The first line's indentation is the base level. */
    uint32_t ws;
    skip_space(p, true, &ws);
    p->indent[0] = p->pos - ws;
    p->n_indent = 1;
    lex(p, &p->cur);
}

opreg__token opreg__lex_next(opreg__parser *p) {
    opreg__token r = p->cur;
    if (p->has_peek) {
        p->cur = p->peek;
        p->has_peek = false;
    } else {
        lex(p, &p->cur);
    }
    return r;
}

const opreg__token *opreg__lex_peek(opreg__parser *p) {
    if (!p->has_peek) {
        lex(p, &p->peek);
        p->has_peek = true;
    }
    return &p->peek;
}

const char *opreg__token_kind_name(const opreg__parser *p, const opreg__token *t, char buf[2]) {
    switch (t->kind) {
    case TK_EOF:
        return "eof";
    case TK_NUMBER:
        return "number";
    case TK_NEWLINE:
        return "newline";
    case TK_INDENT:
        return "indent";
    case TK_DEDENT:
        return "dedent";
    case TK_IDENT:
        return "ident";
    case TK_STRINGLITERAL:
        return "string_literal";
    case TK_ARROW:
        return "arrow";
    case TK_DOTS:
        return "dots";
    case TK_TYPE_COMMENT:
        return "type comment";
    case TK_TRUE:
        return "True";
    case TK_FALSE:
        return "False";
    case TK_NONE:
        return "None";
    case TK_NONE_TYPE:
        return "NoneType";
    case TK_KEYWORD: {
        /* A reserved word's kind name is its spelling. */
        const char *s = p->src + t->start;
        if (t->len == 6) return s[0] == 'i' ? "is not" : "not in";
        int h = ((unsigned char)s[0] + 7 * (unsigned char)s[t->len - 1] + 56 * (int)t->len) & 63;
        return reserved[h].word;
    }
    case TK_OPERATOR:
        for (size_t k = 0; k < sizeof operators / sizeof operators[0]; k++)
            if (operators[k].len == t->len &&
                memcmp(p->src + t->start, operators[k].text, t->len) == 0)
                return operators[k].name;
        return "operator";
    default:
        buf[0] = (char)t->kind;
        buf[1] = '\0';
        return buf;
    }
}
