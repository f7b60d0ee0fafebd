/* Benchmark suites of `opreg bench`. A suite prints one result line per case:
 * a human-readable line, or with --json one JSON object per line such as
 *   {"suite":"schema","case":"parse_native_functions","schemas_per_s":...}
 * Suites report ratios measured in the same run where a target is a ratio. */
#ifndef OPREG_TOOLS_BENCH_H
#define OPREG_TOOLS_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opreg/opreg.h"

struct bench_ctx {
    bool json;              /* print JSON lines instead of text */
    bool progress;          /* print progress lines on stderr (set when stderr is a terminal) */
    const char *corpus_dir; /* folder of the schema corpus, or NULL */
    const char *device;     /* --device: NULL or "cpu", or another device (the ops suite only) */
    bool quick;             /* --quick: the ops suite on a device at a 64th of its sizes, once */
};

/* Monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);

/* A progress line on stderr when ctx->progress, overwritten by the next one. */
void bench_progress(const struct bench_ctx *ctx, const char *fmt, ...);

/* The STREAM triad a[i] = b[i] + s * c[i] over 16 Mi floats (3 x 64 MiB),
 * on the pool the kernels use (opreg_parallel_for). Bytes: two reads and
 * one write, as STREAM counts them. */
struct triad {
    float *a, *b, *c;
    size_t n;
};
/* Allocate and fill; -1 when out of memory. */
int triad_init(struct triad *t);
/* One triad; its GB/s. */
double triad_run(const struct triad *t);
void triad_free(struct triad *t);

/* One op's inputs (include/opreg/inputs.h), built once and called many
 * times through the default registry (bench_case.c). */
struct op_case {
    const opreg_op *op;
    struct opreg_inputs *in;
    size_t bytes; /* moved by one call: read + written */
};

/* Build the inputs of @p opname in @p dtype at @p shape_text ("tokens=16,
 * hidden=4096"); the arguments named in @p rw (two names, or NULL) are read
 * and written, and count twice in the bytes. -1 (after a message naming
 * case @p name) when the case cannot run. */
int op_case_open(struct op_case *c, const char *name, const char *opname, opreg_dtype dtype,
                 const char *shape_text, const char *const *rw);
/* The bytes of argument @p arg's tensors (0 when it has none). */
size_t op_case_arg_bytes(const struct op_case *c, const char *arg);
/* One call; its seconds, or -1 (after a message) when it failed. */
double op_case_call(struct op_case *c, const char *name);
void op_case_close(struct op_case *c);

/* X(name, summary): the suites, in the order `opreg bench` runs them. Each is
 *   int bench_NAME(const struct bench_ctx *ctx);
 * returning 0 on success, 1 when the suite could not run (its input missing). */
#define OPREG_BENCH_SUITES(X)                                                                      \
    X(schema, "parse the native_functions corpus")                                                 \
    X(dispatch, "call, look up and query a 4-argument op through the registry")                    \
    X(ops, "memory-bound ops beside a STREAM triad, linear beside raw oneDNN")                     \
    X(threads, "serving-size ops on one thread and on all, quiet and beside a busy process")       \
    X(small, "every op of the catalogue at serving sizes, beside the triad")                       \
    X(python, "a call of opreg.ops._C.rms_norm from Python beside a trivial function call")        \
    X(collectives, "all_reduce through the registry beside raw MPI_Allreduce (under mpiexec)")     \
    X(mutation, "rms_norm with the mutation sanitizer off and on: its cost per byte")

#define X(name, summary) int bench_##name(const struct bench_ctx *ctx);
OPREG_BENCH_SUITES(X)
#undef X

/* The ops suite on a device other than the CPU (bench_ops_device.c): the
 * memory-bound ops' GB/s beside a copy within the device's memory. Returns
 * 1 when the device is absent or its backend cannot copy. */
int bench_ops_device(const struct bench_ctx *ctx);

#endif
