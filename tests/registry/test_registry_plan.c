/* opreg_op_arg_plan(): the registry's plan of each argument, as a binding
 * reads it (kinds, optionals, writes, fixed list sizes, names, type text,
 * defaults), its errors, and its lifetime across a redefinition. */
#include "reg_helpers.h"

static opreg_registry *reg;
static opreg_library *lib;

static const opreg_op *def(const char *schema) {
    const opreg_op *op = NULL;
    opreg_status st = opreg_library_def(&op, lib, schema);
    if (st != OPREG_OK) fprintf(stderr, "def %s: %s\n", schema, opreg_last_error());
    return op;
}

static opreg_arg_plan arg(const opreg_op *op, size_t i) {
    opreg_arg_plan a;
    memset(&a, 0xAB, sizeof a);
    a.struct_size = sizeof a;
    opreg_status st = opreg_op_arg_plan(&a, op, i);
    if (st != OPREG_OK) fprintf(stderr, "arg %zu: %s\n", i, opreg_last_error());
    return a;
}

TEST(tensors_optional_written_and_lists) {
    const opreg_op *op = def("mix(Tensor(a!)[] caches, Tensor? bias, Tensor! out, Tensor?[] idx, "
                             "Tensor x) -> ()");
    CHECK(op != NULL);
    const opreg_schema *s = opreg_op_schema(op);
    CHECK_EQ_INT(opreg_schema_num_arguments(s), 5);

    opreg_arg_plan a = arg(op, 0);
    CHECK_EQ_INT(a.struct_size, sizeof a);
    CHECK_EQ_STR(a.name, "caches");
    CHECK_EQ_STR(a.type_text, "Tensor[]");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_TENSOR_LIST);
    CHECK_EQ_INT(a.write, 1);
    CHECK_EQ_INT(a.optional, 0);
    CHECK_EQ_INT(a.elem_optional, 0);
    CHECK_EQ_INT(a.list_size, -1);
    CHECK_EQ_INT(a.has_default, 0);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_NONE);
    CHECK(a.schema == s);

    a = arg(op, 1);
    CHECK_EQ_STR(a.name, "bias");
    CHECK_EQ_STR(a.type_text, "Tensor?");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(a.optional, 1);
    CHECK_EQ_INT(a.write, 0);

    a = arg(op, 2);
    CHECK_EQ_STR(a.name, "out");
    CHECK_EQ_STR(a.type_text, "Tensor");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(a.write, 1);
    CHECK_EQ_INT(a.optional, 0);

    a = arg(op, 3);
    CHECK_EQ_STR(a.type_text, "Tensor?[]");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_TENSOR_LIST);
    CHECK_EQ_INT(a.elem_optional, 1);
    CHECK_EQ_INT(a.optional, 0);

    a = arg(op, 4);
    CHECK_EQ_STR(a.name, "x");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(a.write | a.optional | a.elem_optional | a.kwarg_only, 0);
}

TEST(scalars_sized_lists_and_defaults) {
    const opreg_op *op = def("conv(Tensor x, int[2] stride=1, int[]? dims=None, float eps=1e-05, "
                             "*, str mode=\"same\", bool flag=True, Scalar alpha=2, "
                             "ScalarType? dtype=None, Device dev, float[3] w=[1, 2.5, 3]) -> ()");
    CHECK(op != NULL);

    opreg_arg_plan a = arg(op, 1);
    CHECK_EQ_STR(a.name, "stride");
    CHECK_EQ_STR(a.type_text, "int[2]");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_INT_LIST);
    CHECK_EQ_INT(a.list_size, 2);
    CHECK_EQ_INT(a.has_default, 1);
    /* `int[2] stride=1`: the scalar repeated to the list's size. */
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_INT_LIST);
    CHECK_EQ_INT(a.default_value.u.ints.len, 2);
    CHECK_EQ_INT(a.default_value.u.ints.items[0], 1);
    CHECK_EQ_INT(a.default_value.u.ints.items[1], 1);

    a = arg(op, 2);
    CHECK_EQ_STR(a.type_text, "int[]?");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_INT_LIST);
    CHECK_EQ_INT(a.optional, 1);
    CHECK_EQ_INT(a.list_size, -1);
    CHECK_EQ_INT(a.has_default, 1);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_NONE);

    a = arg(op, 3);
    CHECK_EQ_STR(a.type_text, "float");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_FLOAT);
    CHECK_EQ_INT(a.has_default, 1);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_FLOAT);
    CHECK(a.default_value.u.f == 1e-05);
    CHECK_EQ_INT(a.kwarg_only, 0);

    a = arg(op, 4);
    CHECK_EQ_STR(a.name, "mode");
    CHECK_EQ_STR(a.type_text, "str");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_STR);
    CHECK_EQ_INT(a.kwarg_only, 1);
    CHECK_EQ_INT(a.has_default, 1);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_STR);
    CHECK_EQ_INT(a.default_value.u.s.len, 4);
    CHECK_EQ_STR(a.default_value.u.s.ptr, "same");

    a = arg(op, 5);
    CHECK_EQ_INT(a.kind, OPREG_VALUE_BOOL);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_BOOL);
    CHECK_EQ_INT(a.default_value.u.b, 1);

    a = arg(op, 6);
    CHECK_EQ_STR(a.type_text, "Scalar");
    CHECK_EQ_INT(a.kind, OPREG_ARG_KIND_SCALAR);
    CHECK_EQ_INT(a.default_value.kind, OPREG_VALUE_INT);
    CHECK_EQ_INT(a.default_value.u.i, 2);

    a = arg(op, 7);
    CHECK_EQ_STR(a.type_text, "ScalarType?");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_SCALAR_TYPE);
    CHECK_EQ_INT(a.optional, 1);

    a = arg(op, 8);
    CHECK_EQ_STR(a.name, "dev");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_DEVICE);
    CHECK_EQ_INT(a.kwarg_only, 1);
    CHECK_EQ_INT(a.has_default, 0);

    a = arg(op, 9);
    CHECK_EQ_STR(a.type_text, "float[3]");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_FLOAT_LIST);
    CHECK_EQ_INT(a.list_size, 3);
    CHECK_EQ_INT(a.default_value.u.floats.len, 3);
    CHECK(a.default_value.u.floats.items[1] == 2.5);
}

