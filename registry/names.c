/* Op names: an open-addressing hash table from full names to op records,
 * the append-only list of records, and "did you mean" suggestions.
 *
 * Readers probe without a lock: a slot is written once (hash first, then the
 * op pointer with a release store) and never cleared; a grown table is
 * published whole and the old one retired. Records are never removed, which
 * keeps handles stable: an op whose library closed stays, undefined. */
#include "registry/internal.h"

#include <stdlib.h>
#include <string.h>

static void insert_slot(struct opreg__names *t, struct opreg_op *op) {
    size_t i = op->hash & t->mask;
    while (atomic_load_explicit(&t->slots[i].op, memory_order_relaxed))
        i = (i + 1) & t->mask;
    t->slots[i].hash = op->hash;
    atomic_store_explicit(&t->slots[i].op, op, memory_order_release);
    t->count++;
}

void opreg__names_free(struct opreg__names *names) {
    free(names);
}

static void free_ptr(void *p) {
    free(p);
}

/* Keep the load under one half; grow by publishing a copy. */
static opreg_status reserve_name(struct opreg_registry *reg) {
    struct opreg__names *t = atomic_load_explicit(&reg->names, memory_order_relaxed);
    if ((t->count + 1) * 2 <= t->mask + 1) return OPREG_OK;
    size_t cap = (t->mask + 1) * 2;
    struct opreg__names *g = calloc(1, sizeof *g + cap * sizeof(struct opreg__slot));
    if (!g) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "registry: out of memory for op names");
    g->mask = cap - 1;
    for (size_t i = 0; i <= t->mask; i++) {
        struct opreg_op *op = atomic_load_explicit(&t->slots[i].op, memory_order_relaxed);
        if (op) insert_slot(g, op);
    }
    atomic_store_explicit(&reg->names, g, memory_order_release);
    opreg__retire(reg, &t->retire, free_ptr, t);
    return OPREG_OK;
}

static opreg_status reserve_record(struct opreg_registry *reg) {
    struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_relaxed);
    size_t n = atomic_load_explicit(&v->count, memory_order_relaxed);
    if (n < v->cap) return OPREG_OK;
    struct opreg__opvec *g = malloc(sizeof *g + 2 * v->cap * sizeof(struct opreg_op *));
    if (!g) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "registry: out of memory for op records");
    g->cap = 2 * v->cap;
    memcpy(g->items, v->items, n * sizeof(struct opreg_op *));
    atomic_init(&g->count, n);
    atomic_store_explicit(&reg->ops, g, memory_order_release);
    opreg__retire(reg, &v->retire, free_ptr, v);
    return OPREG_OK;
}

opreg_status opreg__op_get(struct opreg_op **out, struct opreg_registry *reg, const char *name,
                           size_t len) {
    uint64_t h = opreg__hash(name, len);
    struct opreg_op *op = opreg__names_find(reg, name, len, h);
    if (op) {
        *out = op;
        return OPREG_OK;
    }
    OPREG__TRY(reserve_name(reg));
    OPREG__TRY(reserve_record(reg));
    op = calloc(1, sizeof *op);
    char *copy = malloc(len + 1);
    if (!op || !copy) {
        free(op);
        free(copy);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "registry: out of memory for op '%.*s'",
                           (int)len, name);
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    op->reg = reg;
    op->hash = h;
    op->name = copy;
    op->name_len = len;
    const char *sep = strstr(copy, "::");
    op->ns_len = sep ? (size_t)(sep - copy) : 0;
    atomic_init(&op->table, &reg->undefined_table.pub);
    struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_relaxed);
    size_t n = atomic_load_explicit(&v->count, memory_order_relaxed);
    v->items[n] = op;
    atomic_store_explicit(&v->count, n + 1, memory_order_release);
    insert_slot(atomic_load_explicit(&reg->names, memory_order_relaxed), op);
    *out = op;
    return OPREG_OK;
}

/* Levenshtein distance, capped: names longer than 127 bytes compare as far. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb) {
    if (la > 127 || lb > 127) return SIZE_MAX;
    size_t row[128];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

opreg_status opreg__fail_unknown_op(const struct opreg_registry *reg, const char *name,
                                    size_t len) {
    enum { KEEP = 3 };
    const struct opreg_op *best[KEEP] = { NULL };
    size_t dist[KEEP] = { SIZE_MAX, SIZE_MAX, SIZE_MAX };
    const struct opreg__opvec *v = atomic_load_explicit(&reg->ops, memory_order_acquire);
    size_t n = atomic_load_explicit(&v->count, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        const struct opreg_op *op = v->items[i];
        if (!opreg_op_is_defined(op)) continue;
        size_t d = distance(name, len, op->name, op->name_len);
        for (int k = 0; k < KEEP; k++) {
            if (d >= dist[k]) continue;
            for (int m = KEEP - 1; m > k; m--) {
                dist[m] = dist[m - 1];
                best[m] = best[m - 1];
            }
            dist[k] = d;
            best[k] = op;
            break;
        }
    }
    if (!best[0])
        return opreg__fail(OPREG_ERR_NOT_FOUND,
                           "Could not find schema for %.*s: the registry defines no ops", (int)len,
                           name);
    return opreg__fail(OPREG_ERR_NOT_FOUND,
                       "Could not find schema for %.*s; did you mean: %s%s%s%s%s?", (int)len, name,
                       best[0]->name, best[1] ? ", " : "", best[1] ? best[1]->name : "",
                       best[2] ? ", " : "", best[2] ? best[2]->name : "");
}
