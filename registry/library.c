/* Libraries: opening one, `def`, and closing (withdrawing all it registered).
 * Kernel registration (impl, fallback) lives in impl.c. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_ident(const char *s, size_t len) {
    if (!len || (s[0] >= '0' && s[0] <= '9')) return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

bool opreg__is_ident(const char *s, size_t len) {
    return is_ident(s, len);
}

static const char *kind_macro(const struct opreg_library *lib) {
    return lib->kind == OPREG_LIBRARY_DEF ? "OPREG_LIBRARY" : "OPREG_LIBRARY_IMPL";
}

/* Keep a library's first error, with its message, for opreg_library_run(). */
opreg_status opreg__lib_error(struct opreg_library *lib, opreg_status st) {
    if (st != OPREG_OK && lib->first_error == OPREG_OK) {
        lib->first_error = st;
        snprintf(lib->first_msg, sizeof lib->first_msg, "%s", opreg_last_error());
    }
    return st;
}

opreg_status opreg_library_create(opreg_library **out, opreg_registry *reg, opreg_library_kind kind,
                                  const char *ns, opreg_dispatch_key default_key, const char *file,
                                  int line) {
    char where[512];
    snprintf(where, sizeof where, "%s:%d", file ? file : "(unknown)", line);
    return opreg__library_create_where(out, reg, kind, ns, default_key, where);
}

opreg_status opreg__library_create_where(opreg_library **out, opreg_registry *reg,
                                         opreg_library_kind kind, const char *ns,
                                         opreg_dispatch_key default_key, const char *where) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_create: out is NULL");
    *out = NULL;
    if (!reg || !ns)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_create: %s is NULL",
                           reg ? "ns" : "reg");
    if (!is_ident(ns, strlen(ns)))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_library_create: namespace '%s' is not an identifier", ns);
    if (kind != OPREG_LIBRARY_DEF && kind != OPREG_LIBRARY_IMPL)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_create: unknown kind %d",
                           (int)kind);
    if (default_key != OPREG_KEY_NONE && default_key != OPREG_KEY_COMPOSITE &&
        (default_key < 0 || default_key >= opreg_key_count()))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_library_create: default_key %d is not a dispatch key",
                           (int)default_key);
    if (!where) where = "(unknown)";
    struct opreg_library *lib = calloc(1, sizeof *lib);
    if (lib) {
        lib->ns = malloc(strlen(ns) + 1);
        lib->where = malloc(strlen(where) + 1);
    }
    if (!lib || !lib->ns || !lib->where) {
        if (lib) {
            free(lib->ns);
            free(lib->where);
        }
        free(lib);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_library_create: out of memory");
    }
    strcpy(lib->ns, ns);
    strcpy(lib->where, where);
    lib->reg = reg;
    lib->kind = kind;
    lib->default_key = default_key;
    opreg__lock(reg);
    for (struct opreg_library *o = reg->libs; o && kind == OPREG_LIBRARY_DEF; o = o->next) {
        if (o->kind != OPREG_LIBRARY_DEF || strcmp(o->ns, ns) != 0) continue;
        opreg__unlock(reg);
        opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                    "Only a single OPREG_LIBRARY can be used to register the namespace %s; please "
                    "put all of your definitions in a single OPREG_LIBRARY block. If you were "
                    "trying to specify implementations, consider using OPREG_LIBRARY_IMPL (which "
                    "can be duplicated). Previous registration of OPREG_LIBRARY was registered "
                    "at %s; latest registration was registered at %s",
                    ns, o->where, where);
        free(lib->ns);
        free(lib->where);
        free(lib);
        return OPREG_ERR_ALREADY_DEFINED;
    }
    lib->next = reg->libs;
    if (reg->libs) reg->libs->prev = lib;
    reg->libs = lib;
    opreg__unlock(reg);
    *out = lib;
    return OPREG_OK;
}

opreg_status opreg_library_status(const opreg_library *lib) {
    return lib ? lib->first_error : OPREG_ERR_INVALID_ARGUMENT;
}

static void free_library(void *p) {
    struct opreg_library *lib = p;
    free(lib->ns);
    free(lib->where);
    free(lib);
}

/* A withdrawn registration goes at reclaim, with its kernel's context. */
static void free_kreg(void *p) {
    struct opreg__kreg *r = p;
    if (r->k.release) r->k.release(r->k.context);
    free(r);
}

/* A withdrawn definition's plan goes at reclaim, with the schema it reads. */
static void free_plan(void *p) {
    struct opreg__plan *plan = p;
    opreg_schema_free((opreg_schema *)(uintptr_t)plan->schema);
    free(plan);
}

