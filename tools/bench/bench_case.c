/* What the suites that call catalogue ops share: one op's inputs, built
 * once by the tool's generators and called many times through the
 * registry, with the bytes one call moves; and the STREAM triad, the
 * anchor of their GB/s. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"
#include "opreg/inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the triad: a[i] = b[i] + s * c[i] ---- */

/* Tasks of 256 Ki floats (1 MiB of each array), on the pool the kernels use. */
#define TRIAD_TASK ((size_t)256 << 10)

static void triad_fill_task(void *ctx, int64_t i) {
    struct triad *t = ctx;
    size_t lo = (size_t)i * TRIAD_TASK, hi = lo + TRIAD_TASK < t->n ? lo + TRIAD_TASK : t->n;
    for (size_t j = lo; j < hi; j++)
        t->a[j] = 0, t->b[j] = 1.0f, t->c[j] = 2.0f;
}

static void triad_task(void *ctx, int64_t i) {
    struct triad *t = ctx;
    size_t lo = (size_t)i * TRIAD_TASK, hi = lo + TRIAD_TASK < t->n ? lo + TRIAD_TASK : t->n;
    float *a = t->a;
    const float *b = t->b, *c = t->c;
    for (size_t j = lo; j < hi; j++)
        a[j] = b[j] + 3.0f * c[j];
}

static int64_t triad_tasks(const struct triad *t) {
    return (int64_t)((t->n + TRIAD_TASK - 1) / TRIAD_TASK);
}

int triad_init(struct triad *t) {
    t->n = (size_t)16 << 20;
    t->a = malloc(t->n * sizeof(float));
    t->b = malloc(t->n * sizeof(float));
    t->c = malloc(t->n * sizeof(float));
    if (!t->a || !t->b || !t->c) {
        free(t->a), free(t->b), free(t->c);
        return -1;
    }
    /* First touch on the threads that will stream them. */
    opreg_parallel_for(triad_tasks(t), triad_fill_task, t);
    return 0;
}

double triad_run(const struct triad *t) {
    uint64_t t0 = bench_now_ns();
    opreg_parallel_for(triad_tasks(t), triad_task, (void *)t);
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    volatile float sink = t->a[t->n / 2];
    (void)sink;
    return 3.0 * (double)t->n * sizeof(float) / secs / 1e9;
}

void triad_free(struct triad *t) {
    free(t->a), free(t->b), free(t->c);
}

/* ---- op cases ---- */

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
    opreg_sizes shape;
    char err[256];
    memset(c, 0, sizeof *c);
    if (opreg_op_find(&c->op, opreg_registry_default(), opname) != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, opreg_last_error());
        return -1;
    }
    if (opreg_sizes_parse(&shape, shape_text, err, sizeof err) != 0 ||
        opreg_inputs_build(&c->in, c->op, (int)dtype, &shape, 7, err, sizeof err) != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, err);
        return -1;
    }
    const opreg_schema *s = opreg_op_schema(c->op);
    for (size_t i = 0; i < opreg_inputs_nargs(c->in); i++) {
        const char *arg = opreg_argument_name(opreg_schema_argument(s, i));
        size_t b = tensor_bytes(&opreg_inputs_args(c->in)[i]);
        c->bytes += b;
        for (int k = 0; rw && k < 2; k++)
            if (rw[k] && strcmp(rw[k], arg) == 0) c->bytes += b;
    }
    return 0;
}

size_t op_case_arg_bytes(const struct op_case *c, const char *arg) {
    const opreg_schema *s = opreg_op_schema(c->op);
    for (size_t i = 0; i < opreg_inputs_nargs(c->in); i++)
        if (strcmp(opreg_argument_name(opreg_schema_argument(s, i)), arg) == 0)
            return tensor_bytes(&opreg_inputs_args(c->in)[i]);
    return 0;
}

double op_case_call(struct op_case *c, const char *name) {
    opreg_inputs_clear_rets(c->in);
    uint64_t t0 = bench_now_ns();
    opreg_status st =
        opreg_call_boxed(c->op, opreg_inputs_args(c->in), opreg_inputs_nargs(c->in), NULL, 0,
                         opreg_inputs_rets(c->in), opreg_inputs_nrets(c->in));
    double dt = (double)(bench_now_ns() - t0) / 1e9;
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg bench: %s: %s\n", name, opreg_last_error());
        return -1;
    }
    return dt;
}

void op_case_close(struct op_case *c) {
    if (c->in) opreg_inputs_clear_rets(c->in);
    opreg_inputs_free(c->in);
    c->in = NULL;
}
