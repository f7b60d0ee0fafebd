/* One op's inputs for the suites that call catalogue ops through the
 * registry (ops, threads): built once by the tool's generators, called many
 * times, with the bytes one call moves. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"
#include "tools/cmd/op_inputs.h"

#include <stdio.h>
#include <string.h>

static size_t tensor_bytes(const opreg_value *v) {
    if (v->kind == OPREG_VALUE_TENSOR && v->u.tensor) return opreg_tensor_nbytes(v->u.tensor);
    size_t n = 0;
    if (v->kind == OPREG_VALUE_TENSOR_LIST)
        for (size_t i = 0; i < v->u.tensors.len; i++)
            n += v->u.tensors.items[i] ? opreg_tensor_nbytes(v->u.tensors.items[i]) : 0;
    return n;
}

int op_case_open(struct op_case *c, const char *name, const char *opname, opreg_dtype dtype,
                 const char *shape_text, const char *const *rw) {
    op_shape shape;
    char err[256];
    memset(c, 0, sizeof *c);
    if (opreg_op_find(&c->op, opreg_registry_default(), opname) != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, opreg_last_error());
        return -1;
    }
    if (op_shape_parse(&shape, shape_text, err, sizeof err) != 0 ||
        op_inputs_build(&c->in, c->op, (int)dtype, &shape, 7, err, sizeof err) != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, err);
        return -1;
    }
    const opreg_schema *s = opreg_op_schema(c->op);
    for (size_t i = 0; i < op_inputs_nargs(c->in); i++) {
        const char *arg = opreg_argument_name(opreg_schema_argument(s, i));
        size_t b = tensor_bytes(&op_inputs_args(c->in)[i]);
        c->bytes += b;
        for (int k = 0; rw && k < 2; k++)
            if (rw[k] && strcmp(rw[k], arg) == 0) c->bytes += b;
    }
    return 0;
}

double op_case_call(struct op_case *c, const char *name) {
    op_inputs_clear_rets(c->in);
    uint64_t t0 = bench_now_ns();
    opreg_status st = opreg_call_boxed(c->op, op_inputs_args(c->in), op_inputs_nargs(c->in), NULL,
                                       0, op_inputs_rets(c->in), op_inputs_nrets(c->in));
    double dt = (double)(bench_now_ns() - t0) / 1e9;
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, opreg_last_error());
        return -1;
    }
    return dt;
}

void op_case_close(struct op_case *c) {
    if (c->in) op_inputs_clear_rets(c->in);
    op_inputs_free(c->in);
    c->in = NULL;
}
