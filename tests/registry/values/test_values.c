/* Values beyond tensors and scalars (docs/registry.md, "Values"):
 * - opreg_value_pack() and opreg_value_release() on every kind, nested
 *   lists and tuples, strings with NUL bytes, tensors taken, and each
 *   refusal (NULL item arrays, unknown kinds, nesting past 32), leak-free;
 * - boxed calls check `str[]`, `int[][]`, `int?[]`, tuples and `Any`,
 *   naming the item that is wrong;
 * - the values plugin's ops (vLLM's seed-era `_C_custom_ar`, PyTorch 2.15's
 *   `_c10d_functional`, `values_test::echo`) round-trip every value through
 *   the plugin ABI's value_pack, and refuse what they must. */
#include "leak_check.h"
#include "opreg/opreg.h"
#include "opreg/plugin.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static DLTensor *cpu_f32(int64_t n, float first) {
    DLTensor *t = NULL;
    if (opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 1, &n) != OPREG_OK) return NULL;
    for (int64_t i = 0; i < n; i++)
        ((float *)t->data)[i] = first + (float)i;
    return t;
}

static bool same_strs(const opreg_value *v, const opreg_str *want, size_t n) {
    if (v->kind != OPREG_VALUE_STR_LIST || v->u.strs.len != n) return false;
    for (size_t i = 0; i < n; i++)
        if (v->u.strs.items[i].len != want[i].len ||
            memcmp(v->u.strs.items[i].ptr, want[i].ptr, want[i].len) != 0 ||
            v->u.strs.items[i].ptr[want[i].len] != '\0')
            return false;
    return true;
}

static bool same_ints(const opreg_value *v, const int64_t *want, size_t n) {
    return v->kind == OPREG_VALUE_INT_LIST && v->u.ints.len == n &&
           (n == 0 || memcmp(v->u.ints.items, want, n * sizeof *want) == 0);
}

/* ---- pack and release ------------------------------------------------------------ */

static const opreg_str handles[3] = { { "h0", 2 }, { "\0\1\2ipc", 6 }, { "", 0 } };
static const int64_t row0[] = { 0, 4096 }, row1[] = { 8192 };

TEST(pack_every_kind) {
    opreg_value rows[3] = { opreg_int_list_value(row0, 2), opreg_int_list_value(row1, 1),
                            opreg_int_list_value(NULL, 0) };
    opreg_value tuple_items[2] = { opreg_str_list_value(handles, 3), opreg_int_value(7) };
    const double fs[] = { 0.5, -1e300 };
    const bool bs[] = { true, false, true };
    opreg_value ins[] = {
        opreg_str_list_value(handles, 3),
        opreg_list_value(rows, 3),
        opreg_tuple_value(tuple_items, 2),
        opreg_float_list_value(fs, 2),
        opreg_bool_list_value(bs, 3),
        opreg_str_value("group0"),
        opreg_int_value(-5),
        opreg_none(),
        opreg_str_list_value(NULL, 0),
        opreg_list_value(NULL, 0),
    };
    opreg_value out[sizeof ins / sizeof *ins];
    for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
        CHECK_EQ_INT(opreg_value_pack(&out[i], &ins[i]), OPREG_OK);
    /* Copies, not aliases: the originals' arrays are not pointed to. */
    CHECK(same_strs(&out[0], handles, 3));
    CHECK(out[0].u.strs.items != handles && out[0].flags == OPREG_VALUE_OWNED);
    CHECK_EQ_INT(out[1].kind, OPREG_VALUE_LIST);
    CHECK_EQ_INT(out[1].u.list.len, 3);
    CHECK(same_ints(&out[1].u.list.items[0], row0, 2) &&
          same_ints(&out[1].u.list.items[1], row1, 1));
    CHECK(out[1].u.list.items[0].u.ints.items != row0);
    CHECK(same_ints(&out[1].u.list.items[2], NULL, 0));
    CHECK_EQ_INT(out[2].kind, OPREG_VALUE_TUPLE);
    CHECK(out[2].u.list.len == 2 && same_strs(&out[2].u.list.items[0], handles, 3));
    CHECK(out[2].u.list.items[1].kind == OPREG_VALUE_INT && out[2].u.list.items[1].u.i == 7);
    CHECK(out[3].u.floats.len == 2 && out[3].u.floats.items[1] == -1e300);
    CHECK(out[4].u.bools.len == 3 && out[4].u.bools.items[0] && !out[4].u.bools.items[1]);
    CHECK_EQ_STR(out[5].u.s.ptr, "group0");
    CHECK(out[6].kind == OPREG_VALUE_INT && out[6].u.i == -5 && out[6].flags == 0);
    CHECK(out[7].kind == OPREG_VALUE_NONE);
    CHECK(out[8].kind == OPREG_VALUE_STR_LIST && out[8].u.strs.len == 0);
    CHECK(out[9].kind == OPREG_VALUE_LIST && out[9].u.list.len == 0);
    for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
        opreg_value_release(&out[i]);
        CHECK_EQ_INT(out[i].kind, OPREG_VALUE_NONE);
    }
    opreg_value_release(NULL);
    CHECK(!leaks_found());
}

