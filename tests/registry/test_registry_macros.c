/* OPREG_LIBRARY / OPREG_LIBRARY_IMPL: explicit init functions, no
 * constructors; a failing body leaves the registry as it was. */
#include "reg_helpers.h"

static struct probe pcpu = { "cpu", 0 }, pmeta = { "meta", 0 };

OPREG_LIBRARY(mac, m) {
    OPREG_DEF(m, "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
    OPREG_DEF(m, "scale(Tensor x, float s=1.0) -> ()");
}

OPREG_LIBRARY_IMPL(mac, CPU, m) {
    OPREG_IMPL(m, "rms_norm", probe_kernel, &pcpu);
    OPREG_IMPL(m, "scale", probe_kernel, &pcpu);
}

OPREG_LIBRARY_IMPL(mac, META, m) {
    OPREG_IMPL(m, "rms_norm", probe_kernel, &pmeta);
}

/* The second def is a duplicate: the whole library must be rolled back. */
OPREG_LIBRARY(bad, m) {
    OPREG_DEF(m, "one(Tensor x) -> ()");
    OPREG_DEF(m, "one(Tensor y) -> ()");
    OPREG_DEF(m, "two(Tensor x) -> ()");
}

TEST(macros_register_through_init_functions) {
    opreg_registry *reg;
    opreg_library *def, *cpu, *meta;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_init_mac(reg, &def));
    CHECK_OK(opreg_library_impl_init_mac_CPU(reg, &cpu));
    CHECK_OK(opreg_library_impl_init_mac_META(reg, &meta));
    DLDevice cpu_dev = { kDLCPU, 0 }, meta_dev = { OPREG_DEVICE_META, 0 };
    CHECK(opreg_is_op_supported_on(reg, "mac::rms_norm", cpu_dev));
    CHECK(opreg_is_op_supported_on(reg, "mac::rms_norm", meta_dev));
    CHECK(!opreg_is_op_supported_on(reg, "mac::scale", meta_dev));
    const opreg_op *op;
    CHECK_OK(opreg_op_find(&op, reg, "mac::scale"));
    struct fake_tensor a;
    opreg_value x = opreg_tensor_value(fake(&a, kDLCPU, 0));
    CHECK_OK(opreg_call_boxed(op, &x, 1, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
    /* The same init twice: the namespace is taken. */
    CHECK_STATUS(opreg_library_init_mac(reg, NULL), OPREG_ERR_ALREADY_DEFINED);
    opreg_library_close(meta);
    opreg_library_close(cpu);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
}

TEST(failed_body_leaves_registry_as_it_was) {
    opreg_registry *reg;
    opreg_library *lib = (opreg_library *)1;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_STATUS(opreg_library_init_bad(reg, &lib), OPREG_ERR_ALREADY_DEFINED);
    CHECK(lib == NULL);
    CHECK_CONTAINS(opreg_last_error(), "Tried to register an operator (bad::one(Tensor x) -> ())");
    CHECK_CONTAINS(opreg_last_error(), "test_registry_macros.c");
    CHECK(!opreg_is_op_supported(reg, "bad::one"));
    const opreg_op *op;
    CHECK_STATUS(opreg_op_find(&op, reg, "bad::one"), OPREG_ERR_NOT_FOUND);
    /* The namespace is free again. */
    opreg_library *again;
    CHECK_OK(opreg_library_create(&again, reg, OPREG_LIBRARY_DEF, "bad", OPREG_KEY_NONE, NULL, 0));
    opreg_library_close(again);
    opreg_registry_destroy(reg);
}

int main(void) {
    RUN(macros_register_through_init_functions);
    RUN(failed_body_leaves_registry_as_it_was);
    return test_summary();
}
