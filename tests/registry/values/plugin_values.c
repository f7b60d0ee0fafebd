/* A test plugin whose ops take and return every kind of value that the
 * collective ops of inference engines need, on CPU test kernels:
 *
 * - `_C_custom_ar`: the custom all-reduce ops of vLLM's first TORCH_LIBRARY
 *   era (str[] of IPC handles, int[] and int[][] of offsets, an `int` that
 *   carries a pointer to the kernel library's state, a `(str[], int[])`
 *   return). The state is this process's only: "all-reduce" over it is a
 *   copy, as on a group of one rank.
 * - `_c10d_functional`: PyTorch's functional collectives, with the schemas
 *   of PyTorch 2.15 (`Any` group names, `Tensor[]` returns, in-place forms
 *   that return their input), on one group of one rank named "test_world".
 * - `values_test`: `echo` returns every argument it is given, packed;
 *   `custom_ar_state` reads a custom all-reduce state back.
 *
 * The tests (test_values.c, tests/python/test_values.py) round-trip each
 * value through C and Python. Kernels reach opreg only through the host
 * table, returns through its `value_pack` (plugin ABI 1.3). */
#include "opreg/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const opreg_host *host;

static opreg_status fail(const char *fmt, const char *what) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    return host->set_error(OPREG_ERR_INVALID_ARGUMENT, msg);
}

/* ---- owned copies for returns ------------------------------------------------ */

/* A new contiguous CPU tensor with @p t's shape, dtype and bytes. */
static opreg_status copy_of(DLTensor **out, const DLTensor *t) {
    opreg_dtype dt;
    opreg_status st = host->dtype_from_dlpack(&dt, t->dtype);
    if (st == OPREG_OK) st = host->tensor_empty(out, t->device, dt, t->ndim, t->shape);
    if (st != OPREG_OK) return st;
    if (!host->tensor_is_contiguous(t)) {
        host->tensor_free(*out);
        *out = NULL;
        return fail("%s: the test kernels take contiguous tensors", "values_test");
    }
    size_t n = host->tensor_nbytes(t);
    if (n) memcpy((*out)->data, (const char *)t->data + t->byte_offset, n);
    return OPREG_OK;
}

/* A view of @p t (the return of an in-place form: `-> Tensor(a!)`). */
static opreg_status view_of(DLTensor **out, const DLTensor *t) {
    return host->tensor_view(out, t, t->ndim, t->shape, t->strides, 0);
}

/* rets[0] = a Tensor[] of copies (or views) of @p items. */
static opreg_status return_tensors(opreg_value *ret, DLTensor *const *items, size_t n, bool views) {
    DLTensor **made = calloc(n ? n : 1, sizeof *made);
    if (!made) return host->set_error(OPREG_ERR_OUT_OF_MEMORY, "values_test: out of memory");
    opreg_status st = OPREG_OK;
    for (size_t i = 0; i < n && st == OPREG_OK; i++)
        if (items[i]) st = views ? view_of(&made[i], items[i]) : copy_of(&made[i], items[i]);
    opreg_value v = opreg_tensor_list_value(made, n);
    if (st == OPREG_OK) st = host->value_pack(ret, &v); /* takes the tensors */
    if (st != OPREG_OK)
        for (size_t i = 0; i < n; i++)
            host->tensor_free(made[i]);
    free(made);
    return st;
}

/* ---- _C_custom_ar ---------------------------------------------------------------- */

/* What init_custom_ar and the registrations keep; its address is the `fa`. */
struct custom_ar {
    opreg_value handles; /* str[]: one IPC handle per rank */
    opreg_value offsets; /* int[] */
    int64_t rank;
    bool full_nvlink;
    opreg_value buffer_handles; /* register_buffer's */
    opreg_value buffer_offsets;
    opreg_value graph_handles; /* register_graph_buffers' */
    opreg_value graph_offsets; /* int[][] */
};

