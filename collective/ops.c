/* The `dist` ops: c10d-style collectives that take their process group by
 * name. One kernel per op, registered under CPU, CUDA and Meta alike: it
 * checks the tensors (shapes, dtypes, contiguity, the group size it is
 * told), stops there for Meta tensors, and otherwise hands one
 * opreg_collective to the group (group.c), whose engine must run on the
 * tensors' device type (MPI on the CPU, NCCL on CUDA). An op without
 * tensors (barrier) dispatches to the CPU key and runs on any group.
 *
 * Out-of-place ops write their first argument (`Tensor! out`), as the
 * catalogue's ops do; the in-place ones end in `_`. Splits and group sizes
 * are along dim 0, as in c10d. */
#include "collective/collective_internal.h"

#include "common/internal.h"
#include "ops/ops_internal.h"
#include "opreg/inputs.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define OP_NAME(name) "dist::" #name

static const char *const schemas[] = {
    "all_reduce(Tensor! out, Tensor input, str reduce_op, str group_name) -> ()",
    "all_reduce_(Tensor! input, str reduce_op, str group_name) -> ()",
    "all_gather_into_tensor(Tensor! out, Tensor input, int group_size, str group_name) -> ()",
    "reduce_scatter_tensor(Tensor! out, Tensor input, str reduce_op, int group_size, "
    "str group_name) -> ()",
    "all_to_all_single(Tensor! out, Tensor input, int[] output_split_sizes, "
    "int[] input_split_sizes, str group_name) -> ()",
    "broadcast(Tensor! out, Tensor input, int src, str group_name) -> ()",
    "broadcast_(Tensor! input, int src, str group_name) -> ()",
    "barrier(str group_name) -> ()",
};

/* ---- argument checks ------------------------------------------------------ */

static bool is_meta(const DLTensor *t) {
    return opreg__is_meta(t);
}

/* The first element; NULL for a tensor without data. */
static void *data_of(const DLTensor *t) {
    return opreg__ptr(t);
}

/* The catalogue's tensor checks (ops/ops_internal.h): rank and sizes sane,
 * a known dtype, data unless Meta or empty; then contiguous. */
static opreg_status check_tensor(const char *op, const char *arg, const DLTensor *t,
                                 opreg_dtype *dtype) {
    OPREG__TRY(opreg__chk_tensor(op, arg, t, OPREG__DTS_ANY, -1));
    OPREG__TRY(opreg__chk_contig(op, arg, t));
    *dtype = (opreg_dtype)opreg__dtype_of(t);
    return OPREG_OK;
}

/* out and input: both valid and contiguous, of one dtype; out either is
 * input exactly (in place, when @p alias_ok) or does not overlap it. */
static opreg_status check_pair(const char *op, const DLTensor *out, const DLTensor *in,
                               bool alias_ok, opreg_dtype *dtype) {
    opreg_dtype od;
    OPREG__TRY(check_tensor(op, "out", out, &od));
    OPREG__TRY(check_tensor(op, "input", in, dtype));
    if (od != *dtype)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: 'out' is %s but 'input' is %s", op,
                           opreg_dtype_name(od), opreg_dtype_name(*dtype));
    if (is_meta(out) || is_meta(in)) return OPREG_OK;
    return alias_ok ? opreg__chk_no_partial_overlap(op, "out", out, "input", in)
                    : opreg__chk_no_overlap(op, "out", out, "input", in);
}

static opreg_status same_shape(const char *op, const DLTensor *out, const DLTensor *in) {
    bool same = out->ndim == in->ndim;
    for (int d = 0; same && d < in->ndim; d++)
        same = out->shape[d] == in->shape[d];
    if (!same) return opreg__fail(OPREG_ERR_SHAPE, "%s: 'out' must have the shape of 'input'", op);
    return OPREG_OK;
}

/* big's shape is small's with dim 0 multiplied by n (a 0-d small: big is [n]). */
static opreg_status scaled_dim0(const char *op, const char *big_name, const DLTensor *big,
                                const char *small_name, const DLTensor *small, int64_t n) {
    bool ok;
    if (small->ndim == 0) {
        ok = big->ndim == 1 && big->shape[0] == n;
    } else {
        int64_t rows;
        ok = big->ndim == small->ndim && !__builtin_mul_overflow(small->shape[0], n, &rows) &&
             big->shape[0] == rows;
        for (int d = 1; ok && d < small->ndim; d++)
            ok = big->shape[d] == small->shape[d];
    }
    if (!ok)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: '%s' must have the shape of '%s' with dim 0 times the group size "
                           "%lld",
                           op, big_name, small_name, (long long)n);
    return OPREG_OK;
}

