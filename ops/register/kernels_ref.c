/* The Reference key: each op's portable reference kernel (ops/ref/), which
 * runs the op's checks first. Chosen with opreg_call_boxed_key(). */
#include "ops/ref/ref.h"
#include "catalogue_args.h"
#include "ops/register/catalogue.h"

#define REF_KERNEL(op, arglist) OPREG__TABLE_KERNEL(ref, opreg__ref_, op, arglist)
OPREG__CATALOGUE_OPS(REF_KERNEL)
#undef REF_KERNEL

static opreg_status ref_linear(void *context, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)context;
    (void)op;
    return opreg__linear_into_new(rets, args, OPREG__ARG_T(0)->device, opreg__ref_linear);
}

OPREG_LIBRARY_IMPL(_C, REFERENCE, m) {
#define REF_IMPL(op, arglist) OPREG_IMPL(m, #op, ref_##op, NULL);
    OPREG__CATALOGUE_OPS(REF_IMPL)
#undef REF_IMPL
    OPREG_IMPL(m, "linear", ref_linear, NULL);
}
