/* Boxed calls: arity, types (None for optionals, list element types),
 * defaults, keyword-only arguments, Tensor! writability, returned tensors. */
#include "reg_helpers.h"

static opreg_registry *reg;
static opreg_library *lib;
static opreg_value seen[16]; /* what the kernel received */

static opreg_status record(void *ctx, const opreg_op *op, const opreg_value *args,
                           opreg_value *rets) {
    (void)ctx;
    (void)rets;
    size_t n = opreg_schema_num_arguments(opreg_op_schema(op));
    memcpy(seen, args, n * sizeof *args);
    return OPREG_OK;
}

/* `-> Tensor`: a new CPU tensor shaped like the input, owned by the caller. */
static opreg_status make_like(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    (void)ctx;
    (void)op;
    const DLTensor *x = args[0].u.tensor;
    DLTensor *out;
    opreg_dtype dt;
    OPREG_OK == opreg_dtype_from_dlpack(&dt, x->dtype) ? (void)0 : (void)0;
    opreg_status st = opreg_tensor_empty_cpu(&out, dt, x->ndim, x->shape);
    if (st != OPREG_OK) return st;
    rets[0] = opreg_tensor_value(out);
    rets[1] = opreg_bool_value(true);
    return OPREG_OK;
}

static const opreg_op *def(const char *schema, opreg_kernel_fn fn) {
    const opreg_op *op = NULL;
    opreg_library_def(&op, lib, schema);
    char name[64];
    snprintf(name, sizeof name, "%s", opreg_op_name(op) + 4);
    opreg_library_impl_fn(lib, name, OPREG_KEY_CPU, fn, NULL);
    return op;
}

static const opreg_op *all_types;

#define ALL_TYPES                                                                                  \
    "all(Tensor t, Tensor? ot, Tensor[] tl, Tensor?[] otl, int i, float f, bool b, str s, "        \
    "int[] il, float[] fl, bool[] bl, ScalarType st, Device d, int? oi, Scalar sc) -> ()"

TEST(every_type_accepted) {
    struct fake_tensor a, b;
    DLTensor *ta = fake(&a, kDLCPU, 0), *tb = fake(&b, kDLCPU, 0);
    DLTensor *list[2] = { ta, tb }, *olist[2] = { NULL, tb };
    int64_t ints[2] = { 1, 2 };
    double floats[1] = { 0.5 };
    bool bools[3] = { true, false, true };
    DLDevice cpu = { kDLCPU, 0 };
    opreg_value v[15] = {
        opreg_tensor_value(ta),
        opreg_none(),
        opreg_tensor_list_value(list, 2),
        opreg_tensor_list_value(olist, 2),
        opreg_int_value(7),
        opreg_float_value(1.5),
        opreg_bool_value(true),
        opreg_str_value("hi"),
        opreg_int_list_value(ints, 2),
        opreg_float_list_value(floats, 1),
        opreg_bool_list_value(bools, 3),
        opreg_dtype_value(OPREG_DTYPE_BF16),
        opreg_device_value(cpu),
        opreg_none(),
        opreg_float_value(2),
    };
    CHECK_OK(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0));
    CHECK_EQ_INT(seen[4].u.i, 7);
    CHECK_EQ_STR(seen[7].u.s.ptr, "hi");
    v[1] = opreg_tensor_value(tb);
    v[13] = opreg_int_value(3);
    v[14] = opreg_bool_value(false); /* Scalar takes int, float or bool */
    CHECK_OK(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0));
}

