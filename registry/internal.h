/* The registry's internal structures, shared by the files of registry/ only.
 *
 * Readers (calls, lookups, queries) never lock: they load published
 * pointers with acquire loads and read immutable objects. Writers (def,
 * impl, close, key registration) serialise on the registry's mutex, build new
 * objects, publish them with release stores, and *retire* the objects they
 * replace: a retired object is freed only by opreg_registry_reclaim() or
 * opreg_registry_destroy(), when no reader can hold it. */
#ifndef OPREG_REGISTRY_INTERNAL_H
#define OPREG_REGISTRY_INTERNAL_H

#include "common/internal.h"
#include "opreg/opreg.h"
#include "opreg/provider.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* The most arguments an op may have (a boxed call builds them on the stack). */
#define OPREG__MAX_ARGS 64
/* Table slots: one per backend key, plus one for tensors no backend handles. */
#define OPREG__KEY_UNKNOWN OPREG_MAX_KEYS
#define OPREG__NSLOTS      (OPREG_MAX_KEYS + 1)
/* Expected kinds beyond opreg_value_kind, for argument checks. */
#define OPREG__KIND_SCALAR      100 /* `Scalar`: an int, float or bool value */
#define OPREG__KIND_UNSUPPORTED 101 /* a type that values cannot carry */
#define OPREG__KIND_ANY         102 /* `Any`: a value of any kind */
/* How deep lists and tuples may nest in an argument's type or value. */
#define OPREG__MAX_NESTING 32

/* A retired object waiting for opreg_registry_reclaim(). The node lives in
 * the object it retires (tables, plans, name tables, registrations), so
 * retiring never allocates and cannot fail. */
struct opreg__retired {
    void (*fn)(void *);
    void *ptr;
    struct opreg__retired *next;
};

/* ---- argument plans (plan.c) --------------------------------------------- */

/* How one argument is checked, worked out once at def time. */
struct opreg__arg {
    const char *name; /* owned by the schema */
    uint32_t name_len;
    uint8_t kind;          /* opreg_value_kind or OPREG__KIND_* */
    uint8_t optional;      /* None is accepted */
    uint8_t elem_optional; /* Tensor?[]: NULL list items are accepted */
    uint8_t write;         /* Tensor!: the tensor must not be read-only */
    uint8_t kwarg_only;
    uint8_t has_default;
    char type_text[30];     /* the schema spelling, for messages */
    opreg_value def;        /* the default, when has_default */
    const opreg_type *type; /* its type, for lists and tuples (owned by the schema) */
};

/* Everything a call needs to know about an op's arguments. */
struct opreg__plan {
    bool defined;
    const opreg_schema *schema;
    const char *op_name;
    uint32_t nargs, npositional, nreturns;
    uint32_t ntensor;   /* arguments that carry tensors */
    bool plain_tensors; /* all of them are plain `Tensor`s */
    bool has_kwarg_only;
    uint8_t tensor_pos[OPREG__MAX_ARGS];
    uint8_t want[OPREG__MAX_ARGS]; /* args[i].kind, packed for the hot loop */
    struct opreg__arg *args;       /* nargs items, in the same allocation */
    struct opreg__retired retire;  /* retires the schema with the plan */
};

opreg_status opreg__plan_build(struct opreg__plan **out, const opreg_schema *schema,
                               const char *op_name);
/* The value kind a type expects (an opreg_value_kind or OPREG__KIND_*), with
 * whether it is optional (`T?`) and, for `Tensor?[]`, its items. */
uint8_t opreg__kind_of_type(const opreg_type *t, uint8_t *optional, uint8_t *elem_optional);

/* ---- dispatch tables (resolve.c) ----------------------------------------- */

/* One provider of a published list: what a call needs, and its registration
 * (for names and places in messages; it outlives the table). */
struct opreg__pitem {
    opreg_kernel_fn fn;
    void *context;
    opreg_supports_fn supports;
    const struct opreg__kreg *reg;
    const char *name; /* reg's, or "default" */
    uint16_t pin;     /* 0, or 1 + the index of the spec item that disables it */
    uint8_t orphan;   /* placed next to an anchor that is absent */
};

