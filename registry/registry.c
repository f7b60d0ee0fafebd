/* The registry handle: creation, destruction, the retire list, and the
 * process-default registry, made with the built-in libraries
 * (opreg__builtin_libraries(), above the registry). */
#include "registry/builtins.h"
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void opreg__lock(const struct opreg_registry *reg) {
    pthread_mutex_lock((pthread_mutex_t *)&reg->lock);
}

void opreg__unlock(const struct opreg_registry *reg) {
    pthread_mutex_unlock((pthread_mutex_t *)&reg->lock);
}

void opreg__retire(struct opreg_registry *reg, struct opreg__retired *node, void (*fn)(void *),
                   void *ptr) {
    if (!ptr || !fn) return;
    node->fn = fn;
    node->ptr = ptr;
    node->next = reg->retired;
    reg->retired = node;
}

/* Each node lives in the object its function frees: read next first. */
static void run_retired(struct opreg__retired *r) {
    while (r) {
        struct opreg__retired *next = r->next;
        r->fn(r->ptr);
        r = next;
    }
}

opreg_status opreg_registry_create(opreg_registry **out) {
    if (!out) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_registry_create: out is NULL");
    *out = NULL;
    opreg__keys_init();
    struct opreg_registry *reg = calloc(1, sizeof *reg);
    struct opreg__names *names = calloc(1, sizeof *names + 64 * sizeof(struct opreg__slot));
    struct opreg__opvec *ops = calloc(1, sizeof *ops + 64 * sizeof(struct opreg_op *));
    bool locked = reg && names && ops && pthread_mutex_init(&reg->lock, NULL) == 0;
    if (!locked || pthread_mutex_init(&reg->plugin_lock, NULL) != 0) {
        if (locked) pthread_mutex_destroy(&reg->lock);
        free(reg);
        free(names);
        free(ops);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_registry_create: out of memory");
    }
    names->mask = 63;
    ops->cap = 64;
    atomic_init(&reg->names, names);
    atomic_init(&reg->ops, ops);
    reg->next_id = 1;
    reg->undefined_plan.defined = false;
    reg->undefined_plan.op_name = "";
    opreg__table_init_undefined(&reg->undefined_table, &reg->undefined_plan);
    opreg__pins_from_env(reg);
    opreg__mutation_from_env(reg);
    *out = reg;
    return OPREG_OK;
}

static void free_op(struct opreg_op *op) {
    free(op->owned);
    free(op->plan);
    opreg_schema_free(op->schema);
    free(op->name);
    free(op);
}

void opreg_registry_destroy(opreg_registry *reg) {
    if (!reg || reg->is_default) return;
    opreg__plugins_unload_all(reg);
    opreg__lock(reg);
    while (reg->libs)
        opreg__library_close_locked(reg->libs);
    opreg__unlock(reg);
    struct opreg__opvec *ops = atomic_load_explicit(&reg->ops, memory_order_relaxed);
    size_t n = atomic_load_explicit(&ops->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        free_op(ops->items[i]);
    free(ops);
    opreg__names_free(atomic_load_explicit(&reg->names, memory_order_relaxed));
    run_retired(reg->retired);
    opreg__spares_trim(reg, true);
    opreg__plugins_reclaim(reg); /* after the kernels' release functions, which may be theirs */
    opreg__plugins_free(reg);
    opreg__pins_free(reg);
    pthread_mutex_destroy(&reg->plugin_lock);
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

void opreg_registry_reclaim(opreg_registry *reg) {
    if (!reg) return;
    /* No plugin is unloaded meanwhile, so every release function retired
     * before a plugin's unload runs before its code goes. */
    pthread_mutex_lock(&reg->plugin_lock);
    opreg__lock(reg);
    struct opreg__retired *r = reg->retired;
    reg->retired = NULL;
    opreg__unlock(reg);
    run_retired(r);
    opreg__plugins_reclaim(reg);
    pthread_mutex_unlock(&reg->plugin_lock);
}

/* ---- the process-default registry ----------------------------------------- */

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static opreg_registry *default_registry;
static char default_error[1024];
static opreg_status default_status;

static void create_default(void) {
    opreg_registry *reg = NULL;
    opreg_status st = opreg_registry_create(&reg);
    if (st == OPREG_OK) st = opreg__builtin_libraries(reg);
    if (st != OPREG_OK) {
        default_status = st;
        snprintf(default_error, sizeof default_error, "default registry: %s", opreg_last_error());
        opreg_registry_destroy(reg);
        return;
    }
    /* Plugins on OPREG_PLUGIN_PATH and in the installed folder; a plugin
     * that fails is listed as refused and does not fail the registry. */
    opreg_plugin_load_search(reg, NULL);
    reg->is_default = true;
    default_registry = reg;
}

opreg_registry *opreg_registry_default(void) {
    pthread_once(&default_once, create_default);
    if (!default_registry) opreg__fail(default_status, "%s", default_error);
    return default_registry;
}
