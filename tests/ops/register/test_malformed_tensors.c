/* The CPU key's providers choose before the op's checks run, so their
 * predicates see tensors as the caller made them. For every op of the
 * catalogue and every tensor argument, a malformed tensor (a rank with no
 * shape, a rank out of range, a wrong rank) in its place is refused with a
 * status and a message by a call and answered by an explanation, on the
 * CPU key, without a crash (ASan/UBSan builds run this too), and the other
 * arguments are left as they were. */
#include "opreg/opreg.h"
#include "test.h"
#include "ops/register/catalogue.h"
#include "opreg/inputs.h"

#include <stdio.h>
#include <string.h>

static int refusals;

static void one(const opreg_op *op, const char *name, opreg_inputs *in, size_t pos, int ndim,
                bool with_shape) {
    const opreg_value *src = opreg_inputs_args(in);
    size_t n = opreg_inputs_nargs(in);
    opreg_value args[64];
    memcpy(args, src, n * sizeof args[0]);
    DLTensor bad = *src[pos].u.tensor;
    int64_t shape[8] = { 2, 3, 4, 5, 6, 7, 8, 9 };
    bad.ndim = ndim;
    bad.shape = with_shape ? shape : NULL;
    bad.strides = NULL;
    args[pos] = opreg_tensor_value(&bad);
    opreg_value rets[8];
    memset(rets, 0, sizeof rets);
    opreg_status st = opreg_call_boxed_key(op, OPREG_KEY_CPU, args, n, NULL, 0, rets, 8);
    if (st == OPREG_OK) {
        TEST_FAIL_AT("%s: argument %zu with rank %d%s was accepted", name, pos, ndim,
                     with_shape ? "" : " and no shape");
        for (int i = 0; i < 8; i++)
            if (rets[i].kind == OPREG_VALUE_TENSOR) opreg_tensor_free(rets[i].u.tensor);
        return;
    }
    CHECK(opreg_last_error()[0] != '\0');
    static opreg_call_explanation x;
    CHECK_EQ_INT(opreg_explain_call(&x, op, OPREG_KEY_CPU, args, n, NULL, 0), OPREG_OK);
    CHECK(!x.supported);
    CHECK(x.message[0] != '\0');
    refusals++;
}

TEST(malformed_tensor_arguments_are_refused) {
    for (const opreg_generator *e = opreg__catalogue_generators; e->name; e++) {
        char full[96], err[256];
        const opreg_op *op;
        snprintf(full, sizeof full, "_C::%s", e->name);
        CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), full), OPREG_OK);
        opreg_sizes shape;
        opreg_inputs *in = NULL;
        CHECK_EQ_INT(opreg_sizes_parse(&shape, "", err, sizeof err), 0);
        if (opreg_inputs_build(&in, op, -1, &shape, 7, err, sizeof err) != OPREG_OK) {
            TEST_FAIL_AT("%s: %s", full, err);
            continue;
        }
        const opreg_value *a = opreg_inputs_args(in);
        for (size_t pos = 0; pos < opreg_inputs_nargs(in); pos++) {
            if (a[pos].kind != OPREG_VALUE_TENSOR) continue;
            int rank = a[pos].u.tensor->ndim;
            one(op, full, in, pos, rank, false);     /* the right rank, no shape */
            one(op, full, in, pos, rank + 1, false); /* another rank, no shape */
            one(op, full, in, pos, -1, true);        /* a rank out of range */
        }
        opreg_inputs_free(in);
    }
    printf("  %d malformed calls refused\n", refusals);
    CHECK(refusals > 100);
}

int main(void) {
    RUN(malformed_tensor_arguments_are_refused);
    return test_summary();
}
