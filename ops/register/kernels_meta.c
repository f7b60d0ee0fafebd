/* The Meta key: each op's checks, the same functions that the Reference,
 * CPU and CUDA kernels run first (ops/check/check.h), so a Meta call
 * refuses exactly what a real call refuses, and linear's result comes back as a Meta tensor of the
 * right shape. Checks that read index tensors (slots, blocks) need data, so Meta runs only the
 * checks on shapes, dtypes and devices. */
#include "ops/check/check.h"
#include "catalogue_args.h"
#include "ops/register/catalogue.h"

#define META_KERNEL(op, arglist) OPREG__TABLE_KERNEL(meta, opreg__check_, op, arglist)
OPREG__CATALOGUE_OPS(META_KERNEL)
#undef META_KERNEL

#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T

opreg_status opreg__linear_into_new(opreg_value *rets, const opreg_value *args, DLDevice device,
                                    opreg_status (*kernel)(const opreg_tensor *out,
                                                           const opreg_tensor *input,
                                                           const opreg_tensor *weight,
                                                           const opreg_tensor *bias)) {
    int ndim;
    int64_t shape[16];
    opreg_dtype dtype;
    OPREG__TRY(opreg__check_linear(TS(0), TS(1), OT(2), &ndim, shape, &dtype));
    DLTensor *out;
    OPREG__TRY(opreg_tensor_empty(&out, device, dtype, ndim, shape));
    if (kernel) {
        opreg_status st = kernel(out, TS(0), TS(1), OT(2));
        if (st != OPREG_OK) {
            opreg_tensor_free(out);
            return st;
        }
    }
    rets[0] = opreg_tensor_value(out);
    return OPREG_OK;
}

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
