/* The OpenCL plugin when its OpenCL calls fail: the build's hook
 * (OPREG_FAULT_INJECTION, backends/opencl/opencl_fault.h) makes the Nth
 * call from now of a class fail with the error OpenCL returns when memory
 * or resources run out: contexts, queues and buffers; the program, its
 * build and its kernels; kernel launches.
 *
 * One sequence (tensors made on the device, rms_norm, which builds the
 * program, silu_and_mul, static_scaled_int8_quant and
 * dynamic_scaled_fp8_quant) is run once to count the calls (K), then for
 * every N in 1..K with the Nth failing, each time on a freshly loaded
 * plugin, so that the program is built again. The step where the failure
 * lands must return a clean status (OPREG_ERR_OUT_OF_MEMORY or
 * OPREG_ERR_DEVICE) with a message naming the OpenCL error, leave every
 * output it would have written as it was (or make no tensor), and succeed
 * when run again; the results must then equal those of the run without a
 * failure. Failures during the load (the device's context and queue) must
 * leave the device to be opened again on its first use. Leaks are left to
 * LeakSanitizer, checked after each run. Skips (77) when no OpenCL device
 * is present. */
#define _POSIX_C_SOURCE 200809L

#include "backends/opencl/opencl_fault.h"
#include "registry/plugin/plugin_test.h"
#include "leak_check.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>

OPREG_DECLARE_LIBRARY(_C);
OPREG_DECLARE_LIBRARY_IMPL(_C, REFERENCE);
OPREG_DECLARE_LIBRARY_IMPL(_C, META);
OPREG_DECLARE_LIBRARY_IMPL(_C, CPU);

static ocl_fi_arm_fn fi_arm;
static ocl_fi_calls_fn fi_calls;
static ocl_fi_failed_fn fi_failed;

static opreg_registry *reg;
static opreg_plugin *plugin;
static const opreg_backend *be;
static const DLDevice dev = { kDLOpenCL, 0 };
static unsigned long armed;

#define ALL_CLASSES (OCL_FI_CREATE | OCL_FI_BUILD | OCL_FI_ENQUEUE)

/* ---- tensors ----------------------------------------------------------------------- */

static DLTensor *host_tensor(opreg_dtype dt, int ndim, const int64_t *shape, unsigned seed) {
    DLTensor *t;
    if (opreg_tensor_empty_cpu(&t, dt, ndim, shape) != OPREG_OK) abort();
    int64_t n = opreg_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (dt == OPREG_DTYPE_F32) ((float *)t->data)[i] = (float)((seed + 7 * i) % 23) / 5 - 2;
    if (dt != OPREG_DTYPE_F32) memset(t->data, 0, opreg_tensor_nbytes(t));
    return t;
}

/* The bytes of device tensor @p d (the caller frees them). */
static unsigned char *read_back(const DLTensor *d) {
    size_t n = opreg_tensor_nbytes(d);
    unsigned char *b = malloc(n ? n : 1);
    if (!b || be->copy_to_host(be->context, b, d->data, 0, n, 0) != OPREG_OK) abort();
    return b;
}

/* ---- steps --------------------------------------------------------------------------- */

/* True when the armed call failed during the step just run, after checking
 * its status and message. */
static bool landed(bool before, opreg_status st, const char *what) {
    if (before || !armed || !fi_failed()) return false;
    if (st != OPREG_ERR_OUT_OF_MEMORY && st != OPREG_ERR_DEVICE) {
        TEST_FAIL_AT("%s: OpenCL call %lu failed: status %s (%s)", what, armed,
                     opreg_status_name(st), opreg_last_error());
        return true;
    }
    if (!strstr(opreg_last_error(), "opencl") || !strstr(opreg_last_error(), "error -")) {
        TEST_FAIL_AT("%s: OpenCL call %lu failed: the message does not say which: \"%s\"", what,
                     armed, opreg_last_error());
        return true;
    }
    return true;
}

