/* Element access in every dtype, the tolerances, and the comparison of
 * what two runs of an op wrote. */
#include "opcheck/opcheck_internal.h"
#include "common/dtype_access.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements load and store as everywhere else in the library
 * (common/dtype_access.h). */
double opreg_gen_get(const DLTensor *t, int64_t i) {
    return opreg__ld((const char *)t->data + t->byte_offset, (int)opreg_gen_dtype_of(t), i);
}

void opreg_gen_set(DLTensor *t, int64_t i, double v) {
    opreg__st((char *)t->data + t->byte_offset, (int)opreg_gen_dtype_of(t), i, v);
}

/* The tolerances (documented in include/opreg/inputs.h and `opreg run --help`):
 * f32: 1e-4 relative (reductions and fast exp/erf/tanh), f16 and bf16 about
 * two ulps (2^-10, 2^-7: one for the rounding of the result, one for the
 * order of the float math before it), fp8 one ulp, int8 one step (x/s against
 * x*(1/s) at a tie), int32/int64/bool exact. */
opreg_tolerance opreg_tolerance_of(opreg_dtype dtype) {
    opreg_tolerance t = { 0, 0, 0 };
    switch (dtype) {
    case OPREG_DTYPE_F64:
        t.atol = 1e-12, t.rtol = 1e-12, t.units = -1;
        break;
    case OPREG_DTYPE_F32:
        t.atol = 1e-5, t.rtol = 1e-4, t.units = -1;
        break;
    case OPREG_DTYPE_F16:
        t.atol = 1e-3, t.rtol = 2e-3, t.units = -1;
        break;
    case OPREG_DTYPE_BF16:
        t.atol = 8e-3, t.rtol = 1.6e-2, t.units = -1;
        break;
    case OPREG_DTYPE_F8_E4M3FN:
    case OPREG_DTYPE_F8_E5M2:
    case OPREG_DTYPE_I8:
        t.units = 1;
        break;
    default:
        break;
    }
    return t;
}

/* The position of element @p i in its dtype's value order (fp8 codes are
 * sign and magnitude; -0 and +0 are both 0). */
static int64_t ordinal(const DLTensor *t, int64_t i) {
    opreg_dtype dt = opreg_gen_dtype_of(t);
    if (dt == OPREG_DTYPE_F8_E4M3FN || dt == OPREG_DTYPE_F8_E5M2) {
        uint8_t c = ((const uint8_t *)t->data + t->byte_offset)[i];
        return (c & 0x80) ? -(int64_t)(c & 0x7f) : (int64_t)(c & 0x7f);
    }
    return (int64_t)opreg_gen_get(t, i);
}

/* Element offset of flat index @p i under the tensor's strides. */
static int64_t offset_of(const DLTensor *t, int64_t i) {
    int64_t off = 0;
    if (!t->strides) return i;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return off;
}

static void compare_tensor(opreg_diff *out, const char *name, const DLTensor *g,
                           const DLTensor *w) {
    opreg_dtype dt = opreg_gen_dtype_of(w);
    opreg_tolerance tol = opreg_tolerance_of(dt);
    int64_t n = opreg_tensor_numel(w);
    double scale = 0;
    bool same = g && g->ndim == w->ndim && opreg_gen_dtype_of(g) == dt;
    for (int d = 0; same && d < w->ndim; d++)
        same = g->shape[d] == w->shape[d];
    if (!same) {
        if (!out->why[0]) snprintf(out->why, sizeof out->why, "%s: shape or dtype differs", name);
        out->ok = false;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = fabs(opreg_gen_get(w, offset_of(w, i)));
        if (isfinite(v) && v > scale) scale = v;
    }
    double floor_abs = tol.atol * (scale > 1 ? scale : 1);
    for (int64_t i = 0; i < n; i++) {
        int64_t og = offset_of(g, i), ow = offset_of(w, i);
        double gv = opreg_gen_get(g, og), wv = opreg_gen_get(w, ow), abs_err, rel = 0;
        bool ok;
        if (isnan(gv) || isnan(wv)) {
            ok = isnan(gv) && isnan(wv);
            abs_err = ok ? 0 : INFINITY;
        } else {
            abs_err = gv == wv ? 0 : fabs(gv - wv);
            if (tol.units >= 0)
                ok = llabs(ordinal(g, og) - ordinal(w, ow)) <= tol.units;
            else
                ok = abs_err <= floor_abs + tol.rtol * fabs(wv);
        }
        if (abs_err > 0 && fabs(wv) > floor_abs) rel = abs_err / fabs(wv);
        out->checked++;
        if (abs_err > out->max_abs) {
            out->max_abs = abs_err;
            snprintf(out->worst, sizeof out->worst, "%s", name);
        }
        if (rel > out->max_rel) out->max_rel = rel;
        if (!ok) {
            if (!out->bad)
                snprintf(out->first_bad, sizeof out->first_bad,
                         "%s[%" PRId64 "]: got %.9g, want %.9g", name, i, gv, wv);
            out->bad++;
            out->ok = false;
        }
    }
}

static void compare_value(opreg_diff *out, const char *name, const opreg_value *g,
                          const opreg_value *w) {
    if (g->kind != w->kind) {
        if (!out->why[0]) snprintf(out->why, sizeof out->why, "%s: kinds differ", name);
        out->ok = false;
    } else if (w->kind == OPREG_VALUE_TENSOR) {
        compare_tensor(out, name, g->u.tensor, w->u.tensor);
    } else if (w->kind == OPREG_VALUE_TENSOR_LIST) {
        for (size_t k = 0; k < w->u.tensors.len && k < g->u.tensors.len; k++) {
            char item[80];
            snprintf(item, sizeof item, "%s[%zu]", name, k);
            compare_tensor(out, item, g->u.tensors.items[k], w->u.tensors.items[k]);
        }
    }
}

void opreg_inputs_compare(opreg_diff *out, const opreg_inputs *got, const opreg_inputs *want) {
    const opreg_schema *s = opreg_op_schema(opreg_inputs_op(want));
    memset(out, 0, sizeof *out);
    out->ok = true;
    if (!s) {
        snprintf(out->why, sizeof out->why, "the op is no longer defined");
        out->ok = false;
        return;
    }
    for (size_t i = 0; i < opreg_schema_num_arguments(s) && i < opreg_inputs_nargs(want); i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        if (opreg_argument_is_write(a))
            compare_value(out, opreg_argument_name(a), &opreg_inputs_args(got)[i],
                          &opreg_inputs_args(want)[i]);
    }
    for (size_t r = 0; r < opreg_schema_num_returns(s); r++) {
        const char *name = opreg_argument_name(opreg_schema_return(s, r));
        compare_value(out, name[0] ? name : "result",
                      &opreg_inputs_rets((opreg_inputs *)(uintptr_t)got)[r],
                      &opreg_inputs_rets((opreg_inputs *)(uintptr_t)want)[r]);
    }
}