TEST(types_values_cannot_carry) {
    const opreg_op *op = def("odd(Dict(str, int) d, Tensor[][] nested) -> ()");
    CHECK(op != NULL);
    opreg_arg_plan a = arg(op, 0);
    CHECK_EQ_INT(a.kind, OPREG_ARG_KIND_UNSUPPORTED);
    CHECK_EQ_STR(a.name, "d");
    a = arg(op, 1);
    CHECK_EQ_INT(a.kind, OPREG_ARG_KIND_UNSUPPORTED);
    CHECK_EQ_STR(a.type_text, "Tensor[][]");
}

TEST(errors) {
    const opreg_op *op = def("two(Tensor a, int b) -> ()");
    CHECK(op != NULL);
    opreg_arg_plan a;
    a.struct_size = sizeof a;
    CHECK_STATUS(opreg_op_arg_plan(&a, op, 2), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "_C::two has 2 arguments; there is no argument 2");
    CHECK(a.name == NULL && a.schema == NULL);
    CHECK_EQ_INT(a.struct_size, sizeof a);
    CHECK_STATUS(opreg_op_arg_plan(&a, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_op_arg_plan(NULL, op, 0), OPREG_ERR_INVALID_ARGUMENT);
    a.struct_size = 0;
    CHECK_STATUS(opreg_op_arg_plan(&a, op, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "struct_size");
}

/* A caller built against a shorter struct gets only what its size covers. */
TEST(shorter_struct_size) {
    const opreg_op *op = def("short(Tensor a, int b=3) -> ()");
    CHECK(op != NULL);
    opreg_arg_plan a;
    memset(&a, 0xAB, sizeof a);
    a.struct_size = (uint32_t)offsetof(opreg_arg_plan, type_text);
    CHECK_OK(opreg_op_arg_plan(&a, op, 1));
    CHECK_EQ_INT(a.struct_size, offsetof(opreg_arg_plan, type_text));
    CHECK_EQ_INT(a.kind, OPREG_VALUE_INT);
    CHECK_EQ_STR(a.name, "b");
    unsigned char past[sizeof(const char *)];
    memcpy(past, &a.type_text, sizeof past);
    for (size_t i = 0; i < sizeof past; i++)
        CHECK_EQ_INT(past[i], 0xAB);
}

/* An undefined op has no plan; once defined again, the new definition's
 * plan comes back, and the old one's strings still read until reclaim. */
TEST(withdrawn_and_redefined) {
    opreg_library *tmp;
    CHECK_OK(opreg_library_create(&tmp, reg, OPREG_LIBRARY_DEF, "tmp", OPREG_KEY_CPU, "p.c", 1));
    const opreg_op *op;
    CHECK_OK(opreg_library_def(&op, tmp, "f(Tensor x, float eps=0.5) -> ()"));
    opreg_arg_plan old = arg(op, 1);
    CHECK_EQ_STR(old.name, "eps");
    opreg_library_close(tmp);
    opreg_arg_plan a;
    a.struct_size = sizeof a;
    CHECK_STATUS(opreg_op_arg_plan(&a, op, 0), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "tmp::f is not defined");
    CHECK_EQ_STR(old.name, "eps"); /* retired, not freed */
    CHECK_OK(opreg_library_create(&tmp, reg, OPREG_LIBRARY_DEF, "tmp", OPREG_KEY_CPU, "p.c", 2));
    const opreg_op *again;
    CHECK_OK(opreg_library_def(&again, tmp, "f(Tensor x, int[2] size) -> ()"));
    CHECK(again == op);
    a = arg(op, 1);
    CHECK_EQ_STR(a.name, "size");
    CHECK_EQ_INT(a.list_size, 2);
    CHECK(a.schema == opreg_op_schema(op));
    CHECK(a.schema != old.schema);
    opreg_library_close(tmp);
    opreg_registry_reclaim(reg);
}

/* The built-in catalogue, through the default registry, as the Python
 * binding reads it. */
TEST(catalogue_rms_norm) {
    opreg_registry *d = opreg_registry_default();
    CHECK(d != NULL);
    const opreg_op *op;
    CHECK_OK(opreg_op_find(&op, d, "_C::rms_norm"));
    opreg_arg_plan a = arg(op, 0);
    CHECK_EQ_STR(a.name, "out");
    CHECK_EQ_INT(a.write, 1);
    a = arg(op, 3);
    CHECK_EQ_STR(a.name, "epsilon");
    CHECK_EQ_INT(a.kind, OPREG_VALUE_FLOAT);
}

int main(void) {
    if (opreg_registry_create(&reg) != OPREG_OK ||
        opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_CPU, "plan.c", 1) !=
            OPREG_OK) {
        fprintf(stderr, "setup: %s\n", opreg_last_error());
        return 1;
    }
    RUN(tensors_optional_written_and_lists);
    RUN(scalars_sized_lists_and_defaults);
    RUN(types_values_cannot_carry);
    RUN(errors);
    RUN(shorter_struct_size);
    RUN(withdrawn_and_redefined);
    RUN(catalogue_rms_norm);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
    return test_summary();
}
