/* The platform's dynamic loading (common/dynload.h): open, look up and
 * close a shared library, the loader's error text, and where opreg's own
 * code was loaded from. The one file of the library that names <dlfcn.h>. */
#define _GNU_SOURCE /* dladdr */
#include "common/dynload.h"

#include <dlfcn.h>
#include <string.h>

void *opreg__dl_open(const char *path, const char **why) {
    dlerror(); /* an earlier failure's text must not be taken for this one's */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        *why = e ? e : "unknown error";
    }
    return h;
}

opreg__dl_fn opreg__dl_func(void *handle, const char *name) {
    opreg__dl_fn fn;
    void *sym = dlsym(handle, name);
    memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX allows */
    return fn;
}

void opreg__dl_close(void *handle) {
    dlclose(handle);
}

/* An object of this file, whose address dladdr() maps to the file holding
 * it. */
static const char self_anchor = 0;

bool opreg__dl_self_dir(char *buf, size_t cap) {
    Dl_info info;
    if (!dladdr(&self_anchor, &info) || !info.dli_fname) return false;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return false;
    size_t len = (size_t)(slash - info.dli_fname);
    if (len >= cap) return false;
    memcpy(buf, info.dli_fname, len);
    buf[len] = '\0';
    return true;
}
