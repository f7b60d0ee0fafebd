/* Unloading libopreg while a thread that ran its code still lives: that
 * thread keeps per-thread state under opreg's thread keys (the kernels'
 * scratch from paged attention, the oneDNN glue's stream from a linear past
 * the gemv rows, the parser's spare chunk), whose destructors are opreg's
 * code. The library's destructor deletes those keys, so the thread's exit,
 * after the library is gone, calls nothing in it. Without that the thread
 * crashes as it exits. The library is the shared one, opened with dlopen;
 * the test's own static copy of opreg is never called. */
#include "opreg/opreg.h"
#include "test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* LeakSanitizer's per-thread switch, where the test runs under it: the
 * thread's state is not freed once the keys are deleted (as documented),
 * and that is not what this test looks for. */
extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

static struct {
    opreg_registry *(*registry_default)(void);
    opreg_status (*op_find)(const opreg_op **, const opreg_registry *, const char *);
    int (*sizes_parse)(opreg_sizes *, const char *, char *, size_t);
    opreg_status (*inputs_build)(opreg_inputs **, const opreg_op *, int, opreg_sizes *, uint64_t,
                                 char *, size_t);
    const opreg_value *(*inputs_args)(const opreg_inputs *);
    size_t (*inputs_nargs)(const opreg_inputs *);
    opreg_value *(*inputs_rets)(opreg_inputs *);
    size_t (*inputs_nrets)(const opreg_inputs *);
    void (*inputs_free)(opreg_inputs *);
    opreg_status (*call_boxed)(const opreg_op *, const opreg_value *, size_t, const opreg_kwarg *,
                               size_t, opreg_value *, size_t);
    opreg_status (*schema_parse)(opreg_schema **, const char *, size_t, unsigned,
                                 opreg_schema_error *);
    void (*schema_free)(opreg_schema *);
    const char *(*last_error)(void);
} lib;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: the thread ran opreg's code; 2: the library is closed */
static char failure[512];

static bool run_op(const char *name, const char *shape) {
    const opreg_op *op;
    opreg_sizes sizes;
    opreg_inputs *in = NULL;
    char err[256] = "";
    opreg_status st = lib.op_find(&op, lib.registry_default(), name);
    if (st == OPREG_OK && lib.sizes_parse(&sizes, shape, err, sizeof err) != 0)
        st = OPREG_ERR_INVALID_ARGUMENT;
    if (st == OPREG_OK)
        st = lib.inputs_build(&in, op, OPREG_DTYPE_BF16, &sizes, 7, err, sizeof err);
    if (st == OPREG_OK)
        st = lib.call_boxed(op, lib.inputs_args(in), lib.inputs_nargs(in), NULL, 0,
                            lib.inputs_rets(in), lib.inputs_nrets(in));
    if (st != OPREG_OK)
        snprintf(failure, sizeof failure, "%s %s: %s %s", name, shape, err, lib.last_error());
    lib.inputs_free(in);
    return st == OPREG_OK;
}

static void *host_thread(void *arg) {
    (void)arg;
    opreg_schema *s = NULL;
    opreg_schema_error serr;
    const char *text = "f(Tensor self, int[] dims, str mode=\"x\") -> Tensor";
    if (__lsan_disable) __lsan_disable();
    if (run_op("_C::paged_attention_v1", "seqs=2,max_seq_len=256") &&
        run_op("_C::linear", "tokens=64,hidden=256,out_features=256")) {
        if (lib.schema_parse(&s, text, strlen(text), 0, &serr) != OPREG_OK)
            snprintf(failure, sizeof failure, "schema parse: %s", lib.last_error());
        lib.schema_free(s);
    }
    if (__lsan_enable) __lsan_enable();
    pthread_mutex_lock(&mu);
    stage = 1;
    pthread_cond_broadcast(&cv);
    while (stage < 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL; /* the thread's keys' destructors would run now */
}

/* Whether a file named like the library is still mapped. */
static bool mapped(const char *path) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char line[4096];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, base) != NULL;
    if (f) fclose(f);
    return found;
}

#define SYM(field, name) (*(void **)&lib.field = dlsym(h, name)) != NULL

static int skipped;

TEST(thread_outlives_library) {
    void *h = dlopen(OPREG_LIB_FILE, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        TEST_FAIL_AT("dlopen %s: %s", OPREG_LIB_FILE, dlerror());
        return;
    }
    if (!(SYM(registry_default, "opreg_registry_default") && SYM(op_find, "opreg_op_find") &&
          SYM(sizes_parse, "opreg_sizes_parse") && SYM(inputs_build, "opreg_inputs_build") &&
          SYM(inputs_args, "opreg_inputs_args") && SYM(inputs_nargs, "opreg_inputs_nargs") &&
          SYM(inputs_rets, "opreg_inputs_rets") && SYM(inputs_nrets, "opreg_inputs_nrets") &&
          SYM(inputs_free, "opreg_inputs_free") && SYM(call_boxed, "opreg_call_boxed") &&
          SYM(schema_parse, "opreg_schema_parse") && SYM(schema_free, "opreg_schema_free") &&
          SYM(last_error, "opreg_last_error"))) {
        TEST_FAIL_AT("dlsym: %s", dlerror());
        dlclose(h);
        return;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, host_thread, NULL) != 0) {
        TEST_FAIL_AT("pthread_create");
        dlclose(h);
        return;
    }
    pthread_mutex_lock(&mu);
    while (stage < 1)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    bool ran = failure[0] == '\0';
    dlclose(h);
    bool gone = !mapped(OPREG_LIB_FILE);
    pthread_mutex_lock(&mu);
    stage = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL); /* a crash here is the bug */
    if (!ran) TEST_FAIL_AT("the host thread's calls failed: %s", failure);
    if (!gone) {
        printf("test_unload: %s stayed mapped after dlclose; nothing shown\n", OPREG_LIB_FILE);
        skipped = 1;
    }
}

int main(void) {
    RUN(thread_outlives_library);
    if (skipped) return 77;
    return test_summary();
}