TEST(every_type_refused_with_its_name) {
    struct fake_tensor a;
    DLTensor *ta = fake(&a, kDLCPU, 0);
    DLTensor *list[1] = { NULL };
    DLDevice cpu = { kDLCPU, 0 };
    opreg_value good[15] = {
        opreg_tensor_value(ta),
        opreg_none(),
        opreg_tensor_list_value(NULL, 0),
        opreg_tensor_list_value(NULL, 0),
        opreg_int_value(7),
        opreg_float_value(1.5),
        opreg_bool_value(true),
        opreg_str_value("hi"),
        opreg_int_list_value(NULL, 0),
        opreg_float_list_value(NULL, 0),
        opreg_bool_list_value(NULL, 0),
        opreg_dtype_value(OPREG_DTYPE_BF16),
        opreg_device_value(cpu),
        opreg_none(),
        opreg_int_value(1),
    };
    static const char *expect[15] = {
        "'t' (position 0) expected a value of type Tensor but got int",
        "'ot' (position 1) expected a value of type Tensor? but got int",
        "'tl' (position 2) expected a value of type Tensor[] but got int",
        "'otl' (position 3) expected a value of type Tensor?[] but got int",
        "'i' (position 4) expected a value of type int but got str",
        "'f' (position 5) expected a value of type float but got int",
        "'b' (position 6) expected a value of type bool but got int",
        "'s' (position 7) expected a value of type str but got int",
        "'il' (position 8) expected a value of type int[] but got int",
        "'fl' (position 9) expected a value of type float[] but got int",
        "'bl' (position 10) expected a value of type bool[] but got int",
        "'st' (position 11) expected a value of type ScalarType but got int",
        "'d' (position 12) expected a value of type Device but got int",
        "'oi' (position 13) expected a value of type int? but got str",
        "'sc' (position 14) expected a value of type Scalar but got str"
    };
    for (int i = 0; i < 15; i++) {
        opreg_value v[15];
        memcpy(v, good, sizeof v);
        v[i] = (i == 4 || i == 13 || i == 14) ? opreg_str_value("x") : opreg_int_value(1);
        CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
        CHECK_CONTAINS(opreg_last_error(), expect[i]);
        CHECK_CONTAINS(opreg_last_error(), "tt::all: argument ");
    }
    opreg_value v[15];
    memcpy(v, good, sizeof v);
    v[0] = opreg_none();
    CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "'t' (position 0) expected a value of type Tensor but got None");
    v[0] = opreg_tensor_value(NULL);
    CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "argument 't' (Tensor) is a NULL tensor");
    memcpy(v, good, sizeof v);
    v[2] = opreg_tensor_list_value(list, 1);
    CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "argument 'tl' (Tensor[]) item 0 is NULL; only Tensor?[] lists may hold None");
    v[2] = opreg_tensor_list_value(NULL, 0);
    v[3] = opreg_tensor_list_value(list, 1); /* Tensor?[] may hold None */
    CHECK_OK(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0));
    v[7] = opreg_str_value(NULL);
    CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "argument 's' (str) is NULL");
}

/* A list value whose item array is NULL but whose length is not 0 is
 * refused, for int, float and bool lists as for tensor lists: the kernel
 * would read the items. Found by tests/fuzz/fuzz_call. */
