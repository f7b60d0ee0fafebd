/* The bad-input matrix over every op of the catalogue, through the registry,
 * on the CPU key and the Reference key: for each tensor argument, an
 * unsupported dtype, NULL data and a tensor on another device. Each call
 * must fail with a status and a message, and leave every byte of every
 * tensor as it was. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "test.h"
#include "opreg/inputs.h"

#include <stdlib.h>

/* Every tensor of the inputs (plain arguments and list items). */
static size_t tensors_of(const opreg_inputs *in, DLTensor **out, size_t cap) {
    size_t n = 0;
    const opreg_value *a = opreg_inputs_args(in);
    for (size_t i = 0; i < opreg_inputs_nargs(in); i++) {
        if (a[i].kind == OPREG_VALUE_TENSOR && a[i].u.tensor && n < cap) out[n++] = a[i].u.tensor;
        if (a[i].kind == OPREG_VALUE_TENSOR_LIST)
            for (size_t j = 0; j < a[i].u.tensors.len && n < cap; j++)
                out[n++] = a[i].u.tensors.items[j];
    }
    return n;
}

/* The bytes a tensor's data spans (strided views included). */
static size_t span_of(const DLTensor *t) {
    size_t es = (size_t)(t->dtype.bits / 8) * t->dtype.lanes, last = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 0;
        int64_t st = t->strides ? t->strides[d] : 1;
        if (!t->strides)
            for (int e = d + 1; e < t->ndim; e++)
                st *= t->shape[e];
        last += (size_t)(t->shape[d] - 1) * (size_t)st;
    }
    return (last + 1) * es;
}

static int failures;

/* A copy of every tensor's bytes, taken while the metadata is intact. */
typedef struct snapshot {
    size_t n;
    unsigned char *bytes[64];
} snapshot;

static void take(snapshot *sn, const opreg_inputs *in) {
    DLTensor *ts[64];
    sn->n = tensors_of(in, ts, 64);
    for (size_t i = 0; i < sn->n; i++) {
        size_t b = span_of(ts[i]);
        sn->bytes[i] = malloc(b ? b : 1);
        if (b) memcpy(sn->bytes[i], (char *)ts[i]->data + ts[i]->byte_offset, b);
    }
}

/* Compare (metadata restored) and free. */
static void compare(snapshot *sn, const opreg_inputs *in, const char *name, const char *key,
                    const char *what, size_t arg) {
    DLTensor *ts[64];
    tensors_of(in, ts, 64);
    for (size_t i = 0; i < sn->n; i++) {
        size_t b = span_of(ts[i]);
        if (b && memcmp(sn->bytes[i], (char *)ts[i]->data + ts[i]->byte_offset, b) != 0) {
            fprintf(stderr, "%s on %s: %s of tensor %zu changed tensor %zu\n", name, key, what, arg,
                    i);
            failures++;
        }
        free(sn->bytes[i]);
    }
}

/* Call with the mutation in place; report an acceptance or a silent failure. */
static void call_bad(const opreg_op *op, opreg_inputs *in, opreg_dispatch_key key, const char *what,
                     size_t arg) {
    opreg_clear_error();
    opreg_inputs_clear_rets(in);
    opreg_status st = opreg_call_boxed_key(op, key, opreg_inputs_args(in), opreg_inputs_nargs(in),
                                           NULL, 0, opreg_inputs_rets(in), opreg_inputs_nrets(in));
    if (st == OPREG_OK) {
        fprintf(stderr, "%s on %s: %s of tensor %zu was accepted\n", opreg_op_name(op),
                opreg_key_name(key), what, arg);
        failures++;
    } else if (!opreg_last_error()[0]) {
        fprintf(stderr, "%s on %s: %s of tensor %zu failed without a message\n", opreg_op_name(op),
                opreg_key_name(key), what, arg);
        failures++;
    }
    opreg_inputs_clear_rets(in);
}

TEST(every_op_refuses_bad_tensors_and_writes_nothing) {
    opreg_registry *reg = opreg_registry_default();
    CHECK(reg != NULL);
    int ops = 0, cases = 0;
    for (size_t k = 0; k < opreg_registry_num_ops(reg); k++) {
        const opreg_op *op = opreg_registry_op(reg, k);
        if (!opreg_op_is_defined(op) || strncmp(opreg_op_name(op), "_C::", 4) != 0) continue;
        opreg_sizes shape;
        char err[256];
        opreg_inputs *in;
        CHECK_EQ_INT(opreg_sizes_parse(&shape, "", err, sizeof err), 0);
        if (opreg_inputs_build(&in, op, -1, &shape, 11, err, sizeof err) != OPREG_OK) {
            TEST_FAIL_AT("%s: no inputs: %s", opreg_op_name(op), err);
            continue;
        }
        ops++;
        DLTensor *ts[64];
        size_t n = tensors_of(in, ts, 64);
        for (size_t a = 0; a < n; a++) {
            DLTensor *t = ts[a];
            const opreg_dispatch_key keys[2] = { OPREG_KEY_CPU, OPREG_KEY_REFERENCE };
            for (int ki = 0; ki < 2; ki++) {
                const char *kn = opreg_key_name(keys[ki]);
                snapshot sn;
                take(&sn, in);
                DLDataType dt = t->dtype;
                t->dtype = (DLDataType){ kDLComplex, 64, 1 };
                call_bad(op, in, keys[ki], "an unsupported dtype", a);
                t->dtype = dt;
                compare(&sn, in, opreg_op_name(op), kn, "an unsupported dtype", a);
                if (opreg_tensor_numel(t) > 0) {
                    take(&sn, in);
                    void *data = t->data;
                    t->data = NULL;
                    call_bad(op, in, keys[ki], "NULL data", a);
                    t->data = data;
                    compare(&sn, in, opreg_op_name(op), kn, "NULL data", a);
                }
                if (n > 1) {
                    take(&sn, in);
                    DLDevice dev = t->device;
                    t->device = (DLDevice){ kDLCUDA, 0 };
                    call_bad(op, in, keys[ki], "another device", a);
                    t->device = dev;
                    compare(&sn, in, opreg_op_name(op), kn, "another device", a);
                }
                cases += 3;
            }
        }
        opreg_inputs_free(in);
    }
    printf("%d ops, %d bad-input cases, %d failures\n", ops, cases, failures);
    CHECK(ops >= 23);
    CHECK_EQ_INT(failures, 0);
}

int main(void) {
    RUN(every_op_refuses_bad_tensors_and_writes_nothing);
    return test_summary();
}