/* A key's provider list in its table: the context of its dispatch entry
 * when more than one provider, or a predicate, is enabled. */
struct opreg__chain {
    const struct opreg__pitem *items;
    uint32_t n;
    int32_t key;
};

/* The mutation sanitizer's record of one key of a table (mutation.c): the
 * entry it stands in for, and what a report names. Everything it points to
 * lives at least as long as the table. */
struct opreg__guard {
    opreg_kernel_fn fn; /* the resolved entry, called between the hashes */
    void *context;
    const struct opreg__plan *plan;
    const struct opreg__kreg *reg;    /* its registration; NULL for a provider list */
    const struct opreg__chain *chain; /* the provider list it calls, or NULL */
    int32_t key;
    uint8_t kind; /* an opreg_kernel_kind */
    uint8_t mode; /* OPREG_MUTATION_REPORT or _FAIL */
};

/* Immutable once published. It starts with the public head (entries by
 * DLPack device type, for the inline fast path of opreg/dispatch.h). */
struct opreg__table {
    opreg_dispatch_table pub;
    const struct opreg__plan *plan;
    uint32_t kernel_mask; /* bit k: a kernel resolves for key k */
    bool defined;         /* plan->defined, one load closer */
    bool has_composite;
    opreg_dispatch_entry e[OPREG__NSLOTS]; /* by key */
    /* The provider lists of the keys that have providers (provider.c):
     * chain[k] names its items, n == 0 for the other keys. */
    struct opreg__chain chain[OPREG_MAX_KEYS];
    uint32_t nitems;
    struct opreg__pitem items[OPREG_MAX_PROVIDERS];
    /* With the mutation sanitizer on, e[k] calls guard[k] (mutation.c). */
    struct opreg__guard guard[OPREG_MAX_KEYS];
    struct opreg__retired retire;
    struct opreg__table *next_spare; /* in the registry's reserve, while unused */
};

#define OPREG__STATE_DEFINED (1ull << 63)

/* ---- registrations ------------------------------------------------------- */

/* One kernel registration (an impl, a composite or a fallback). */
struct opreg__kreg {
    opreg_kernel k;
    struct opreg_library *lib;
    struct opreg_op *op; /* NULL for a fallback */
    int32_t key;         /* backend key or OPREG_KEY_COMPOSITE */
    uint32_t id;
    struct opreg__kreg *older; /* the one it replaced, in the same slot */
    /* Providers (registered by opreg_library_provider; pname[0] otherwise 0). */
    char pname[OPREG_PROVIDER_NAME_MAX + 1];
    char anchor[OPREG_PROVIDER_NAME_MAX + 1];
    opreg_supports_fn supports;
    uint8_t place;
    int32_t priority;
    struct opreg__kreg *lib_next; /* the library's registrations */
    struct opreg__retired retire; /* withdrawn: freed, with its context, at reclaim */
};

struct opreg_op {
    _Atomic(const opreg_dispatch_table *) table; /* first: see struct opreg_op_head */
    struct opreg_registry *reg;
    uint64_t hash;
    /* The published table's `defined` (bit 63) and kernel_mask (low bits),
     * beside the name that a lookup has just compared: queries read this
     * instead of following the table pointer. */
    _Atomic uint64_t state;
    size_t name_len;
    char *name; /* "ns::name[.overload]" */
    size_t ns_len;
    /* Writer side, under reg->lock. */
    struct opreg__kreg *direct[OPREG_MAX_KEYS]; /* newest first */
    struct opreg__kreg *prov[OPREG_MAX_KEYS];   /* providers, newest first */
    struct opreg__kreg *composite;
    opreg_schema *schema;     /* NULL when not defined */
    struct opreg__plan *plan; /* with schema */
    struct opreg_library *def_lib;
    /* The def's input generator (opreg/inputs.h), the defining library's;
     * cleared with the def. */
    _Atomic(const struct opreg_generator *) gen;
    char def_where[256];        /* "file:line" of the def() call, or its library's */
    struct opreg__table *owned; /* the table published now, or NULL */
};

