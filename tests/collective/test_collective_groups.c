/* Process groups and the `dist` ops in one process, on a recording engine:
 * registration and its refusals, the collective each op hands the engine
 * (counts, displacements, root, reduction), every argument refusal, Meta
 * shapes without a group, engine errors and their messages, a destroy
 * while a call runs (the engine is freed after it), and the timeout
 * watchdog. The MPI engine's own results are test_collective_mpi's. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/collective.h"
#include "opreg/opreg.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* ---- a recording engine ---------------------------------------------------- */

typedef struct recorder {
    opreg_collective last;
    size_t counts[4][8];
    atomic_int calls;
    bool count_only;        /* only count (calls from several threads) */
    opreg_status fail_with; /* run returns this, with a message */
    int block_ms;           /* run sleeps this long */
    atomic_int running;
    atomic_int destroyed;
    atomic_int aborted;
    char abort_message[512];
} recorder;

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static opreg_status rec_run(void *context, const opreg_collective *c, char *why, size_t cap) {
    recorder *r = context;
    if (r->count_only) {
        r->calls++;
        return OPREG_OK;
    }
    atomic_store(&r->running, 1);
    if (r->block_ms) sleep_ms(r->block_ms);
    r->last = *c;
    r->calls++;
    if (c->kind == OPREG_COLLECTIVE_ALL_TO_ALL) {
        for (int j = 0; j < 4; j++) {
            r->counts[0][j] = c->send_counts[j];
            r->counts[1][j] = c->send_displs[j];
            r->counts[2][j] = c->recv_counts[j];
            r->counts[3][j] = c->recv_displs[j];
        }
    }
    atomic_store(&r->running, 0);
    if (r->fail_with != OPREG_OK) {
        snprintf(why, cap, "the wire is cut");
        return r->fail_with;
    }
    return OPREG_OK;
}

static void rec_abort(void *context, const char *message) {
    recorder *r = context;
    snprintf(r->abort_message, sizeof r->abort_message, "%s", message);
    atomic_store(&r->aborted, 1);
}

static void rec_destroy(void *context) {
    recorder *r = context;
    atomic_store(&r->destroyed, 1);
}

static opreg_group_desc desc_of(recorder *r, int rank, int size) {
    return (opreg_group_desc){ .struct_size = sizeof(opreg_group_desc),
                               .engine = "recorder",
                               .device_type = kDLCPU,
                               .rank = rank,
                               .size = size,
                               .context = r,
                               .run = rec_run,
                               .abort = rec_abort,
                               .destroy = rec_destroy };
}

/* ---- calling the ops --------------------------------------------------------- */

static const opreg_op *op_named(const char *name) {
    const opreg_op *op = NULL;
    opreg_op_find(&op, opreg_registry_default(), name);
    return op;
}

static opreg_status call(const char *name, const opreg_value *args, size_t n) {
    const opreg_op *op = op_named(name);
    if (!op) return OPREG_ERR_NOT_FOUND;
    return opreg_call_boxed(op, args, n, NULL, 0, NULL, 0);
}

static DLTensor *cpu(opreg_dtype dtype, int ndim, const int64_t *shape) {
    DLTensor *t = NULL;
    opreg_tensor_empty_cpu(&t, dtype, ndim, shape);
    return t;
}

static DLTensor *meta(opreg_dtype dtype, int ndim, const int64_t *shape) {
    DLTensor *t = NULL;
    opreg_tensor_empty_meta(&t, dtype, ndim, shape);
    return t;
}

#define S(text) opreg_str_value(text)
#define T(t)    opreg_tensor_value(t)
#define I(i)    opreg_int_value(i)

/* ---- tests ------------------------------------------------------------------ */