static void keep(opreg_value *slot, const opreg_value *v, opreg_status *st) {
    if (*st != OPREG_OK) return;
    host->value_release(slot);
    *st = host->value_pack(slot, v);
}

static opreg_status state_of(struct custom_ar **out, const opreg_value *fa) {
    *out = opreg_value_handle(fa);
    if (!*out) return fail("%s: fa is 0, not a custom all-reduce state", "_C_custom_ar");
    return OPREG_OK;
}

static opreg_status meta_size(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    (void)ctx, (void)op, (void)args;
    rets[0] = opreg_int_value((int64_t)sizeof(struct custom_ar));
    return OPREG_OK;
}

/* init_custom_ar(Tensor meta, Tensor rank_data, str[] handles, int[] offsets,
 *                int rank, bool full_nvlink) -> int */
static opreg_status init_custom_ar(void *ctx, const opreg_op *op, const opreg_value *args,
                                   opreg_value *rets) {
    (void)ctx, (void)op;
    size_t world = args[2].u.strs.len;
    if (args[3].u.ints.len != world)
        return fail("%s: handles and offsets differ in length", "_C_custom_ar::init_custom_ar");
    if (args[4].u.i < 0 || (size_t)args[4].u.i >= world)
        return fail("%s: rank is not below the number of handles", "_C_custom_ar::init_custom_ar");
    struct custom_ar *fa = calloc(1, sizeof *fa);
    if (!fa) return host->set_error(OPREG_ERR_OUT_OF_MEMORY, "init_custom_ar: out of memory");
    opreg_status st = OPREG_OK;
    keep(&fa->handles, &args[2], &st);
    keep(&fa->offsets, &args[3], &st);
    if (st != OPREG_OK) {
        host->value_release(&fa->handles);
        free(fa);
        return st;
    }
    fa->rank = args[4].u.i;
    fa->full_nvlink = args[5].u.b;
    rets[0] = opreg_handle_value(fa);
    return OPREG_OK;
}

/* should_custom_ar(Tensor inp, int max_size, int world_size, bool full_nvlink) -> bool:
 * as vLLM decides it: a 16-byte multiple within max_size, on two ranks or
 * over full NVLink. */
static opreg_status should_custom_ar(void *ctx, const opreg_op *op, const opreg_value *args,
                                     opreg_value *rets) {
    (void)ctx, (void)op;
    int64_t bytes = (int64_t)host->tensor_nbytes(args[0].u.tensor);
    bool ok = bytes % 16 == 0 && bytes <= args[1].u.i && (args[2].u.i == 2 || args[3].u.b);
    rets[0] = opreg_bool_value(ok);
    return OPREG_OK;
}

/* out = inp: the sum over a group of one rank. */
static opreg_status copy_into(const DLTensor *inp, DLTensor *out) {
    if (host->tensor_nbytes(inp) != host->tensor_nbytes(out))
        return fail("%s: inp and out differ in size", "_C_custom_ar");
    memcpy((char *)out->data + out->byte_offset, (const char *)inp->data + inp->byte_offset,
           host->tensor_nbytes(inp));
    return OPREG_OK;
}

/* all_reduce_reg(int fa, Tensor inp, Tensor! out) -> () */
static opreg_status all_reduce_reg(void *ctx, const opreg_op *op, const opreg_value *args,
                                   opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    return st == OPREG_OK ? copy_into(args[1].u.tensor, args[2].u.tensor) : st;
}

/* all_reduce_unreg(int fa, Tensor inp, Tensor reg_buffer, Tensor! out) -> () */
static opreg_status all_reduce_unreg(void *ctx, const opreg_op *op, const opreg_value *args,
                                     opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st == OPREG_OK &&
        host->tensor_nbytes(args[2].u.tensor) < host->tensor_nbytes(args[1].u.tensor))
        return fail("%s: reg_buffer is smaller than inp", "_C_custom_ar::all_reduce_unreg");
    return st == OPREG_OK ? copy_into(args[1].u.tensor, args[3].u.tensor) : st;
}

