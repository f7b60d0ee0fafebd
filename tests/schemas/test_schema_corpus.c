/* Corpus conformance: the real schema strings in OPREG_CORPUS_DIR.
 *
 *   (a) native_functions: every line parses in strict mode, and the
 *       OPREG_SCHEMA_TORCH print equals PyTorch's (native_functions.canonical.tsv)
 *   (b) parse(canonical(parse(s))) == parse(s), with equal hashes, for every
 *       string of every corpus file that parses
 *   (c) edge_cases.oracle-1.13.tsv: accept/reject and the print agree with the
 *       oracle, or with PyTorch 2.x where its note says 2.x differs
 *   (d) pytorch_tests: every line parses, prints as PyTorch does; the nameless
 *       ones parse with a name in front
 *   (e) pytorch_invalid.tsv: every `parse` row is rejected with its message
 *   (f) vLLM: every line parses in strict mode
 *   (g) vllm.index.tsv: the op name and the written (`!`) arguments agree
 *
 * Each failing row is printed with its input, the expected and the actual
 * result; every row is checked and the test fails at the end. The test skips
 * (77) only when the corpus folder is absent. */
#define _POSIX_C_SOURCE 200809L

#include "test.h"

#include "opreg/schema.h"

#include <stdbool.h>
#include <sys/stat.h>

#define TV OPREG_SCHEMA_ALLOW_TYPEVARS

/* ---- reading files ---------------------------------------------------------- */

struct text {
    char *data;
    size_t len;
};

static bool read_corpus(const char *name, struct text *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", OPREG_CORPUS_DIR, name);
    FILE *f = fopen(path, "rb");
    out->data = NULL;
    out->len = 0;
    if (!f) {
        fprintf(stderr, "  missing corpus file %s\n", path);
        test_current_failed = 1;
        return false;
    }
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    if (!buf) abort();
    size_t n = 0, k;
    while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf) abort();
        }
    }
    fclose(f);
    buf[n] = '\0';
    out->data = buf;
    out->len = n;
    return true;
}

/* Iterate over lines: *pos advances; returns false at the end. A last line
 * without '\n' counts; an empty last line does not. */
static bool next_line(const struct text *t, size_t *pos, const char **line, size_t *len) {
    if (*pos >= t->len) return false;
    const char *s = t->data + *pos;
    const char *e = memchr(s, '\n', t->len - *pos);
    size_t n = e ? (size_t)(e - s) : t->len - *pos;
    *line = s;
    *len = n;
    *pos += n + (e ? 1 : 0);
    return true;
}

struct field {
    const char *p;
    size_t n;
};

/* Split a line on tabs into at most max fields; returns the count. */
static size_t split_tabs(const char *line, size_t len, struct field *f, size_t max) {
    size_t count = 0, start = 0;
    for (size_t i = 0; i <= len && count < max; i++) {
        if (i == len || line[i] == '\t') {
            f[count].p = line + start;
            f[count].n = i - start;
            count++;
            start = i + 1;
        }
    }
    for (size_t i = count; i < max; i++) {
        f[i].p = "";
        f[i].n = 0;
    }
    return count;
}

static char *dup_field(struct field f) {
    char *s = malloc(f.n + 1);
    if (!s) abort();
    memcpy(s, f.p, f.n);
    s[f.n] = '\0';
    return s;
}

