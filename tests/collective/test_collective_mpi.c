/* The `dist` ops on MPI, started by mpi_run.sh under mpiexec with 2 and 4
 * ranks. Mode "all": every collective on f32, bf16, f16, int32 and int64,
 * at 0, 1, an odd count and 64 MiB (the largest tensor of the call), each
 * against what this rank computes alone from the formula every rank fills
 * its input with; then the errors: an unknown and a destroyed group,
 * ranks that disagree on shape, dtype or all_to_all splits (refused on
 * every rank with the check on, after which the group still works).
 * Mode "rank-exits": rank 1 exits before a collective that rank 0 waits
 * in; the driver checks that the job ends. Mode "timeout": rank 1 never
 * joins; rank 0's watchdog ends the job with a message.
 *
 * The inputs are small integers (|x| <= 5; products of +-1 and 2), so
 * every dtype holds every partial result exactly, whatever order MPI
 * reduces in, and avg divides by a power of two. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/mpi.h"
#include "opreg/opreg.h"
#include "common/dtype_access.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, nranks, failures;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);                             \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        failures++;                                                                                \
    } while (0)

#define EXPECT_ST(call, want)                                                                      \
    do {                                                                                           \
        opreg_status st_ = (call);                                                                 \
        if (st_ != (want))                                                                         \
            FAIL("%s: %s, want %s (%s)", #call, opreg_status_name(st_), opreg_status_name(want),   \
                 opreg_last_error());                                                              \
    } while (0)

#define EXPECT_MSG(needle)                                                                         \
    do {                                                                                           \
        if (!strstr(opreg_last_error(), needle))                                                   \
            FAIL("message '%s' lacks '%s'", opreg_last_error(), needle);                           \
    } while (0)

/* ---- values ------------------------------------------------------------------ */

static const opreg_dtype dtypes[] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16, OPREG_DTYPE_F16,
                                      OPREG_DTYPE_I32, OPREG_DTYPE_I64 };

/* Elements through the library's one element access (common/dtype_access.h). */
static void put(void *buf, opreg_dtype dt, size_t i, double v) {
    opreg__st(buf, (int)dt, (int64_t)i, v);
}

static double get(const void *buf, opreg_dtype dt, size_t i) {
    return opreg__ld(buf, (int)dt, (int64_t)i);
}

static bool is_int(opreg_dtype dt) {
    return dt == OPREG_DTYPE_I32 || dt == OPREG_DTYPE_I64;
}

/* Rank r's element i (sum, max, min, avg): -5..5. */
static double val(int r, size_t i) {
    return (double)((r * 5 + (int64_t)(i % 1000003) * 3) % 11) - 5;
}

/* Rank r's element i for product: 2, -1 or 1. */
static double pval(int r, size_t i) {
    int k = (int)((r + i) % 3);
    return k == 0 ? 2 : k == 1 ? -1 : 1;
}

static double expect_reduce(const char *op, size_t i, opreg_dtype dt) {
    double acc = strcmp(op, "product") == 0 ? 1
                 : strcmp(op, "max") == 0   ? -1e9
                 : strcmp(op, "min") == 0   ? 1e9
                                            : 0;
    for (int r = 0; r < nranks; r++) {
        double v = strcmp(op, "product") == 0 ? pval(r, i) : val(r, i);
        if (strcmp(op, "product") == 0)
            acc *= v;
        else if (strcmp(op, "max") == 0)
            acc = v > acc ? v : acc;
        else if (strcmp(op, "min") == 0)
            acc = v < acc ? v : acc;
        else
            acc += v;
    }
    if (strcmp(op, "avg") == 0) {
        acc /= nranks;
        if (is_int(dt)) acc = (double)(int64_t)acc; /* truncation toward zero */
    }
    return acc;
}

/* ---- calling ------------------------------------------------------------------ */