static opreg_status reduce_op_of(const char *op, const opreg_value *v, opreg_reduce_op *out) {
    char name[16];
    if (v->u.s.len >= sizeof name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: unknown reduce_op '%.*s' (one of sum, avg, max, min, product)", op,
                           (int)(v->u.s.len > 64 ? 64 : v->u.s.len), v->u.s.ptr);
    memcpy(name, v->u.s.ptr, v->u.s.len);
    name[v->u.s.len] = '\0';
    if (opreg_reduce_op_from_name(out, name) != OPREG_OK)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: unknown reduce_op '%s' (one of sum, avg, max, min, product)", op,
                           name);
    return OPREG_OK;
}

/* The group's size must be the one the caller states (group_size). */
static opreg_status check_group_size(const char *op, const opreg_value *group, int64_t stated) {
    int size;
    OPREG__TRY(opreg__group_size(group->u.s.ptr, group->u.s.len, op, &size));
    if (stated != size)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: group_size is %lld but process group '%.*s' has %d ranks", op,
                           (long long)stated, (int)group->u.s.len, group->u.s.ptr, size);
    return OPREG_OK;
}

static opreg_status run(const char *op, const opreg_value *group, opreg_collective *c,
                        const DLTensor *shape_of) {
    c->struct_size = sizeof *c;
    return opreg__group_call(group->u.s.ptr, group->u.s.len, op, c, shape_of);
}

/* ---- kernels -------------------------------------------------------------- */

/* all_reduce(Tensor! out, Tensor input, str reduce_op, str group_name) */
static opreg_status dist_all_reduce(void *context, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(all_reduce);
    DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_ALL_REDUCE };
    OPREG__TRY(check_pair(name, out, in, true, &c.dtype));
    OPREG__TRY(same_shape(name, out, in));
    OPREG__TRY(reduce_op_of(name, &args[2], &c.reduce_op));
    if (is_meta(in)) return OPREG_OK;
    c.send = data_of(in);
    c.recv = data_of(out);
    c.count = (size_t)opreg_tensor_numel(in);
    c.device = in->device;
    return run(name, &args[3], &c, in);
}

/* all_reduce_(Tensor! input, str reduce_op, str group_name) */
static opreg_status dist_all_reduce_(void *context, const opreg_op *op, const opreg_value *args,
                                     opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(all_reduce_);
    DLTensor *t = args[0].u.tensor;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_ALL_REDUCE };
    OPREG__TRY(check_tensor(name, "input", t, &c.dtype));
    OPREG__TRY(reduce_op_of(name, &args[1], &c.reduce_op));
    if (is_meta(t)) return OPREG_OK;
    c.send = c.recv = data_of(t);
    c.count = (size_t)opreg_tensor_numel(t);
    c.device = t->device;
    return run(name, &args[2], &c, t);
}

/* all_gather_into_tensor(Tensor! out, Tensor input, int group_size, str group_name) */
static opreg_status dist_all_gather_into_tensor(void *context, const opreg_op *op,
                                                const opreg_value *args, opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(all_gather_into_tensor);
    DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    int64_t n = args[2].u.i;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_ALL_GATHER };
    if (n < 1)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: group_size %lld", name, (long long)n);
    OPREG__TRY(check_pair(name, out, in, false, &c.dtype));
    OPREG__TRY(scaled_dim0(name, "out", out, "input", in, n));
    if (is_meta(in)) return OPREG_OK;
    OPREG__TRY(check_group_size(name, &args[3], n));
    c.send = data_of(in);
    c.recv = data_of(out);
    c.count = (size_t)opreg_tensor_numel(in);
    c.device = in->device;
    return run(name, &args[3], &c, in);
}

/* reduce_scatter_tensor(Tensor! out, Tensor input, str reduce_op, int group_size, str group_name)
 */
static opreg_status dist_reduce_scatter_tensor(void *context, const opreg_op *op,
                                               const opreg_value *args, opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(reduce_scatter_tensor);
    DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    int64_t n = args[3].u.i;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_REDUCE_SCATTER };
    if (n < 1)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: group_size %lld", name, (long long)n);
    OPREG__TRY(check_pair(name, out, in, false, &c.dtype));
    if (out->ndim == 0)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: 'out' must have at least one dim", name);
    OPREG__TRY(scaled_dim0(name, "input", in, "out", out, n));
    OPREG__TRY(reduce_op_of(name, &args[2], &c.reduce_op));
    if (is_meta(in)) return OPREG_OK;
    OPREG__TRY(check_group_size(name, &args[4], n));
    c.send = data_of(in);
    c.recv = data_of(out);
    c.count = (size_t)opreg_tensor_numel(out);
    c.device = in->device;
    return run(name, &args[4], &c, out);
}