static bool starts_with(const char *s, size_t n, const char *prefix) {
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* A JSON string literal ("...") into bytes; returns NULL when malformed. */
static char *json_unquote(const char *s, size_t n, size_t *out_len) {
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') return NULL;
    char *out = malloc(n * 4 + 1);
    if (!out) abort();
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = s[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        if (++i > n - 2) goto bad;
        switch (s[i]) {
        case '"':
            out[o++] = '"';
            break;
        case '\\':
            out[o++] = '\\';
            break;
        case '/':
            out[o++] = '/';
            break;
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u': {
            if (i + 4 > n - 2) goto bad;
            unsigned cp = 0;
            for (int k = 1; k <= 4; k++) {
                char h = s[i + (size_t)k];
                cp <<= 4;
                if (h >= '0' && h <= '9')
                    cp |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f')
                    cp |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                    cp |= (unsigned)(h - 'A' + 10);
                else
                    goto bad;
            }
            i += 4;
            if (cp < 0x80) {
                out[o++] = (char)cp;
            } else if (cp < 0x800) {
                out[o++] = (char)(0xC0 | (cp >> 6));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[o++] = (char)(0xE0 | (cp >> 12));
                out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            goto bad;
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
bad:
    free(out);
    return NULL;
}

/* ---- parsing and reporting ------------------------------------------------- */

struct part {
    const char *name;
    int rows;
    int failed;
    int skipped;
};

static void print_bytes(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c < 0x20 || c == 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
}

static void row_fail(struct part *p, const char *where, const char *input, size_t inlen,
                     const char *expected, const char *actual) {
    p->failed++;
    test_current_failed = 1;
    fprintf(stderr, "  (%s) %s\n    input:    \"", p->name, where);
    print_bytes(input, inlen);
    fprintf(stderr, "\"\n    expected: %s\n    actual:   %s\n", expected,
            actual ? actual : "(null)");
}

/* Parse from a malloc'd buffer of exactly len bytes. */
static opreg_status parse_exact(const char *text, size_t len, unsigned flags, opreg_schema **out,
                                opreg_schema_error *err) {
    char *buf = malloc(len ? len : 1);
    if (!buf) abort();
    if (len) memcpy(buf, text, len);
    memset(err, 0, sizeof *err);
    opreg_status st = opreg_schema_parse(out, buf, len, flags, err);
    free(buf);
    return st;
}

static void describe_error(char *buf, size_t cap, opreg_status st, const opreg_schema_error *err) {
    snprintf(buf, cap, "rejected: %s: \"%s\" (line %zu, column %zu)", opreg_status_name(st),
             err->message, err->line, err->column);
}

/* Parse, report a failure as a row failure; NULL on failure. */
static opreg_schema *parse_row(struct part *p, const char *where, const char *text, size_t len,
                               unsigned flags) {
    opreg_schema *s = NULL;
    opreg_schema_error err;
    opreg_status st = parse_exact(text, len, flags, &s, &err);
    if (st != OPREG_OK) {
        char act[1024];
        describe_error(act, sizeof act, st, &err);
        row_fail(p, where, text, len, flags ? "accepted (allow typevars)" : "accepted (strict)",
                 act);
        return NULL;
    }
    return s;
}

/* Compare the torch print with the expected text (exactly, or as a substring). */
static void check_torch_print(struct part *p, const char *where, const char *text, size_t len,
                              const opreg_schema *s, const char *expected, bool substring) {
    char *pr = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
    bool ok = pr && (substring ? strstr(pr, expected) != NULL : strcmp(pr, expected) == 0);
    if (!ok) {
        char exp[8192], act[8192];
        snprintf(exp, sizeof exp, "%s\"%s\"", substring ? "a print containing " : "prints ",
                 expected);
        snprintf(act, sizeof act, "prints \"%s\"", pr ? pr : "(null)");
        row_fail(p, where, text, len, exp, act);
    }
    opreg_string_free(pr);
}

static void summary(const struct part *p) {
    printf("part %s: %d rows, %d failed", p->name, p->rows, p->failed);
    if (p->skipped) printf(", %d not applicable", p->skipped);
    printf("\n");
}

static char where_buf[256];
static const char *where_at(const char *file, int line) {
    snprintf(where_buf, sizeof where_buf, "%s:%d", file, line);
    return where_buf;
}

/* ---- (a) native_functions ------------------------------------------------- */

TEST(a_native_functions) {
    struct part p = { "a native_functions", 0, 0, 0 };
    struct text t;
    if (read_corpus("native_functions.schemas", &t)) {
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            p.rows++;
            opreg_schema *s = parse_row(&p, where_at("native_functions.schemas", n), line, len, 0);
            opreg_schema_free(s);
        }
        free(t.data);
    }
    if (read_corpus("native_functions.canonical.tsv", &t)) {
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            if (n == 1 || line[0] == '#') continue; /* header */
            struct field f[3];
            split_tabs(line, len, f, 3);
            p.rows++;
            const char *where = where_at("native_functions.canonical.tsv", n);
            opreg_schema *s = parse_row(&p, where, f[0].p, f[0].n, 0);
            if (!s) continue;
            char *expected = dup_field(f[1]);
            check_torch_print(&p, where, f[0].p, f[0].n, s, expected, false);
            free(expected);
            opreg_schema_free(s);
        }
        free(t.data);
    }
    summary(&p);
}

/* ---- (b) canonical round trip over the whole corpus ------------------------ */

static void roundtrip(struct part *p, const char *where, const char *text, size_t len,
                      unsigned flags) {
    opreg_schema *a = NULL;
    opreg_schema_error err;
    if (parse_exact(text, len, flags, &a, &err) != OPREG_OK) {
        p->skipped++; /* rows that do not parse are checked elsewhere */
        return;
    }
    p->rows++;
    char *c1 = opreg_schema_to_string(a, OPREG_SCHEMA_CANONICAL);
    opreg_schema *b = NULL;
    opreg_status st = c1 ? parse_exact(c1, strlen(c1), flags, &b, &err) : OPREG_ERR_OUT_OF_MEMORY;
    char act[8192], exp[8192];
    if (st != OPREG_OK) {
        char e[1024];
        describe_error(e, sizeof e, st, &err);
        snprintf(act, sizeof act, "canonical form \"%s\" %s", c1 ? c1 : "(null)", e);
        row_fail(p, where, text, len, "the canonical form re-parses", act);
    } else {
        char *c2 = opreg_schema_to_string(b, OPREG_SCHEMA_CANONICAL);
        if (!opreg_schema_equal(a, b)) {
            snprintf(exp, sizeof exp, "parse(\"%s\") equal to parse(input)", c1);
            snprintf(act, sizeof act, "not equal; the re-parsed schema prints \"%s\"",
                     c2 ? c2 : "(null)");
            row_fail(p, where, text, len, exp, act);
        } else if (opreg_schema_hash(a) != opreg_schema_hash(b)) {
            snprintf(act, sizeof act, "hashes %016llx vs %016llx (canonical \"%s\")",
                     (unsigned long long)opreg_schema_hash(a),
                     (unsigned long long)opreg_schema_hash(b), c1);
            row_fail(p, where, text, len, "equal hashes", act);
        } else if (!c2 || strcmp(c1, c2) != 0) {
            snprintf(exp, sizeof exp, "canonical form is a fixed point: \"%s\"", c1);
            snprintf(act, sizeof act, "\"%s\"", c2 ? c2 : "(null)");
            row_fail(p, where, text, len, exp, act);
        }
        opreg_string_free(c2);
    }
    opreg_schema_free(b);
    opreg_string_free(c1);
    opreg_schema_free(a);
}

/* Every line of a .schemas file (prefix prepended), or column 0 of a .tsv. */
static void roundtrip_file(struct part *p, const char *name, unsigned flags, bool tsv,
                           const char *prefix, bool json) {
    struct text t;
    if (!read_corpus(name, &t)) {
        p->failed++;
        return;
    }
    size_t pos = 0, len;
    const char *line;
    int n = 0;
    while (next_line(&t, &pos, &line, &len)) {
        n++;
        if (tsv && n == 1) continue; /* header */
        struct field f[1] = { { line, len } };
        if (tsv) split_tabs(line, len, f, 1);
        const char *where = where_at(name, n);
        if (json) {
            size_t ulen;
            char *u = json_unquote(f[0].p, f[0].n, &ulen);
            if (!u) {
                row_fail(p, where, f[0].p, f[0].n, "a JSON string", "malformed");
                continue;
            }
            roundtrip(p, where, u, ulen, flags);
            free(u);
        } else if (prefix) {
            size_t k = strlen(prefix);
            char *s = malloc(k + f[0].n + 1);
            if (!s) abort();
            memcpy(s, prefix, k);
            memcpy(s + k, f[0].p, f[0].n);
            roundtrip(p, where, s, k + f[0].n, flags);
            free(s);
        } else {
            roundtrip(p, where, f[0].p, f[0].n, flags);
        }
    }
    free(t.data);
}

TEST(b_roundtrip) {
    struct part p = { "b canonical round trip", 0, 0, 0 };
    roundtrip_file(&p, "native_functions.schemas", 0, false, NULL, false);
    roundtrip_file(&p, "native_functions.canonical.tsv", 0, true, NULL, false);
    roundtrip_file(&p, "pytorch_tests.schemas", TV, false, NULL, false);
    roundtrip_file(&p, "pytorch_tests.canonical.tsv", TV, true, NULL, false);
    roundtrip_file(&p, "pytorch_tests_nameless.schemas", TV, false, "foo", false);
    roundtrip_file(&p, "edge_cases.oracle-1.13.tsv", TV, true, NULL, true);
    roundtrip_file(&p, "pytorch_invalid.tsv", 0, true, NULL, false);
    roundtrip_file(&p, "vllm.schemas", 0, false, NULL, false);
    roundtrip_file(&p, "vllm_latest.unique.schemas", 0, false, NULL, false);
    summary(&p);
}

/* ---- (c) the 1.13 oracle, with the 2.x notes -------------------------------- */

/* The first "..."-quoted text after `after` in the note, into buf. */
static bool quoted_after(const char *note, const char *after, char *buf, size_t cap) {
    const char *a = strstr(note, after);
    if (!a) return false;
    const char *q = strchr(a + strlen(after), '"');
    if (!q) return false;
    const char *e = strchr(q + 1, '"');
    if (!e) return false;
    size_t n = (size_t)(e - q - 1);
    if (n >= cap) n = cap - 1;
    memcpy(buf, q + 1, n);
    buf[n] = '\0';
    return true;
}

TEST(c_oracle) {
    struct part p = { "c edge_cases oracle", 0, 0, 0 };
    struct text t;
    if (!read_corpus("edge_cases.oracle-1.13.tsv", &t)) {
        summary(&p);
        return;
    }
    size_t pos = 0, len;
    const char *line;
    int n = 0;
    while (next_line(&t, &pos, &line, &len)) {
        n++;
        if (n == 1) continue;
        struct field f[4];
        split_tabs(line, len, f, 4);
        const char *where = where_at("edge_cases.oracle-1.13.tsv", n);
        size_t ilen;
        char *input = json_unquote(f[0].p, f[0].n, &ilen);
        if (!input) {
            row_fail(&p, where, f[0].p, f[0].n, "a JSON string", "malformed");
            continue;
        }
        char *result = dup_field(f[1]), *printed = dup_field(f[2]), *note = dup_field(f[3]);
        p.rows++;

        bool expect_ok = strcmp(result, "OK") == 0;
        const char *expect_print = expect_ok ? printed : NULL;
        bool substring = false;
        char note_print[1024];
        if (strncmp(note, "2.x: OK", 7) == 0) {
            expect_ok = true;
            expect_print = NULL;
            if (quoted_after(note, "prints ", note_print, sizeof note_print)) {
                expect_print = note_print;
                /* a fragment such as "ScalarType s=6, ..." rather than a whole schema */
                substring = strstr(note_print, " -> ") == NULL;
            }
        }

        opreg_schema *s = NULL;
        opreg_schema_error err;
        opreg_status st = parse_exact(input, ilen, TV, &s, &err);
        if (expect_ok) {
            if (st != OPREG_OK) {
                char act[1024];
                describe_error(act, sizeof act, st, &err);
                row_fail(&p, where, input, ilen, "accepted", act);
            } else if (expect_print) {
                check_torch_print(&p, where, input, ilen, s, expect_print, substring);
            }
        } else if (st == OPREG_OK) {
            char *pr = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
            char exp[2048], act[2048];
            snprintf(exp, sizeof exp, "rejected (%s: %s)", result, printed);
            snprintf(act, sizeof act, "accepted, prints \"%s\"", pr ? pr : "(null)");
            row_fail(&p, where, input, ilen, exp, act);
            opreg_string_free(pr);
        }
        opreg_schema_free(s);
        s = NULL;

        /* notes about allow_typevars: strict (registration) mode rejects the
         * row unless the name starts with aten:: or prim:: */
        if (strstr(note, "allow_typevars") && !starts_with(input, ilen, "aten::") &&
            !starts_with(input, ilen, "prim::")) {
            st = parse_exact(input, ilen, 0, &s, &err);
            char msg[1024] = "";
            if (quoted_after(note, "allow_typevars=false", msg, sizeof msg)) {
                /* drop a trailing "..." and the punctuation before it */
                size_t k = strlen(msg);
                if (k >= 3 && strcmp(msg + k - 3, "...") == 0) k -= 3;
                while (k > 0 && (msg[k - 1] == ' ' || msg[k - 1] == ';'))
                    k--;
                msg[k] = '\0';
            }
            if (st == OPREG_OK) {
                row_fail(&p, where, input, ilen, "rejected in strict mode", "accepted");
                opreg_schema_free(s);
            } else if (msg[0] && !strstr(err.message, msg)) {
                char exp[1200], act[1024];
                snprintf(exp, sizeof exp, "strict-mode message containing \"%s\"", msg);
                describe_error(act, sizeof act, st, &err);
                row_fail(&p, where, input, ilen, exp, act);
            }
        }
        free(input);
        free(result);
        free(printed);
        free(note);
    }
    free(t.data);
    summary(&p);
}

/* ---- (d) PyTorch's own test schemas ------------------------------------------ */

TEST(d_pytorch_tests) {
    struct part p = { "d pytorch_tests", 0, 0, 0 };
    struct text t;
    if (read_corpus("pytorch_tests.schemas", &t)) {
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            p.rows++;
            opreg_schema_free(parse_row(&p, where_at("pytorch_tests.schemas", n), line, len, TV));
        }
        free(t.data);
    }
    if (read_corpus("pytorch_tests.canonical.tsv", &t)) {
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            if (n == 1) continue;
            struct field f[3];
            split_tabs(line, len, f, 3);
            const char *where = where_at("pytorch_tests.canonical.tsv", n);
            p.rows++;
            opreg_schema *s = parse_row(&p, where, f[0].p, f[0].n, TV);
            if (!s) continue;
            /* ERR rows there only lack a registered custom class */
            if (f[1].n == 2 && memcmp(f[1].p, "OK", 2) == 0) {
                char *expected = dup_field(f[2]);
                check_torch_print(&p, where, f[0].p, f[0].n, s, expected, false);
                free(expected);
            }
            opreg_schema_free(s);
        }
        free(t.data);
    }
    if (read_corpus("pytorch_tests_nameless.schemas", &t)) {
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            p.rows++;
            char *s = malloc(len + 4);
            if (!s) abort();
            memcpy(s, "foo", 3);
            memcpy(s + 3, line, len);
            opreg_schema_free(
                parse_row(&p, where_at("pytorch_tests_nameless.schemas", n), s, len + 3, TV));
            free(s);
        }
        free(t.data);
    }
    summary(&p);
}

