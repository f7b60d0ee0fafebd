/* The typed entry points generated from typed.schemas at build time. */
#include "reg_helpers.h"
#include "typed_ops.h"

static opreg_value seen[16];
static int ran;

static opreg_status record(void *ctx, const opreg_op *op, const opreg_value *args,
                           opreg_value *rets) {
    (void)ctx;
    size_t n = opreg_schema_num_arguments(opreg_op_schema(op));
    if (n) memcpy(seen, args, n * sizeof *args);
    ran++;
    if (opreg_schema_num_returns(opreg_op_schema(op)) && rets) {
        const char *name = opreg_op_name(op);
        if (strcmp(name, "tt::make") == 0) {
            int64_t shape[1] = { args[1].u.i };
            DLTensor *t;
            opreg_status st = opreg_tensor_empty_cpu(&t, OPREG_DTYPE_I32, 1, shape);
            if (st != OPREG_OK) return st;
            rets[0] = opreg_tensor_value(t);
        } else if (strcmp(name, "tt::query") == 0) {
            rets[0] = opreg_bool_value(args[0].u.i > 10);
        } else if (strcmp(name, "tt::add.out") == 0) {
            rets[0] = args[1];
        } else if (strcmp(name, "tt::meta") == 0) {
            opreg_status st = opreg_value_pack(&rets[0], &args[0]);
            if (st == OPREG_OK) st = opreg_value_pack(&rets[1], &args[1]);
            if (st != OPREG_OK) opreg_value_release(&rets[0]);
            return st;
        } else {
            rets[0] = opreg_int_value(42);
        }
    }
    return OPREG_OK;
}

static opreg_library *lib;

static void define_all(opreg_registry *reg) {
    opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "tt", OPREG_KEY_CPU, __FILE__, __LINE__);
    static const char *defs[] = {
        "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()",
        "mixed(Tensor x, Tensor? bias, Tensor[] xs, int n, int? maybe, float[] scales, str mode, "
        "bool flag, ScalarType dtype, Device dev, str? note) -> ()",
        "make(Tensor x, int n) -> Tensor",
        "query(int cap) -> bool",
        "add.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
        "noargs() -> int",
        "meta(str[] handles, int[][] offsets, (str, int) pair, Scalar x) -> (str[], int[][])",
        "maybe_ints(int?[] xs) -> ()",
    };
    static const char *names[] = { "rms_norm", "mixed",  "make", "query",
                                   "add.out",  "noargs", "meta", "maybe_ints" };
    for (int i = 0; i < 8; i++) {
        opreg_library_def(NULL, lib, defs[i]);
        opreg_library_impl_fn(lib, names[i], OPREG_KEY_NONE, record, NULL);
        opreg_library_impl_fn(lib, names[i], OPREG_KEY_META, record, NULL);
    }
}

TEST(plain_op_through_the_default_registry) {
    struct fake_tensor a, b, c;
    DLTensor *out = fake(&a, kDLCPU, 0);
    CHECK_OK(opreg_op_tt_rms_norm(out, fake(&b, kDLCPU, 0), fake(&c, kDLCPU, 0), 1e-6));
    CHECK(seen[0].u.tensor == out);
    CHECK(seen[3].kind == OPREG_VALUE_FLOAT && seen[3].u.f == 1e-6);
    /* Meta tensors dispatch to Meta; mixed devices are refused. */
    CHECK_OK(opreg_op_tt_rms_norm(fake(&a, OPREG_DEVICE_META, 0), fake(&b, OPREG_DEVICE_META, 0),
                                  fake(&c, OPREG_DEVICE_META, 0), 1e-6));
    CHECK_STATUS(opreg_op_tt_rms_norm(fake(&a, OPREG_DEVICE_META, 0), fake(&b, kDLCPU, 0),
                                      fake(&c, OPREG_DEVICE_META, 0), 1e-6),
                 OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "argument 'out' is on meta and argument 'input' is on cpu");
}