struct opreg_library {
    struct opreg_registry *reg;
    opreg_library_kind kind;
    opreg_dispatch_key default_key;
    char *ns;
    char *where; /* "file:line" */
    opreg_status first_error;
    char first_msg[1024];
    struct opreg__kreg *kregs;
    struct opreg_op **defs;
    size_t ndefs, cap_defs;
    struct opreg_library *prev, *next;
    struct opreg_plugin *plugin; /* the plugin that opened it, or NULL */
    size_t nop_kregs;            /* its direct and composite registrations */
    size_t nfallbacks;
    /* Closed: freed at reclaim, as the registrations that point here. */
    struct opreg__retired retire;
};

/* ---- the registry (registry.c, names.c) ---------------------------------- */

struct opreg__slot {
    _Atomic(struct opreg_op *) op;
    uint64_t hash; /* written before op is published */
};

struct opreg__names {
    size_t mask, count;
    struct opreg__retired retire;
    struct opreg__slot slots[];
};

struct opreg__opvec {
    _Atomic size_t count;
    size_t cap;
    struct opreg__retired retire;
    struct opreg_op *items[];
};

struct opreg_registry {
    pthread_mutex_t lock;
    _Atomic(struct opreg__names *) names;
    _Atomic(struct opreg__opvec *) ops;
    struct opreg__kreg *fallback[OPREG_MAX_KEYS];
    struct opreg_library *libs;
    struct opreg__retired *retired;
    struct opreg__plugin_list *plugins; /* plugin_internal.h; under plugin_lock */
    pthread_mutex_t plugin_lock;        /* serialises loads and unloads */
    uint32_t next_id;
    /* Tables kept in reserve so that closing a library never allocates (see
     * opreg__spares_need): a close may have to rebuild the table of every op
     * its registrations touch, and a close cannot fail. */
    struct opreg__table *spares;
    size_t nspares;
    size_t nop_kregs; /* direct and composite registrations of open libraries */
    size_t nfb_libs;  /* open libraries with a fallback */
    size_t ndefined;  /* ops with a schema */
    bool is_default;
    _Atomic(struct opreg__pins *) pins; /* provider.c: pins and disables, or NULL */
    _Atomic int mutation;               /* opreg_mutation_mode (mutation.c); set under lock */
    struct opreg__plan undefined_plan;
    struct opreg__table undefined_table;
};

/* Name hashing and the lock-free probe, inline for the lookup paths
 * (opreg__load8 is common/internal.h's). */
static inline uint64_t opreg__mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 32);
}

/* 8 bytes a step, multiply-xorshift mixing. The tail is read with whole
 * (overlapping) loads rather than byte by byte: short names are the norm. */
static inline uint64_t opreg__hash(const char *s, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    if (len >= 8) {
        for (size_t i = 0; i + 8 < len; i += 8)
            h = opreg__mix(h, opreg__load8(s + i));
        h = opreg__mix(h, opreg__load8(s + len - 8));
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        h = opreg__mix(h, a | (uint64_t)b << 32);
    } else if (len > 0) {
        h = opreg__mix(h, (uint8_t)s[0] | (uint64_t)(uint8_t)s[len / 2] << 8 |
                              (uint64_t)(uint8_t)s[len - 1] << 16);
    }
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

/* Equality of two names of @p len bytes, without a library call. */
static inline bool opreg__same_name(const char *a, const char *b, size_t len) {
    if (len >= 8) {
        for (size_t i = 0; i + 8 < len; i += 8)
            if (opreg__load8(a + i) != opreg__load8(b + i)) return false;
        return opreg__load8(a + len - 8) == opreg__load8(b + len - 8);
    }
    while (len--)
        if (*a++ != *b++) return false;
    return true;
}

static inline struct opreg_op *opreg__names_find(const struct opreg_registry *reg, const char *name,
                                                 size_t len, uint64_t hash) {
    const struct opreg__names *t = atomic_load_explicit(&reg->names, memory_order_acquire);
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        struct opreg_op *op = atomic_load_explicit(&t->slots[i].op, memory_order_acquire);
        if (!op) return NULL;
        if (t->slots[i].hash == hash && op->name_len == len &&
            opreg__same_name(op->name, name, len))
            return op;
    }
}

