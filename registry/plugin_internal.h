/* What the plugin files of registry/ share: a plugin's record, the
 * registry's list of them, the host table lent to each plugin, and the
 * platform's dynamic loading.
 *
 *   plugin_host.c    the host table: the functions a plugin calls opreg by
 *   plugin_load.c    records, load with its checks and refusals, unload,
 *                    reclaim
 *   plugin_search.c  the plugin folders, their search, the listing
 *   dynload.c        dlopen, dlsym, dlclose, dladdr and their error text
 *
 * The entry points the rest of registry/ (and the tests) call are in
 * registry/internal.h. */
#ifndef OPREG_REGISTRY_PLUGIN_INTERNAL_H
#define OPREG_REGISTRY_PLUGIN_INTERNAL_H

#include "common/dynload.h"
#include "registry/internal.h"

#include <stdlib.h>
#include <string.h>

struct opreg_plugin {
    struct opreg_registry *reg;
    char *path, *name, *version, *reason, *where;
    opreg_plugin_state state;
    uint32_t abi_version;
    opreg_dispatch_key key;
    void *handle;           /* opreg__dl_open()'s, until reclaim */
    opreg_plugin_desc desc; /* what the plugin's struct_size covers */
    void *user;             /* from init, for fini */
    bool pending;           /* fini and dlclose wait for reclaim */
    pthread_mutex_t libs_lock;
    opreg_library **libs;
    size_t nlibs, cap_libs;
    opreg_host host; /* the table lent to this plugin */
    struct opreg_plugin *next_gone;
};

struct opreg__plugin_list {
    size_t count, cap;
    struct opreg_plugin **items;
    /* Loads that ran out of memory after init ran: off the list, as if never
     * tried, but their fini and dlclose still wait for reclaim. */
    struct opreg_plugin *gone;
};

/* A copy of @p s, or NULL when memory runs out (strdup is not C11's). */
static inline char *opreg__plugin_dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- the host table (plugin_host.c) ------------------------------------------ */

/* The newest host table; a plugin gets a copy of it in its record, cut to
 * the size it is lent. */
extern const opreg_host opreg__plugin_host;

/* Dynamic loading: common/dynload.h. */

#endif
