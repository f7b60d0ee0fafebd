/* The process groups' table (group.c) as the `dist` ops (ops.c) use it.
 * Not installed. */
#ifndef OPREG_COLLECTIVE_INTERNAL_H
#define OPREG_COLLECTIVE_INTERNAL_H

#include "opreg/collective.h"
#include "opreg/registry.h"

/* Run @c on the group named by the @len bytes at @name: the one path of
 * opreg_group_run() and of every `dist` kernel. @op names the op for
 * messages ("dist::all_reduce"). @tensor, when not NULL, is the tensor
 * whose shape the ranks compare under OPREG_GROUP_CHECK_ARGS (the input).
 * A barrier's c->device is ignored: it runs on any group. */
opreg_status opreg__group_call(const char *name, size_t len, const char *op,
                               const opreg_collective *c, const DLTensor *tensor);

/* The size of the group named by the @len bytes at @name, for the kernels'
 * shape checks against it. */
opreg_status opreg__group_size(const char *name, size_t len, const char *op, int *size);

/* The `dist` library and its kernels (ops.c), opened by the built-ins. */
OPREG_DECLARE_LIBRARY(dist);
OPREG_DECLARE_LIBRARY_IMPL(dist, CPU);
OPREG_DECLARE_LIBRARY_IMPL(dist, CUDA);
OPREG_DECLARE_LIBRARY_IMPL(dist, META);

#endif