TEST(pack_takes_tensors) {
    DLTensor *a = cpu_f32(4, 1.0f), *b = cpu_f32(2, 5.0f);
    DLTensor *items[3] = { a, NULL, b };
    opreg_value list = opreg_tensor_list_value(items, 3), out;
    CHECK_EQ_INT(opreg_value_pack(&out, &list), OPREG_OK);
    CHECK(out.u.tensors.items != items && out.u.tensors.items[0] == a && !out.u.tensors.items[1]);
    opreg_value_release(&out); /* frees a and b */
    /* A tensor inside a tuple is taken as well. */
    DLTensor *c = cpu_f32(3, 0.0f);
    opreg_value pair[2] = { opreg_int_value(1), opreg_tensor_value(c) };
    opreg_value tuple = opreg_tuple_value(pair, 2);
    CHECK_EQ_INT(opreg_value_pack(&out, &tuple), OPREG_OK);
    opreg_value_release(&out);
    /* A lone tensor is copied as it is and released with the tensor. */
    DLTensor *d = cpu_f32(1, 0.0f);
    opreg_value one = opreg_tensor_value(d);
    CHECK_EQ_INT(opreg_value_pack(&out, &one), OPREG_OK);
    CHECK(out.u.tensor == d);
    opreg_value_release(&out);
    CHECK(!leaks_found());
}

