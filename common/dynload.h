/* The platform's dynamic loading: open, look up and close a shared
 * library, the loader's error text, and where opreg's own code was loaded
 * from (dynload.c). For the plugin loader (registry/) and the engines
 * loaded at run time (NCCL, backends/cuda/nccl.c). */
#ifndef OPREG_COMMON_DYNLOAD_H
#define OPREG_COMMON_DYNLOAD_H

#include <stdbool.h>
#include <stddef.h>

/* Open the shared library at @p path with all its symbols bound now and
 * kept local to it. NULL on failure, with *why set to the loader's reason
 * (static or thread-local text, good until the next call here). */
void *opreg__dl_open(const char *path, const char **why);
/* A function of a shared library, as a type that every function pointer
 * converts to and back: its user converts it to the function's own type. */
typedef void (*opreg__dl_fn)(void);
/* The function that @p handle exports as @p name, or NULL. */
opreg__dl_fn opreg__dl_func(void *handle, const char *name);
void opreg__dl_close(void *handle);
/* The folder of the file that holds opreg's code: libopreg.so, or the
 * program it is linked into statically. Written into @p buf (@p cap bytes)
 * without a final '/'; false, leaving @p buf as it was, when unknown or too
 * long. */
bool opreg__dl_self_dir(char *buf, size_t cap);

#endif
