/* share_openmp(library, threads): lend an OpenMP runtime that the process has
 * already loaded (PyTorch's libgomp, say) to opreg's CPU kernels through
 * opreg_set_parallel_for(), so that opreg's loops run on the host's OpenMP
 * team instead of on a second pool that competes with it for the same cores.
 *
 * Nothing here links against OpenMP: the library is opened with RTLD_NOLOAD
 * (it must be loaded already) and only three entry points are looked up:
 * GOMP_parallel, the GNU ABI that libgomp, LLVM's libomp and Intel's libiomp5
 * all export, omp_in_parallel and omp_get_thread_num. Inside the team,
 * threads claim the loop's slots one at a time (omp_loop.h), so a thread
 * that starts late takes fewer: the calling thread (the team's first) from
 * the front and the others from the back, as opreg's own pool does, so that
 * each core gets the same part of the data from one call to the next
 * (docs/performance.md, "Threads"). */
#include "python/src/binding.h"
#include "python/src/omp_loop.h"

#include <dlfcn.h>
#include <stdint.h>

typedef void (*gomp_parallel_fn)(void (*body)(void *), void *data, unsigned threads,
                                 unsigned flags);
typedef int (*omp_in_parallel_fn)(void);
typedef int (*omp_thread_num_fn)(void);

/* The runtime lent now (one per process, as opreg's hook is). */
static struct {
    void *lib; /* dlopen handle, NULL when none is lent */
    gomp_parallel_fn parallel;
    omp_in_parallel_fn in_parallel;
    omp_thread_num_fn thread_num;
    unsigned threads;
} lent;

/* At most this many slots a loop (omp_loop.h): each a task below it, past
 * it runs of tasks between omp_split's cuts. */
#define OMP_MAX_SLOTS INT32_MAX

static void omp_body(void *data) {
    /* The team's first thread is the one that called GOMP_parallel. */
    omp_loop_run(data, lent.thread_num() != 0);
}

/* opreg's parallel-for hook over the lent team. From inside an OpenMP region
 * (a torch op's, or one of opreg's own tasks) the tasks run on the caller: a
 * nested region would start more threads than the cores. */
static void omp_parallel_for(void *host, int64_t n, opreg_task_fn task, void *ctx) {
    (void)host;
    if (n <= 1 || lent.threads <= 1 || lent.in_parallel()) {
        for (int64_t i = 0; i < n; i++)
            task(ctx, i);
        return;
    }
    struct omp_loop l;
    omp_loop_init(&l, n, OMP_MAX_SLOTS, task, ctx);
    unsigned threads = n < (int64_t)lent.threads ? (unsigned)n : lent.threads;
    lent.parallel(omp_body, &l, threads, 0);
}

static void release(void) {
    if (!lent.lib) return;
    opreg_set_parallel_for(NULL, NULL, 0);
    dlclose(lent.lib);
    lent.lib = NULL;
}

PyObject *opreg__py_share_openmp(PyObject *m, PyObject *args) {
    (void)m;
    const char *path;
    int threads = 0;
    if (!PyArg_ParseTuple(args, "z|i:share_openmp", &path, &threads)) return NULL;
    if (!path) {
        release();
        Py_RETURN_NONE;
    }
    if (threads < 1 || threads > OPREG_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "share_openmp: threads must be 1 to %d, not %d",
                     OPREG_MAX_THREADS, threads);
        return NULL;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        const char *why = dlerror();
        PyErr_Format(PyExc_ValueError, "share_openmp: '%s' is not loaded in this process (%s)",
                     path, why ? why : "dlopen failed");
        return NULL;
    }
    gomp_parallel_fn parallel;
    omp_in_parallel_fn in_parallel;
    omp_thread_num_fn thread_num;
    /* POSIX: a data pointer from dlsym converts to a function pointer. */
    *(void **)&parallel = dlsym(lib, "GOMP_parallel");
    *(void **)&in_parallel = dlsym(lib, "omp_in_parallel");
    *(void **)&thread_num = dlsym(lib, "omp_get_thread_num");
    if (!parallel || !in_parallel || !thread_num) {
        dlclose(lib);
        PyErr_Format(PyExc_ValueError,
                     "share_openmp: '%s' is not an OpenMP runtime with the GNU ABI "
                     "(no GOMP_parallel, omp_in_parallel or omp_get_thread_num)",
                     path);
        return NULL;
    }
    release();
    lent.lib = lib;
    lent.parallel = parallel;
    lent.in_parallel = in_parallel;
    lent.thread_num = thread_num;
    lent.threads = (unsigned)threads;
    opreg_status st = opreg_set_parallel_for(omp_parallel_for, NULL, threads);
    if (st != OPREG_OK) {
        lent.lib = NULL;
        dlclose(lib);
        return opreg__py_raise(st, NULL);
    }
    Py_RETURN_NONE;
}
