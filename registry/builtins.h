/* What the registry asks of the code above it that assembles the built-ins
 * (builtins/builtins.c): the tables of the built-in keys and the libraries
 * of the process-default registry. The registry names no backend and no
 * catalogue; it calls these two functions. Not installed. */
#ifndef OPREG_REGISTRY_BUILTINS_H
#define OPREG_REGISTRY_BUILTINS_H

#include "opreg/backend.h"
#include "opreg/registry.h"

/* Attach the tables of the built-in keys (CPU, CUDA, Meta, Reference) with
 * opreg__key_attach(). Called once per process, by the first query of a
 * key's table or the first opreg_registry_create(), before either reads one. */
void opreg__builtin_keys(void);

/* Open the built-in libraries (definitions, then each key's kernels) in
 * @p reg, in order. The process-default registry is made with them. */
opreg_status opreg__builtin_libraries(opreg_registry *reg);

/* Attach @p backend (copied, as opreg_key_register() copies) to the built-in
 * key @p key; its availability is evaluated now.
 * @return OPREG_OK; OPREG_ERR_INVALID_ARGUMENT for a key that is not
 * built-in, or a bad table; OPREG_ERR_ABI_MISMATCH. */
opreg_status opreg__key_attach(opreg_dispatch_key key, const opreg_backend *backend);

#endif
