/* The built-in Meta backend: always available; it has no memory, so
 * opreg_tensor_empty() gives Meta tensors a NULL data pointer. Meta kernels
 * are shape functions: they read shapes and dtypes and fill in outputs'. */
#include "backends/meta/meta_backend.h"

const opreg_backend opreg__meta_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "meta",
    .device_type = OPREG_DEVICE_META,
    .context = NULL,
    .is_available = NULL,
    .device_count = NULL,
    .alloc = NULL,
    .free = NULL,
    .current_stream = NULL,
    .synchronize = NULL,
};