/* Where the first token of @p text starts: after the blanks, newlines,
 * comments and line continuations that the schema lexer skips before it
 * (a "# type:" comment is a token, so it stops there). */
static size_t first_token(const char *text) {
    size_t i = 0;
    for (;;) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n') {
            i++;
        } else if (c == '#' && strncmp(text + i, "# type:", 7) != 0) {
            while (text[i] && text[i] != '\n')
                i++;
        } else if (c == '\\' && text[i + 1] == '\n') {
            i += 2;
        } else {
            return i;
        }
    }
}

/* True when the text's first token is a name not followed by "::"; @p at
 * receives where that name starts. */
static bool looks_unqualified(const char *text, size_t *at) {
    const char *c = text + (*at = first_token(text));
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_')) return false;
    while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
           *c == '_')
        c++;
    while (*c == ' ' || *c == '\t' || *c == '\r' || *c == '\v' || *c == '\f')
        c++;
    return *c != ':';
}

/* Parse @p text with `ns::` written in before its name, which starts at
 * @p at: what comes before the name (blank lines, comments) stays where
 * it was, so the lexer sees the same text around a qualified name. */
static opreg_status parse_qualified(opreg_schema **out, const struct opreg_library *lib,
                                    const char *text, size_t len, size_t at, unsigned flags) {
    size_t ns = strlen(lib->ns);
    char *full = malloc(len + ns + 3);
    if (!full) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "def: out of memory");
    memcpy(full, text, at);
    memcpy(full + at, lib->ns, ns);
    memcpy(full + at + ns, "::", 2);
    memcpy(full + at + ns + 2, text + at, len - at + 1);
    opreg_status st = opreg_schema_parse(out, full, len + ns + 2, flags, NULL);
    free(full);
    return st;
}

/* Parse as m.def() does; the stored schema always names its namespace.
 *
 * A text that looks unqualified is parsed once, with `ns::` written in
 * before its name. If that succeeds, the name was the first token (after
 * blanks, blank lines, comments or line continuations at most), and the
 * text alone reads as the same tokens less those three: the steps below
 * would have parsed it, found no namespace and ended with this very schema.
 * If it fails, the steps below run on the text as given, so that the error
 * is the one they always gave (quoting the text as written); only a lack of
 * memory ends the def at once. */
static opreg_status parse_def(opreg_schema **out, struct opreg_library *lib, const char *text) {
    bool typevars = strcmp(lib->ns, "aten") == 0 || strcmp(lib->ns, "prim") == 0;
    unsigned flags = typevars ? OPREG_SCHEMA_ALLOW_TYPEVARS : OPREG_SCHEMA_STRICT;
    size_t len = strlen(text), at;
    opreg_schema *s = NULL;
    opreg_status st;
    if (looks_unqualified(text, &at)) {
        st = parse_qualified(&s, lib, text, len, at, flags);
        if (st == OPREG_OK && (typevars || !opreg_schema_has_type_variables(s))) {
            *out = s;
            return OPREG_OK;
        }
        opreg_schema_free(s);
        s = NULL;
        if (st == OPREG_ERR_OUT_OF_MEMORY) return st;
    }
    st = opreg_schema_parse(&s, text, len, flags, NULL);
    if (st != OPREG_OK) {
        char msg[2048]; /* the message is rewritten into the same buffer */
        snprintf(msg, sizeof msg, "%s", opreg_last_error());
        return opreg__fail(st, "%s\n(Error occurred while processing %s block at %s)", msg,
                           kind_macro(lib), lib->where);
    }
    const char *ns = opreg_schema_namespace(s);
    if (*ns && strcmp(ns, lib->ns) != 0) {
        st =
            opreg__fail(OPREG_ERR_NAMESPACE_MISMATCH,
                        "Explicitly provided namespace (%s) in schema string does not match "
                        "namespace of enclosing %s block (%s).  Move this definition to the "
                        "(unique) %s block corresponding to this namespace (and consider "
                        "deleting the namespace from your schema string.)  (Error occurred "
                        "while processing %s block at %s)",
                        ns, kind_macro(lib), lib->ns, kind_macro(lib), kind_macro(lib), lib->where);
    } else if (!typevars && opreg_schema_has_type_variables(s)) {
        st = opreg__fail(OPREG_ERR_SCHEMA_INVALID,
                         "%s: type variables are only allowed in the aten and prim namespaces, "
                         "not in %s (Error occurred while processing %s block at %s)",
                         text, lib->ns, kind_macro(lib), lib->where);
    } else if (!*ns) {
        /* Parse again with the namespace written in, so the schema prints it
         * (a text that did not look unqualified, which the test above makes
         * rare: a name split from its "::" by a line break, for one). */
        opreg_schema_free(s);
        s = NULL;
        st = parse_qualified(&s, lib, text, len, first_token(text), flags);
    }
    if (st != OPREG_OK) {
        opreg_schema_free(s);
        return st;
    }
    *out = s;
    return OPREG_OK;
}