/* Find or create an op record (writer). A failure leaves no record. */
opreg_status opreg__op_get(struct opreg_op **out, struct opreg_registry *reg, const char *name,
                           size_t len);
/* Write "did you mean" suggestions for an unknown name (writer lock taken inside). */
opreg_status opreg__fail_unknown_op(const struct opreg_registry *reg, const char *name, size_t len);
void opreg__names_free(struct opreg__names *names);

/* Defer freeing @p ptr with @p fn until no reader can hold it; @p node is
 * the object's own node. Never fails. */
void opreg__retire(struct opreg_registry *reg, struct opreg__retired *node, void (*fn)(void *),
                   void *ptr);
void opreg__lock(const struct opreg_registry *reg);
void opreg__unlock(const struct opreg_registry *reg);

static inline const struct opreg__table *opreg__table_of(const struct opreg_op *op) {
    return (const struct opreg__table *)(const void *)atomic_load_explicit(&op->table,
                                                                           memory_order_acquire);
}

/* Call by dispatch key, never by the device-type entries. */
opreg_status opreg__call_by_key(const opreg_op *op, const opreg_value *args, opreg_value *rets);

/* The reserve the open libraries need: closing one rebuilds at most one
 * table per direct or composite registration it made, or, when it has a
 * fallback, one per defined op. The sum over all of them is kept, so that
 * each close finds its share whatever closed before it. */
static inline size_t opreg__spares_need(const struct opreg_registry *reg) {
    return reg->nop_kregs + reg->nfb_libs * reg->ndefined;
}
/* Make the reserve hold opreg__spares_need() + @p extra tables (those a
 * registration is about to publish). The only allocation of a table. */
opreg_status opreg__spares_reserve(struct opreg_registry *reg, size_t extra);
/* Free the reserve beyond what is needed (after a close), or all of it. */
void opreg__spares_trim(struct opreg_registry *reg, bool all);
/* Rebuild and publish an op's table after its registrations changed, from a
 * reserved table: never fails, and allocates nothing. */
void opreg__op_publish(struct opreg_op *op);
/* Rebuild every defined op's table (a fallback changed), likewise. */
void opreg__publish_all(struct opreg_registry *reg);
void opreg__table_init_undefined(struct opreg__table *t, const struct opreg__plan *plan);
void opreg__library_close_locked(struct opreg_library *lib);
/* opreg_library_create() with the place of registration given whole
 * ("plugin 'x' (path)") rather than as a file and a line. */
opreg_status opreg__library_create_where(opreg_library **out, opreg_registry *reg,
                                         opreg_library_kind kind, const char *ns,
                                         opreg_dispatch_key default_key, const char *where);
/* Record a library's first failure and its message; returns @p st. */
opreg_status opreg__lib_error(struct opreg_library *lib, opreg_status st);
bool opreg__is_ident(const char *s, size_t len);

/* ---- keys (keys.c) -------------------------------------------------------- */

/* Key + 1 of each DLPack device type below 64 (0: none). */
extern _Atomic(int8_t) opreg__devmap[64];
/* Bit k: key k's backend is available. */
extern _Atomic uint32_t opreg__avail_mask;
int32_t opreg__key_of_type_slow(int32_t device_type);
/* Attach the built-in keys' tables (opreg__builtin_keys(), once), before
 * anything reads a table. */
void opreg__keys_init(void);

static inline int32_t opreg__key_of_type(int32_t device_type) {
    if ((uint32_t)device_type < 64u) {
        int32_t k = atomic_load_explicit(&opreg__devmap[device_type], memory_order_relaxed);
        return k ? k - 1 : OPREG__KEY_UNKNOWN;
    }
    return opreg__key_of_type_slow(device_type);
}

