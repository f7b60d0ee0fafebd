/* Dispatch tables: for each backend key, the kernel a call runs, resolved
 * when registrations change, in this order:
 *
 *   1. the op's direct kernel for the key (the newest registration);
 *   2. the op's composite kernel (device-agnostic);
 *   3. the key's fallback (the newest, for every op);
 *
 * and otherwise a stub that reports which keys do have kernels. A table is
 * immutable once published; a change builds a new one, publishes it with a
 * release store and retires the old one. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static opreg_status undefined_stub(void *ctx, const opreg_op *op, const opreg_value *args,
                                   opreg_value *rets) {
    (void)ctx;
    (void)args;
    (void)rets;
    if (!op->name) return opreg__fail(OPREG_ERR_NOT_FOUND, "operator is not defined");
    return opreg__fail(OPREG_ERR_NOT_FOUND,
                       "operator %s is not defined: its library was closed, or only kernels "
                       "were registered for it",
                       op->name);
}

/* List the keys that have a kernel (direct, composite or fallback). */
static void keys_with_kernels(const struct opreg__table *t, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    if (t->has_composite) used += (size_t)snprintf(buf, cap, "Composite (every key)");
    for (int k = 0; k < OPREG_MAX_KEYS && used < cap; k++) {
        if (t->e[k].kind != OPREG_KERNEL_DIRECT && t->e[k].kind != OPREG_KERNEL_FALLBACK) continue;
        used +=
            (size_t)snprintf(buf + used, cap - used, "%s%s%s", used ? ", " : "", opreg_key_name(k),
                             t->e[k].kind == OPREG_KERNEL_FALLBACK ? " (fallback)" : "");
    }
    if (!used) snprintf(buf, cap, "none");
}

static opreg_status missing_stub(void *ctx, const opreg_op *op, const opreg_value *args,
                                 opreg_value *rets) {
    (void)args;
    (void)rets;
    int key = (int)(intptr_t)ctx;
    const struct opreg__table *t = opreg__table_of(op);
    char have[300];
    keys_with_kernels(t, have, sizeof have);
    return opreg__fail(OPREG_ERR_NO_KERNEL,
                       "Could not run '%s' with arguments from the '%s' backend: no kernel is "
                       "registered for %s (no direct, composite or fallback kernel). Kernels are "
                       "registered for: %s",
                       op->name, opreg_key_name(key), opreg_key_name(key), have);
}

static opreg_status unknown_device_stub(void *ctx, const opreg_op *op, const opreg_value *args,
                                        opreg_value *rets) {
    (void)ctx;
    (void)rets;
    const struct opreg__table *t = opreg__table_of(op);
    const struct opreg__plan *p = t->plan;
    for (uint32_t i = 0; i < p->ntensor; i++) {
        const opreg_value *v = &args[p->tensor_pos[i]];
        if (v->kind == OPREG_VALUE_TENSOR && v->u.tensor &&
            opreg_key_of_device(v->u.tensor->device) == OPREG_KEY_NONE)
            return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE,
                               "%s: argument '%s' is on DLPack device type %d, which no "
                               "registered backend handles",
                               op->name, p->args[p->tensor_pos[i]].name,
                               (int)v->u.tensor->device.device_type);
    }
    return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE,
                       "%s: a tensor argument is on a device that no registered backend handles",
                       op->name);
}

/* The by-device-type entry of a type that no key handled when the table
 * was built: dispatch by key, through the map as it is now. */
static opreg_status redispatch_stub(void *ctx, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)ctx;
    return opreg__call_by_key(op, args, rets);
}

void opreg__table_init_undefined(struct opreg__table *t, const struct opreg__plan *plan) {
    memset(t, 0, sizeof *t);
    t->plan = plan;
    for (int k = 0; k < OPREG__NSLOTS; k++)
        t->e[k].fn = undefined_stub;
    for (int d = 0; d < OPREG_DISPATCH_DEVICE_TYPES; d++)
        t->pub.by_device_type[d].fn = undefined_stub;
}