/* ---- (e) strings PyTorch's tests expect to be rejected ---------------------- */

TEST(e_pytorch_invalid) {
    struct part p = { "e pytorch_invalid", 0, 0, 0 };
    struct text t;
    if (!read_corpus("pytorch_invalid.tsv", &t)) {
        summary(&p);
        return;
    }
    size_t pos = 0, len;
    const char *line;
    int n = 0;
    while (next_line(&t, &pos, &line, &len)) {
        n++;
        if (n == 1) continue;
        struct field f[5];
        split_tabs(line, len, f, 5);
        if (!(f[1].n == 5 && memcmp(f[1].p, "parse", 5) == 0)) {
            p.skipped++;
            continue;
        }
        p.rows++;
        const char *where = where_at("pytorch_invalid.tsv", n);
        char *expected = dup_field(f[2]);
        opreg_schema *s = NULL;
        opreg_schema_error err;
        opreg_status st = parse_exact(f[0].p, f[0].n, 0, &s, &err);
        opreg_status want = strstr(expected, "is not a legal overload name")
                                ? OPREG_ERR_SCHEMA_INVALID
                                : OPREG_ERR_SCHEMA_SYNTAX;
        char exp[1200], act[1200];
        if (st == OPREG_OK) {
            char *pr = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
            snprintf(exp, sizeof exp, "rejected: %s", expected);
            snprintf(act, sizeof act, "accepted, prints \"%s\"", pr ? pr : "(null)");
            row_fail(&p, where, f[0].p, f[0].n, exp, act);
            opreg_string_free(pr);
            opreg_schema_free(s);
        } else if (st != want ||
                   (!strstr(expected, "torchgen") && !strstr(err.message, expected))) {
            snprintf(exp, sizeof exp, "%s with a message containing \"%s\"",
                     opreg_status_name(want), expected);
            describe_error(act, sizeof act, st, &err);
            row_fail(&p, where, f[0].p, f[0].n, exp, act);
        }
        free(expected);
    }
    free(t.data);
    summary(&p);
}

