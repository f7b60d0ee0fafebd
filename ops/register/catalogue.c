/* The op catalogue's definitions: every schema of catalogue_schemas.c,
 * defined under `_C`; and the allocation of linear's result, which every
 * key's linear kernel shares. */
#include "ops/check/check.h"
#include "ops/register/catalogue.h"

OPREG_LIBRARY(_C, m) {
    for (const char *const *s = opreg__catalogue_schemas; *s; s++)
        OPREG_DEF(m, *s);
}

/* Shared by every key's linear: the result's shape comes from the check. */
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