/* Copy each key's entry to the device types that the key handles. */
static void fill_by_type(struct opreg__table *t) {
    for (int d = 0; d < OPREG_DISPATCH_DEVICE_TYPES; d++) {
        int32_t k = opreg__key_of_type(d);
        if (k == OPREG__KEY_UNKNOWN)
            t->pub.by_device_type[d].fn = redispatch_stub;
        else
            t->pub.by_device_type[d] = t->e[k];
    }
}

static void set_entry(opreg_dispatch_entry *e, const struct opreg__kreg *r,
                      opreg_kernel_kind kind) {
    e->fn = r->k.fn;
    e->context = r->k.context;
    e->flags = (uint8_t)r->k.flags;
    e->kind = (uint8_t)kind;
    e->id = r->id;
}

static void free_table(void *p) {
    free(p);
}

opreg_status opreg__spares_reserve(struct opreg_registry *reg, size_t extra) {
    size_t want = opreg__spares_need(reg) + extra;
    while (reg->nspares < want) {
        struct opreg__table *t = malloc(sizeof *t);
        if (!t) /* the tables made so far stay in the reserve: harmless */
            return opreg__fail(OPREG_ERR_OUT_OF_MEMORY,
                               "registry: out of memory for dispatch tables (%zu in reserve)",
                               reg->nspares);
        t->next_spare = reg->spares;
        reg->spares = t;
        reg->nspares++;
    }
    return OPREG_OK;
}

void opreg__spares_trim(struct opreg_registry *reg, bool all) {
    size_t keep = all ? 0 : opreg__spares_need(reg);
    while (reg->nspares > keep) {
        struct opreg__table *t = reg->spares;
        reg->spares = t->next_spare;
        reg->nspares--;
        free(t);
    }
}

/* A table from the reserve. It is never empty when the accounting is right;
 * should it be, a new table is tried, and failing that NULL (the op then
 * keeps its table) rather than a crash. The fault-injection test checks that
 * closes allocate nothing. */
static struct opreg__table *take_spare(struct opreg_registry *reg) {
    struct opreg__table *t = reg->spares;
    if (t) {
        reg->spares = t->next_spare;
        reg->nspares--;
    } else if (!(t = malloc(sizeof *t))) {
        return NULL;
    }
    memset(t, 0, sizeof *t);
    return t;
}

void opreg__op_publish(struct opreg_op *op) {
    struct opreg_registry *reg = op->reg;
    const struct opreg__table *next = &reg->undefined_table;
    struct opreg__table *t = NULL;
    if (op->schema) {
        t = take_spare(reg); /* the callers reserved it: see opreg__spares_need */
        if (!t) return;
        t->plan = op->plan;
        t->defined = true;
        t->has_composite = op->composite != NULL;
        for (int k = 0; k < OPREG_MAX_KEYS; k++) {
            opreg_dispatch_entry *e = &t->e[k];
            if (opreg__chain_build(t, op, k)) continue; /* providers */
            if (op->direct[k])
                set_entry(e, op->direct[k], OPREG_KERNEL_DIRECT);
            else if (op->composite)
                set_entry(e, op->composite, OPREG_KERNEL_COMPOSITE);
            else if (reg->fallback[k])
                set_entry(e, reg->fallback[k], OPREG_KERNEL_FALLBACK);
            else {
                e->fn = missing_stub;
                e->context = (void *)(intptr_t)k;
                continue;
            }
            t->kernel_mask |= 1u << k;
        }
        t->e[OPREG__KEY_UNKNOWN].fn = unknown_device_stub;
        /* The sanitizer's guards go in here, at publication, so that a call
         * with it off is the plain call: no test of the mode on its path. */
        if (atomic_load_explicit(&reg->mutation, memory_order_relaxed) != OPREG_MUTATION_OFF)
            opreg__mutation_wrap(t, op);
        fill_by_type(t);
        next = t;
    }
    atomic_store_explicit(&op->table, &next->pub, memory_order_release);
    atomic_store_explicit(&op->state, t ? OPREG__STATE_DEFINED | t->kernel_mask : 0,
                          memory_order_release);
    if (op->owned) opreg__retire(reg, &op->owned->retire, free_table, op->owned);
    op->owned = t;
}

void opreg__publish_all(struct opreg_registry *reg) {
    struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_relaxed);
    size_t n = atomic_load_explicit(&v->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (v->items[i]->schema) opreg__op_publish(v->items[i]);
}
