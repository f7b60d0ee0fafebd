/* Queries: lookup by name, support checks and their explanation, listing. */
#include "registry/internal.h"

#include <stdio.h>
#include <string.h>

/* A defined op by name, or NULL; no lock, no allocation, no error set. */
static inline const struct opreg_op *find_defined(const opreg_registry *reg, const char *name,
                                                  size_t len, const struct opreg__table **table) {
    const struct opreg_op *op = opreg__names_find(reg, name, len, opreg__hash(name, len));
    if (!op) return NULL;
    const struct opreg__table *t = opreg__table_of(op);
    if (!t->defined) return NULL;
    *table = t;
    return op;
}

static inline opreg_status find(const opreg_op **out, const opreg_registry *reg, const char *name,
                                size_t len) {
    if (!out || !reg || !name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_op_find: %s is NULL",
                           !out   ? "out"
                           : !reg ? "reg"
                                  : "name");
    const struct opreg_op *op = opreg__names_find(reg, name, len, opreg__hash(name, len));
    if (op && (atomic_load_explicit(&op->state, memory_order_acquire) & OPREG__STATE_DEFINED)) {
        *out = op;
        return OPREG_OK;
    }
    *out = NULL;
    return opreg__fail_unknown_op(reg, name, len);
}

opreg_status opreg_op_find_n(const opreg_op **out, const opreg_registry *reg, const char *name,
                             size_t len) {
    return find(out, reg, name, len);
}

opreg_status opreg_op_find(const opreg_op **out, const opreg_registry *reg, const char *name) {
    return find(out, reg, name, name ? strlen(name) : 0);
}

#define META_BIT (1u << OPREG_KEY_META)

/* The state word of op @p name (0 when unknown or undefined). */
static inline uint64_t state_of(const opreg_registry *reg, const char *name) {
    size_t len = strlen(name);
    const struct opreg_op *op = opreg__names_find(reg, name, len, opreg__hash(name, len));
    return op ? atomic_load_explicit(&op->state, memory_order_acquire) : 0;
}

bool opreg_is_op_supported(const opreg_registry *reg, const char *name) {
    if (!reg || !name) return false;
    uint64_t state = state_of(reg, name);
    uint32_t avail = atomic_load_explicit(&opreg__avail_mask, memory_order_relaxed);
    return (state & OPREG__STATE_DEFINED) && ((uint32_t)state & avail & ~META_BIT) != 0;
}

bool opreg_is_op_supported_on(const opreg_registry *reg, const char *name, DLDevice device) {
    if (!reg || !name) return false;
    uint64_t state = state_of(reg, name);
    if (!(state & OPREG__STATE_DEFINED)) return false;
    int32_t k = opreg__key_of_type((int32_t)device.device_type);
    if (k == OPREG__KEY_UNKNOWN) return false;
    uint32_t avail = atomic_load_explicit(&opreg__avail_mask, memory_order_relaxed);
    return (((uint32_t)state & avail) >> k) & 1u;
}

static const char *kind_word(opreg_kernel_kind k) {
    return k == OPREG_KERNEL_DIRECT      ? "direct"
           : k == OPREG_KERNEL_COMPOSITE ? "composite"
                                         : "fallback";
}

/* Where the registration with id @p id came from (under the lock). */
static const char *where_of(const struct opreg_op *op, int32_t key, uint32_t id) {
    const struct opreg__kreg *r = opreg__kreg_of(op, key, id);
    return r ? opreg__kreg_where(r) : "(unknown)";
}