/* Plugin keys: obtain (or take back, by name) a key for a plugin's backend;
 * mark it unavailable, with @p why, once the plugin is gone. */
opreg_status opreg__key_claim(opreg_dispatch_key *out, const opreg_backend *backend);
void opreg__key_release(opreg_dispatch_key key, const char *why);
/* Release a key after a load that ran out of memory: a key taken back is left
 * as it was before (its earlier reason), a new one is released with @p why.
 * Neither allocates. */
void opreg__key_unclaim(opreg_dispatch_key key, const char *why);

/* ---- plugins (plugin_load.c; the rest in plugin_internal.h) ----------------- */

struct opreg__plugin_list;
/* Unload every plugin of @p reg (registry destruction). */
void opreg__plugins_unload_all(struct opreg_registry *reg);
/* Run the deferred plugin finalisers and unload their code (after retired). */
void opreg__plugins_reclaim(struct opreg_registry *reg);
void opreg__plugins_free(struct opreg_registry *reg);
/* opreg_plugin_load() lending a host table of @p host_size bytes that says
 * @p host_version: an older host, simulated (tests). */
opreg_status opreg__plugin_load_with_host(opreg_plugin **out, opreg_registry *reg, const char *path,
                                          size_t host_size, uint32_t host_version);
/* opreg_plugin_load() of a plugin given by its entry function instead of a
 * file (the fuzzer): everything after dlsym runs as for a file, with no
 * handle to dlclose, and @p path_label stands for the path in the record
 * and the messages. */
opreg_status opreg__plugin_load_entry(opreg_plugin **out, opreg_registry *reg,
                                      const char *path_label, opreg_plugin_entry_fn entry);

/* ---- providers (provider.c) ------------------------------------------------ */

/* Fill key @p k of table @p t from the op's providers (and its impl, as
 * `default`); false when the key has no providers (the caller resolves it
 * as before). Allocates nothing. */
bool opreg__chain_build(struct opreg__table *t, const struct opreg_op *op, int32_t k);
/* The items the op would hold with one more provider @p name on @p key (or
 * its impl, for name NULL), to refuse registrations past the table's room. */
size_t opreg__chain_items_with(const struct opreg_op *op, int32_t key, const char *name);
/* Read OPREG_PROVIDERS into a new registry (a bad spec is logged, not kept). */
void opreg__pins_from_env(struct opreg_registry *reg);
void opreg__pins_free(struct opreg_registry *reg);
/* Run op @p op's checks (its Meta kernel, when it has its own) on @p args. */
opreg_status opreg__check_args(const opreg_op *op, const opreg_value *args, size_t nargs);
/* Bind and type-check a boxed call as opreg_call_boxed() does, into
 * @p bound (OPREG__MAX_ARGS values), and find the key of its tensors. */
opreg_status opreg__bind_checked(const struct opreg__table *t, const opreg_value *args,
                                 size_t nargs, const opreg_kwarg *kwargs, size_t nkwargs,
                                 opreg_value *bound, int32_t *device_key);

/* ---- the mutation sanitizer (mutation.c) ------------------------------------ */

/* With the sanitizer on for @p op's registry, make each key of @p t that
 * resolves a kernel call it through a guard (t->guard[k]); before
 * fill_by_type. Allocates nothing. */
void opreg__mutation_wrap(struct opreg__table *t, const struct opreg_op *op);
/* Read OPREG_CHECK_MUTATION into a new registry (a bad value is logged). */
void opreg__mutation_from_env(struct opreg_registry *reg);

/* The direct, composite or fallback registration with id @p id that key
 * @p key of @p op resolves to, or NULL (under the lock). */
const struct opreg__kreg *opreg__kreg_of(const struct opreg_op *op, int32_t key, uint32_t id);
/* "where" of a registration, for messages. */
const char *opreg__kreg_where(const struct opreg__kreg *r);

#endif
