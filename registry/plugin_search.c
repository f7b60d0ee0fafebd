/* The plugin folders and their search (OPREG_PLUGIN_PATH, then the install
 * folder), and the listing of the registry's plugin records. */
#define _POSIX_C_SOURCE 200809L /* opendir, stat */
#include "registry/plugin_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#ifndef OPREG_PLUGIN_INSTALL_DIR
#define OPREG_PLUGIN_INSTALL_DIR "/usr/local/lib/opreg/plugins"
#endif
#ifndef OPREG_PLUGIN_DIR_FROM_LIB
#define OPREG_PLUGIN_DIR_FROM_LIB "opreg/plugins"
#endif

static char plugin_dir[4096];
static pthread_once_t plugin_dir_once = PTHREAD_ONCE_INIT;

/* <folder of the file holding this code>/OPREG_PLUGIN_DIR_FROM_LIB when that
 * folder exists (an installed libopreg.so, wherever its prefix now is),
 * else the configured install folder (a build tree, a static link). */
static void find_plugin_dir(void) {
    struct stat st;
    char self[sizeof plugin_dir], here[sizeof plugin_dir];
    snprintf(plugin_dir, sizeof plugin_dir, "%s", OPREG_PLUGIN_INSTALL_DIR);
    if (!opreg__dl_self_dir(self, sizeof self)) return;
    int n = snprintf(here, sizeof here, "%s/%s", self, OPREG_PLUGIN_DIR_FROM_LIB);
    if (n > 0 && (size_t)n < sizeof here && stat(here, &st) == 0 && S_ISDIR(st.st_mode))
        memcpy(plugin_dir, here, (size_t)n + 1);
}

const char *opreg_plugin_dir(void) {
    pthread_once(&plugin_dir_once, find_plugin_dir);
    return plugin_dir;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool loaded_from(struct opreg_registry *reg, const char *path) {
    bool found = false;
    pthread_mutex_lock(&reg->plugin_lock);
    struct opreg__plugin_list *l = reg->plugins;
    for (size_t i = 0; l && i < l->count && !found; i++)
        found = l->items[i]->state == OPREG_PLUGIN_LOADED && strcmp(l->items[i]->path, path) == 0;
    pthread_mutex_unlock(&reg->plugin_lock);
    return found;
}

/* Load the *.so files of one folder, in name order. Out of memory for the
 * folder's listing (nothing of it is loaded then) or for a load sets *oom. */
static size_t load_dir(struct opreg_registry *reg, const char *dir, size_t len, bool *oom) {
    char path[4096];
    if (len == 0 || len >= sizeof path - 2) return 0;
    memcpy(path, dir, len);
    path[len] = '\0';
    DIR *d = opendir(path);
    if (!d) return 0;
    char **names = NULL;
    size_t n = 0, cap = 0, loaded = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".so") != 0) continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 8;
            char **v = realloc(names, c * sizeof *v);
            if (!v) {
                *oom = true;
                break;
            }
            names = v;
            cap = c;
        }
        if ((names[n] = opreg__plugin_dup(e->d_name)) == NULL) {
            *oom = true;
            break;
        }
        n++;
    }
    closedir(d);
    if (*oom) { /* a partial listing would load a different set, in another order */
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        n = 0;
    }
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(path, sizeof path, "%.*s/%s", (int)len, dir, names[i]);
        if (w > 0 && (size_t)w < sizeof path && !loaded_from(reg, path)) {
            opreg_status st = opreg_plugin_load(NULL, reg, path);
            if (st == OPREG_OK) loaded++;
            if (st == OPREG_ERR_OUT_OF_MEMORY) *oom = true;
        }
        free(names[i]);
    }
    free(names);
    return loaded;
}

opreg_status opreg_plugin_load_search(opreg_registry *reg, size_t *loaded) {
    if (loaded) *loaded = 0;
    if (!reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_load_search: reg is NULL");
    size_t count = 0;
    bool oom = false;
    const char *env = getenv("OPREG_PLUGIN_PATH");
    for (const char *s = env; s && *s;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        count += load_dir(reg, s, len, &oom);
        s = colon ? colon + 1 : s + len;
    }
    const char *dir = opreg_plugin_dir();
    count += load_dir(reg, dir, strlen(dir), &oom);
    opreg_clear_error();
    if (loaded) *loaded = count;
    /* A refusal is in the list, with its reason; a load that ran out of
     * memory is not, so it is reported here. */
    if (oom)
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY,
                           "opreg_plugin_load_search: out of memory: some plugins were neither "
                           "loaded nor recorded (%zu loaded)",
                           count);
    return OPREG_OK;
}

size_t opreg_plugin_count(const opreg_registry *reg) {
    if (!reg) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&reg->plugin_lock);
    size_t n = reg->plugins ? reg->plugins->count : 0;
    pthread_mutex_unlock((pthread_mutex_t *)&reg->plugin_lock);
    return n;
}

opreg_status opreg_plugin_info_at(opreg_plugin_info *out, const opreg_registry *reg, size_t i) {
    if (!out || !reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_plugin_info_at: %s is NULL",
                           out ? "reg" : "out");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock((pthread_mutex_t *)&reg->plugin_lock);
    const struct opreg__plugin_list *l = reg->plugins;
    opreg_status st = OPREG_OK;
    if (!l || i >= l->count) {
        st = opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                         "opreg_plugin_info_at: index %zu is out of range (%zu plugins)", i,
                         l ? l->count : 0);
    } else {
        const struct opreg_plugin *p = l->items[i];
        out->name = p->name;
        out->version = p->version;
        out->path = p->path;
        out->reason = p->reason;
        out->state = p->state;
        out->abi_version = p->abi_version;
        out->key = p->key;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&reg->plugin_lock);
    return st;
}