TEST(pack_refusals) {
    opreg_value out = opreg_int_value(1), bad = opreg_int_list_value(NULL, 3);
    CHECK_EQ_INT(opreg_value_pack(&out, &bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "3 items but a NULL item array");
    CHECK_EQ_INT(out.kind, OPREG_VALUE_NONE);
    opreg_str holes[1] = { { NULL, 4 } };
    bad = opreg_str_list_value(holes, 1);
    CHECK_EQ_INT(opreg_value_pack(&out, &bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "str[] item 0 has 4 bytes but a NULL pointer");
    bad.kind = 99;
    CHECK_EQ_INT(opreg_value_pack(&out, &bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "99 is not a value kind");
    CHECK_EQ_INT(opreg_value_pack(NULL, &bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(opreg_value_pack(&out, NULL), OPREG_ERR_INVALID_ARGUMENT);
    /* 40 lists, one inside the next. */
    opreg_value nest[40];
    nest[0] = opreg_int_list_value(NULL, 0);
    for (int i = 1; i < 40; i++)
        nest[i] = opreg_list_value(&nest[i - 1], 1);
    CHECK_EQ_INT(opreg_value_pack(&out, &nest[39]), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "nest deeper than 32");
    CHECK_EQ_INT(opreg_value_pack(&out, &nest[30]), OPREG_OK);
    opreg_value_release(&out);
    /* A borrowed value is not freed (LeakSanitizer would see a bad free). */
    opreg_value borrowed = opreg_str_list_value(handles, 3);
    opreg_value_release(&borrowed);
    CHECK(borrowed.kind == OPREG_VALUE_NONE && handles[1].len == 6);
    CHECK(!leaks_found());
}

/* ---- boxed calls on the new kinds -------------------------------------------------- */

static opreg_status take_all(void *ctx, const opreg_op *op, const opreg_value *args,
                             opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

TEST(boxed_checks) {
    opreg_registry *reg = NULL;
    opreg_library *lib = NULL;
    CHECK_EQ_INT(opreg_registry_create(&reg), OPREG_OK);
    CHECK_EQ_INT(
        opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "v", OPREG_KEY_CPU, __FILE__, __LINE__),
        OPREG_OK);
    const opreg_op *op = NULL;
    CHECK_EQ_INT(opreg_library_def(&op, lib,
                                   "f(str[] s, int[][] ii, int?[] oi, (str, int) t, Any a, "
                                   "str e=\"x\") -> ()"),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_impl_fn(lib, "f", OPREG_KEY_CPU, take_all, NULL), OPREG_OK);
    opreg_value rows[2] = { opreg_int_list_value(row0, 2), opreg_int_list_value(row1, 1) };
    opreg_value ois[2] = { opreg_int_value(3), opreg_none() };
    opreg_value tup[2] = { opreg_str_value("x"), opreg_int_value(2) };
    opreg_value args[5] = { opreg_str_list_value(handles, 3), opreg_list_value(rows, 2),
                            opreg_list_value(ois, 2), opreg_tuple_value(tup, 2),
                            opreg_float_value(1.5) };
    CHECK_EQ_INT(opreg_call_boxed(op, args, 5, NULL, 0, NULL, 0), OPREG_OK);
    opreg_arg_plan plan = { .struct_size = sizeof plan };
    CHECK_EQ_INT(opreg_op_arg_plan(&plan, op, 1), OPREG_OK);
    CHECK_EQ_INT(plan.kind, OPREG_VALUE_LIST);
    CHECK_EQ_STR(plan.type_text, "int[][]");
    CHECK(plan.type && opreg_type_get_kind(plan.type) == OPREG_TYPE_LIST);
    CHECK_EQ_INT(opreg_op_arg_plan(&plan, op, 3), OPREG_OK);
    CHECK_EQ_INT(plan.kind, OPREG_VALUE_TUPLE);
    CHECK_EQ_STR(plan.type_text, "(str, int)");
    CHECK_EQ_INT(opreg_op_arg_plan(&plan, op, 4), OPREG_OK);
    CHECK_EQ_INT(plan.kind, OPREG_ARG_KIND_ANY);

    /* An int where an int list belongs, two levels down. */
    opreg_value wrong_rows[2] = { opreg_int_list_value(row0, 2), opreg_int_value(9) };
    opreg_value bad[5];
    memcpy(bad, args, sizeof bad);
    bad[1] = opreg_list_value(wrong_rows, 2);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "v::f: argument 'ii' (int[][]) item [1]: expected a value of type int[] but "
                   "got int");
    /* None in an int?[] is fine, in an int[][] it is not. */
    opreg_value none_rows[1] = { opreg_none() };
    bad[1] = opreg_list_value(none_rows, 1);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "item [0]: expected a value of type int[] but got None");
    memcpy(bad, args, sizeof bad);
    bad[3] = opreg_tuple_value(tup, 1);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "a tuple of 1 values, for a tuple type of 2");
    opreg_value swapped[2] = { opreg_int_value(2), opreg_str_value("x") };
    bad[3] = opreg_tuple_value(swapped, 2);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "item [0]: expected a value of type str but got int");
    memcpy(bad, args, sizeof bad);
    bad[0] = opreg_str_list_value(NULL, 2);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "2 items but a NULL item array");
    bad[0] = opreg_int_list_value(row0, 2);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "expected a value of type str[] but got int[]");
    /* Any takes any value, but still one of a kind, well formed. */
    memcpy(bad, args, sizeof bad);
    bad[4] = opreg_list_value(NULL, 1);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    bad[4].kind = 77;
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_ERR_TYPE_MISMATCH);
    bad[4] = opreg_str_list_value(handles, 3);
    CHECK_EQ_INT(opreg_call_boxed(op, bad, 5, NULL, 0, NULL, 0), OPREG_OK);
    /* A tensor inside a tuple type is still out of reach. */
    CHECK_EQ_INT(opreg_library_def(NULL, lib, "g((int, Tensor) p) -> ()"), OPREG_OK);
    const opreg_op *g = NULL;
    CHECK_EQ_INT(opreg_op_find(&g, reg, "v::g"), OPREG_OK);
    CHECK_EQ_INT(opreg_op_arg_plan(&plan, g, 0), OPREG_OK);
    CHECK_EQ_INT(plan.kind, OPREG_ARG_KIND_UNSUPPORTED);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
    CHECK(!leaks_found());
}