/* Explain one key of a defined op; returns true when a kernel would run. */
static bool explain_key(opreg_support_info *out, const struct opreg_op *op,
                        const struct opreg__table *t, int32_t k) {
    out->key = k;
    out->kind = (opreg_kernel_kind)t->e[k].kind;
    char why[256];
    if (!opreg_key_is_available(k, why, sizeof why)) {
        out->reason = OPREG_SUPPORT_BACKEND_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "%s on %s: not supported: the %s backend is unavailable: %s%s", op->name,
                 opreg_key_name(k), opreg_key_name(k), why,
                 out->kind ? " (a kernel is registered)" : "");
        return false;
    }
    const struct opreg__chain *c = &t->chain[k];
    if (c->n && out->kind == OPREG_KERNEL_NONE) {
        out->reason = OPREG_SUPPORT_NO_KERNEL;
        snprintf(out->message, sizeof out->message,
                 "%s on %s: not supported: each of its %u providers is disabled by the "
                 "registry's provider spec (OPREG_PROVIDERS)",
                 op->name, opreg_key_name(k), c->n);
        return false;
    }
    if (c->n) {
        size_t used = 0;
        char names[256] = "";
        for (uint32_t i = 0; i < c->n && used < sizeof names; i++)
            if (!c->items[i].pin)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "", c->items[i].name);
        out->supported = true;
        out->reason = OPREG_SUPPORT_OK;
        snprintf(out->message, sizeof out->message,
                 "%s on %s: supported: runs the first of its providers that accepts the "
                 "arguments (%s); `opreg supported --shape` or opreg_explain_call() says which",
                 op->name, opreg_key_name(k), names);
        return true;
    }
    if (out->kind == OPREG_KERNEL_NONE) {
        out->reason = OPREG_SUPPORT_NO_KERNEL;
        snprintf(out->message, sizeof out->message,
                 "%s on %s: not supported: no direct, composite or fallback kernel for %s",
                 op->name, opreg_key_name(k), opreg_key_name(k));
        return false;
    }
    out->supported = true;
    out->reason = OPREG_SUPPORT_OK;
    snprintf(out->message, sizeof out->message,
             "%s on %s: supported: runs the %s kernel (%s), registered at %s", op->name,
             opreg_key_name(k),
             out->kind == OPREG_KERNEL_COMPOSITE ? "Composite" : opreg_key_name(k),
             kind_word(out->kind), where_of(op, k, t->e[k].id));
    return true;
}

opreg_status opreg_explain_support(opreg_support_info *out, opreg_registry *reg, const char *name,
                                   const DLDevice *device) {
    if (!out || !reg || !name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_explain_support: %s is NULL",
                           !out   ? "out"
                           : !reg ? "reg"
                                  : "name");
    memset(out, 0, sizeof *out);
    out->key = OPREG_KEY_NONE;
    opreg__lock(reg);
    const struct opreg__table *t = NULL;
    const struct opreg_op *op = find_defined(reg, name, strlen(name), &t);
    if (!op) {
        opreg__unlock(reg);
        out->reason = OPREG_SUPPORT_NO_SUCH_OP;
        opreg__fail_unknown_op(reg, name, strlen(name));
        snprintf(out->message, sizeof out->message, "%s", opreg_last_error());
        return OPREG_OK;
    }
    if (device) {
        int32_t k = opreg__key_of_type((int32_t)device->device_type);
        if (k == OPREG__KEY_UNKNOWN) {
            out->reason = OPREG_SUPPORT_NO_BACKEND;
            snprintf(out->message, sizeof out->message,
                     "%s: not supported: no backend handles DLPack device type %d", op->name,
                     (int)device->device_type);
        } else {
            explain_key(out, op, t, k);
        }
        opreg__unlock(reg);
        return OPREG_OK;
    }
    /* Any backend but Meta: report the first that would run, else the first reason. */
    opreg_support_info first = { 0 };
    bool have_first = false;
    for (int32_t k = 0; k < opreg_key_count(); k++) {
        if (k == OPREG_KEY_META) continue;
        opreg_support_info info = { 0 };
        if (explain_key(&info, op, t, k)) {
            *out = info;
            opreg__unlock(reg);
            return OPREG_OK;
        }
        if (!have_first || (first.reason == OPREG_SUPPORT_NO_KERNEL && info.kind)) first = info;
        have_first = true;
    }
    *out = first;
    opreg__unlock(reg);
    return OPREG_OK;
}

size_t opreg_registry_num_ops(const opreg_registry *reg) {
    if (!reg) return 0;
    const struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_acquire);
    return atomic_load_explicit(&v->count, memory_order_acquire);
}

const opreg_op *opreg_registry_op(const opreg_registry *reg, size_t i) {
    if (!reg) return NULL;
    const struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_acquire);
    return i < atomic_load_explicit(&v->count, memory_order_acquire) ? v->items[i] : NULL;
}

const char *opreg_op_name(const opreg_op *op) {
    return op ? op->name : NULL;
}

bool opreg_op_is_defined(const opreg_op *op) {
    return op && opreg__table_of(op)->defined;
}

const opreg_schema *opreg_op_schema(const opreg_op *op) {
    if (!op) return NULL;
    const struct opreg__table *t = opreg__table_of(op);
    return t->plan->defined ? t->plan->schema : NULL;
}

opreg_kernel_kind opreg_op_kernel_kind(const opreg_op *op, opreg_dispatch_key key) {
    if (!op || key < 0 || key >= OPREG_MAX_KEYS) return OPREG_KERNEL_NONE;
    const struct opreg__table *t = opreg__table_of(op);
    return t->plan->defined ? (opreg_kernel_kind)t->e[key].kind : OPREG_KERNEL_NONE;
}

bool opreg_op_has_composite(const opreg_op *op) {
    return op && opreg__table_of(op)->has_composite;
}