TEST(register_refusals) {
    recorder r = { 0 };
    opreg_group_desc d = desc_of(&r, 0, 2);
    CHECK_EQ_INT(opreg_group_register(NULL, &d), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(opreg_group_register("g", NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(opreg_group_register("", &d), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(opreg_group_register("no spaces", &d), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "bad group name 'no spaces'");
    d.struct_size = 8;
    CHECK_EQ_INT(opreg_group_register("g", &d), OPREG_ERR_ABI_MISMATCH);
    d = desc_of(&r, 2, 2);
    CHECK_EQ_INT(opreg_group_register("g", &d), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "rank 2 of a group of 2");
    d = desc_of(&r, 0, 2);
    d.run = NULL;
    CHECK_EQ_INT(opreg_group_register("g", &d), OPREG_ERR_INVALID_ARGUMENT);
    d = desc_of(&r, 1, 2);
    CHECK_EQ_INT(opreg_group_register("tp:0", &d), OPREG_OK);
    CHECK_EQ_INT(opreg_group_register("tp:0", &d), OPREG_ERR_ALREADY_DEFINED);
    CHECK_CONTAINS(opreg_last_error(), "'tp:0' exists (recorder, rank 1 of 2)");
    int rank = -1, size = -1;
    DLDeviceType dt = kDLCUDA;
    const char *engine = NULL;
    CHECK_EQ_INT(opreg_group_info("tp:0", &rank, &size, &dt, &engine), OPREG_OK);
    CHECK_EQ_INT(rank, 1);
    CHECK_EQ_INT(size, 2);
    CHECK_EQ_INT(dt, kDLCPU);
    CHECK_EQ_STR(engine, "recorder");
    CHECK_EQ_INT(atomic_load(&r.destroyed), 0);
    CHECK_EQ_INT(opreg_group_destroy("tp:0"), OPREG_OK);
    CHECK_EQ_INT(atomic_load(&r.destroyed), 1);
    CHECK_EQ_INT(opreg_group_destroy("tp:0"), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "'tp:0' was destroyed");
    CHECK_EQ_INT(opreg_group_info("nope", NULL, NULL, NULL, NULL), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "no process group named 'nope'");
    /* A destroyed name may be registered again. */
    recorder r2 = { 0 };
    d = desc_of(&r2, 0, 1);
    CHECK_EQ_INT(opreg_group_register("tp:0", &d), OPREG_OK);
    CHECK_EQ_INT(opreg_group_destroy("tp:0"), OPREG_OK);
    CHECK_EQ_INT(atomic_load(&r2.destroyed), 1);
}

TEST(reduce_op_names) {
    opreg_reduce_op op = OPREG_REDUCE_SUM;
    const char *names[] = { "sum", "avg", "max", "min", "product" };
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(opreg_reduce_op_from_name(&op, names[i]), OPREG_OK);
        CHECK_EQ_INT(op, i);
        CHECK_EQ_STR(opreg_reduce_op_name(op), names[i]);
    }
    CHECK_EQ_INT(opreg_reduce_op_from_name(&op, "SUM"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "one of sum, avg, max, min, product");
    CHECK(opreg_reduce_op_name((opreg_reduce_op)9) == NULL);
    CHECK_EQ_STR(opreg_collective_kind_name(OPREG_COLLECTIVE_ALL_TO_ALL), "all_to_all");
}

/* What each op hands the engine, on a group of 4 where this is rank 1. */
TEST(ops_describe_their_collective) {
    recorder r = { 0 };
    opreg_group_desc d = desc_of(&r, 1, 4);
    CHECK_EQ_INT(opreg_group_register("four", &d), OPREG_OK);
    int64_t s6[] = { 6, 3 }, s24[] = { 24, 3 }, s8[] = { 8, 3 }, s2[] = { 2, 3 };
    DLTensor *a = cpu(OPREG_DTYPE_F32, 2, s6), *b = cpu(OPREG_DTYPE_F32, 2, s6);
    DLTensor *big = cpu(OPREG_DTYPE_F32, 2, s24), *a2 = cpu(OPREG_DTYPE_F32, 2, s2);

    opreg_value ar[] = { T(b), T(a), S("avg"), S("four") };
    CHECK_EQ_INT(call("dist::all_reduce", ar, 4), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_ALL_REDUCE);
    CHECK(r.last.send == a->data && r.last.recv == b->data);
    CHECK_EQ_INT(r.last.count, 18);
    CHECK_EQ_INT(r.last.dtype, OPREG_DTYPE_F32);
    CHECK_EQ_INT(r.last.reduce_op, OPREG_REDUCE_AVG);

    opreg_value ari[] = { T(a), S("max"), S("four") };
    CHECK_EQ_INT(call("dist::all_reduce_", ari, 3), OPREG_OK);
    CHECK(r.last.send == a->data && r.last.recv == a->data);
    CHECK_EQ_INT(r.last.reduce_op, OPREG_REDUCE_MAX);

    opreg_value ag[] = { T(big), T(a), I(4), S("four") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", ag, 4), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_ALL_GATHER);
    CHECK_EQ_INT(r.last.count, 18);

    opreg_value rs[] = { T(a), T(big), S("product"), I(4), S("four") };
    CHECK_EQ_INT(call("dist::reduce_scatter_tensor", rs, 5), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_REDUCE_SCATTER);
    CHECK_EQ_INT(r.last.count, 18);
    CHECK(r.last.send == big->data && r.last.recv == a->data);

    /* Splits: send 1,2,0,3 rows of 3; receive 4 rows equally split is
     * impossible from 6 rows, so pass explicit 0,1,1,0 into a2. */
    int64_t in_split[] = { 1, 2, 0, 3 }, out_split[] = { 0, 1, 1, 0 };
    opreg_value a2a[] = { T(a2), T(a), opreg_int_list_value(out_split, 4),
                          opreg_int_list_value(in_split, 4), S("four") };
    CHECK_EQ_INT(call("dist::all_to_all_single", a2a, 5), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_ALL_TO_ALL);
    size_t want[4][4] = { { 3, 6, 0, 9 }, { 0, 3, 9, 9 }, { 0, 3, 3, 0 }, { 0, 0, 3, 6 } };
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            CHECK_EQ_INT(r.counts[k][j], want[k][j]);
    /* Empty lists: an equal split of 8 rows, 2 each. */
    DLTensor *e8 = cpu(OPREG_DTYPE_F32, 2, s8), *f8 = cpu(OPREG_DTYPE_F32, 2, s8);
    opreg_value a2e[] = { T(f8), T(e8), opreg_int_list_value(NULL, 0),
                          opreg_int_list_value(NULL, 0), S("four") };
    CHECK_EQ_INT(call("dist::all_to_all_single", a2e, 5), OPREG_OK);
    for (int j = 0; j < 4; j++) {
        CHECK_EQ_INT(r.counts[0][j], 6);
        CHECK_EQ_INT(r.counts[1][j], 6 * j);
    }

    opreg_value bc[] = { T(b), T(a), I(3), S("four") };
    CHECK_EQ_INT(call("dist::broadcast", bc, 4), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_BROADCAST);
    CHECK_EQ_INT(r.last.root, 3);
    CHECK(r.last.send == a->data && r.last.recv == b->data);
    opreg_value bci[] = { T(a), I(0), S("four") };
    CHECK_EQ_INT(call("dist::broadcast_", bci, 3), OPREG_OK);
    CHECK(r.last.send == a->data && r.last.recv == a->data);

    opreg_value bar[] = { S("four") };
    int before = r.calls;
    CHECK_EQ_INT(call("dist::barrier", bar, 1), OPREG_OK);
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_BARRIER);
    CHECK_EQ_INT(r.calls, before + 1);

    /* Zero elements still run: every rank must join. */
    int64_t s0[] = { 0, 3 };
    DLTensor *z = cpu(OPREG_DTYPE_BF16, 2, s0), *z2 = cpu(OPREG_DTYPE_BF16, 2, s0);
    opreg_value az[] = { T(z2), T(z), S("sum"), S("four") };
    CHECK_EQ_INT(call("dist::all_reduce", az, 4), OPREG_OK);
    CHECK_EQ_INT(r.last.count, 0);
    CHECK_EQ_INT(r.last.dtype, OPREG_DTYPE_BF16);

    DLTensor *all[] = { a, b, big, a2, e8, f8, z, z2 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        opreg_tensor_free(all[i]);
    CHECK_EQ_INT(opreg_group_destroy("four"), OPREG_OK);
}

TEST(ops_refuse_bad_arguments) {
    recorder r = { 0 };
    opreg_group_desc d = desc_of(&r, 0, 2);
    CHECK_EQ_INT(opreg_group_register("pair", &d), OPREG_OK);
    int64_t s4[] = { 4 }, s5[] = { 5 }, s8[] = { 8 }, s22[] = { 2, 2 };
    DLTensor *a = cpu(OPREG_DTYPE_F32, 1, s4), *b = cpu(OPREG_DTYPE_F32, 1, s4);
    DLTensor *c5 = cpu(OPREG_DTYPE_F32, 1, s5), *i4 = cpu(OPREG_DTYPE_I32, 1, s4);
    DLTensor *big = cpu(OPREG_DTYPE_F32, 1, s8), *m = cpu(OPREG_DTYPE_F32, 2, s22);
    int calls = r.calls;

    opreg_value v1[] = { T(b), T(a), S("sum"), S("nope") };
    CHECK_EQ_INT(call("dist::all_reduce", v1, 4), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "dist::all_reduce: no process group named 'nope'");
    CHECK_CONTAINS(opreg_last_error(), "'pair' (recorder)");
    opreg_value v2[] = { T(b), T(a), S("mean"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce", v2, 4), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "unknown reduce_op 'mean'");
    opreg_value v3[] = { T(c5), T(a), S("sum"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce", v3, 4), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "'out' must have the shape of 'input'");
    opreg_value v4[] = { T(i4), T(a), S("sum"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce", v4, 4), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "'out' is i32 but 'input' is f32");
    /* A transposed view is not contiguous. */
    int64_t st[] = { 1, 2 };
    DLTensor *tv = NULL;
    CHECK_EQ_INT(opreg_tensor_view(&tv, m, 2, s22, st, 0), OPREG_OK);
    opreg_value v5[] = { T(tv), S("sum"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce_", v5, 3), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "argument 'input': must be contiguous");
    /* Partial overlap: out is input shifted by one element. */
    DLTensor *shifted = NULL;
    int64_t s3[] = { 3 };
    CHECK_EQ_INT(opreg_tensor_view(&shifted, big, 1, s3, NULL, 4), OPREG_OK);
    DLTensor *head = NULL;
    CHECK_EQ_INT(opreg_tensor_view(&head, big, 1, s3, NULL, 0), OPREG_OK);
    opreg_value v6[] = { T(shifted), T(head), S("sum"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce", v6, 4), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "overlap");

    opreg_value g1[] = { T(big), T(a), I(3), S("pair") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", g1, 4), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "dim 0 times the group size 3");
    int64_t s12[] = { 12 };
    DLTensor *b12 = cpu(OPREG_DTYPE_F32, 1, s12);
    opreg_value g2[] = { T(b12), T(a), I(3), S("pair") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", g2, 4), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "group_size is 3 but process group 'pair' has 2 ranks");
    opreg_value g3[] = { T(big), T(a), I(0), S("pair") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", g3, 4), OPREG_ERR_INVALID_ARGUMENT);

    opreg_value r1[] = { T(a), T(c5), S("sum"), I(2), S("pair") };
    CHECK_EQ_INT(call("dist::reduce_scatter_tensor", r1, 5), OPREG_ERR_SHAPE);
    opreg_value r2[] = { T(a), T(big), S("xor"), I(2), S("pair") };
    CHECK_EQ_INT(call("dist::reduce_scatter_tensor", r2, 5), OPREG_ERR_INVALID_ARGUMENT);

    int64_t two[] = { 2, 2 }, three[] = { 3, 1 }, neg[] = { 3, -1 }, one[] = { 4 };
    opreg_value t1[] = { T(b), T(a), opreg_int_list_value(two, 2), opreg_int_list_value(three, 2),
                         S("pair") };
    CHECK_EQ_INT(call("dist::all_to_all_single", t1, 5), OPREG_OK);
    opreg_value t2[] = { T(b), T(a), opreg_int_list_value(two, 2), opreg_int_list_value(neg, 2),
                         S("pair") };
    CHECK_EQ_INT(call("dist::all_to_all_single", t2, 5), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "input_split_sizes[1] is negative");
    opreg_value t3[] = { T(b), T(a), opreg_int_list_value(one, 1), opreg_int_list_value(one, 1),
                         S("pair") };
    CHECK_EQ_INT(call("dist::all_to_all_single", t3, 5), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "has 1 entries but the group has 2 ranks");
    opreg_value t4[] = { T(b), T(c5), opreg_int_list_value(NULL, 0), opreg_int_list_value(NULL, 0),
                         S("pair") };
    CHECK_EQ_INT(call("dist::all_to_all_single", t4, 5), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "not a multiple of the group's 2 ranks");

    opreg_value b1[] = { T(a), I(2), S("pair") };
    CHECK_EQ_INT(call("dist::broadcast_", b1, 3), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "src 2 is not a rank of process group 'pair' (2 ranks)");
    opreg_value b2[] = { S("gone") };
    CHECK_EQ_INT(call("dist::barrier", b2, 1), OPREG_ERR_NOT_FOUND);

    /* Only the valid all_to_all reached the engine. */
    CHECK_EQ_INT(r.calls, calls + 1);

    /* A group on another device type refuses CPU tensors; a barrier runs. */
    recorder rc = { 0 };
    opreg_group_desc dc = desc_of(&rc, 0, 2);
    dc.device_type = kDLCUDA;
    dc.engine = "gpu-engine";
    CHECK_EQ_INT(opreg_group_register("gpus", &dc), OPREG_OK);
    opreg_value dv[] = { T(b), T(a), S("sum"), S("gpus") };
    CHECK_EQ_INT(call("dist::all_reduce", dv, 4), OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "runs on gpu-engine (cuda tensors); the tensors are on cpu");
    opreg_value dbar[] = { S("gpus") };
    CHECK_EQ_INT(call("dist::barrier", dbar, 1), OPREG_OK);
    CHECK_EQ_INT(rc.calls, 1);
    CHECK_EQ_INT(opreg_group_destroy("gpus"), OPREG_OK);

    /* Destroyed: the message says so. */
    CHECK_EQ_INT(opreg_group_destroy("pair"), OPREG_OK);
    opreg_value v7[] = { T(b), T(a), S("sum"), S("pair") };
    CHECK_EQ_INT(call("dist::all_reduce", v7, 4), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "process group 'pair' was destroyed");

    DLTensor *all[] = { a, b, c5, i4, big, m, tv, shifted, head, b12 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        opreg_tensor_free(all[i]);
}

/* Meta tensors: shapes are checked, no group is needed. */
TEST(meta_checks_shapes_without_a_group) {
    int64_t s4[] = { 4, 2 }, s8[] = { 8, 2 }, s5[] = { 5, 2 };
    DLTensor *a = meta(OPREG_DTYPE_BF16, 2, s4), *b = meta(OPREG_DTYPE_BF16, 2, s4);
    DLTensor *big = meta(OPREG_DTYPE_BF16, 2, s8), *c5 = meta(OPREG_DTYPE_BF16, 2, s5);
    opreg_value ar[] = { T(b), T(a), S("sum"), S("no-such-group") };
    CHECK_EQ_INT(call("dist::all_reduce", ar, 4), OPREG_OK);
    opreg_value ag[] = { T(big), T(a), I(2), S("no-such-group") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", ag, 4), OPREG_OK);
    opreg_value ag3[] = { T(big), T(a), I(3), S("no-such-group") };
    CHECK_EQ_INT(call("dist::all_gather_into_tensor", ag3, 4), OPREG_ERR_SHAPE);
    opreg_value rs[] = { T(a), T(big), S("avg"), I(2), S("no-such-group") };
    CHECK_EQ_INT(call("dist::reduce_scatter_tensor", rs, 5), OPREG_OK);
    opreg_value rs5[] = { T(c5), T(big), S("avg"), I(2), S("no-such-group") };
    CHECK_EQ_INT(call("dist::reduce_scatter_tensor", rs5, 5), OPREG_ERR_SHAPE);
    int64_t sp[] = { 1, 3 }, bad[] = { 1, 1 };
    opreg_value a2a[] = { T(b), T(a), opreg_int_list_value(sp, 2), opreg_int_list_value(sp, 2),
                          S("no-such-group") };
    CHECK_EQ_INT(call("dist::all_to_all_single", a2a, 5), OPREG_OK);
    opreg_value a2b[] = { T(b), T(a), opreg_int_list_value(sp, 2), opreg_int_list_value(bad, 2),
                          S("no-such-group") };
    CHECK_EQ_INT(call("dist::all_to_all_single", a2b, 5), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "input_split_sizes sums to 2 but dim 0 is 4");
    opreg_value bc[] = { T(a), I(0), S("no-such-group") };
    CHECK_EQ_INT(call("dist::broadcast_", bc, 3), OPREG_OK);
    DLTensor *all[] = { a, b, big, c5 };
    for (size_t i = 0; i < 4; i++)
        opreg_tensor_free(all[i]);
}

TEST(engine_errors_carry_context) {
    recorder r = { .fail_with = OPREG_ERR_COMMUNICATION };
    opreg_group_desc d = desc_of(&r, 1, 3);
    CHECK_EQ_INT(opreg_group_register("flaky", &d), OPREG_OK);
    int64_t s[] = { 3 };
    DLTensor *a = cpu(OPREG_DTYPE_I64, 1, s);
    opreg_value v[] = { T(a), S("sum"), S("flaky") };
    CHECK_EQ_INT(call("dist::all_reduce_", v, 3), OPREG_ERR_COMMUNICATION);
    CHECK_CONTAINS(opreg_last_error(),
                   "dist::all_reduce_ on process group 'flaky' (recorder, rank 1 of 3): the wire "
                   "is cut");
    /* The direct entry point reports the same way. */
    opreg_collective c = { .struct_size = sizeof c, .kind = OPREG_COLLECTIVE_BARRIER };
    CHECK_EQ_INT(opreg_group_run("flaky", &c), OPREG_ERR_COMMUNICATION);
    CHECK_CONTAINS(opreg_last_error(), "opreg_group_run on process group 'flaky'");
    c.struct_size = 4;
    CHECK_EQ_INT(opreg_group_run("flaky", &c), OPREG_ERR_ABI_MISMATCH);
    c.struct_size = sizeof c;
    c.kind = (opreg_collective_kind)42;
    CHECK_EQ_INT(opreg_group_run("flaky", &c), OPREG_ERR_INVALID_ARGUMENT);
    opreg_tensor_free(a);
    CHECK_EQ_INT(opreg_group_destroy("flaky"), OPREG_OK);
}

/* The argument check runs a small all_reduce before the collective. */
TEST(check_flag_runs_the_fingerprint) {
    recorder r = { 0 };
    opreg_group_desc d = desc_of(&r, 0, 1);
    d.flags = OPREG_GROUP_CHECK_ARGS;
    CHECK_EQ_INT(opreg_group_register("checked", &d), OPREG_OK);
    int64_t s[] = { 5 };
    DLTensor *a = cpu(OPREG_DTYPE_F32, 1, s);
    opreg_value v[] = { T(a), I(0), S("checked") };
    CHECK_EQ_INT(call("dist::broadcast_", v, 3), OPREG_OK);
    CHECK_EQ_INT(r.calls, 2); /* the check's all_reduce, then the broadcast */
    CHECK_EQ_INT(r.last.kind, OPREG_COLLECTIVE_BROADCAST);
    opreg_tensor_free(a);
    CHECK_EQ_INT(opreg_group_destroy("checked"), OPREG_OK);
}

typedef struct {
    const char *group;
    opreg_status st;
} caller_arg;

static void *caller(void *p) {
    caller_arg *c = p;
    opreg_value bar[] = { S(c->group) };
    c->st = call("dist::barrier", bar, 1);
    return NULL;
}

/* Destroyed while a call runs: the call finishes, the engine goes after. */
TEST(destroy_waits_for_running_calls) {
    recorder r = { .block_ms = 300 };
    opreg_group_desc d = desc_of(&r, 0, 2);
    CHECK_EQ_INT(opreg_group_register("busy", &d), OPREG_OK);
    caller_arg arg = { "busy", OPREG_ERR_INTERNAL };
    pthread_t t;
    CHECK(pthread_create(&t, NULL, caller, &arg) == 0);
    while (!atomic_load(&r.running))
        sleep_ms(1);
    CHECK_EQ_INT(opreg_group_destroy("busy"), OPREG_OK);
    CHECK_EQ_INT(atomic_load(&r.destroyed), 0); /* still running */
    pthread_join(t, NULL);
    CHECK_EQ_INT(arg.st, OPREG_OK);
    CHECK_EQ_INT(atomic_load(&r.destroyed), 1);
}

static atomic_int logged_errors;
static void count_errors(void *user, opreg_log_level level, const char *message) {
    (void)user;
    if (level == OPREG_LOG_ERROR && strstr(message, "has not finished after 100 ms"))
        atomic_fetch_add(&logged_errors, 1);
}

/* A late collective is reported, the engine aborted, and the group refuses
 * further calls. */
TEST(timeout_aborts_the_group) {
    opreg_set_log_callback(count_errors, NULL, OPREG_LOG_WARN);
    recorder r = { .block_ms = 600, .fail_with = OPREG_ERR_COMMUNICATION };
    opreg_group_desc d = desc_of(&r, 1, 2);
    d.timeout_ms = 100;
    CHECK_EQ_INT(opreg_group_register("slow", &d), OPREG_OK);
    opreg_value bar[] = { S("slow") };
    CHECK_EQ_INT(call("dist::barrier", bar, 1), OPREG_ERR_TIMEOUT);
    CHECK_CONTAINS(opreg_last_error(), "timed out, and the group was aborted");
    CHECK_EQ_INT(atomic_load(&r.aborted), 1);
    CHECK_CONTAINS(r.abort_message,
                   "dist::barrier on process group 'slow' (recorder, rank 1 of 2) has not "
                   "finished after 100 ms");
    CHECK_EQ_INT(atomic_load(&logged_errors), 1);
    CHECK_EQ_INT(call("dist::barrier", bar, 1), OPREG_ERR_TIMEOUT);
    CHECK_CONTAINS(opreg_last_error(), "was aborted after a collective timed out");
    CHECK_EQ_INT(opreg_group_destroy("slow"), OPREG_OK);
    CHECK_EQ_INT(atomic_load(&r.destroyed), 1);
    /* A fast call on a group with a timeout is untouched. */
    recorder q = { 0 };
    d = desc_of(&q, 0, 2);
    d.timeout_ms = 100;
    CHECK_EQ_INT(opreg_group_register("quick", &d), OPREG_OK);
    opreg_value qb[] = { S("quick") };
    for (int i = 0; i < 100; i++)
        CHECK_EQ_INT(call("dist::barrier", qb, 1), OPREG_OK);
    CHECK_EQ_INT(atomic_load(&q.aborted), 0);
    CHECK_EQ_INT(opreg_group_destroy("quick"), OPREG_OK);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_WARN);
}

static void *hammer(void *p) {
    const char *group = p;
    opreg_value bar[] = { S(group) };
    for (int i = 0; i < 2000; i++) {
        opreg_status st = call("dist::barrier", bar, 1);
        if (st != OPREG_OK && st != OPREG_ERR_NOT_FOUND) return (void *)1;
    }
    return NULL;
}

/* Calls from several threads while the group is destroyed and registered
 * again (ThreadSanitizer runs this). */
TEST(threads_call_destroy_and_register) {
    static recorder r[8];
    for (int k = 0; k < 8; k++)
        r[k].count_only = true;
    opreg_group_desc d = desc_of(&r[0], 0, 2);
    CHECK_EQ_INT(opreg_group_register("churn", &d), OPREG_OK);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&t[i], NULL, hammer, "churn") == 0);
    for (int k = 1; k < 8; k++) {
        sleep_ms(2);
        CHECK_EQ_INT(opreg_group_destroy("churn"), OPREG_OK);
        d = desc_of(&r[k], 0, 2);
        CHECK_EQ_INT(opreg_group_register("churn", &d), OPREG_OK);
    }
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        bad += ret != NULL;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(opreg_group_destroy("churn"), OPREG_OK);
    for (int k = 0; k < 8; k++)
        CHECK_EQ_INT(atomic_load(&r[k].destroyed), 1);
}

int main(void) {
    if (!opreg_registry_default()) {
        fprintf(stderr, "no default registry: %s\n", opreg_last_error());
        return 1;
    }
    RUN(register_refusals);
    RUN(reduce_op_names);
    RUN(ops_describe_their_collective);
    RUN(ops_refuse_bad_arguments);
    RUN(meta_checks_shapes_without_a_group);
    RUN(engine_errors_carry_context);
    RUN(check_flag_runs_the_fingerprint);
    RUN(destroy_waits_for_running_calls);
    RUN(timeout_aborts_the_group);
    RUN(threads_call_destroy_and_register);
    return test_summary();
}
