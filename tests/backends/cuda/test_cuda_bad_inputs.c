/* The bad-input matrix on the CUDA key: every op's device inputs, each
 * tensor argument in turn given an unsupported dtype, NULL data, or another
 * device (cuda:63). Each call must fail with a status and a message before
 * the device runs anything: every byte of every tensor, read back from the
 * device, is as it was. Exits 77 without a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include "cuda_test.h"
#include "opreg/inputs.h"

#include <string.h>

static int failures;

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

/* Every tensor's bytes, read back to the host (host tensors copied). */
static unsigned char *read_all(const opreg_inputs *in, size_t *len) {
    DLTensor *ts[64];
    size_t n = tensors_of(in, ts, 64), total = 0;
    for (size_t i = 0; i < n; i++)
        total += opreg_tensor_nbytes(ts[i]);
    unsigned char *buf = malloc(total ? total : 1), *p = buf;
    for (size_t i = 0; i < n && buf; i++) {
        size_t b = opreg_tensor_nbytes(ts[i]);
        const char *src = (const char *)ts[i]->data + ts[i]->byte_offset;
        if (ts[i]->device.device_type == kDLCPU)
            memcpy(p, src, b);
        else if (opreg_cuda_memcpy(p, src, b, 0) != OPREG_OK)
            failures++;
        p += b;
    }
    if (opreg_cuda_synchronize(0) != OPREG_OK) failures++;
    *len = total;
    return buf;
}

static void call_bad(const opreg_op *op, opreg_inputs *in, const char *what, size_t arg) {
    opreg_clear_error();
    opreg_inputs_clear_rets(in);
    opreg_status st =
        opreg_call_boxed_key(op, OPREG_KEY_CUDA, opreg_inputs_args(in), opreg_inputs_nargs(in),
                             NULL, 0, opreg_inputs_rets(in), opreg_inputs_nrets(in));
    if (st == OPREG_OK || !opreg_last_error()[0]) {
        fprintf(stderr, "%s: %s of tensor %zu was %s\n", opreg_op_name(op), what, arg,
                st == OPREG_OK ? "accepted" : "refused without a message");
        failures++;
    }
    opreg_inputs_clear_rets(in);
}

TEST(every_op_refuses_bad_device_tensors_and_writes_nothing) {
    opreg_registry *reg = opreg_registry_default();
    const DLDevice cuda0 = { kDLCUDA, 0 };
    int ops = 0, cases = 0;
    CHECK(reg != NULL);
    for (size_t k = 0; k < opreg_registry_num_ops(reg); k++) {
        const opreg_op *op = opreg_registry_op(reg, k);
        if (!opreg_op_is_defined(op) || strncmp(opreg_op_name(op), "_C::", 4) != 0) continue;
        opreg_sizes shape;
        char err[256];
        opreg_inputs *host, *in;
        CHECK_EQ_INT(opreg_sizes_parse(&shape, "", err, sizeof err), 0);
        CHECK_EQ_INT(opreg_inputs_build(&host, op, -1, &shape, 11, err, sizeof err), OPREG_OK);
        uint32_t host_args = strcmp(opreg_op_name(op), "_C::swap_blocks") == 0 ? 1u << 2 : 0;
        CHECK_EQ_INT(opreg_inputs_to_device(&in, host, cuda0, host_args), OPREG_OK);
        ops++;
        size_t len;
        unsigned char *before = read_all(in, &len);
        CHECK(before != NULL);
        DLTensor *ts[64];
        size_t n = tensors_of(in, ts, 64);
        for (size_t a = 0; a < n; a++) {
            DLTensor *t = ts[a];
            DLDataType dt = t->dtype;
            t->dtype = (DLDataType){ kDLComplex, 64, 1 };
            call_bad(op, in, "an unsupported dtype", a);
            t->dtype = dt;
            if (opreg_tensor_numel(t) > 0) {
                void *data = t->data;
                t->data = NULL;
                call_bad(op, in, "NULL data", a);
                t->data = data;
            }
            DLDevice dev = t->device;
            t->device = (DLDevice){ kDLCUDA, OPREG_CUDA_MAX_DEVICES - 1 };
            call_bad(op, in, "another device", a);
            t->device = dev;
            cases += 3;
        }
        size_t len2;
        unsigned char *after = read_all(in, &len2);
        if (!after || len2 != len || memcmp(before, after, len) != 0) {
            fprintf(stderr, "%s: a refused call changed a tensor\n", opreg_op_name(op));
            failures++;
        }
        free(before);
        free(after);
        opreg_inputs_free(in);
        opreg_inputs_free(host);
    }
    printf("%d ops, %d bad-input cases, %d failures\n", ops, cases, failures);
    CHECK(ops >= 23);
    CHECK_EQ_INT(failures, 0);
}

int main(void) {
    cuda_test_require_device();
    RUN(every_op_refuses_bad_device_tensors_and_writes_nothing);
    return test_summary();
}