/* ---- the values plugin --------------------------------------------------------------- */

static opreg_registry *reg;

static const opreg_op *find(const char *name) {
    const opreg_op *op = NULL;
    if (opreg_op_find(&op, reg, name) != OPREG_OK) TEST_FAIL_AT("no op %s", name);
    return op;
}

TEST(echo_round_trip) {
    const opreg_op *echo = find("values_test::echo");
    if (!echo) return;
    opreg_value rows[2] = { opreg_int_list_value(row0, 2), opreg_int_list_value(row1, 1) };
    const double fs[] = { 1.25, 3.0 };
    const bool bs[] = { false, true };
    opreg_value ois[3] = { opreg_int_value(3), opreg_none(), opreg_int_value(-1) };
    opreg_value tup[2] = { opreg_str_list_value(handles, 2), opreg_int_value(11) };
    int anchor = 0;
    opreg_value args[12] = {
        opreg_str_list_value(handles, 3),
        opreg_list_value(rows, 2),
        opreg_float_list_value(fs, 2),
        opreg_bool_list_value(bs, 2),
        opreg_list_value(ois, 3),
        opreg_float_value(2.5),
        opreg_tuple_value(tup, 2),
        opreg_handle_value(&anchor),
        opreg_str_value("name"),
        opreg_list_value(tup, 2),
        opreg_dtype_value(OPREG_DTYPE_BF16),
        opreg_device_value((DLDevice){ kDLCPU, 0 }),
    };
    opreg_value rets[13];
    CHECK_EQ_INT(opreg_call_boxed(echo, args, 12, NULL, 0, rets, 13), OPREG_OK);
    CHECK(same_strs(&rets[0], handles, 3));
    CHECK(rets[1].kind == OPREG_VALUE_LIST && same_ints(&rets[1].u.list.items[1], row1, 1));
    CHECK(rets[2].u.floats.items[0] == 1.25 && rets[3].u.bools.items[1]);
    CHECK(rets[4].u.list.len == 3 && rets[4].u.list.items[1].kind == OPREG_VALUE_NONE &&
          rets[4].u.list.items[2].u.i == -1);
    CHECK(rets[5].kind == OPREG_VALUE_FLOAT && rets[5].u.f == 2.5);
    CHECK(rets[6].kind == OPREG_VALUE_TUPLE && same_strs(&rets[6].u.list.items[0], handles, 2));
    CHECK(opreg_value_handle(&rets[7]) == &anchor);
    CHECK_EQ_STR(rets[8].u.s.ptr, "name");
    CHECK(rets[9].kind == OPREG_VALUE_LIST && rets[9].u.list.items[1].u.i == 11);
    CHECK(rets[10].u.dtype == OPREG_DTYPE_BF16 && rets[11].u.device.device_type == kDLCPU);
    CHECK(rets[12].kind == OPREG_VALUE_STR && rets[12].u.s.len == 0); /* the default */
    for (int i = 0; i < 13; i++)
        opreg_value_release(&rets[i]);

    const opreg_op *et = find("values_test::echo_tensors");
    DLTensor *a = cpu_f32(3, 1.0f), *b = cpu_f32(2, 7.0f);
    DLTensor *xs[2] = { a, b }, *ys[2] = { NULL, b };
    opreg_value targs[2] = { opreg_tensor_list_value(xs, 2), opreg_tensor_list_value(ys, 2) };
    CHECK_EQ_INT(opreg_call_boxed(et, targs, 2, NULL, 0, rets, 2), OPREG_OK);
    CHECK(rets[0].kind == OPREG_VALUE_TENSOR_LIST && rets[0].u.tensors.len == 2);
    CHECK(rets[0].u.tensors.items[0] != a &&
          ((float *)rets[0].u.tensors.items[1]->data)[1] == 8.0f);
    CHECK(rets[1].u.tensors.items[0] == NULL && rets[1].u.tensors.items[1] != NULL);
    opreg_value_release(&rets[0]);
    opreg_value_release(&rets[1]);
    opreg_tensor_free(a);
    opreg_tensor_free(b);
    CHECK(!leaks_found());
}

