/* Kernel registration: `impl` (a direct or composite kernel of one op) and
 * `fallback` (a kernel of every op on one backend key). Registrations of one
 * slot form a stack, newest first: the newest wins, and withdrawing it (its
 * library closes) brings back the one below. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *opreg__kreg_where(const struct opreg__kreg *r) {
    return r->lib->where;
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

/* Push a registration onto its slot's stack and its library's list: the
 * last step of a registration, made once everything it needs is allocated. */
static void push(struct opreg__kreg **slot, struct opreg__kreg *r) {
    r->id = r->lib->reg->next_id++;
    r->older = *slot;
    *slot = r;
    r->lib_next = r->lib->kregs;
    r->lib->kregs = r;
    if (r->older) warn_override(r->op, r->older, r);
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
    char buf[512];
    size_t len = 0;
    OPREG__TRY(opreg__lib_error(lib, full_name(buf, sizeof buf, &len, lib, name)));
    struct opreg_registry *reg = lib->reg;
    struct opreg__kreg *r = calloc(1, sizeof *r);
    if (!r)
        return opreg__lib_error(
            lib, opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "impl %s: out of memory", buf));
    r->k = *kernel;
    r->lib = lib;
    r->key = key;
    opreg__lock(reg);
    /* Everything is allocated before anything changes: the registration's
     * share of the reserve (for its withdrawal) and the table published now,
     * then the op record. A failure leaves the registry as it was. */
    struct opreg_op *op = NULL;
    opreg_status st = opreg__spares_reserve(reg, 2);
    if (st == OPREG_OK) st = opreg__op_get(&op, reg, buf, len);
    if (st == OPREG_OK) {
        r->op = op;
        push(key == OPREG_KEY_COMPOSITE ? &op->composite : &op->direct[key], r);
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
        push(&reg->fallback[key], r);
        if (lib->nfallbacks++ == 0) reg->nfb_libs++;
        opreg__publish_all(reg);
    } else {
        free(r);
    }
    opreg__unlock(reg);
    return opreg__lib_error(lib, st);
}