/* Everything a definition needs is allocated before anything changes: the
 * library's room for it, its plan, the tables (the one published now, and
 * the share of each library with a fallback), then the op record, if it is
 * new. A failure leaves the registry as it was. */
static opreg_status def_locked(struct opreg_op **out, struct opreg_library *lib, opreg_schema *s,
                               const char *name, size_t len, const char *where) {
    struct opreg_registry *reg = lib->reg;
    struct opreg_op *op = opreg__names_find(reg, name, len, opreg__hash(name, len));
    if (op && op->schema) {
        char old[1024];
        opreg_schema_format(op->schema, OPREG_SCHEMA_CANONICAL, old, sizeof old);
        return opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                           "Tried to register an operator (%s) with the same name and overload "
                           "name multiple times. Each overload's schema should only be registered "
                           "with a single call to def(). Duplicate registration: %s. Original "
                           "registration: %s",
                           old, where, op->def_where);
    }
    if (lib->ndefs == lib->cap_defs) {
        size_t cap = lib->cap_defs ? 2 * lib->cap_defs : 8;
        struct opreg_op **d = realloc(lib->defs, cap * sizeof *d);
        if (!d)
            return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "def %.*s: out of memory", (int)len, name);
        lib->defs = d;
        lib->cap_defs = cap;
    }
    struct opreg__plan *plan = NULL;
    OPREG__TRY(opreg__plan_build(&plan, s, name));
    opreg_status st = opreg__spares_reserve(reg, 1 + reg->nfb_libs);
    if (st == OPREG_OK && !op) st = opreg__op_get(&op, reg, name, len);
    if (st != OPREG_OK) {
        free(plan);
        return st;
    }
    plan->op_name = op->name; /* was the caller's buffer */
    op->schema = s;
    op->plan = plan;
    op->def_lib = lib;
    snprintf(op->def_where, sizeof op->def_where, "%s", where);
    reg->ndefined++;
    opreg__op_publish(op);
    lib->defs[lib->ndefs++] = op;
    *out = op;
    return OPREG_OK;
}

opreg_status opreg_library_def(const opreg_op **out, opreg_library *lib, const char *schema) {
    return opreg_library_def_at(out, lib, schema, NULL, 0);
}

opreg_status opreg_library_def_at(const opreg_op **out, opreg_library *lib, const char *schema,
                                  const char *file, int line) {
    if (out) *out = NULL;
    if (!lib || !schema)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_def: %s is NULL",
                           lib ? "schema" : "lib");
    if (lib->kind != OPREG_LIBRARY_DEF)
        return opreg__lib_error(
            lib, opreg__fail(OPREG_ERR_UNSUPPORTED,
                             "Cannot define an operator inside of a OPREG_LIBRARY_IMPL block.  All "
                             "def()s should be placed in the (unique) OPREG_LIBRARY block for "
                             "their namespace.  (Error occurred at %s: def(\"%s\"))",
                             lib->where, schema));
    opreg_schema *s = NULL;
    OPREG__TRY(opreg__lib_error(lib, parse_def(&s, lib, schema)));
    char name[512];
    const char *ov = opreg_schema_overload(s);
    int n = snprintf(name, sizeof name, "%s::%s%s%s", lib->ns, opreg_schema_name(s), *ov ? "." : "",
                     ov);
    if (n < 0 || (size_t)n >= sizeof name) {
        opreg_schema_free(s);
        return opreg__lib_error(lib, opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                                                 "def: the op name is longer than %zu bytes",
                                                 sizeof name - 1));
    }
    struct opreg_op *op = NULL;
    opreg__lock(lib->reg);
    char where[256];
    if (file)
        snprintf(where, sizeof where, "%s:%d", file, line);
    else
        snprintf(where, sizeof where, "%s", lib->where);
    opreg_status st = def_locked(&op, lib, s, name, (size_t)n, where);
    opreg__unlock(lib->reg);
    if (st != OPREG_OK) {
        opreg_schema_free(s);
        return opreg__lib_error(lib, st);
    }
    if (out) *out = op;
    return OPREG_OK;
}

