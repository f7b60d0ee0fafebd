/* The reusable aligned buffer of common/internal.h. */
#include "common/internal.h"

#include <stdlib.h>

bool opreg__buffer_reserve(struct opreg__buffer *b, size_t bytes) {
    if (b->cap >= bytes) return true;
    /* whole pages, and never less than asked for (no wrap past SIZE_MAX) */
    size_t cap = (bytes + 4095u) & ~(size_t)4095u;
    void *p = cap < bytes ? NULL : aligned_alloc(64, cap);
    if (!p) return false;
    free(b->p);
    b->p = p;
    b->cap = cap;
    return true;
}
