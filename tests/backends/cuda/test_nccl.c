/* The NCCL engine of process groups on one GPU: a one-rank communicator
 * (ncclCommInitAll, through libnccl.so.2 opened here as a program would)
 * registered with opreg_nccl_group_create(), and every `dist` op through
 * the default registry on CUDA tensors in f32, bf16, f16, i32 and i64 of
 * 0, 1, 1031 elements and 16 MiB. On one rank every reduction of the input
 * is the input, and every gather, scatter, all-to-all and broadcast a copy,
 * so results are compared byte for byte. Also: the dtypes NCCL does not
 * reduce, the argument check (OPREG_GROUP_CHECK_ARGS, whose collectives
 * take the engine's host path), the refusals, and destroying the group
 * before the communicator. Exits 77 without a CUDA device or without
 * libnccl.so.2, after the checks that need neither. */
#define _POSIX_C_SOURCE 200809L /* dlopen */
#include "cuda_test.h"
#include "opreg/collective.h"

#include <dlfcn.h>
#include <string.h>

/* ---- NCCL, as the program side opens it ------------------------------------ */

/* ncclComm_t and the results of ncclResult_t (an int-sized enum, 0 success). */
typedef struct test_nccl_comm *test_nccl_comm_t;
typedef int (*test_init_all_fn)(test_nccl_comm_t *comm, int ndev, const int *devlist);
typedef int (*test_destroy_fn)(test_nccl_comm_t comm);
typedef const char *(*test_error_string_fn)(int result);

static test_init_all_fn nccl_init_all;
static test_destroy_fn nccl_destroy;
static test_error_string_fn nccl_error_string;
static test_nccl_comm_t comm;

/* Open libnccl.so.2 and find what the test calls; false with the reason. */
static bool nccl_open(char *why, size_t cap) {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, cap, "libnccl.so.2 cannot be loaded (%s)", e ? e : "unknown error");
        return false;
    }
    void *init = dlsym(lib, "ncclCommInitAll"), *destroy = dlsym(lib, "ncclCommDestroy");
    void *text = dlsym(lib, "ncclGetErrorString");
    if (!init || !destroy || !text) {
        snprintf(why, cap,
                 "libnccl.so.2 lacks ncclCommInitAll, ncclCommDestroy or "
                 "ncclGetErrorString");
        return false;
    }
    /* object to function pointers, as POSIX allows */
    memcpy(&nccl_init_all, &init, sizeof init);
    memcpy(&nccl_destroy, &destroy, sizeof destroy);
    memcpy(&nccl_error_string, &text, sizeof text);
    return true;
}

/* ---- tensors and calls ------------------------------------------------------ */

static const DLDevice cuda0 = { kDLCUDA, 0 };
#define BIG_BYTES ((size_t)16 << 20)

static unsigned char *poison; /* BIG_BYTES of 0xA5: written before each op */

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

#define S(text) opreg_str_value(text)
#define T(t)    opreg_tensor_value(t)
#define I(i)    opreg_int_value(i)

static DLTensor *device_tensor(opreg_dtype dtype, int64_t n) {
    DLTensor *t = NULL;
    if (opreg_tensor_empty(&t, cuda0, dtype, 1, &n) != OPREG_OK) return NULL;
    return t;
}

static opreg_status upload(DLTensor *t, const void *host) {
    return opreg_cuda_memcpy(t->data, host, opreg_tensor_nbytes(t), 0);
}

static opreg_status download(void *host, const DLTensor *t) {
    opreg_status st = opreg_cuda_memcpy(host, t->data, opreg_tensor_nbytes(t), 0);
    return st == OPREG_OK ? opreg_cuda_synchronize(0) : st;
}

/* float16 bits of a small integer (|v| <= 2048: exact). */
static uint16_t f16_of_int(int v) {
    if (v == 0) return 0;
    unsigned a = (unsigned)(v < 0 ? -v : v), e = 0;
    while ((a >> (e + 1)) != 0)
        e++;
    unsigned mant = (a << (10 - e)) & 0x3FFu;
    return (uint16_t)((v < 0 ? 0x8000u : 0) | ((e + 15) << 10) | mant);
}

/* Element i is (i % 97) - 48 in @p dtype: exact in every dtype tested. */
static void fill_pattern(void *buf, opreg_dtype dtype, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int v = (int)(i % 97) - 48;
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        switch (dtype) {
        case OPREG_DTYPE_F32:
            ((float *)buf)[i] = f;
            break;
        case OPREG_DTYPE_BF16:
            ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
            break;
        case OPREG_DTYPE_F16:
            ((uint16_t *)buf)[i] = f16_of_int(v);
            break;
        case OPREG_DTYPE_I32:
            ((int32_t *)buf)[i] = v;
            break;
        case OPREG_DTYPE_I64:
            ((int64_t *)buf)[i] = v;
            break;
        case OPREG_DTYPE_BOOL:
            ((uint8_t *)buf)[i] = (uint8_t)(v & 1);
            break;
        case OPREG_DTYPE_I16:
            ((int16_t *)buf)[i] = (int16_t)(v * 101);
            break;
        default:
            break;
        }
    }
}