/* Rows of dim 0 per rank: the list, or an equal split when it is empty. */
static opreg_status splits_of(const char *op, const char *arg, const opreg_value *v, int64_t rows,
                              int n, size_t row_elems, size_t *counts, size_t *displs) {
    if (v->u.ints.len == 0) {
        if (rows % n)
            return opreg__fail(OPREG_ERR_SHAPE,
                               "%s: %s is empty (an equal split) but dim 0 (%lld) is not a "
                               "multiple of the group's %d ranks",
                               op, arg, (long long)rows, n);
    } else if (v->u.ints.len != (size_t)n) {
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: %s has %zu entries but the group has %d ranks", op, arg,
                           v->u.ints.len, n);
    }
    int64_t sum = 0;
    for (int j = 0; j < n; j++) {
        int64_t s = v->u.ints.len ? v->u.ints.items[j] : rows / n;
        if (s < 0)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: %s[%d] is negative (%lld)", op, arg,
                               j, (long long)s);
        if (s > rows - sum)
            return opreg__fail(OPREG_ERR_SHAPE, "%s: %s sums past dim 0 (%lld)", op, arg,
                               (long long)rows);
        if (counts) {
            counts[j] = (size_t)s * row_elems;
            displs[j] = (size_t)sum * row_elems;
        }
        sum += s;
    }
    if (sum != rows)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: %s sums to %lld but dim 0 is %lld", op, arg,
                           (long long)sum, (long long)rows);
    return OPREG_OK;
}

/* all_to_all_single(Tensor! out, Tensor input, int[] output_split_sizes,
 *                   int[] input_split_sizes, str group_name) */
static opreg_status dist_all_to_all_single(void *context, const opreg_op *op,
                                           const opreg_value *args, opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(all_to_all_single);
    DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_ALL_TO_ALL };
    OPREG__TRY(check_pair(name, out, in, false, &c.dtype));
    bool rows_match = out->ndim == in->ndim && in->ndim >= 1;
    for (int d = 1; rows_match && d < in->ndim; d++)
        rows_match = out->shape[d] == in->shape[d];
    if (!rows_match)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: 'out' and 'input' must have at least one dim and agree past dim 0",
                           name);
    size_t row = 1;
    for (int d = 1; d < in->ndim; d++)
        row *= (size_t)in->shape[d];
    const opreg_value *osplit = &args[2], *isplit = &args[3];
    if (osplit->u.ints.len != isplit->u.ints.len && osplit->u.ints.len && isplit->u.ints.len)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: output_split_sizes has %zu entries, input_split_sizes %zu", name,
                           osplit->u.ints.len, isplit->u.ints.len);
    if (is_meta(in)) {
        size_t n = osplit->u.ints.len ? osplit->u.ints.len : isplit->u.ints.len;
        if (!n) return OPREG_OK; /* equal splits of a group whose size Meta does not know */
        if (n > INT_MAX)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: %zu split sizes", name, n);
        OPREG__TRY(
            splits_of(name, "output_split_sizes", osplit, out->shape[0], (int)n, row, NULL, NULL));
        return splits_of(name, "input_split_sizes", isplit, in->shape[0], (int)n, row, NULL, NULL);
    }
    int n;
    OPREG__TRY(opreg__group_size(args[4].u.s.ptr, args[4].u.s.len, name, &n));
    size_t small[4 * 16], *counts = small;
    if (n > 16 && !(counts = malloc(4 * (size_t)n * sizeof *counts)))
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    opreg_status st =
        splits_of(name, "input_split_sizes", isplit, in->shape[0], n, row, counts, counts + n);
    if (st == OPREG_OK)
        st = splits_of(name, "output_split_sizes", osplit, out->shape[0], n, row, counts + 2 * n,
                       counts + 3 * n);
    if (st == OPREG_OK) {
        c.send = data_of(in);
        c.recv = data_of(out);
        c.send_counts = counts;
        c.send_displs = counts + n;
        c.recv_counts = counts + 2 * n;
        c.recv_displs = counts + 3 * n;
        c.device = in->device;
        st = run(name, &args[4], &c, in);
    }
    if (counts != small) free(counts);
    return st;
}