/* dispose(int fa) -> () */
static opreg_status dispose(void *ctx, const opreg_op *op, const opreg_value *args,
                            opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st != OPREG_OK) return st;
    host->value_release(&fa->handles);
    host->value_release(&fa->offsets);
    host->value_release(&fa->buffer_handles);
    host->value_release(&fa->buffer_offsets);
    host->value_release(&fa->graph_handles);
    host->value_release(&fa->graph_offsets);
    free(fa);
    return OPREG_OK;
}

/* register_buffer(int fa, Tensor t, str[] handles, int[] offsets) -> () */
static opreg_status register_buffer(void *ctx, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st == OPREG_OK && args[2].u.strs.len != args[3].u.ints.len)
        return fail("%s: handles and offsets differ in length", "_C_custom_ar::register_buffer");
    keep(&fa->buffer_handles, &args[2], &st);
    keep(&fa->buffer_offsets, &args[3], &st);
    return st;
}

/* get_graph_buffer_ipc_meta(int fa) -> (str[], int[]): the handles and
 * offsets of this rank's buffers (those register_buffer was given). */
static opreg_status get_graph_buffer_ipc_meta(void *ctx, const opreg_op *op,
                                              const opreg_value *args, opreg_value *rets) {
    (void)ctx, (void)op;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st != OPREG_OK) return st;
    opreg_value h = fa->buffer_handles.kind ? fa->buffer_handles : opreg_str_list_value(NULL, 0);
    opreg_value o = fa->buffer_offsets.kind ? fa->buffer_offsets : opreg_int_list_value(NULL, 0);
    st = host->value_pack(&rets[0], &h);
    if (st == OPREG_OK) st = host->value_pack(&rets[1], &o);
    if (st != OPREG_OK) host->value_release(&rets[0]);
    return st;
}

/* register_graph_buffers(int fa, str[] handles, int[][] offsets) -> () */
static opreg_status register_graph_buffers(void *ctx, const opreg_op *op, const opreg_value *args,
                                           opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st == OPREG_OK && args[1].u.strs.len != args[2].u.list.len)
        return fail("%s: one offset list per handle", "_C_custom_ar::register_graph_buffers");
    keep(&fa->graph_handles, &args[1], &st);
    keep(&fa->graph_offsets, &args[2], &st);
    return st;
}

/* values_test::custom_ar_state(int fa) -> (str[], int[], int, bool, str[], int[][]) */
static opreg_status custom_ar_state(void *ctx, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)ctx, (void)op;
    struct custom_ar *fa;
    opreg_status st = state_of(&fa, &args[0]);
    if (st != OPREG_OK) return st;
    opreg_value gh = fa->graph_handles.kind ? fa->graph_handles : opreg_str_list_value(NULL, 0);
    opreg_value go = fa->graph_offsets.kind ? fa->graph_offsets : opreg_list_value(NULL, 0);
    const opreg_value *from[6] = { &fa->handles, &fa->offsets, NULL, NULL, &gh, &go };
    for (int i = 0; i < 6 && st == OPREG_OK; i++)
        if (from[i]) st = host->value_pack(&rets[i], from[i]);
    if (st != OPREG_OK) {
        for (int i = 0; i < 6; i++)
            host->value_release(&rets[i]);
        return st;
    }
    rets[2] = opreg_int_value(fa->rank);
    rets[3] = opreg_bool_value(fa->full_nvlink);
    return OPREG_OK;
}

/* ---- values_test::echo ------------------------------------------------------------- */

/* echo(...) -> (...): each argument back, in order, as an owned copy. */
static opreg_status echo(void *ctx, const opreg_op *op, const opreg_value *args,
                         opreg_value *rets) {
    size_t n = (size_t)(uintptr_t)ctx;
    (void)op;
    for (size_t i = 0; i < n; i++) {
        opreg_status st = host->value_pack(&rets[i], &args[i]);
        if (st != OPREG_OK) {
            for (size_t j = 0; j < i; j++)
                host->value_release(&rets[j]);
            return st;
        }
    }
    return OPREG_OK;
}

