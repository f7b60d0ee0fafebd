/* Load the example plugin into the default registry and run its kernel of
 * _C::silu_and_mul on "example" tensors, against the reference kernel.
 *   run_example PATH/example_plugin.so        exit 0 when it matches */
#include <opreg/opreg.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: run_example PLUGIN\n");
        return 2;
    }
    opreg_registry *reg = opreg_registry_default();
    opreg_plugin *plugin;
    if (!reg || opreg_plugin_load(&plugin, reg, argv[1]) != OPREG_OK) {
        fprintf(stderr, "run_example: %s\n", opreg_last_error());
        return 1;
    }
    DLDevice dev;
    const opreg_op *op;
    if (opreg_device_parse(&dev, "example") != OPREG_OK ||
        opreg_op_find(&op, reg, "_C::silu_and_mul") != OPREG_OK) {
        fprintf(stderr, "run_example: %s\n", opreg_last_error());
        return 1;
    }
    int64_t in_shape[2] = { 4, 16 }, out_shape[2] = { 4, 8 };
    DLTensor *in, *out, *ref_in, *ref_out;
    opreg_tensor_empty(&in, dev, OPREG_DTYPE_F32, 2, in_shape);
    opreg_tensor_empty(&out, dev, OPREG_DTYPE_F32, 2, out_shape);
    opreg_tensor_empty_cpu(&ref_in, OPREG_DTYPE_F32, 2, in_shape);
    opreg_tensor_empty_cpu(&ref_out, OPREG_DTYPE_F32, 2, out_shape);
    for (int i = 0; i < 64; i++)
        ((float *)in->data)[i] = ((float *)ref_in->data)[i] = (float)(i % 13) * 0.25f - 1.5f;

    opreg_value args[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    opreg_value ref_args[2] = { opreg_tensor_value(ref_out), opreg_tensor_value(ref_in) };
    opreg_status st = opreg_call_boxed(op, args, 2, NULL, 0, NULL, 0);
    if (st == OPREG_OK)
        st = opreg_call_boxed_key(op, OPREG_KEY_REFERENCE, ref_args, 2, NULL, 0, NULL, 0);
    if (st != OPREG_OK) {
        fprintf(stderr, "run_example: %s\n", opreg_last_error());
        return 1;
    }
    double worst = 0;
    for (int i = 0; i < 32; i++)
        worst = fmax(worst, fabs((double)((float *)out->data)[i] - ((float *)ref_out->data)[i]));
    opreg_support_info info;
    opreg_explain_support(&info, reg, "_C::silu_and_mul", &dev);
    printf("%s\nmax abs difference from the reference: %g\n", info.message, worst);
    opreg_tensor_free(in);
    opreg_tensor_free(out);
    opreg_tensor_free(ref_in);
    opreg_tensor_free(ref_out);
    return worst <= 1e-5 ? 0 : 1;
}