static opreg_status broadcast_common(const char *name, DLTensor *out, const DLTensor *in,
                                     int64_t src, const opreg_value *group, opreg_dtype dtype) {
    int n;
    OPREG__TRY(opreg__group_size(group->u.s.ptr, group->u.s.len, name, &n));
    if (src < 0 || src >= n)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: src %lld is not a rank of process group '%.*s' (%d ranks)", name,
                           (long long)src, (int)group->u.s.len, group->u.s.ptr, n);
    opreg_collective c = { .kind = OPREG_COLLECTIVE_BROADCAST,
                           .send = data_of(in),
                           .recv = data_of(out),
                           .count = (size_t)opreg_tensor_numel(in),
                           .dtype = dtype,
                           .root = (int)src,
                           .device = in->device };
    return run(name, group, &c, in);
}

/* broadcast(Tensor! out, Tensor input, int src, str group_name) */
static opreg_status dist_broadcast(void *context, const opreg_op *op, const opreg_value *args,
                                   opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(broadcast);
    DLTensor *out = args[0].u.tensor, *in = args[1].u.tensor;
    opreg_dtype dtype;
    OPREG__TRY(check_pair(name, out, in, true, &dtype));
    OPREG__TRY(same_shape(name, out, in));
    if (is_meta(in)) return OPREG_OK;
    return broadcast_common(name, out, in, args[2].u.i, &args[3], dtype);
}

/* broadcast_(Tensor! input, int src, str group_name) */
static opreg_status dist_broadcast_(void *context, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    const char *name = OP_NAME(broadcast_);
    DLTensor *t = args[0].u.tensor;
    opreg_dtype dtype;
    OPREG__TRY(check_tensor(name, "input", t, &dtype));
    if (is_meta(t)) return OPREG_OK;
    return broadcast_common(name, t, t, args[1].u.i, &args[2], dtype);
}

/* barrier(str group_name) */
static opreg_status dist_barrier(void *context, const opreg_op *op, const opreg_value *args,
                                 opreg_value *rets) {
    (void)context, (void)op, (void)rets;
    opreg_collective c = { .kind = OPREG_COLLECTIVE_BARRIER, .device = { kDLCPU, 0 } };
    return run(OP_NAME(barrier), &args[0], &c, NULL);
}

/* ---- input generators (opreg/inputs.h) ----------------------------------------- */

/* The group the generated calls use: $OPREG_OPCHECK_GROUP, else "world".
 * Without a live group of that name the generators fail, and opcheck
 * reports the dist ops not applicable, with this reason. */
static const char *gen_group(opreg_gen *g, int *size) {
    const char *name = getenv("OPREG_OPCHECK_GROUP");
    int rank;
    if (!name || !*name) name = "world";
    if (opreg_group_info(name, &rank, size, NULL, NULL) != OPREG_OK) {
        opreg_gen_fail(g,
                       "the dist ops need a live process group named '%s' "
                       "($OPREG_OPCHECK_GROUP): register one first",
                       name);
        return NULL;
    }
    return name;
}

static DLTensor *gen_rows(opreg_gen *g, int64_t rows, int64_t cols, bool fill) {
    int64_t shape[2] = { rows, cols };
    DLTensor *t = opreg_gen_tensor(g, opreg_gen_dtype(g), 2, shape);
    if (fill) opreg_gen_fill(g, t, -1, 1);
    return t;
}

/* The preamble of the generators below: the group and its size, and the
 * [rows, cols] of one rank's part (`rows`, `cols`). NULL after a failure. */
static const char *gen_begin(opreg_gen *g, int *size, int64_t *rows, int64_t *cols) {
    const char *group = gen_group(g, size);
    *rows = opreg_gen_count(g, "rows", 4);
    *cols = opreg_gen_dim(g, "cols", 8);
    return group;
}

/* all_reduce(out, input, reduce_op, group) and all_reduce_(input, reduce_op,
 * group): the functional form (@p with_out) has its output first. */
static void gen_reduce_either(opreg_gen *g, bool with_out) {
    int size;
    int64_t r, c;
    const char *group = gen_begin(g, &size, &r, &c);
    if (!group) return;
    if (with_out) opreg_gen_arg_tensor(g, gen_rows(g, r, c, false));
    opreg_gen_arg_tensor(g, gen_rows(g, r, c, true));
    opreg_gen_arg_str(g, "sum");
    opreg_gen_arg_str(g, group);
}

static void gen_all_reduce(opreg_gen *g) {
    gen_reduce_either(g, true);
}

static void gen_all_reduce_(opreg_gen *g) {
    gen_reduce_either(g, false);
}