/* echo_tensors(Tensor[] xs, Tensor?[] ys) -> (Tensor[], Tensor?[]): copies. */
static opreg_status echo_tensors(void *ctx, const opreg_op *op, const opreg_value *args,
                                 opreg_value *rets) {
    (void)ctx, (void)op;
    opreg_status st =
        return_tensors(&rets[0], args[0].u.tensors.items, args[0].u.tensors.len, false);
    if (st == OPREG_OK)
        st = return_tensors(&rets[1], args[1].u.tensors.items, args[1].u.tensors.len, false);
    if (st != OPREG_OK) host->value_release(&rets[0]);
    return st;
}

/* ---- _c10d_functional on a group of one rank ---------------------------------------- */

/* Where a collective's arguments sit (-1: it has none of that kind). */
struct c10d_op {
    const char *schema;
    int tensor;   /* the Tensor or Tensor[] argument */
    int reduce;   /* the reduce_op (str or Any) */
    int size;     /* group_size */
    int peer;     /* src or dst rank */
    int group;    /* group_name (str or Any) */
    int out;      /* a kwarg-only `Tensor(a!) out` */
    bool inplace; /* returns views of its input */
};

static opreg_status check_group(const struct c10d_op *c, const opreg_value *args) {
    const opreg_value *g = &args[c->group];
    if (g->kind != OPREG_VALUE_STR)
        return host->set_error(OPREG_ERR_TYPE_MISMATCH,
                               "_c10d_functional: group_name must be a str naming a group");
    if (g->u.s.len != 10 || memcmp(g->u.s.ptr, "test_world", 10) != 0) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(g->u.s.len < 40 ? g->u.s.len : 40), g->u.s.ptr);
        return fail("_c10d_functional: no group named '%s' (this test has 'test_world')", name);
    }
    if (c->reduce >= 0) {
        const opreg_value *r = &args[c->reduce];
        static const char *ops[] = { "sum", "avg", "product", "min", "max", "band", "bor", "bxor" };
        bool known = false;
        for (size_t i = 0; r->kind == OPREG_VALUE_STR && i < sizeof ops / sizeof *ops; i++)
            known |= r->u.s.len == strlen(ops[i]) && memcmp(r->u.s.ptr, ops[i], r->u.s.len) == 0;
        if (!known) return fail("%s: reduce_op is not a reduction it knows", "_c10d_functional");
    }
    if (c->size >= 0 && args[c->size].u.i != 1)
        return fail("%s: group_size must be 1 for test_world", "_c10d_functional");
    if (c->peer >= 0 && args[c->peer].u.i != 0)
        return fail("%s: the peer rank must be 0 in test_world", "_c10d_functional");
    return OPREG_OK;
}

/* Every collective of a group of one rank returns its input: a copy, a
 * view for the in-place forms, or `out` filled and returned. */
static opreg_status c10d_one_rank(void *ctx, const opreg_op *op, const opreg_value *args,
                                  opreg_value *rets) {
    const struct c10d_op *c = ctx;
    (void)op;
    opreg_status st = check_group(c, args);
    if (st != OPREG_OK) return st;
    const opreg_value *in = &args[c->tensor];
    if (in->kind == OPREG_VALUE_TENSOR_LIST)
        return return_tensors(&rets[0], in->u.tensors.items, in->u.tensors.len, c->inplace);
    DLTensor *t = NULL;
    if (c->out >= 0) {
        st = copy_into(in->u.tensor, args[c->out].u.tensor);
        if (st == OPREG_OK) st = view_of(&t, args[c->out].u.tensor);
    } else {
        st = c->inplace ? view_of(&t, in->u.tensor) : copy_of(&t, in->u.tensor);
    }
    if (st == OPREG_OK) rets[0] = opreg_tensor_value(t);
    return st;
}