/* The case being run, for messages. */
static char case_name[128];

/* out must now hold @p want (its bytes); out is poisoned again after. */
static void expect_bytes(DLTensor *out, const void *want, void *scratch, const char *what) {
    size_t bytes = opreg_tensor_nbytes(out);
    CHECK_EQ_INT(download(scratch, out), OPREG_OK);
    for (size_t b = 0; b < bytes; b++) {
        if (((const unsigned char *)scratch)[b] != ((const unsigned char *)want)[b]) {
            TEST_FAIL_AT("%s, %s: byte %zu of %zu is 0x%02x, expected 0x%02x", case_name, what, b,
                         bytes, ((const unsigned char *)scratch)[b],
                         ((const unsigned char *)want)[b]);
            return;
        }
    }
    CHECK_EQ_INT(upload(out, poison), OPREG_OK);
}

/* Run @p op with @p args and expect OPREG_OK and @p out == @p want. */
static void run_and_expect(const char *op, const opreg_value *args, size_t n, DLTensor *out,
                           const void *want, void *scratch, const char *what) {
    opreg_status st = call(op, args, n);
    if (st != OPREG_OK) {
        TEST_FAIL_AT("%s, %s: %s returned %d: %s", case_name, what, op, (int)st,
                     opreg_last_error());
        return;
    }
    expect_bytes(out, want, scratch, what);
}

static const char *const reductions[] = { "sum", "avg", "max", "min", "product" };

/* Every op on @p group, from @p in (holding @p want) into @p out (poisoned). */
static void every_op(const char *group, DLTensor *in, DLTensor *out, const void *want, void *back,
                     int64_t n) {
    int64_t split[1] = { n };
    for (int r = 0; r < 5; r++) {
        char what[64];
        snprintf(what, sizeof what, "all_reduce %s", reductions[r]);
        opreg_value ar[] = { T(out), T(in), S(reductions[r]), S(group) };
        run_and_expect("dist::all_reduce", ar, 4, out, want, back, what);
        if (test_current_failed) return;
        snprintf(what, sizeof what, "reduce_scatter_tensor %s", reductions[r]);
        opreg_value rs[] = { T(out), T(in), S(reductions[r]), I(1), S(group) };
        run_and_expect("dist::reduce_scatter_tensor", rs, 5, out, want, back, what);
        if (test_current_failed) return;
        snprintf(what, sizeof what, "all_reduce_ %s", reductions[r]);
        CHECK_EQ_INT(upload(out, want), OPREG_OK);
        opreg_value ari[] = { T(out), S(reductions[r]), S(group) };
        run_and_expect("dist::all_reduce_", ari, 3, out, want, back, what);
        if (test_current_failed) return;
    }
    opreg_value ag[] = { T(out), T(in), I(1), S(group) };
    run_and_expect("dist::all_gather_into_tensor", ag, 4, out, want, back, "all_gather");
    if (test_current_failed) return;
    opreg_value a2a[] = { T(out), T(in), opreg_int_list_value(split, 1),
                          opreg_int_list_value(split, 1), S(group) };
    run_and_expect("dist::all_to_all_single", a2a, 5, out, want, back, "all_to_all splits");
    if (test_current_failed) return;
    opreg_value a2e[] = { T(out), T(in), opreg_int_list_value(NULL, 0),
                          opreg_int_list_value(NULL, 0), S(group) };
    run_and_expect("dist::all_to_all_single", a2e, 5, out, want, back, "all_to_all equal");
    if (test_current_failed) return;
    opreg_value bc[] = { T(out), T(in), I(0), S(group) };
    run_and_expect("dist::broadcast", bc, 4, out, want, back, "broadcast");
    if (test_current_failed) return;
    CHECK_EQ_INT(upload(out, want), OPREG_OK);
    opreg_value bci[] = { T(out), I(0), S(group) };
    run_and_expect("dist::broadcast_", bci, 3, out, want, back, "broadcast_");
    if (test_current_failed) return;
    opreg_value br[] = { S(group) };
    if (call("dist::barrier", br, 1) != OPREG_OK) {
        TEST_FAIL_AT("%s: barrier: %s", case_name, opreg_last_error());
        return;
    }
    expect_bytes(in, want, back, "the input, unchanged");
}

