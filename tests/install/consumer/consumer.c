/* A program that knows opreg only as an installed package: it checks the
 * run-time version against the one its build found, and calls the
 * catalogue's rms_norm on the CPU through the default registry. */
#include <opreg/opreg.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROWS   3
#define HIDDEN 40

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPECTED_VERSION\n", argv[0]);
        return 2;
    }
    if (strcmp(opreg_version(), argv[1]) != 0) {
        fprintf(stderr, "opreg_version() is %s, the package says %s\n", opreg_version(), argv[1]);
        return 1;
    }
    opreg_registry *reg = opreg_registry_default();
    const opreg_op *op;
    if (!reg || opreg_op_find(&op, reg, "_C::rms_norm") != OPREG_OK ||
        !opreg_is_op_supported_on(reg, "_C::rms_norm", (DLDevice){ kDLCPU, 0 })) {
        fprintf(stderr, "no CPU rms_norm: %s\n", opreg_last_error());
        return 1;
    }
    int64_t shape[2] = { ROWS, HIDDEN };
    DLTensor *in = NULL, *out = NULL, *w = NULL;
    opreg_tensor_empty_cpu(&in, OPREG_DTYPE_F32, 2, shape);
    opreg_tensor_empty_cpu(&out, OPREG_DTYPE_F32, 2, shape);
    opreg_tensor_empty_cpu(&w, OPREG_DTYPE_F32, 1, shape + 1);
    if (!in || !out || !w) {
        fprintf(stderr, "allocation failed: %s\n", opreg_last_error());
        return 1;
    }
    float *x = in->data, *y = out->data, *g = w->data;
    for (int i = 0; i < ROWS * HIDDEN; i++)
        x[i] = (float)((i * 7) % 13) - 6.0f;
    for (int j = 0; j < HIDDEN; j++)
        g[j] = 0.5f + (float)j / HIDDEN;
    opreg_value args[4] = { opreg_tensor_value(out), opreg_tensor_value(in), opreg_tensor_value(w),
                            opreg_float_value(1e-6) };
    opreg_status st = opreg_call_boxed(op, args, 4, NULL, 0, NULL, 0);
    if (st != OPREG_OK) {
        fprintf(stderr, "rms_norm: %s: %s\n", opreg_status_name(st), opreg_last_error());
        return 1;
    }
    double worst = 0;
    for (int r = 0; r < ROWS; r++) {
        double ss = 0;
        for (int j = 0; j < HIDDEN; j++)
            ss += (double)x[r * HIDDEN + j] * x[r * HIDDEN + j];
        double scale = 1.0 / sqrt(ss / HIDDEN + 1e-6);
        for (int j = 0; j < HIDDEN; j++) {
            double want = x[r * HIDDEN + j] * scale * g[j];
            worst = fmax(worst, fabs(want - y[r * HIDDEN + j]));
        }
    }
    opreg_tensor_free(in);
    opreg_tensor_free(out);
    opreg_tensor_free(w);
    printf("opreg %s: _C::rms_norm on the CPU, max error %.3g\n", opreg_version(), worst);
    return worst < 1e-4 ? 0 : 1;
}