TEST(every_c_type) {
    struct fake_tensor a, b;
    DLTensor *x = fake(&a, kDLCPU, 0), *xs[1] = { fake(&b, kDLCPU, 0) };
    double scales[2] = { 0.5, 0.25 };
    int64_t maybe = 5;
    DLDevice dev = { kDLCPU, 0 };
    CHECK_OK(opreg_op_tt_mixed(x, NULL, xs, 1, 3, &maybe, scales, 2, "fast", true,
                               OPREG_DTYPE_F8_E4M3FN, dev, NULL));
    CHECK_EQ_INT(seen[1].kind, OPREG_VALUE_NONE);
    CHECK(seen[2].kind == OPREG_VALUE_TENSOR_LIST && seen[2].u.tensors.len == 1);
    CHECK_EQ_INT(seen[3].u.i, 3);
    CHECK(seen[4].kind == OPREG_VALUE_INT && seen[4].u.i == 5);
    CHECK(seen[5].u.floats.len == 2 && seen[5].u.floats.items[1] == 0.25);
    CHECK_EQ_STR(seen[6].u.s.ptr, "fast");
    CHECK(seen[7].u.b);
    CHECK_EQ_INT(seen[8].u.dtype, OPREG_DTYPE_F8_E4M3FN);
    CHECK_EQ_INT(seen[9].kind, OPREG_VALUE_DEVICE);
    CHECK_EQ_INT(seen[10].kind, OPREG_VALUE_NONE);
    CHECK_OK(opreg_op_tt_mixed(x, x, xs, 1, 3, NULL, scales, 2, "fast", true, OPREG_DTYPE_F32, dev,
                               "n"));
    CHECK_EQ_INT(seen[1].kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(seen[4].kind, OPREG_VALUE_NONE);
    CHECK_EQ_STR(seen[10].u.s.ptr, "n");
}

TEST(returns) {
    struct fake_tensor a;
    DLTensor *made = NULL;
    CHECK_OK(opreg_op_tt_make(&made, fake(&a, kDLCPU, 0), 7));
    CHECK(made && made->shape[0] == 7 && made->data);
    opreg_tensor_free(made);
    bool big = false;
    CHECK_OK(opreg_op_tt_query(&big, 11));
    CHECK(big);
    int64_t n = 0;
    CHECK_OK(opreg_op_tt_noargs(&n));
    CHECK_EQ_INT(n, 42);
    DLTensor *same = NULL, *out = fake(&a, kDLCPU, 0);
    struct fake_tensor b;
    CHECK_OK(opreg_op_tt_add_out(&same, fake(&b, kDLCPU, 0), out));
    CHECK(same == out);
    /* str[] as an array, nested lists and tuples as boxed values, and
     * returns the caller releases. */
    static const opreg_str handles[2] = { { "h\0a", 3 }, { "b", 1 } };
    static const int64_t row[2] = { 4, 8 };
    opreg_value rows[1] = { opreg_int_list_value(row, 2) };
    opreg_value pair[2] = { opreg_str_value("p"), opreg_int_value(1) };
    opreg_value hs, os;
    CHECK_OK(opreg_op_tt_meta(&hs, &os, handles, 2, opreg_list_value(rows, 1),
                              opreg_tuple_value(pair, 2), opreg_float_value(0.5)));
    CHECK(hs.kind == OPREG_VALUE_STR_LIST && hs.u.strs.len == 2 && hs.u.strs.items[0].len == 3 &&
          hs.flags == OPREG_VALUE_OWNED);
    CHECK(os.kind == OPREG_VALUE_LIST && os.u.list.items[0].u.ints.items[1] == 8);
    CHECK(seen[2].kind == OPREG_VALUE_TUPLE && seen[3].u.f == 0.5);
    opreg_value_release(&hs);
    opreg_value_release(&os);
    CHECK(hs.kind == OPREG_VALUE_NONE && os.kind == OPREG_VALUE_NONE);
    /* int?[] is a list of values too (Tensor?[] stays a tensor array). */
    opreg_value maybe[2] = { opreg_int_value(3), opreg_none() };
    CHECK_OK(opreg_op_tt_maybe_ints(opreg_list_value(maybe, 2)));
    CHECK(seen[0].kind == OPREG_VALUE_LIST && seen[0].u.list.len == 2 &&
          seen[0].u.list.items[1].kind == OPREG_VALUE_NONE);
}

TEST(handle_variant_on_another_registry) {
    opreg_registry *reg;
    opreg_library *other;
    const opreg_op *op;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&other, reg, OPREG_LIBRARY_DEF, "tt", OPREG_KEY_CPU, "o.c", 1));
    CHECK_OK(opreg_library_def(&op, other, "query(int cap) -> bool"));
    bool r = true;
    CHECK_STATUS(opreg_opcall_tt_query(op, &r, 1), OPREG_ERR_NO_KERNEL);
    const opreg_op *make;
    CHECK_OK(opreg_library_def(&make, other, "make(Tensor x, int n) -> Tensor"));
    struct fake_tensor a;
    DLTensor *made = (DLTensor *)&a; /* set to NULL on failure */
    CHECK_STATUS(opreg_opcall_tt_make(make, &made, fake(&a, kDLCPU, 0), 3), OPREG_ERR_NO_KERNEL);
    CHECK(made == NULL);
    CHECK_OK(opreg_library_impl_fn(other, "query", OPREG_KEY_NONE, record, NULL));
    CHECK_OK(opreg_opcall_tt_query(op, &r, 1));
    CHECK(!r);
    opreg_library_close(other);
    CHECK_STATUS(opreg_opcall_tt_query(op, &r, 1), OPREG_ERR_NOT_FOUND);
    opreg_registry_destroy(reg);
}

int main(void) {
    opreg_registry *reg = opreg_registry_default();
    if (!reg) {
        fprintf(stderr, "no default registry: %s\n", opreg_last_error());
        return 1;
    }
    /* Before the library exists, the typed call reports the missing op. */
    bool r;
    if (opreg_op_tt_query(&r, 1) != OPREG_ERR_NOT_FOUND) {
        fprintf(stderr, "expected NOT_FOUND before the def\n");
        return 1;
    }
    define_all(reg);
    RUN(plain_op_through_the_default_registry);
    RUN(every_c_type);
    RUN(returns);
    RUN(handle_variant_on_another_registry);
    opreg_library_close(lib);
    return test_summary();
}