static DLTensor *tensor(opreg_dtype dt, int64_t n0, int64_t n1) {
    int64_t shape[2] = { n0, n1 };
    DLTensor *t = NULL;
    if (opreg_tensor_empty_cpu(&t, dt, 2, shape) != OPREG_OK) {
        fprintf(stderr, "rank %d: out of memory: %s\n", rank, opreg_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return t;
}

static opreg_status call(const char *name, const opreg_value *args, size_t n) {
    const opreg_op *op = NULL;
    opreg_status st = opreg_op_find(&op, opreg_registry_default(), name);
    if (st != OPREG_OK) return st;
    return opreg_call_boxed(op, args, n, NULL, 0, NULL, 0);
}

#define T(t) opreg_tensor_value(t)
#define S(s) opreg_str_value(s)
#define I(i) opreg_int_value(i)

/* The first element of @t that differs from @want(i); returns whether all agree. */
#define VERIFY(what, t, n, want_expr)                                                              \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                      \
            size_t i = i_;                                                                         \
            double want_ = (want_expr), got_ = get((t)->data, dt, i);                              \
            if (want_ != got_) {                                                                   \
                FAIL("%s %s, %zu elements: [%zu] is %g, want %g", what, opreg_dtype_name(dt),      \
                     (size_t)(n), i, got_, want_);                                                 \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void test_all_reduce(opreg_dtype dt, size_t n) {
    static const char *const ops[] = { "sum", "avg", "max", "min", "product" };
    DLTensor *in = tensor(dt, (int64_t)n, 1), *out = tensor(dt, (int64_t)n, 1);
    for (size_t o = 0; o < 5; o++) {
        bool prod = strcmp(ops[o], "product") == 0;
        /* Large calls: sum, in place and out of place (the reductions
         * themselves are the same code at every size). */
        if (n > 1000000 && o) continue;
        for (int in_place = 0; in_place < 2; in_place++) {
            for (size_t i = 0; i < n; i++)
                put(in->data, dt, i, prod ? pval(rank, i) : val(rank, i));
            char what[64];
            snprintf(what, sizeof what, "all_reduce%s(%s)", in_place ? "_" : "", ops[o]);
            if (in_place) {
                opreg_value a[] = { T(in), S(ops[o]), S("world") };
                EXPECT_ST(call("dist::all_reduce_", a, 3), OPREG_OK);
                VERIFY(what, in, n, expect_reduce(ops[o], i, dt));
            } else {
                opreg_value a[] = { T(out), T(in), S(ops[o]), S("world") };
                EXPECT_ST(call("dist::all_reduce", a, 4), OPREG_OK);
                VERIFY(what, out, n, expect_reduce(ops[o], i, dt));
                /* The input is untouched. */
                VERIFY("all_reduce input", in, n, prod ? pval(rank, i) : val(rank, i));
            }
        }
    }
    opreg_tensor_free(in);
    opreg_tensor_free(out);
}

/* @n: elements of the larger tensor (the gathered one, the scattered one). */
static void test_gather_scatter(opreg_dtype dt, size_t n) {
    size_t m = n / (size_t)nranks; /* per rank */
    DLTensor *part = tensor(dt, (int64_t)m, 1), *whole = tensor(dt, (int64_t)m * nranks, 1);
    for (size_t i = 0; i < m; i++)
        put(part->data, dt, i, val(rank, i));
    opreg_value g[] = { T(whole), T(part), I(nranks), S("world") };
    EXPECT_ST(call("dist::all_gather_into_tensor", g, 4), OPREG_OK);
    VERIFY("all_gather_into_tensor", whole, m * nranks,
           val((int)(i / (m ? m : 1)), i % (m ? m : 1)));

    static const char *const ops[] = { "sum", "avg", "max", "min", "product" };
    for (size_t o = 0; o < 5; o++) {
        if (n > 1000000 && o) continue;
        bool prod = strcmp(ops[o], "product") == 0;
        for (size_t i = 0; i < m * nranks; i++)
            put(whole->data, dt, i, prod ? pval(rank, i) : val(rank, i));
        opreg_value r[] = { T(part), T(whole), S(ops[o]), I(nranks), S("world") };
        EXPECT_ST(call("dist::reduce_scatter_tensor", r, 5), OPREG_OK);
        char what[64];
        snprintf(what, sizeof what, "reduce_scatter_tensor(%s)", ops[o]);
        VERIFY(what, part, m, expect_reduce(ops[o], (size_t)rank * m + i, dt));
    }
    opreg_tensor_free(part);
    opreg_tensor_free(whole);
}

/* Rows of 3 from rank r to rank j: uneven splits (0 to 2 rows times @scale). */
static int64_t rows(int r, int j, int64_t scale) {
    return ((r + 2 * j) % 3) * scale;
}

static double a2a_val(int from, int to, size_t k) {
    return (double)((from * 3 + to * 5 + (int64_t)(k % 1000003)) % 11) - 5;
}

static void test_all_to_all(opreg_dtype dt, int64_t scale, bool equal) {
    int64_t in_split[16], out_split[16], in_rows = 0, out_rows = 0;
    for (int j = 0; j < nranks; j++) {
        in_split[j] = equal ? scale : rows(rank, j, scale);
        out_split[j] = equal ? scale : rows(j, rank, scale);
        in_rows += in_split[j];
        out_rows += out_split[j];
    }
    DLTensor *in = tensor(dt, in_rows, 3), *out = tensor(dt, out_rows, 3);
    size_t at = 0;
    for (int j = 0; j < nranks; j++)
        for (size_t k = 0; k < (size_t)in_split[j] * 3; k++)
            put(in->data, dt, at++, a2a_val(rank, j, k));
    opreg_value a[] = { T(out), T(in),
                        opreg_int_list_value(equal ? NULL : out_split, equal ? 0 : (size_t)nranks),
                        opreg_int_list_value(equal ? NULL : in_split, equal ? 0 : (size_t)nranks),
                        S("world") };
    EXPECT_ST(call("dist::all_to_all_single", a, 5), OPREG_OK);
    at = 0;
    for (int r = 0; r < nranks && !failures; r++) {
        size_t base = at;
        for (size_t k = 0; k < (size_t)out_split[r] * 3; k++, at++) {
            double want = a2a_val(r, rank, k), got = get(out->data, dt, at);
            if (want != got) {
                FAIL("all_to_all_single %s: block from rank %d [%zu] is %g, want %g",
                     opreg_dtype_name(dt), r, at - base, got, want);
                break;
            }
        }
    }
    opreg_tensor_free(in);
    opreg_tensor_free(out);
}

static void test_broadcast(opreg_dtype dt, size_t n) {
    int root = nranks - 1;
    DLTensor *t = tensor(dt, (int64_t)n, 1), *out = tensor(dt, (int64_t)n, 1);
    for (size_t i = 0; i < n; i++)
        put(t->data, dt, i, val(rank, i));
    opreg_value a[] = { T(out), T(t), I(root), S("world") };
    EXPECT_ST(call("dist::broadcast", a, 4), OPREG_OK);
    VERIFY("broadcast", out, n, val(root, i));
    opreg_value b[] = { T(t), I(0), S("world") };
    EXPECT_ST(call("dist::broadcast_", b, 3), OPREG_OK);
    VERIFY("broadcast_", t, n, val(0, i));
    opreg_tensor_free(t);
    opreg_tensor_free(out);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_every_collective(void) {
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        opreg_dtype dt = dtypes[d];
        size_t esz = opreg_dtype_size(dt);
        size_t big = ((size_t)64 << 20) / esz;
        size_t sizes[] = { 0, 1, 1031, big };
        double t0 = now_s();
        for (size_t s = 0; s < 4; s++) {
            size_t n = sizes[s];
            test_all_reduce(dt, n);
            /* Gather/scatter: the larger tensor holds a multiple of the ranks. */
            test_gather_scatter(dt, n < (size_t)nranks ? n * (size_t)nranks : n);
            test_broadcast(dt, n);
        }
        test_all_to_all(dt, 0, true);
        test_all_to_all(dt, 1, false);
        test_all_to_all(dt, 7, true);
        test_all_to_all(dt, 343, false);
        test_all_to_all(dt, (int64_t)(big / 3 / (size_t)nranks), true);
        opreg_value bar[] = { S("world") };
        EXPECT_ST(call("dist::barrier", bar, 1), OPREG_OK);
        if (rank == 0)
            printf("%s: every collective at 0, 1, 1031 and 64 MiB on %d ranks: %.1f s\n",
                   opreg_dtype_name(dt), nranks, now_s() - t0);
    }
}

static void test_errors(void) {
    DLTensor *a = tensor(OPREG_DTYPE_F32, 4, 1), *b = tensor(OPREG_DTYPE_F32, rank ? 5 : 4, 1);
    DLTensor *ai = tensor(rank ? OPREG_DTYPE_I32 : OPREG_DTYPE_F32, 4, 1);
    opreg_value u[] = { T(a), S("sum"), S("no-such-group") };
    EXPECT_ST(call("dist::all_reduce_", u, 3), OPREG_ERR_NOT_FOUND);
    EXPECT_MSG("no process group named 'no-such-group'");

    /* Ranks that disagree, caught on every rank by the check. */
    EXPECT_ST(opreg_mpi_group_create("checked", MPI_COMM_WORLD, OPREG_GROUP_CHECK_ARGS, 60000),
              OPREG_OK);
    opreg_value s[] = { T(b), S("sum"), S("checked") };
    EXPECT_ST(call("dist::all_reduce_", s, 3), OPREG_ERR_SHAPE);
    EXPECT_MSG("the ranks disagree on the element count");
    opreg_value d[] = { T(ai), S("sum"), S("checked") };
    EXPECT_ST(call("dist::all_reduce_", d, 3), OPREG_ERR_SHAPE);
    EXPECT_MSG("the ranks disagree on the dtype");
    /* A root that differs. */
    opreg_value r[] = { T(a), I(rank == 0 && nranks > 1 ? 1 : 0), S("checked") };
    EXPECT_ST(call("dist::broadcast_", r, 3), nranks > 1 ? OPREG_ERR_SHAPE : OPREG_OK);
    /* Splits that do not pair: rank 0 expects one row more from itself. */
    int64_t in_split[16], out_split[16], in_rows = 0, out_rows = 0;
    for (int j = 0; j < nranks; j++) {
        in_split[j] = 1;
        out_split[j] = (rank == 0 && j == 0) ? 2 : 1;
        in_rows += in_split[j];
        out_rows += out_split[j];
    }
    DLTensor *ti = tensor(OPREG_DTYPE_F32, in_rows, 2), *to = tensor(OPREG_DTYPE_F32, out_rows, 2);
    opreg_value x[] = { T(to), T(ti), opreg_int_list_value(out_split, (size_t)nranks),
                        opreg_int_list_value(in_split, (size_t)nranks), S("checked") };
    EXPECT_ST(call("dist::all_to_all_single", x, 5), OPREG_ERR_SHAPE);
    EXPECT_MSG(rank == 0 ? "rank 0 sends 2 elements to this rank, which expects 4"
                         : "another rank's output_split_sizes disagree");
    /* After the refusals the group still works. */
    for (size_t i = 0; i < 4; i++)
        ((float *)a->data)[i] = (float)(rank + 1);
    opreg_value ok[] = { T(a), S("sum"), S("checked") };
    EXPECT_ST(call("dist::all_reduce_", ok, 3), OPREG_OK);
    if (((float *)a->data)[3] != (float)(nranks * (nranks + 1) / 2))
        FAIL("all_reduce after refusals: %g", ((float *)a->data)[3]);
    EXPECT_ST(opreg_group_destroy("checked"), OPREG_OK);
    EXPECT_ST(call("dist::all_reduce_", ok, 3), OPREG_ERR_NOT_FOUND);
    EXPECT_MSG("process group 'checked' was destroyed");
    /* Registering a live name again. */
    EXPECT_ST(opreg_mpi_group_create("world", MPI_COMM_WORLD, 0, 0), OPREG_ERR_ALREADY_DEFINED);
    EXPECT_ST(opreg_mpi_group_create("w2", MPI_COMM_NULL, 0, 0), OPREG_ERR_INVALID_ARGUMENT);
    /* Dtypes MPI does not reduce. */
    DLTensor *bl = tensor(OPREG_DTYPE_BOOL, 4, 1);
    opreg_value nb[] = { T(bl), S("sum"), S("world") };
    EXPECT_ST(call("dist::all_reduce_", nb, 3), OPREG_ERR_UNSUPPORTED);
    EXPECT_MSG("MPI cannot reduce bool");
    opreg_value bb[] = { T(bl), I(0), S("world") };
    EXPECT_ST(call("dist::broadcast_", bb, 3), OPREG_OK);
    DLTensor *all[] = { a, b, ai, ti, to, bl };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        opreg_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!opreg_registry_default()) {
        fprintf(stderr, "rank %d: no registry: %s\n", rank, opreg_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (nranks > 16) {
        fprintf(stderr, "at most 16 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint32_t timeout = strcmp(mode, "timeout") == 0 ? 1000 : OPREG_MPI_DEFAULT_TIMEOUT_MS;
    EXPECT_ST(opreg_mpi_group_create("world", MPI_COMM_WORLD, 0, timeout), OPREG_OK);
    DLTensor *t = tensor(OPREG_DTYPE_F32, 8, 1);
    opreg_value a[] = { T(t), S("sum"), S("world") };
    if (strcmp(mode, "rank-exits") == 0) {
        if (rank == 1) _exit(3);
        printf("rank %d: waiting in all_reduce_ for rank 1, which exited\n", rank);
        fflush(stdout);
        call("dist::all_reduce_", a, 3);
        printf("rank %d: all_reduce_ returned: %s\n", rank, opreg_last_error());
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    if (strcmp(mode, "timeout") == 0) {
        if (rank != 0) {
            sleep(60); /* never joins */
            _exit(0);
        }
        call("dist::all_reduce_", a, 3);
        printf("rank 0: all_reduce_ returned after the timeout: %s\n", opreg_last_error());
        fflush(stdout);
        _exit(5);
    }
    test_every_collective();
    test_errors();
    opreg_tensor_free(t);
    EXPECT_ST(opreg_group_destroy("world"), OPREG_OK);
    int local = failures, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d ranks: %s (%d failures)\n", nranks, total ? "FAILED" : "passed", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
