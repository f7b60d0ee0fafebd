/* Kernel registration: `impl` (a direct or composite kernel of one op) and
 * `fallback` (a kernel of every op on one backend key). Registrations of one
 * slot form a stack, newest first: the newest wins, and withdrawing it (its
 * library closes) brings back the one below. */
#include "registry/internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *opreg__kreg_where(const struct opreg__kreg *r) {
    return r->lib->where;
}

const struct opreg__kreg *opreg__kreg_of(const struct opreg_op *op, int32_t key, uint32_t id) {
    const struct opreg__kreg *r = op->direct[key];
    if (!r || r->id != id) r = op->composite;
    if (!r || r->id != id) r = op->reg->fallback[key];
    return r && r->id == id ? r : NULL;
}

static opreg_status check_key(const struct opreg_library *lib, opreg_dispatch_key *key,
                              const char *what) {
    if (*key == OPREG_KEY_NONE) *key = lib->default_key;
    if (*key == OPREG_KEY_NONE)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: no dispatch key was given and the library at %s has no default key",
                           what, lib->where);
    if (*key != OPREG_KEY_COMPOSITE && (*key < 0 || *key >= opreg_key_count()))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: key %d is not a dispatch key", what,
                           (int)*key);
    return OPREG_OK;
}

/* "name", "name.overload" or "ns::name[.overload]" -> "ns::name[.overload]". */
static opreg_status full_name(char *buf, size_t cap, size_t *len, const struct opreg_library *lib,
                              const char *name) {
    const char *sep = strstr(name, "::");
    const char *base = name;
    if (sep) {
        size_t nslen = (size_t)(sep - name);
        if (nslen != strlen(lib->ns) || memcmp(name, lib->ns, nslen) != 0)
            return opreg__fail(OPREG_ERR_NAMESPACE_MISMATCH,
                               "Explicitly provided namespace (%.*s) in operator name does not "
                               "match namespace of enclosing %s block (%s).  (Error occurred "
                               "while processing the block at %s: impl(\"%s\"))",
                               (int)nslen, name,
                               lib->kind == OPREG_LIBRARY_DEF ? "OPREG_LIBRARY"
                                                              : "OPREG_LIBRARY_IMPL",
                               lib->ns, lib->where, name);
        base = sep + 2;
    }
    const char *dot = strchr(base, '.');
    size_t nlen = dot ? (size_t)(dot - base) : strlen(base);
    if (!opreg__is_ident(base, nlen) || (dot && !opreg__is_ident(dot + 1, strlen(dot + 1))))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "impl: '%s' is not an op name (expected name, name.overload or "
                           "ns::name.overload)",
                           name);
    int n = snprintf(buf, cap, "%s::%s", lib->ns, base);
    if (n < 0 || (size_t)n >= cap)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "impl: op name '%s' is too long", name);
    *len = (size_t)n;
    return OPREG_OK;
}

static void warn_override(const struct opreg_op *op, const struct opreg__kreg *old,
                          const struct opreg__kreg *r) {
    char schema[1024] = "(not defined yet)";
    if (op && op->schema)
        opreg_schema_format(op->schema, OPREG_SCHEMA_CANONICAL, schema, sizeof schema);
    opreg__log(OPREG_LOG_WARN,
               "Overriding a previously registered kernel for the same operator and the same "
               "dispatch key\n  operator: %s\n    %s\n  dispatch key: %s\n  previous kernel: "
               "registered at %s\n       new kernel: registered at %s",
               op ? op->name : "(fallback, every operator)", schema, opreg_key_name(r->key),
               opreg__kreg_where(old), opreg__kreg_where(r));
}

/* Push a registration onto its slot's stack and its library's list, and
 * report the registration it overrides (@p replaced, or none): the last step
 * of a registration, made once everything it needs is allocated. */
static void push(struct opreg__kreg **slot, struct opreg__kreg *r,
                 const struct opreg__kreg *replaced) {
    r->id = r->lib->reg->next_id++;
    r->older = *slot;
    *slot = r;
    r->lib_next = r->lib->kregs;
    r->lib->kregs = r;
    if (replaced) warn_override(r->op, replaced, r);
}