/* A device tensor with the bytes of @p h (made, then filled). */
static opreg_status to_device(DLTensor **out, const DLTensor *h) {
    opreg_dtype dt;
    if (opreg_dtype_from_dlpack(&dt, h->dtype) != OPREG_OK) abort();
    opreg_status st = opreg_tensor_empty(out, dev, dt, h->ndim, h->shape);
    if (st != OPREG_OK) {
        if (*out) TEST_FAIL_AT("opreg_tensor_empty failed but made a tensor");
        return st;
    }
    st = be->copy_to_device(be->context, (*out)->data, 0, h->data, opreg_tensor_nbytes(h), 0);
    if (st != OPREG_OK) {
        opreg_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

#define MAKE(out, host)                                                                            \
    do {                                                                                           \
        bool before_ = fi_failed();                                                                \
        opreg_clear_error();                                                                       \
        opreg_status st_ = to_device(&(out), (host));                                              \
        if (landed(before_, st_, "to_device(" #out ")")) st_ = to_device(&(out), (host));          \
        if (test_current_failed) return;                                                           \
        if (st_ != OPREG_OK) {                                                                     \
            TEST_FAIL_AT("to_device(%s): %s", #out, opreg_last_error());                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Call @p name; when the failure lands in it, the tensors @p watch (those it
 * writes) must hold what they held before. */
static opreg_status call_op(const char *name, opreg_value *args, size_t n) {
    const opreg_op *op;
    if (opreg_op_find(&op, reg, name) != OPREG_OK) return OPREG_ERR_NOT_FOUND;
    return opreg_call_boxed(op, args, n, NULL, 0, NULL, 0);
}

static bool unchanged(DLTensor *const *watch, unsigned char *const *was, size_t nwatch,
                      const char *what) {
    for (size_t i = 0; i < nwatch; i++) {
        unsigned char *now = read_back(watch[i]);
        bool same = memcmp(now, was[i], opreg_tensor_nbytes(watch[i])) == 0;
        free(now);
        if (!same) {
            TEST_FAIL_AT("%s: OpenCL call %lu failed, but output %zu was written (half done)", what,
                         armed, i);
            return false;
        }
    }
    return true;
}

#define OP(name, watch, nwatch, ...)                                                               \
    do {                                                                                           \
        opreg_value args_[] = { __VA_ARGS__ };                                                     \
        size_t n_ = sizeof args_ / sizeof args_[0];                                                \
        bool before_ = fi_failed();                                                                \
        unsigned char *was_[4] = { NULL };                                                         \
        for (size_t i_ = 0; !before_ && armed && i_ < (nwatch); i_++)                              \
            was_[i_] = read_back((watch)[i_]);                                                     \
        opreg_clear_error();                                                                       \
        opreg_status st_ = call_op(name, args_, n_);                                               \
        if (landed(before_, st_, name)) {                                                          \
            if (!test_current_failed) unchanged((watch), was_, (nwatch), name);                    \
            st_ = call_op(name, args_, n_);                                                        \
        }                                                                                          \
        for (size_t i_ = 0; i_ < 4; i_++)                                                          \
            free(was_[i_]);                                                                        \
        if (test_current_failed) return;                                                           \
        if (st_ != OPREG_OK) {                                                                     \
            TEST_FAIL_AT("%s: %s", name, opreg_last_error());                                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- the sequence ------------------------------------------------------------------------ */

static unsigned char *expected[8];
static size_t nexpected;
static bool recording;

/* Keep (recording) or compare the bytes of result @p i. */
static void result(size_t i, const DLTensor *d) {
    unsigned char *b = read_back(d);
    if (recording) {
        expected[i] = b;
        nexpected = i + 1;
        return;
    }
    if (memcmp(b, expected[i], opreg_tensor_nbytes(d)) != 0)
        TEST_FAIL_AT("result %zu differs from the run without a failure (call %lu failed)", i,
                     armed);
    free(b);
}

struct tensors {
    DLTensor *h[7];
    DLTensor *d[9];
};

static void free_all(struct tensors *t) {
    for (size_t i = 0; i < sizeof t->h / sizeof t->h[0]; i++)
        opreg_tensor_free(t->h[i]);
    for (size_t i = 0; i < sizeof t->d / sizeof t->d[0]; i++)
        opreg_tensor_free(t->d[i]);
}

static void sequence_in(struct tensors *t) {
    int64_t s2[2] = { 4, 64 }, s1[1] = { 64 }, one[1] = { 1 }, sg[2] = { 4, 128 };
    t->h[0] = host_tensor(OPREG_DTYPE_F32, 2, s2, 1); /* x */
    t->h[1] = host_tensor(OPREG_DTYPE_F32, 1, s1, 2); /* weight */
    t->h[2] = host_tensor(OPREG_DTYPE_F32, 2, sg, 3); /* gated input */
    t->h[3] = host_tensor(OPREG_DTYPE_F32, 1, one, 0);
    ((float *)t->h[3]->data)[0] = 0.05f;             /* int8 scale */
    t->h[4] = host_tensor(OPREG_DTYPE_I8, 2, s2, 0); /* int8 / fp8 outputs, zeros */
    t->h[5] = host_tensor(OPREG_DTYPE_F32, 1, one, 0);
    ((float *)t->h[5]->data)[0] = 0;                        /* the dynamic scale, written */
    t->h[6] = host_tensor(OPREG_DTYPE_F8_E4M3FN, 2, s2, 0); /* fp8 output, zeros */
    DLTensor *out_h = host_tensor(OPREG_DTYPE_F32, 2, s2, 9);
    DLTensor *out2_h = host_tensor(OPREG_DTYPE_F32, 2, s2, 10);
    MAKE(t->d[0], t->h[0]);
    MAKE(t->d[1], t->h[1]);
    MAKE(t->d[2], out_h);
    opreg_tensor_free(out_h);
    OP("_C::rms_norm", &t->d[2], 1, opreg_tensor_value(t->d[2]), opreg_tensor_value(t->d[0]),
       opreg_tensor_value(t->d[1]), opreg_float_value(1e-6));
    result(0, t->d[2]);
    MAKE(t->d[3], t->h[2]);
    MAKE(t->d[4], out2_h);
    opreg_tensor_free(out2_h);
    OP("_C::silu_and_mul", &t->d[4], 1, opreg_tensor_value(t->d[4]), opreg_tensor_value(t->d[3]));
    result(1, t->d[4]);
    MAKE(t->d[5], t->h[3]);
    MAKE(t->d[6], t->h[4]);
    OP("_C::static_scaled_int8_quant", &t->d[6], 1, opreg_tensor_value(t->d[6]),
       opreg_tensor_value(t->d[0]), opreg_tensor_value(t->d[5]));
    result(2, t->d[6]);
    MAKE(t->d[7], t->h[6]);
    MAKE(t->d[8], t->h[5]);
    DLTensor *dyn[2] = { t->d[7], t->d[8] };
    OP("_C::dynamic_scaled_fp8_quant", dyn, 2, opreg_tensor_value(t->d[7]),
       opreg_tensor_value(t->d[0]), opreg_tensor_value(t->d[8]));
    result(3, t->d[7]);
    result(4, t->d[8]);
}

static void sequence(void) {
    struct tensors t = { { NULL }, { NULL } };
    sequence_in(&t);
    free_all(&t);
}

/* ---- the plugin, loaded afresh for each run ----------------------------------------------------
 */

static bool load(void) {
    if (opreg_plugin_load(&plugin, reg, OPENCL_PLUGIN) != OPREG_OK) {
        TEST_FAIL_AT("loading %s: %s", OPENCL_PLUGIN, opreg_last_error());
        return false;
    }
    opreg_dispatch_key key;
    if (opreg_key_find(&key, "opencl") != OPREG_OK) abort();
    be = opreg_key_backend(key);
    return true;
}

static void unload(void) {
    opreg_plugin_unload(plugin);
    opreg_registry_reclaim(reg); /* fini: every OpenCL object goes */
    plugin = NULL;
}

/* Run the sequence on a fresh load with call @p n of @p classes failing. */
static bool run_once(unsigned long n, unsigned classes) {
    if (!load()) return false;
    armed = n;
    fi_arm(n, classes);
    sequence();
    if (!test_current_failed && n && !fi_failed())
        TEST_FAIL_AT("call %lu was never reached: the sequence is not deterministic", n);
    fi_arm(0, 0);
    armed = 0;
    unload();
    if (test_current_failed) fprintf(stderr, "  (with OpenCL call %lu failing)\n", n);
    return !test_current_failed;
}

TEST(calls_fail_one_by_one) {
    recording = true;
    if (!load()) return;
    fi_arm(0, ALL_CLASSES);
    sequence();
    unsigned long k = fi_calls();
    fi_arm(0, 0);
    unload();
    recording = false;
    if (test_current_failed) return;
    bool ok = true;
    for (unsigned long n = 1; ok && n <= k; n++)
        ok = run_once(n, ALL_CLASSES);
    if (ok && leaks_found()) TEST_FAIL_AT("memory leaked (see the report above)");
    printf("  sequence: %lu OpenCL calls (buffers, program build, kernels, launches), each "
           "failed once\n",
           k);
}

/* A failure while the plugin loads (discovery makes each device's context
 * and queue) leaves the device to be opened on first use: the load
 * succeeds, the backend is available, and the sequence works. A second
 * failure at that first use is reported by the call that met it. */
TEST(open_fails_at_load) {
    fi_arm(0, OCL_FI_CREATE);
    if (!load()) return;
    unsigned long k = fi_calls();
    fi_arm(0, 0);
    unload();
    for (unsigned long n = 1; n <= k && !test_current_failed; n++) {
        fi_arm(n, OCL_FI_CREATE);
        if (!load()) return;
        CHECK(fi_failed());
        char why[256];
        CHECK(opreg_key_is_available(opreg_key_of_device(dev), why, sizeof why));
        armed = 1;
        fi_arm(1, OCL_FI_CREATE);
        sequence();
        CHECK(fi_failed());
        fi_arm(0, 0);
        armed = 0;
        unload();
    }
    if (!test_current_failed && leaks_found()) TEST_FAIL_AT("memory leaked");
    printf("  load: %lu OpenCL calls (each device's context and queue), each failed once\n", k);
}

/* PoCL compiles a program that is not in its kernel cache with LLVM, and
 * LeakSanitizer reports LLVM's allocations as leaks at exit: whether this
 * test passed depended on whether the cache was warm. A child process runs
 * the sequence once first (and leaves without a leak check), so that this
 * process finds the program in the cache and every leak reported is one of
 * opreg's own. */
static void warm_kernel_cache(void) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        recording = true; /* its results are kept, not compared */
        if (load()) sequence();
        _exit(0);
    }
    if (pid > 0) (void)waitpid(pid, NULL, 0);
}

int main(void) {
    /* Hold the module ourselves: the hook is found in it, and its state
     * outlives each unload (fini resets it). */
    void *h = dlopen(OPENCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", OPENCL_PLUGIN, dlerror());
        return 1;
    }
    void *a = dlsym(h, "ocl_fi_arm"), *c = dlsym(h, "ocl_fi_calls"), *f = dlsym(h, "ocl_fi_failed");
    if (!a || !c || !f) {
        fprintf(stderr, "%s has no fault-injection hook (built without OPREG_FAULT_INJECTION)\n",
                OPENCL_PLUGIN);
        return 1;
    }
    memcpy(&fi_arm, &a, sizeof a);
    memcpy(&fi_calls, &c, sizeof c);
    memcpy(&fi_failed, &f, sizeof f);
    opreg_library *libs[4];
    if (opreg_registry_create(&reg) != OPREG_OK || opreg_library_init__C(reg, &libs[0]) ||
        opreg_library_impl_init__C_REFERENCE(reg, &libs[1]) ||
        opreg_library_impl_init__C_META(reg, &libs[2]) ||
        opreg_library_impl_init__C_CPU(reg, &libs[3])) {
        fprintf(stderr, "registry: %s\n", opreg_last_error());
        return 1;
    }
    warm_kernel_cache();
    if (!load()) return 1;
    char why[256];
    bool available = opreg_key_is_available(opreg_key_of_device(dev), why, sizeof why);
    unload();
    if (!available) {
        printf("skipped: the OpenCL backend is unavailable: %s\n", why);
        opreg_registry_destroy(reg);
        dlclose(h);
        return TEST_SKIP_CODE;
    }
    RUN(calls_fail_one_by_one);
    RUN(open_fails_at_load);
    for (size_t i = 0; i < nexpected; i++)
        free(expected[i]);
    opreg_registry_destroy(reg);
    dlclose(h);
    return test_summary();
}
