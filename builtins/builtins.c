/* The built-ins: the one place that names the backends compiled into
 * libopreg and the op catalogue's libraries. The registry below asks for
 * them through registry/builtins.h and knows none of them by name.
 *
 * Keys: CPU and Reference run on host memory (backends/cpu), Meta has no
 * memory (backends/meta), CUDA is attached when the CUDA backend is built
 * (OPREG_HAVE_CUDA, set on this file alone by CMake) and otherwise carries
 * a table that says why it is unavailable.
 *
 * Libraries, in the order the process-default registry opens them: the
 * catalogue's definitions, then its kernels under each key; then the
 * collectives of `dist` (collective/), the same way. */
#include "registry/builtins.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/meta/meta_backend.h"
#include "collective/collective_internal.h"
#include "ops/register/catalogue.h"

#include <stdio.h>

#ifdef OPREG_HAVE_CUDA
#include "backends/cuda/cuda_internal.h"
/* backends/cuda/register.c */
OPREG_DECLARE_LIBRARY_IMPL(_C, CUDA);
#else
static bool cuda_absent(void *context, char *why, size_t cap) {
    (void)context;
    if (why && cap) snprintf(why, cap, "opreg was built without the CUDA backend");
    return false;
}

static const opreg_backend opreg__cuda_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "cuda",
    .device_type = kDLCUDA,
    .is_available = cuda_absent,
};
#endif

void opreg__builtin_keys(void) {
    /* The tables are the library's own and correct: attaching cannot fail. */
    (void)opreg__key_attach(OPREG_KEY_CPU, &opreg__cpu_backend);
    (void)opreg__key_attach(OPREG_KEY_CUDA, &opreg__cuda_backend);
    (void)opreg__key_attach(OPREG_KEY_META, &opreg__meta_backend);
    (void)opreg__key_attach(OPREG_KEY_REFERENCE, &opreg__reference_backend);
}

typedef opreg_status (*library_init)(opreg_registry *reg, opreg_library **out);

static const library_init libraries[] = {
    opreg_library_init__C,
    opreg_library_impl_init__C_REFERENCE,
    opreg_library_impl_init__C_META,
    opreg_library_impl_init__C_CPU,
#ifdef OPREG_HAVE_CUDA
    opreg_library_impl_init__C_CUDA,
#endif
    opreg_library_init_dist,
    opreg_library_impl_init_dist_META,
    opreg_library_impl_init_dist_CPU,
#ifdef OPREG_HAVE_CUDA
    opreg_library_impl_init_dist_CUDA,
#endif
};

opreg_status opreg__builtin_libraries(opreg_registry *reg) {
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++)
        OPREG__TRY(libraries[i](reg, NULL));
    return OPREG_OK;
}