TEST(null_list_items_refused) {
    struct fake_tensor a;
    DLTensor *ta = fake(&a, kDLCPU, 0);
    DLDevice cpu = { kDLCPU, 0 };
    opreg_value good[15] = {
        opreg_tensor_value(ta),
        opreg_none(),
        opreg_tensor_list_value(NULL, 0),
        opreg_tensor_list_value(NULL, 0),
        opreg_int_value(7),
        opreg_float_value(1.5),
        opreg_bool_value(true),
        opreg_str_value("hi"),
        opreg_int_list_value(NULL, 0),
        opreg_float_list_value(NULL, 0),
        opreg_bool_list_value(NULL, 0),
        opreg_dtype_value(OPREG_DTYPE_BF16),
        opreg_device_value(cpu),
        opreg_none(),
        opreg_int_value(1),
    };
    static const char *expect[3] = {
        "argument 'il' (int[]) has 2 items but a NULL item array",
        "argument 'fl' (float[]) has 3 items but a NULL item array",
        "argument 'bl' (bool[]) has 4 items but a NULL item array",
    };
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 3; i++) {
        opreg_value v[15];
        memcpy(v, good, sizeof v);
        v[8 + i] = i == 0   ? opreg_int_list_value(NULL, 2)
                   : i == 1 ? opreg_float_list_value(NULL, 3)
                            : opreg_bool_list_value(NULL, 4);
        CHECK_STATUS(opreg_call_boxed(all_types, v, 15, NULL, 0, NULL, 0),
                     OPREG_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(opreg_last_error(), expect[i]);
        /* by name, through the binder, too */
        static const char *names[15] = { "t",  "ot", "tl", "otl", "i", "f",  "b", "s",
                                         "il", "fl", "bl", "st",  "d", "oi", "sc" };
        opreg_kwarg kw[7];
        for (int k = 8 + i; k < 15; k++) {
            kw[k - 8 - i].name = names[k];
            kw[k - 8 - i].value = v[k];
        }
        CHECK_STATUS(opreg_call_boxed(all_types, v, (size_t)(8 + i), kw, (size_t)(7 - i), NULL, 0),
                     OPREG_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(opreg_last_error(), expect[i]);
        CHECK_EQ_INT(seen[0].kind, OPREG_VALUE_NONE); /* the kernel never ran */
    }
}

TEST(arity) {
    opreg_value v[16];
    for (int i = 0; i < 16; i++)
        v[i] = opreg_int_value(0);
    CHECK_STATUS(opreg_call_boxed(all_types, v, 16, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "tt::all: takes 15 arguments but 16 were given");
    CHECK_STATUS(opreg_call_boxed(all_types, v, 3, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "tt::all: missing argument 'otl' (Tensor?[])");
    CHECK_STATUS(opreg_call_boxed(all_types, NULL, 3, NULL, 0, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "args is NULL but its count is not 0");
    CHECK_STATUS(opreg_call_boxed(NULL, v, 3, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
}

TEST(defaults_and_keyword_only) {
    const opreg_op *op =
        def("dflt(Tensor x, int n=3, float eps=1e-05, bool flag=True, str mode=\"mean\", "
            "int[2] stride=1, float[] scales=[0.5, 2], Tensor? bias=None, "
            "ScalarType? dtype=None, *, int k, bool fast=False, int[] pad=[1, 2]) -> ()",
            record);
    CHECK(op != NULL);
    struct fake_tensor a;
    opreg_value x = opreg_tensor_value(fake(&a, kDLCPU, 0));
    opreg_kwarg k = { "k", opreg_int_value(9) };
    CHECK_OK(opreg_call_boxed(op, &x, 1, &k, 1, NULL, 0));
    CHECK_EQ_INT(seen[1].kind, OPREG_VALUE_INT);
    CHECK_EQ_INT(seen[1].u.i, 3);
    CHECK(seen[2].kind == OPREG_VALUE_FLOAT && seen[2].u.f == 1e-05);
    CHECK(seen[3].kind == OPREG_VALUE_BOOL && seen[3].u.b);
    CHECK_EQ_STR(seen[4].u.s.ptr, "mean");
    CHECK_EQ_INT(seen[5].kind, OPREG_VALUE_INT_LIST);
    CHECK_EQ_INT(seen[5].u.ints.len, 2); /* int[2] stride=1 is [1, 1] */
    CHECK(seen[5].u.ints.items[0] == 1 && seen[5].u.ints.items[1] == 1);
    CHECK(seen[6].u.floats.len == 2 && seen[6].u.floats.items[1] == 2.0);
    CHECK_EQ_INT(seen[7].kind, OPREG_VALUE_NONE);
    CHECK_EQ_INT(seen[8].kind, OPREG_VALUE_NONE);
    CHECK_EQ_INT(seen[9].u.i, 9);
    CHECK(seen[10].kind == OPREG_VALUE_BOOL && !seen[10].u.b);
    CHECK(seen[11].u.ints.len == 2 && seen[11].u.ints.items[1] == 2);
    /* Positional arguments may also be given by name. */
    opreg_kwarg two[2] = { { "k", opreg_int_value(1) }, { "n", opreg_int_value(42) } };
    CHECK_OK(opreg_call_boxed(op, &x, 1, two, 2, NULL, 0));
    CHECK_EQ_INT(seen[1].u.i, 42);
    /* Keyword-only arguments must be given by name. */
    CHECK_STATUS(opreg_call_boxed(op, &x, 1, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(),
                   "tt::dflt: missing keyword-only argument 'k' (int); pass it by name");
    opreg_value ten[10];
    ten[0] = x;
    for (int i = 1; i < 10; i++)
        ten[i] = opreg_none();
    ten[1] = opreg_int_value(1);
    CHECK_STATUS(opreg_call_boxed(op, ten, 10, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "takes 9 positional arguments but 10 were given; argument "
                                       "'k' is keyword-only: pass it by name");
    opreg_kwarg bad = { "nope", opreg_int_value(1) };
    CHECK_STATUS(opreg_call_boxed(op, &x, 1, &bad, 1, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "got an unexpected keyword argument 'nope'");
    opreg_kwarg dup[2] = { { "k", opreg_int_value(1) }, { "x", x } };
    CHECK_STATUS(opreg_call_boxed(op, &x, 1, dup, 2, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "got multiple values for argument 'x'");
    opreg_kwarg wrong[1] = { { "k", opreg_float_value(1) } };
    CHECK_STATUS(opreg_call_boxed(op, &x, 1, wrong, 1, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "argument 'k' (position 9) expected a value of type int but got float");
}

TEST(written_tensors_must_be_writable) {
    const opreg_op *op = def("inplace(Tensor! out, Tensor(a!)[] outs, Tensor input) -> ()", record);
    struct fake_tensor a, b;
    DLTensor *ta = fake(&a, kDLCPU, 0), *tb = fake(&b, kDLCPU, 0);
    opreg_value v[3] = { opreg_tensor_value_readonly(ta), opreg_tensor_list_value(NULL, 0),
                         opreg_tensor_value_readonly(tb) };
    CHECK_STATUS(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "tt::inplace: argument 'out' (Tensor) is written by the op, "
                                       "but the value passed is read-only");
    v[0] = opreg_tensor_value(ta);
    v[1].flags = OPREG_VALUE_READONLY;
    CHECK_STATUS(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "argument 'outs'");
    v[1].flags = 0;
    CHECK_OK(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0)); /* a read-only input is fine */
}

TEST(returned_tensor_belongs_to_caller) {
    const opreg_op *op = def("like(Tensor x) -> (Tensor, bool)", make_like);
    DLTensor *x;
    int64_t shape[2] = { 3, 5 };
    CHECK_OK(opreg_tensor_empty_cpu(&x, OPREG_DTYPE_F16, 2, shape));
    opreg_value in = opreg_tensor_value(x), out[2];
    CHECK_STATUS(opreg_call_boxed(op, &in, 1, NULL, 0, out, 1), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "tt::like: returns 2 values but rets has room for 1");
    CHECK_OK(opreg_call_boxed(op, &in, 1, NULL, 0, out, 2));
    CHECK_EQ_INT(out[0].kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(out[0].u.tensor->shape[1], 5);
    CHECK(out[0].u.tensor->data != NULL);
    CHECK(out[1].u.b);
    opreg_tensor_free(out[0].u.tensor);
    opreg_tensor_free(x);
}

TEST(unsupported_types_are_named) {
    const opreg_op *op = def("gen(Tensor x, Generator? g) -> ()", record);
    struct fake_tensor a;
    opreg_value v[2] = { opreg_tensor_value(fake(&a, kDLCPU, 0)), opreg_none() };
    CHECK_OK(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0)); /* None is fine */
    v[1] = opreg_int_value(1);
    CHECK_STATUS(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0), OPREG_ERR_UNSUPPORTED);
    CHECK_CONTAINS(opreg_last_error(),
                   "argument 'g' has type Generator?, which opreg values cannot carry");
}

/* A value whose kind is not an opreg_value_kind is refused, even when the
 * number happens to be the one the argument plan uses internally for
 * `Scalar` (100), for a type no value carries (101) or for `Any` (102).
 * Found by tests/fuzz/fuzz_call. */
TEST(kinds_outside_the_enum_refused) {
    const opreg_op *op = def("odd_kinds(Scalar s, Generator? g) -> ()", record);
    opreg_value v[2] = { opreg_int_value(1), opreg_none() };
    CHECK_OK(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0));
    memset(seen, 0, sizeof seen);
    static const uint32_t odd[] = { OPREG_VALUE_TUPLE + 1, 100, 101, 102 };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        v[0] = opreg_int_value(1);
        v[0].kind = odd[i];
        CHECK_STATUS(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
        CHECK_CONTAINS(opreg_last_error(),
                       "argument 's' (position 0) expected a value of type Scalar but got ?");
    }
    v[0] = opreg_int_value(1);
    v[1] = opreg_int_value(1);
    v[1].kind = 101;
    CHECK_STATUS(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0), OPREG_ERR_UNSUPPORTED);
    opreg_kwarg kw = { "g", v[1] };
    CHECK_STATUS(opreg_call_boxed(op, v, 1, &kw, 1, NULL, 0), OPREG_ERR_UNSUPPORTED);
    CHECK_EQ_INT(seen[0].kind, OPREG_VALUE_NONE); /* the kernel never ran */
}

int main(void) {
    opreg_registry_create(&reg);
    opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "tt", OPREG_KEY_CPU, "b.c", 1);
    all_types = def(ALL_TYPES, record);
    RUN(every_type_accepted);
    RUN(every_type_refused_with_its_name);
    RUN(null_list_items_refused);
    RUN(arity);
    RUN(defaults_and_keyword_only);
    RUN(written_tensors_must_be_writable);
    RUN(returned_tensor_belongs_to_caller);
    RUN(unsupported_types_are_named);
    RUN(kinds_outside_the_enum_refused);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
    return test_summary();
}