/* The step an impl and a provider share: the op's full name, a record
 * made from @p proto (its kernel, key and, for a provider, its name and
 * place), the registry's reserve and the op record, the limit on providers,
 * then the push onto the key's stack and the new table. @p what ("impl",
 * "provider") names the call in messages. Everything is allocated before
 * anything changes, so a failure leaves the registry as it was. */
static opreg_status add_kreg(struct opreg_library *lib, const char *name, const char *what,
                             const struct opreg__kreg *proto) {
    char buf[512];
    size_t len = 0;
    OPREG__TRY(opreg__lib_error(lib, full_name(buf, sizeof buf, &len, lib, name)));
    struct opreg_registry *reg = lib->reg;
    struct opreg__kreg *r = malloc(sizeof *r);
    if (!r)
        return opreg__lib_error(
            lib, opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s %s: out of memory", what, buf));
    *r = *proto;
    r->lib = lib;
    bool provider = r->pname[0] != '\0';
    opreg__lock(reg);
    struct opreg_op *op = NULL;
    opreg_status st = opreg__spares_reserve(reg, 2);
    if (st == OPREG_OK) st = opreg__op_get(&op, reg, buf, len);
    if (st == OPREG_OK && r->key != OPREG_KEY_COMPOSITE &&
        opreg__chain_items_with(op, r->key, provider ? r->pname : NULL) > OPREG_MAX_PROVIDERS)
        st = opreg__fail(OPREG_ERR_UNSUPPORTED,
                         "%s '%s' of %s: an op has at most %d providers over all its keys (an "
                         "impl is one, 'default', on a key that has providers)",
                         what, provider ? r->pname : "default", buf, OPREG_MAX_PROVIDERS);
    if (st == OPREG_OK) {
        r->op = op;
        if (provider) {
            /* The stack keeps every provider, newest first; a name registered
             * again hides the older one (the chain takes the first of a
             * name), and its override is reported like an impl's. */
            struct opreg__kreg *same = op->prov[r->key];
            while (same && strcmp(same->pname, r->pname) != 0)
                same = same->older;
            push(&op->prov[r->key], r, same);
        } else {
            struct opreg__kreg **slot =
                r->key == OPREG_KEY_COMPOSITE ? &op->composite : &op->direct[r->key];
            push(slot, r, *slot);
        }
        lib->nop_kregs++;
        reg->nop_kregs++;
        /* Before its def, the kernel waits on the op record. */
        if (op->schema) opreg__op_publish(op);
    } else {
        free(r);
    }
    opreg__unlock(reg);
    return opreg__lib_error(lib, st);
}

opreg_status opreg_library_impl(opreg_library *lib, const char *name, opreg_dispatch_key key,
                                const opreg_kernel *kernel) {
    if (!lib || !name || !kernel || !kernel->fn)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_impl: %s is NULL",
                           !lib      ? "lib"
                           : !name   ? "name"
                           : !kernel ? "kernel"
                                     : "kernel->fn");
    OPREG__TRY(opreg__lib_error(lib, check_key(lib, &key, "impl")));
    struct opreg__kreg proto = { .k = *kernel, .key = key };
    return add_kreg(lib, name, "impl", &proto);
}

opreg_status opreg_library_impl_fn(opreg_library *lib, const char *name, opreg_dispatch_key key,
                                   opreg_kernel_fn fn, void *context) {
    opreg_kernel k = { fn, context, NULL, 0 };
    return opreg_library_impl(lib, name, key, &k);
}

opreg_status opreg_library_fallback(opreg_library *lib, opreg_dispatch_key key,
                                    const opreg_kernel *kernel) {
    if (!lib || !kernel || !kernel->fn)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_fallback: %s is NULL",
                           !lib      ? "lib"
                           : !kernel ? "kernel"
                                     : "kernel->fn");
    OPREG__TRY(opreg__lib_error(lib, check_key(lib, &key, "fallback")));
    if (key == OPREG_KEY_COMPOSITE)
        return opreg__lib_error(
            lib, opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                             "fallback: the key must be a backend key, not Composite"));
    struct opreg_registry *reg = lib->reg;
    struct opreg__kreg *r = calloc(1, sizeof *r);
    if (!r)
        return opreg__lib_error(lib,
                                opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "fallback: out of memory"));
    r->k = *kernel;
    r->lib = lib;
    r->key = key;
    opreg__lock(reg);
    /* Every defined op's table is rebuilt now, and again when the library
     * closes: reserve both before the fallback is pushed. */
    size_t share = lib->nfallbacks ? 0 : reg->ndefined;
    opreg_status st = opreg__spares_reserve(reg, share + reg->ndefined);
    if (st == OPREG_OK) {
        push(&reg->fallback[key], r, reg->fallback[key]);
        if (lib->nfallbacks++ == 0) reg->nfb_libs++;
        opreg__publish_all(reg);
    } else {
        free(r);
    }
    opreg__unlock(reg);
    return opreg__lib_error(lib, st);
}

