/* The Meta key: each op's checks, the same functions that the Reference,
 * CPU and CUDA kernels run first (ops/check/check.h), so a Meta call
 * refuses exactly what a real call refuses, and linear's result comes back
 * as a Meta tensor of the right shape. Checks that read index tensors
 * (slots, blocks) need data, so Meta runs only the checks on shapes, dtypes
 * and devices. */
#include "ops/check/check.h"
#include "catalogue_args.h"
#include "ops/register/catalogue.h"

#define META_KERNEL(op, arglist) OPREG__TABLE_KERNEL(meta, opreg__check_, op, arglist)
OPREG__CATALOGUE_OPS(META_KERNEL)
#undef META_KERNEL

static opreg_status meta_linear(void *context, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)context;
    (void)op;
    DLDevice meta = { OPREG_DEVICE_META, 0 };
    return opreg__linear_into_new(rets, args, meta, NULL);
}

OPREG_LIBRARY_IMPL(_C, META, m) {
#define META_IMPL(op, arglist) OPREG_IMPL(m, #op, meta_##op, NULL);
    OPREG__CATALOGUE_OPS(META_IMPL)
#undef META_IMPL
    OPREG_IMPL(m, "linear", meta_linear, NULL);
}
