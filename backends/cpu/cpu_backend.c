/* The built-in CPU backend table: always available, one device, and an
 * allocator that aligns to 64 bytes (a cache line, and what AVX-512 loads
 * want). */
#include "backends/cpu/cpu_backend.h"
#include "common/internal.h" /* for the fault-injection build's allocator */

#include <stdlib.h>

static opreg_status cpu_alloc(void *context, void **out, size_t bytes, int device_id) {
    (void)context;
    (void)device_id;
    /* aligned_alloc wants a multiple of the alignment, and never 0 bytes. */
    size_t rounded = bytes ? (bytes + 63u) & ~(size_t)63u : 64u;
    if (rounded < bytes) return OPREG_ERR_OUT_OF_MEMORY;
    void *p = aligned_alloc(64, rounded);
    if (!p) return OPREG_ERR_OUT_OF_MEMORY;
    *out = p;
    return OPREG_OK;
}

static void cpu_free(void *context, void *ptr, size_t bytes, int device_id) {
    (void)context;
    (void)bytes;
    (void)device_id;
    free(ptr);
}

const opreg_backend opreg__cpu_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "cpu",
    .device_type = kDLCPU,
    .context = NULL,
    .is_available = NULL,
    .device_count = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .current_stream = NULL,
    .synchronize = NULL,
};

/* The Reference key's table: the same memory as the CPU's, under its own name.
 * Its device type is the CPU's, but the CPU key comes first, so no call is
 * dispatched to it by device. */
const opreg_backend opreg__reference_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "reference",
    .device_type = kDLCPU,
    .context = NULL,
    .is_available = NULL,
    .device_count = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .current_stream = NULL,
    .synchronize = NULL,
};