/* The collectives of PyTorch 2.15's _c10d_functional, as it prints them. */
static const struct c10d_op c10d_ops[] = {
    { "all_reduce(Tensor input, Any reduce_op, Any group_name) -> Tensor", 0, 1, -1, -1, 2, -1,
      false },
    { "all_reduce_(Tensor(a!) input, Any reduce_op, Any group_name) -> Tensor(a!)", 0, 1, -1, -1, 2,
      -1, true },
    { "all_reduce_coalesced(Tensor[] inputs, Any reduce_op, Any group_name) -> Tensor[]", 0, 1, -1,
      -1, 2, -1, false },
    { "all_reduce_coalesced_(Tensor[](a!) inputs, Any reduce_op, Any group_name) -> Tensor[](a!)",
      0, 1, -1, -1, 2, -1, true },
    { "all_gather_into_tensor(Tensor input, int group_size, Any group_name) -> Tensor", 0, -1, 1,
      -1, 2, -1, false },
    { "all_gather_into_tensor_coalesced(Tensor[] inputs, int group_size, Any group_name) -> "
      "Tensor[]",
      0, -1, 1, -1, 2, -1, false },
    { "all_gather_into_tensor_out(Tensor input, int group_size, Any group_name, *, Tensor(a!) out) "
      "-> Tensor(a!)",
      0, -1, 1, -1, 2, 3, false },
    { "reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, Any group_name) -> "
      "Tensor",
      0, 1, 2, -1, 3, -1, false },
    { "reduce_scatter_tensor_coalesced(Tensor[] inputs, str reduce_op, int group_size, Any "
      "group_name) -> Tensor[]",
      0, 1, 2, -1, 3, -1, false },
    { "reduce_scatter_tensor_out(Tensor input, str reduce_op, int group_size, Any group_name, *, "
      "Tensor(a!) out) -> Tensor(a!)",
      0, 1, 2, -1, 3, 4, false },
    { "all_to_all_single(Tensor input, SymInt[] output_split_sizes, SymInt[] input_split_sizes, "
      "Any group_name) -> Tensor",
      0, -1, -1, -1, 3, -1, false },
    { "broadcast(Tensor input, int src, Any group_name) -> Tensor", 0, -1, -1, 1, 2, -1, false },
    { "broadcast_(Tensor(a!) input, int src, Any group_name) -> Tensor(a!)", 0, -1, -1, 1, 2, -1,
      true },
    { "isend(Tensor tensor, int dst, int tag, str group_name) -> Tensor", 0, -1, -1, 1, 3, -1,
      true },
    { "irecv(Tensor tensor, int src, int tag, str group_name) -> Tensor", 0, -1, -1, 1, 3, -1,
      true },
    { "batch_p2p_ops(str[] op_list, int[] peer_list, int[] tag_list, Tensor[] tensors, str "
      "group_name) -> Tensor[]",
      3, -1, -1, -1, 4, -1, true },
};

/* wait_tensor(Tensor tensor) -> Tensor, wait_tensors(Tensor[] tensors) -> Tensor[]:
 * nothing is ever pending on a group of one rank. */
static opreg_status wait_tensor(void *ctx, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)ctx, (void)op;
    if (args[0].kind == OPREG_VALUE_TENSOR_LIST)
        return return_tensors(&rets[0], args[0].u.tensors.items, args[0].u.tensors.len, true);
    DLTensor *t = NULL;
    opreg_status st = view_of(&t, args[0].u.tensor);
    if (st == OPREG_OK) rets[0] = opreg_tensor_value(t);
    return st;
}

/* ---- registration ---------------------------------------------------------------------- */

static opreg_status def_impl(opreg_library *lib, const char *schema, opreg_kernel_fn fn,
                             const void *ctx) {
    const opreg_op *op = NULL;
    opreg_status st = host->library_def(&op, lib, schema);
    if (st != OPREG_OK) return st;
    opreg_kernel k = { fn, (void *)(uintptr_t)ctx, NULL, 0 };
    return host->library_impl(lib, host->op_name(op), OPREG_KEY_CPU, &k);
}