TEST(custom_ar_flow) {
    const opreg_op *size = find("_C_custom_ar::meta_size"),
                   *init = find("_C_custom_ar::init_custom_ar");
    if (!size || !init) return;
    opreg_value r[6];
    CHECK_EQ_INT(opreg_call_boxed(size, NULL, 0, NULL, 0, r, 1), OPREG_OK);
    CHECK(r[0].kind == OPREG_VALUE_INT && r[0].u.i > 0);
    DLTensor *meta = cpu_f32(4, 0), *rank_data = cpu_f32(4, 0), *inp = cpu_f32(8, 1.0f),
             *out = cpu_f32(8, 0);
    const int64_t offs[3] = { 0, 64, 128 };
    opreg_value a[6] = { opreg_tensor_value(meta),
                         opreg_tensor_value(rank_data),
                         opreg_str_list_value(handles, 3),
                         opreg_int_list_value(offs, 3),
                         opreg_int_value(1),
                         opreg_bool_value(true) };
    CHECK_EQ_INT(opreg_call_boxed(init, a, 6, NULL, 0, r, 1), OPREG_OK);
    opreg_value fa = r[0];
    CHECK(fa.kind == OPREG_VALUE_INT && fa.u.i != 0);
    /* Bad inputs are the kernel's to refuse. */
    a[4] = opreg_int_value(3);
    CHECK_EQ_INT(opreg_call_boxed(init, a, 6, NULL, 0, r, 1), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "rank is not below the number of handles");

    opreg_value sa[4] = { opreg_tensor_value(inp), opreg_int_value(1 << 20), opreg_int_value(2),
                          opreg_bool_value(false) };
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::should_custom_ar"), sa, 4, NULL, 0, r, 1),
                 OPREG_OK);
    CHECK(r[0].kind == OPREG_VALUE_BOOL && r[0].u.b); /* 32 bytes, two ranks */
    sa[2] = opreg_int_value(4);
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::should_custom_ar"), sa, 4, NULL, 0, r, 1),
                 OPREG_OK);
    CHECK(!r[0].u.b); /* four ranks without full NVLink */

    opreg_value ra[3] = { fa, opreg_tensor_value(inp), opreg_tensor_value(out) };
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::all_reduce_reg"), ra, 3, NULL, 0, NULL, 0),
                 OPREG_OK);
    CHECK(((float *)out->data)[7] == 8.0f);
    opreg_value ua[4] = { fa, opreg_tensor_value(inp), opreg_tensor_value(out),
                          opreg_tensor_value(out) };
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::all_reduce_unreg"), ua, 4, NULL, 0, NULL, 0),
                 OPREG_OK);

    const int64_t boffs[2] = { 16, 32 };
    opreg_value ba[4] = { fa, opreg_tensor_value(inp), opreg_str_list_value(handles + 1, 2),
                          opreg_int_list_value(boffs, 2) };
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::register_buffer"), ba, 4, NULL, 0, NULL, 0),
                 OPREG_OK);
    CHECK_EQ_INT(
        opreg_call_boxed(find("_C_custom_ar::get_graph_buffer_ipc_meta"), &fa, 1, NULL, 0, r, 2),
        OPREG_OK);
    CHECK(same_strs(&r[0], handles + 1, 2) && same_ints(&r[1], boffs, 2));
    opreg_value_release(&r[0]);
    opreg_value_release(&r[1]);

    opreg_value rows[2] = { opreg_int_list_value(row0, 2), opreg_int_list_value(row1, 1) };
    opreg_value ga[3] = { fa, opreg_str_list_value(handles, 2), opreg_list_value(rows, 2) };
    CHECK_EQ_INT(
        opreg_call_boxed(find("_C_custom_ar::register_graph_buffers"), ga, 3, NULL, 0, NULL, 0),
        OPREG_OK);
    ga[2] = opreg_list_value(rows, 1);
    CHECK_EQ_INT(
        opreg_call_boxed(find("_C_custom_ar::register_graph_buffers"), ga, 3, NULL, 0, NULL, 0),
        OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "one offset list per handle");
    CHECK_EQ_INT(opreg_call_boxed(find("values_test::custom_ar_state"), &fa, 1, NULL, 0, r, 6),
                 OPREG_OK);
    CHECK(same_strs(&r[0], handles, 3) && same_ints(&r[1], offs, 3));
    CHECK(r[2].u.i == 1 && r[3].u.b);
    CHECK(same_strs(&r[4], handles, 2) && r[5].u.list.len == 2 &&
          same_ints(&r[5].u.list.items[0], row0, 2));
    for (int i = 0; i < 6; i++)
        opreg_value_release(&r[i]);
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::dispose"), &fa, 1, NULL, 0, NULL, 0),
                 OPREG_OK);
    opreg_value zero = opreg_int_value(0);
    CHECK_EQ_INT(opreg_call_boxed(find("_C_custom_ar::dispose"), &zero, 1, NULL, 0, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    opreg_tensor_free(meta);
    opreg_tensor_free(rank_data);
    opreg_tensor_free(inp);
    opreg_tensor_free(out);
    CHECK(!leaks_found());
}

TEST(c10d_functional) {
    static const char *names[] = {
        "all_reduce",
        "all_reduce_",
        "all_reduce_coalesced",
        "all_reduce_coalesced_",
        "all_gather_into_tensor",
        "all_gather_into_tensor_coalesced",
        "all_gather_into_tensor_out",
        "reduce_scatter_tensor",
        "reduce_scatter_tensor_coalesced",
        "reduce_scatter_tensor_out",
        "all_to_all_single",
        "broadcast",
        "broadcast_",
        "isend",
        "irecv",
        "batch_p2p_ops",
        "wait_tensor",
        "wait_tensors",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char full[96];
        snprintf(full, sizeof full, "_c10d_functional::%s", names[i]);
        CHECK(find(full) != NULL);
    }
    DLTensor *x = cpu_f32(5, 2.0f), *o = cpu_f32(5, 0);
    opreg_value r;
    opreg_value ar[3] = { opreg_tensor_value(x), opreg_str_value("sum"),
                          opreg_str_value("test_world") };
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::all_reduce"), ar, 3, NULL, 0, &r, 1),
                 OPREG_OK);
    CHECK(r.kind == OPREG_VALUE_TENSOR && r.u.tensor != x &&
          ((float *)r.u.tensor->data)[4] == 6.0f);
    opreg_value_release(&r);
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::all_reduce_"), ar, 3, NULL, 0, &r, 1),
                 OPREG_OK);
    CHECK(r.u.tensor->data == x->data); /* the input, as a view */
    opreg_value_release(&r);
    DLTensor *xs[2] = { x, o };
    opreg_value co[3] = { opreg_tensor_list_value(xs, 2), opreg_str_value("avg"),
                          opreg_str_value("test_world") };
    CHECK_EQ_INT(
        opreg_call_boxed(find("_c10d_functional::all_reduce_coalesced"), co, 3, NULL, 0, &r, 1),
        OPREG_OK);
    CHECK(r.kind == OPREG_VALUE_TENSOR_LIST && r.u.tensors.len == 2 &&
          r.u.tensors.items[0]->data != x->data);
    opreg_value_release(&r);
    opreg_value ag[2] = { opreg_tensor_value(x), opreg_int_value(1) };
    opreg_kwarg kw[2] = { { "group_name", opreg_str_value("test_world") },
                          { "out", opreg_tensor_value(o) } };
    CHECK_EQ_INT(
        opreg_call_boxed(find("_c10d_functional::all_gather_into_tensor_out"), ag, 2, kw, 2, &r, 1),
        OPREG_OK);
    CHECK(((float *)o->data)[0] == 2.0f && r.u.tensor->data == o->data);
    opreg_value_release(&r);
    const int64_t splits[1] = { 5 };
    opreg_value a2a[4] = { opreg_tensor_value(x), opreg_int_list_value(splits, 1),
                           opreg_int_list_value(splits, 1), opreg_str_value("test_world") };
    CHECK_EQ_INT(
        opreg_call_boxed(find("_c10d_functional::all_to_all_single"), a2a, 4, NULL, 0, &r, 1),
        OPREG_OK);
    opreg_value_release(&r);
    static const opreg_str p2p_ops[1] = { { "isend", 5 } };
    const int64_t peers[1] = { 0 };
    opreg_value p2p[5] = { opreg_str_list_value(p2p_ops, 1), opreg_int_list_value(peers, 1),
                           opreg_int_list_value(peers, 1), opreg_tensor_list_value(xs, 1),
                           opreg_str_value("test_world") };
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::batch_p2p_ops"), p2p, 5, NULL, 0, &r, 1),
                 OPREG_OK);
    CHECK(r.u.tensors.len == 1 && r.u.tensors.items[0]->data == x->data);
    opreg_value_release(&r);

    /* Refusals: an unknown group, a group_name that is no str, an unknown
     * reduction, a group size and a peer that test_world cannot have. */
    ar[2] = opreg_str_value("world8");
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::all_reduce"), ar, 3, NULL, 0, &r, 1),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "no group named 'world8'");
    ar[2] = opreg_int_value(3);
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::all_reduce"), ar, 3, NULL, 0, &r, 1),
                 OPREG_ERR_TYPE_MISMATCH);
    ar[2] = opreg_str_value("test_world");
    ar[1] = opreg_str_value("median");
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::all_reduce"), ar, 3, NULL, 0, &r, 1),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "reduce_op");
    ag[1] = opreg_int_value(2);
    kw[1].value = opreg_tensor_value(o);
    CHECK_EQ_INT(
        opreg_call_boxed(find("_c10d_functional::all_gather_into_tensor_out"), ag, 2, kw, 2, &r, 1),
        OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "group_size must be 1");
    opreg_value bc[3] = { opreg_tensor_value(x), opreg_int_value(1),
                          opreg_str_value("test_world") };
    CHECK_EQ_INT(opreg_call_boxed(find("_c10d_functional::broadcast"), bc, 3, NULL, 0, &r, 1),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "peer rank must be 0");
    opreg_tensor_free(x);
    opreg_tensor_free(o);
    CHECK(!leaks_found());
}

int main(void) {
    RUN(pack_every_kind);
    RUN(pack_takes_tensors);
    RUN(pack_refusals);
    RUN(boxed_checks);
    reg = opreg_registry_default();
    opreg_plugin *plugin = NULL;
    if (opreg_plugin_load(&plugin, reg, PLUGIN_VALUES) != OPREG_OK) {
        fprintf(stderr, "cannot load %s: %s\n", PLUGIN_VALUES, opreg_last_error());
        return 1;
    }
    RUN(echo_round_trip);
    RUN(custom_ar_flow);
    RUN(c10d_functional);
    opreg_plugin_unload(plugin);
    opreg_registry_reclaim(reg);
    return test_summary();
}