/* ---- providers ---------------------------------------------------------------- */

static bool is_reserved_provider(const char *name) {
    return strcmp(name, "default") == 0 || strcmp(name, "composite") == 0 ||
           strcmp(name, "fallback") == 0;
}

static opreg_status check_provider_name(const char *what, const char *name, bool reserved_ok) {
    size_t len = strlen(name);
    if (len == 0 || len > OPREG_PROVIDER_NAME_MAX || !opreg__is_ident(name, len))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider: %s '%s' is not an identifier of at most %d bytes", what, name,
                           OPREG_PROVIDER_NAME_MAX);
    if (!reserved_ok && is_reserved_provider(name))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider: the name '%s' is reserved (default: an impl; composite, "
                           "fallback: the kernels found when a key has none)",
                           name);
    return OPREG_OK;
}

/* The provider as this version reads it: fields past the caller's
 * struct_size are zero. */
static opreg_status read_provider(opreg_provider *p, const opreg_provider *given) {
    if (given->struct_size < offsetof(opreg_provider, kernel) + sizeof given->kernel)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider: struct_size %u is too small (at least the name and the "
                           "kernel: %zu bytes)",
                           given->struct_size,
                           offsetof(opreg_provider, kernel) + sizeof given->kernel);
    memset(p, 0, sizeof *p);
    memcpy(p, given, given->struct_size < sizeof *p ? given->struct_size : sizeof *p);
    if (!p->name) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "provider: name is NULL");
    if (!p->kernel.fn)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "provider '%s': kernel.fn is NULL", p->name);
    OPREG__TRY(check_provider_name("name", p->name, false));
    switch (p->place) {
    case OPREG_PROVIDER_AT_PRIORITY:
        return OPREG_OK;
    case OPREG_PROVIDER_BEFORE:
    case OPREG_PROVIDER_AFTER:
        if (!p->anchor)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "provider '%s': placed %s another provider, but anchor is NULL",
                               p->name, p->place == OPREG_PROVIDER_BEFORE ? "before" : "after");
        OPREG__TRY(check_provider_name("anchor", p->anchor, true));
        if (strcmp(p->anchor, p->name) == 0)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "provider '%s': a provider cannot be placed next to itself",
                               p->name);
        return OPREG_OK;
    }
    return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "provider '%s': place %d is not a place",
                       p->name, (int)p->place);
}

opreg_status opreg_library_provider(opreg_library *lib, const char *name, opreg_dispatch_key key,
                                    const opreg_provider *provider) {
    if (!lib || !name || !provider)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_library_provider: %s is NULL",
                           !lib    ? "lib"
                           : !name ? "name"
                                   : "provider");
    opreg_provider p;
    OPREG__TRY(opreg__lib_error(lib, read_provider(&p, provider)));
    OPREG__TRY(opreg__lib_error(lib, check_key(lib, &key, "provider")));
    if (key == OPREG_KEY_COMPOSITE)
        return opreg__lib_error(
            lib,
            opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                        "provider '%s': the key must be a backend key, not Composite", p.name));
    struct opreg__kreg proto = { .k = p.kernel,
                                 .key = key,
                                 .supports = p.supports,
                                 .place = (uint8_t)p.place,
                                 .priority = p.priority };
    snprintf(proto.pname, sizeof proto.pname, "%s", p.name);
    if (p.anchor) snprintf(proto.anchor, sizeof proto.anchor, "%s", p.anchor);
    return add_kreg(lib, name, "provider", &proto);
}