#define ECHO_SCHEMA                                                                                \
    "echo(str[] s, int[][] ii, float[] f, bool[] b, int?[] oi, Scalar x, (str[], int) t, int h, "  \
    "str name, Any any, ScalarType dt, Device dev, str empty=\"\") -> (str[], int[][], float[], "  \
    "bool[], int?[], Scalar, (str[], int), int, str, Any, ScalarType, Device, str)"

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    (void)key, (void)user;
    host = h;
    if (!OPREG_HOST_HAS(h, value_release))
        return h->set_error(OPREG_ERR_ABI_MISMATCH,
                            "values: the host has no value_pack (plugin ABI < 1.3)");
    opreg_library *ar = NULL, *c10d = NULL, *test = NULL;
    opreg_status st =
        h->library_create(&ar, plugin, OPREG_LIBRARY_DEF, "_C_custom_ar", OPREG_KEY_CPU);
    if (st == OPREG_OK)
        st = h->library_create(&c10d, plugin, OPREG_LIBRARY_DEF, "_c10d_functional", OPREG_KEY_CPU);
    if (st == OPREG_OK)
        st = h->library_create(&test, plugin, OPREG_LIBRARY_DEF, "values_test", OPREG_KEY_CPU);
    if (st != OPREG_OK) return st;
    static const struct {
        const char *schema;
        opreg_kernel_fn fn;
    } custom_ar[] = {
        { "init_custom_ar(Tensor meta, Tensor rank_data, str[] handles, int[] offsets, int rank, "
          "bool full_nvlink) -> int",
          init_custom_ar },
        { "should_custom_ar(Tensor inp, int max_size, int world_size, bool full_nvlink) -> bool",
          should_custom_ar },
        { "all_reduce_reg(int fa, Tensor inp, Tensor! out) -> ()", all_reduce_reg },
        { "all_reduce_unreg(int fa, Tensor inp, Tensor reg_buffer, Tensor! out) -> ()",
          all_reduce_unreg },
        { "dispose(int fa) -> ()", dispose },
        { "meta_size() -> int", meta_size },
        { "register_buffer(int fa, Tensor t, str[] handles, int[] offsets) -> ()",
          register_buffer },
        { "get_graph_buffer_ipc_meta(int fa) -> (str[], int[])", get_graph_buffer_ipc_meta },
        { "register_graph_buffers(int fa, str[] handles, int[][] offsets) -> ()",
          register_graph_buffers },
    };
    for (size_t i = 0; i < sizeof custom_ar / sizeof *custom_ar && st == OPREG_OK; i++)
        st = def_impl(ar, custom_ar[i].schema, custom_ar[i].fn, NULL);
    for (size_t i = 0; i < sizeof c10d_ops / sizeof *c10d_ops && st == OPREG_OK; i++)
        st = def_impl(c10d, c10d_ops[i].schema, c10d_one_rank, &c10d_ops[i]);
    if (st == OPREG_OK)
        st = def_impl(c10d, "wait_tensor(Tensor tensor) -> Tensor", wait_tensor, NULL);
    if (st == OPREG_OK)
        st = def_impl(c10d, "wait_tensors(Tensor[] tensors) -> Tensor[]", wait_tensor, NULL);
    if (st == OPREG_OK) st = def_impl(test, ECHO_SCHEMA, echo, (const void *)(uintptr_t)13);
    if (st == OPREG_OK)
        st = def_impl(test, "echo_tensors(Tensor[] xs, Tensor?[] ys) -> (Tensor[], Tensor?[])",
                      echo_tensors, NULL);
    if (st == OPREG_OK)
        st = def_impl(test, "custom_ar_state(int fa) -> (str[], int[], int, bool, str[], int[][])",
                      custom_ar_state, NULL);
    return st;
}

static const opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "values",
    .version = "1.3.0",
    .init = init,
};

OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h);
OPREG_PLUGIN_EXPORT const opreg_plugin_desc *opreg_plugin_entry(const opreg_host *h) {
    (void)h;
    return &desc;
}