/* ---- (f) vLLM ------------------------------------------------------------------ */

TEST(f_vllm) {
    struct part p = { "f vllm", 0, 0, 0 };
    static const char *const files[] = { "vllm.schemas", "vllm_latest.unique.schemas" };
    for (size_t i = 0; i < 2; i++) {
        struct text t;
        if (!read_corpus(files[i], &t)) continue;
        size_t pos = 0, len;
        const char *line;
        int n = 0;
        while (next_line(&t, &pos, &line, &len)) {
            n++;
            p.rows++;
            opreg_schema_free(parse_row(&p, where_at(files[i], n), line, len, 0));
        }
        free(t.data);
    }
    summary(&p);
}

/* ---- (g) vllm.index.tsv: op names and written arguments ----------------------- */

TEST(g_vllm_index) {
    struct part p = { "g vllm index", 0, 0, 0 };
    struct text idx, sch;
    bool ok1 = read_corpus("vllm.index.tsv", &idx);
    bool ok2 = read_corpus("vllm.schemas", &sch);
    if (!ok1 || !ok2) {
        free(idx.data);
        free(sch.data);
        summary(&p);
        return;
    }
    /* the lines of vllm.schemas */
    const char *lines[1024];
    size_t lens[1024];
    size_t count = 0, pos = 0, len;
    const char *line;
    while (count < 1024 && next_line(&sch, &pos, &line, &len)) {
        lines[count] = line;
        lens[count] = len;
        count++;
    }
    pos = 0;
    int n = 0;
    while (next_line(&idx, &pos, &line, &len)) {
        n++;
        struct field f[8];
        split_tabs(line, len, f, 8);
        if (!(f[3].n == 6 && memcmp(f[3].p, "schema", 6) == 0)) continue;
        char *num = dup_field(f[0]);
        long k = strtol(num, NULL, 10);
        free(num);
        const char *where = where_at("vllm.index.tsv", n);
        p.rows++;
        if (k < 1 || (size_t)k > count) {
            row_fail(&p, where, line, len, "a line of vllm.schemas", "out of range");
            continue;
        }
        opreg_schema *s = parse_row(&p, where, lines[k - 1], lens[k - 1], 0);
        if (!s) continue;
        char *qual = dup_field(f[2]), *mutated = dup_field(f[5]);
        const char *op = strstr(qual, "::") ? strstr(qual, "::") + 2 : qual;
        char written[2048] = "";
        for (size_t i = 0; i < opreg_schema_num_arguments(s); i++) {
            const opreg_argument *a = opreg_schema_argument(s, i);
            if (!opreg_argument_is_write(a)) continue;
            if (written[0]) strncat(written, ",", sizeof written - strlen(written) - 1);
            strncat(written, opreg_argument_name(a), sizeof written - strlen(written) - 1);
        }
        if (!written[0]) strcpy(written, "-");
        char exp[4096], act[4096];
        snprintf(exp, sizeof exp, "op %s, written %s", op, mutated);
        snprintf(act, sizeof act, "op %s, written %s", opreg_schema_name(s), written);
        if (strcmp(exp, act) != 0) row_fail(&p, where, lines[k - 1], lens[k - 1], exp, act);
        free(qual);
        free(mutated);
        opreg_schema_free(s);
    }
    free(idx.data);
    free(sch.data);
    summary(&p);
}

int main(void) {
    struct stat st;
    if (stat(OPREG_CORPUS_DIR, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("corpus folder %s is absent: skipped\n", OPREG_CORPUS_DIR);
        return TEST_SKIP_CODE;
    }
    RUN(a_native_functions);
    RUN(b_roundtrip);
    RUN(c_oracle);
    RUN(d_pytorch_tests);
    RUN(e_pytorch_invalid);
    RUN(f_vllm);
    RUN(g_vllm_index);
    return test_summary();
}
