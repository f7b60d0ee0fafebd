/* The op catalogue's definitions: every schema of catalogue_schemas.c,
 * defined under `_C`; and the allocation of linear's result, which every
 * key's linear kernel shares. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/register/catalogue.h"

OPREG_LIBRARY(_C, m) {
    for (const char *const *s = opreg__catalogue_schemas; *s; s++)
        OPREG_DEF(m, *s);
    for (const opreg_generator *g = opreg__catalogue_generators; g->name; g++)
        opreg_library_generator(m, g->name, g);
}

/* Shared by every key's linear: the result's shape comes from the check. */
#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T

static opreg_status linear_run_new(opreg_value *rets, const opreg_value *args, DLDevice device,
                                   opreg__linear_fn kernel, int ndim, const int64_t *shape,
                                   opreg_dtype dtype) {
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

opreg_status opreg__linear_into_new(opreg_value *rets, const opreg_value *args, DLDevice device,
                                    opreg__linear_fn kernel) {
    int ndim;
    int64_t shape[OPREG__MAX_DIMS];
    opreg_dtype dtype;
    OPREG__TRY(opreg__check_linear(TS(0), TS(1), OT(2), &ndim, shape, &dtype));
    return linear_run_new(rets, args, device, kernel, ndim, shape, dtype);
}

opreg_status opreg__linear_checked_into_new(opreg_value *rets, const opreg_value *args,
                                            DLDevice device, opreg__linear_fn kernel) {
    const opreg_tensor *input = TS(0);
    int64_t shape[OPREG__MAX_DIMS];
    for (int d = 0; d + 1 < input->ndim; d++)
        shape[d] = input->shape[d];
    shape[input->ndim - 1] = TS(1)->shape[0];
    return linear_run_new(rets, args, device, kernel, input->ndim, shape,
                          (opreg_dtype)opreg__dtype_of(input));
}
