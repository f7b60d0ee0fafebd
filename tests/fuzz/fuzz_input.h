/* What the libFuzzer targets share: reading their input byte by byte, and
 * allocations that live for one input (zeroed, exactly the size asked). */
#ifndef OPREG_TESTS_FUZZ_INPUT_H
#define OPREG_TESTS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

/* The next byte; 0 once the input is spent. */
static inline uint8_t u8(reader *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* Every allocation of one input, freed at its end by free_allocs(). */
static void **allocs;
static size_t nallocs, cap_allocs;

static inline void *alloc(size_t n) {
    if (nallocs == cap_allocs) {
        size_t cap = cap_allocs ? 2 * cap_allocs : 256;
        void **v = realloc(allocs, cap * sizeof *v);
        if (!v) abort();
        allocs = v;
        cap_allocs = cap;
    }
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    allocs[nallocs++] = p;
    return p;
}

static inline void free_allocs(void) {
    while (nallocs)
        free(allocs[--nallocs]);
}

#endif