/* every_op() for one dtype and element count. */
static void one_case(const char *group, opreg_dtype dtype, int64_t n) {
    size_t bytes = (size_t)n * opreg_dtype_size(dtype);
    snprintf(case_name, sizeof case_name, "%s, %s, %lld elements", group, opreg_dtype_name(dtype),
             (long long)n);
    unsigned char *want = malloc(bytes + 1), *back = malloc(bytes + 1);
    DLTensor *in = device_tensor(dtype, n), *out = device_tensor(dtype, n);
    if (!want || !back || !in || !out) {
        TEST_FAIL_AT("%s: out of memory: %s", case_name, opreg_last_error());
    } else {
        fill_pattern(want, dtype, (size_t)n);
        if (upload(in, want) != OPREG_OK || upload(out, poison) != OPREG_OK)
            TEST_FAIL_AT("%s: upload: %s", case_name, opreg_last_error());
        else
            every_op(group, in, out, want, back, n);
    }
    opreg_tensor_free(in);
    opreg_tensor_free(out);
    free(want);
    free(back);
}

static const opreg_dtype dtypes[] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16, OPREG_DTYPE_F16,
                                      OPREG_DTYPE_I32, OPREG_DTYPE_I64 };

/* ---- tests ------------------------------------------------------------------ */

/* What holds without a GPU, without NCCL and without a communicator. */
TEST(refusals_before_a_communicator) {
    int dummy = 0;
    (void)dummy;
#ifdef OPREG_HAVE_CUDA
    CHECK_EQ_INT(opreg_nccl_group_create(NULL, &dummy, 0, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "opreg_nccl_group_create: NULL name");
    CHECK_EQ_INT(opreg_nccl_group_create("gpu0", NULL, 0, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "opreg_nccl_group_create: NULL communicator");
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) {
        /* refused before the communicator is looked at */
        CHECK_EQ_INT(opreg_nccl_group_create("gpu0", &dummy, 0, 0), OPREG_ERR_BACKEND_UNAVAILABLE);
        CHECK_CONTAINS(opreg_last_error(),
                       "opreg_nccl_group_create: the CUDA backend is unavailable: no CUDA device");
    }
#else
    CHECK_EQ_INT(opreg_nccl_group_create("gpu0", &dummy, 0, 0), OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(opreg_last_error(),
                   "opreg_nccl_group_create: opreg was built without the CUDA backend");
#endif
    CHECK_EQ_INT(opreg_group_info("gpu0", NULL, NULL, NULL, NULL), OPREG_ERR_NOT_FOUND);
}

TEST(make_a_one_rank_group) {
    int dev0 = 0;
    int r = nccl_init_all(&comm, 1, &dev0);
    if (r != 0) {
        TEST_FAIL_AT("ncclCommInitAll: %s", nccl_error_string(r));
        return;
    }
    CHECK_EQ_INT(opreg_nccl_group_create("gpu0", comm, 0, 60000), OPREG_OK);
    int rank = -1, size = -1;
    DLDeviceType dt = kDLCPU;
    const char *engine = NULL;
    CHECK_EQ_INT(opreg_group_info("gpu0", &rank, &size, &dt, &engine), OPREG_OK);
    CHECK_EQ_INT(rank, 0);
    CHECK_EQ_INT(size, 1);
    CHECK_EQ_INT(dt, kDLCUDA);
    CHECK_EQ_STR(engine, "nccl");
    /* the same communicator again, with the argument check */
    CHECK_EQ_INT(opreg_nccl_group_create("gpu0_checked", comm, OPREG_GROUP_CHECK_ARGS, 60000),
                 OPREG_OK);
}

TEST(every_op_dtype_and_size) {
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0] && !test_current_failed; d++) {
        int64_t sizes[] = { 0, 1, 1031, (int64_t)(BIG_BYTES / opreg_dtype_size(dtypes[d])) };
        for (size_t s = 0; s < 4 && !test_current_failed; s++)
            one_case("gpu0", dtypes[d], sizes[s]);
    }
}

/* OPREG_GROUP_CHECK_ARGS: each op first runs the check's all_reduce (and,
 * for all_to_all, its all_to_all) on host arrays, which the engine stages
 * through the device. */
TEST(argument_check_stages_through_the_host) {
    one_case("gpu0_checked", OPREG_DTYPE_F32, 1031);
    if (test_current_failed) return;
    one_case("gpu0_checked", OPREG_DTYPE_I64, 1);
    if (test_current_failed) return;
    one_case("gpu0_checked", OPREG_DTYPE_BF16, 0);
}