opreg_status opreg_library_generator(opreg_library *lib, const char *name,
                                     const opreg_generator *gen) {
    if (!lib || !name || !gen || !gen->build)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_generator: %s",
                           !lib || !name || !gen ? "an argument is NULL"
                                                 : "the generator has no build function");
    char full[512];
    int n = snprintf(full, sizeof full, "%s::%s", lib->ns, name);
    if (n < 0 || (size_t)n >= sizeof full)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "generator: the op name is too long");
    opreg_status st = OPREG_OK;
    opreg__lock(lib->reg);
    struct opreg_op *op =
        opreg__names_find(lib->reg, full, (size_t)n, opreg__hash(full, (size_t)n));
    if (!op || !op->schema || op->def_lib != lib)
        st = opreg__fail(OPREG_ERR_NOT_FOUND,
                         "generator for %s: the library %s (%s) defines no such op", full, lib->ns,
                         lib->where);
    else
        atomic_store_explicit(&op->gen, gen, memory_order_release);
    opreg__unlock(lib->reg);
    return st;
}

const opreg_generator *opreg_op_generator(const opreg_op *op) {
    return op ? atomic_load_explicit(&op->gen, memory_order_acquire) : NULL;
}

/* Unlink a registration from the stack it sits in. */
static void unlink_kreg(struct opreg__kreg *r) {
    struct opreg__kreg **slot;
    if (!r->op)
        slot = &r->lib->reg->fallback[r->key];
    else if (r->key == OPREG_KEY_COMPOSITE)
        slot = &r->op->composite;
    else if (r->pname[0])
        slot = &r->op->prov[r->key];
    else
        slot = &r->op->direct[r->key];
    while (*slot && *slot != r)
        slot = &(*slot)->older;
    if (*slot) *slot = r->older;
}

/* Allocates nothing, so it cannot fail: the tables it publishes come from
 * the reserve that the library's registrations made (opreg__spares_need). */
void opreg__library_close_locked(struct opreg_library *lib) {
    struct opreg_registry *reg = lib->reg;
    for (struct opreg__kreg *r = lib->kregs; r; r = r->lib_next)
        unlink_kreg(r);
    for (size_t i = 0; i < lib->ndefs; i++) {
        struct opreg_op *op = lib->defs[i];
        opreg__retire(reg, &op->plan->retire, free_plan, op->plan);
        op->schema = NULL;
        op->plan = NULL;
        op->def_lib = NULL;
        atomic_store_explicit(&op->gen, NULL, memory_order_release);
        reg->ndefined--;
        opreg__op_publish(op); /* to the undefined table */
    }
    /* The tables of the ops whose kernels or fallbacks went away. */
    if (lib->nfallbacks)
        opreg__publish_all(reg);
    else
        for (struct opreg__kreg *r = lib->kregs; r; r = r->lib_next)
            if (r->op->schema) opreg__op_publish(r->op);
    for (struct opreg__kreg *r = lib->kregs, *next; r; r = next) {
        next = r->lib_next;
        opreg__retire(reg, &r->retire, free_kreg, r);
    }
    reg->nop_kregs -= lib->nop_kregs;
    if (lib->nfallbacks) reg->nfb_libs--;
    opreg__spares_trim(reg, false);
    if (lib->prev)
        lib->prev->next = lib->next;
    else
        reg->libs = lib->next;
    if (lib->next) lib->next->prev = lib->prev;
    free(lib->defs);
    lib->defs = NULL;
    /* Freed at reclaim, not now: a table a reader still holds may name its
     * registrations, and a mutation report reads their library's place. */
    opreg__retire(reg, &lib->retire, free_library, lib);
}

void opreg_library_close(opreg_library *lib) {
    if (!lib) return;
    struct opreg_registry *reg = lib->reg;
    opreg__lock(reg);
    opreg__library_close_locked(lib);
    opreg__unlock(reg);
}

opreg_status opreg_library_run(opreg_library **out, opreg_registry *reg, opreg_library_kind kind,
                               const char *ns, opreg_dispatch_key default_key, const char *file,
                               int line, opreg_library_body body) {
    if (out) *out = NULL;
    if (!body) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_run: body is NULL");
    opreg_library *lib = NULL;
    OPREG__TRY(opreg_library_create(&lib, reg, kind, ns, default_key, file, line));
    body(lib);
    opreg_status st = lib->first_error;
    if (st != OPREG_OK) {
        char msg[sizeof lib->first_msg];
        memcpy(msg, lib->first_msg, sizeof msg);
        opreg_library_close(lib);
        return opreg__fail(st, "%s", msg);
    }
    if (out) *out = lib;
    return OPREG_OK;
}