/* The output holds every rank's part; the group's size is passed too. */
static void gen_all_gather(opreg_gen *g) {
    int size;
    int64_t r, c;
    const char *group = gen_begin(g, &size, &r, &c);
    if (!group) return;
    opreg_gen_arg_tensor(g, gen_rows(g, r * size, c, false));
    opreg_gen_arg_tensor(g, gen_rows(g, r, c, true));
    opreg_gen_arg(g, opreg_int_value(size));
    opreg_gen_arg_str(g, group);
}

/* The input holds every rank's part. */
static void gen_reduce_scatter(opreg_gen *g) {
    int size;
    int64_t r, c;
    const char *group = gen_begin(g, &size, &r, &c);
    if (!group) return;
    opreg_gen_arg_tensor(g, gen_rows(g, r, c, false));
    opreg_gen_arg_tensor(g, gen_rows(g, r * size, c, true));
    opreg_gen_arg_str(g, "sum");
    opreg_gen_arg(g, opreg_int_value(size));
    opreg_gen_arg_str(g, group);
}

/* Equal splits of `rows` rows to and from every rank. */
static void gen_all_to_all(opreg_gen *g) {
    int size;
    int64_t r, c, splits[8];
    const char *group = gen_begin(g, &size, &r, &c);
    if (!group) return;
    if (size > 8) {
        opreg_gen_fail(g, "all_to_all_single: a group of %d ranks is larger than 8", size);
        return;
    }
    for (int i = 0; i < size; i++)
        splits[i] = r;
    opreg_gen_arg_tensor(g, gen_rows(g, r * size, c, false));
    opreg_gen_arg_tensor(g, gen_rows(g, r * size, c, true));
    opreg_gen_arg_ints(g, splits, (size_t)size);
    opreg_gen_arg_ints(g, splits, (size_t)size);
    opreg_gen_arg_str(g, group);
}

/* broadcast(out, input, src, group) and broadcast_(input, src, group), from
 * rank 0. */
static void gen_broadcast_either(opreg_gen *g, bool with_out) {
    int size;
    int64_t r, c;
    const char *group = gen_begin(g, &size, &r, &c);
    if (!group) return;
    if (with_out) opreg_gen_arg_tensor(g, gen_rows(g, r, c, false));
    opreg_gen_arg_tensor(g, gen_rows(g, r, c, true));
    opreg_gen_arg(g, opreg_int_value(0));
    opreg_gen_arg_str(g, group);
}

static void gen_broadcast(opreg_gen *g) {
    gen_broadcast_either(g, true);
}

static void gen_broadcast_(opreg_gen *g) {
    gen_broadcast_either(g, false);
}

static void gen_barrier(opreg_gen *g) {
    int size;
    const char *group = gen_group(g, &size);
    if (group) opreg_gen_arg_str(g, group);
}

#define DIST_DTYPES (OPREG_GEN_FLOATS | (1u << OPREG_DTYPE_I32) | (1u << OPREG_DTYPE_I64))

static const opreg_generator generators[] = {
    { "all_reduce", gen_all_reduce, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "all_reduce_", gen_all_reduce_, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "all_gather_into_tensor", gen_all_gather, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "reduce_scatter_tensor", gen_reduce_scatter, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "all_to_all_single", gen_all_to_all, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "broadcast", gen_broadcast, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "broadcast_", gen_broadcast_, DIST_DTYPES, OPREG_DTYPE_F32, 0, NULL },
    { "barrier", gen_barrier, 1u << OPREG_DTYPE_F32, OPREG_DTYPE_F32, 0, NULL },
};

/* ---- registration ------------------------------------------------------------ */

#define DIST_KERNELS(X)                                                                            \
    X(all_reduce)                                                                                  \
    X(all_reduce_)                                                                                 \
    X(all_gather_into_tensor)                                                                      \
    X(reduce_scatter_tensor)                                                                       \
    X(all_to_all_single)                                                                           \
    X(broadcast)                                                                                   \
    X(broadcast_)                                                                                  \
    X(barrier)

#define DIST_IMPL(op) OPREG_IMPL(m, #op, dist_##op, NULL);

OPREG_LIBRARY(dist, m) {
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++)
        OPREG_DEF(m, schemas[i]);
    for (size_t i = 0; i < sizeof generators / sizeof generators[0]; i++)
        opreg_library_generator(m, generators[i].name, &generators[i]);
}

OPREG_LIBRARY_IMPL(dist, CPU, m){ DIST_KERNELS(DIST_IMPL) }

/* Opened by the built-ins only when the CUDA backend is built. */
OPREG_LIBRARY_IMPL(dist, CUDA, m){ DIST_KERNELS(DIST_IMPL) }

OPREG_LIBRARY_IMPL(dist, META, m) {
    DIST_KERNELS(DIST_IMPL)
}