/* bool and int16 move as bytes and are not reduced. */
TEST(types_nccl_cannot_reduce) {
    opreg_dtype kinds[] = { OPREG_DTYPE_BOOL, OPREG_DTYPE_I16 };
    for (int k = 0; k < 2; k++) {
        opreg_dtype dtype = kinds[k];
        int64_t n = 1031;
        size_t bytes = (size_t)n * opreg_dtype_size(dtype);
        unsigned char want[1031 * 2], back[1031 * 2];
        snprintf(case_name, sizeof case_name, "gpu0, %s", opreg_dtype_name(dtype));
        fill_pattern(want, dtype, (size_t)n);
        DLTensor *in = device_tensor(dtype, n), *out = device_tensor(dtype, n);
        CHECK(in && out && bytes <= sizeof want);
        CHECK_EQ_INT(upload(in, want), OPREG_OK);
        CHECK_EQ_INT(upload(out, poison), OPREG_OK);
        opreg_value ar[] = { T(out), T(in), S("sum"), S("gpu0") };
        CHECK_EQ_INT(call("dist::all_reduce", ar, 4), OPREG_ERR_UNSUPPORTED);
        CHECK_CONTAINS(opreg_last_error(), "NCCL cannot reduce");
        CHECK_CONTAINS(opreg_last_error(), opreg_dtype_name(dtype));
        opreg_value bc[] = { T(out), T(in), I(0), S("gpu0") };
        run_and_expect("dist::broadcast", bc, 4, out, want, back, "broadcast");
        opreg_value ag[] = { T(out), T(in), I(1), S("gpu0") };
        run_and_expect("dist::all_gather_into_tensor", ag, 4, out, want, back, "all_gather");
        opreg_value a2e[] = { T(out), T(in), opreg_int_list_value(NULL, 0),
                              opreg_int_list_value(NULL, 0), S("gpu0") };
        run_and_expect("dist::all_to_all_single", a2e, 5, out, want, back, "all_to_all");
        opreg_tensor_free(in);
        opreg_tensor_free(out);
        if (test_current_failed) return;
    }
}

TEST(refusals) {
    int64_t n = 8;
    DLTensor *d = device_tensor(OPREG_DTYPE_F32, n), *h = NULL, *h2 = NULL;
    CHECK(d != NULL);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&h, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&h2, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    memset(h->data, 0, 32);
    /* an unknown group */
    opreg_value un[] = { T(d), S("sum"), S("nope") };
    CHECK_EQ_INT(call("dist::all_reduce_", un, 3), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "no process group named 'nope'");
    CHECK_CONTAINS(opreg_last_error(), "'gpu0' (nccl)");
    /* CPU tensors on the NCCL group */
    opreg_value cpu[] = { T(h2), T(h), S("sum"), S("gpu0") };
    CHECK_EQ_INT(call("dist::all_reduce", cpu, 4), OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "process group 'gpu0' runs on nccl");
    /* a name that is taken, a bad name, a NULL communicator */
    CHECK_EQ_INT(opreg_nccl_group_create("gpu0", comm, 0, 0), OPREG_ERR_ALREADY_DEFINED);
    CHECK_CONTAINS(opreg_last_error(), "a process group named 'gpu0' exists (nccl, rank 0 of 1)");
    CHECK_EQ_INT(opreg_nccl_group_create("no spaces", comm, 0, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "bad group name 'no spaces'");
    CHECK_EQ_INT(opreg_nccl_group_create("gpu1", NULL, 0, 0), OPREG_ERR_INVALID_ARGUMENT);
    /* a src that is not a rank */
    opreg_value bad_src[] = { T(d), I(1), S("gpu0") };
    CHECK_EQ_INT(call("dist::broadcast_", bad_src, 3), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "src 1 is not a rank of process group 'gpu0'");
    opreg_tensor_free(d);
    opreg_tensor_free(h);
    opreg_tensor_free(h2);
}

TEST(destroy_then_comm_destroy) {
    CHECK_EQ_INT(opreg_group_destroy("gpu0"), OPREG_OK);
    CHECK_EQ_INT(opreg_group_destroy("gpu0_checked"), OPREG_OK);
    opreg_value br[] = { S("gpu0") };
    CHECK_EQ_INT(call("dist::barrier", br, 1), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "process group 'gpu0' was destroyed");
    int r = nccl_destroy(comm);
    if (r != 0) TEST_FAIL_AT("ncclCommDestroy: %s", nccl_error_string(r));
    comm = NULL;
}

int main(void) {
    RUN(refusals_before_a_communicator);
    if (test_failed_count) return test_summary();
    char why[512];
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why)) {
        printf("skipped: the CUDA backend is unavailable: %s\n", why);
        return TEST_SKIP_CODE;
    }
    if (!nccl_open(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return TEST_SKIP_CODE;
    }
    poison = malloc(BIG_BYTES);
    if (!poison) return 1;
    memset(poison, 0xA5, BIG_BYTES);
    RUN(make_a_one_rank_group);
    if (test_failed_count) return test_summary();
    RUN(every_op_dtype_and_size);
    RUN(argument_check_stages_through_the_host);
    RUN(types_nccl_cannot_reduce);
    RUN(refusals);
    RUN(destroy_then_comm_destroy);
    free(poison);
    return test_summary();
}
