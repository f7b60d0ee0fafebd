/* opreg bench collectives: `dist::all_reduce_` (sum, f32, in place) through
 * the registry beside a raw MPI_Allreduce on the same buffer, in the same
 * run, at 8 bytes, 64 bytes, 1, 16 and 256 KiB, 1, 4, 16 and 64 MiB. Run it under an MPI launcher:
 *
 *   mpiexec -n 2 opreg bench collectives
 *
 * The group has c10d's default ten-minute timeout (the watchdog's clock
 * reads are part of what is measured) and no argument check. The two are
 * timed in alternating rounds of the same number of calls; each reports
 * its fastest round, as rank 0 saw it. `of_raw` is the raw time over the
 * registry's (the bandwidth ratio) and `extra_us` the added latency per
 * call. Without a launcher the suite says so and does nothing; in a build
 * without MPI it fails. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OPREG_TOOL_HAVE_MPI
#include "opreg/mpi.h"

#define ROUNDS 7

/* Whether an MPI launcher started this process (Open MPI, MPICH, PMIx). */
static bool under_launcher(void) {
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                        "MPI_LOCALNRANKS" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

static double time_raw(float *buf, size_t n, int iters, MPI_Comm comm) {
    MPI_Barrier(comm);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, comm);
    return (double)(bench_now_ns() - t0) / iters;
}

static double time_op(const opreg_op *op, const opreg_value *args, int iters, MPI_Comm comm) {
    MPI_Barrier(comm);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < iters; i++)
        if (opreg_call_boxed(op, args, 3, NULL, 0, NULL, 0) != OPREG_OK) return -1;
    return (double)(bench_now_ns() - t0) / iters;
}

int bench_collectives(const struct bench_ctx *ctx) {
    if (!under_launcher()) {
        printf("collectives: not started by an MPI launcher; run 'mpiexec -n 2 opreg bench "
               "collectives'\n");
        return 0;
    }
    int initialized = 0, provided, rank, size;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);
    int rc = 0;
    const opreg_op *op = NULL;
    if (opreg_mpi_group_create("bench", MPI_COMM_WORLD, 0, OPREG_MPI_DEFAULT_TIMEOUT_MS) !=
            OPREG_OK ||
        opreg_op_find(&op, opreg_registry_default(), "dist::all_reduce_") != OPREG_OK) {
        fprintf(stderr, "collectives: %s\n", opreg_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0 && !ctx->json)
        printf("collectives: all_reduce_ (sum, f32, in place) on %d ranks, registry beside raw "
               "MPI_Allreduce\n",
               size);
    static const size_t sizes[] = { 8,       64,      1 << 10,  16 << 10, 256 << 10,
                                    1 << 20, 4 << 20, 16 << 20, 64 << 20 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && rc == 0; s++) {
        size_t bytes = sizes[s], n = bytes / sizeof(float);
        int64_t shape[1] = { (int64_t)n };
        DLTensor *t = NULL;
        if (opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 1, shape) != OPREG_OK) {
            fprintf(stderr, "collectives: %s\n", opreg_last_error());
            rc = 1;
            break;
        }
        /* Zeros stay zeros: no overflow, no denormals, whatever the iterations. */
        memset(t->data, 0, bytes);
        opreg_value args[] = { opreg_tensor_value(t), opreg_str_value("sum"),
                               opreg_str_value("bench") };
        size_t budget = (size_t)256 << 20; /* bytes per round, about */
        int iters = (int)(budget / bytes > 20000 ? 20000 : budget / bytes < 5 ? 5 : budget / bytes);
        double best_raw = 0, best_op = 0;
        for (int r = 0; r <= ROUNDS; r++) { /* round 0 warms both */
            if (rank == 0)
                bench_progress(ctx, "collectives %zu B: round %d of %d", bytes, r, ROUNDS);
            double tr = time_raw(t->data, n, iters, raw);
            double to = time_op(op, args, iters, MPI_COMM_WORLD);
            if (to < 0) {
                fprintf(stderr, "collectives: %s\n", opreg_last_error());
                rc = 1;
                break;
            }
            if (r == 0) continue;
            if (!best_raw || tr < best_raw) best_raw = tr;
            if (!best_op || to < best_op) best_op = to;
        }
        opreg_tensor_free(t);
        if (rc || rank != 0) continue;
        if (ctx->progress) fputs("\r\033[K", stderr);
        double of_raw = best_raw / best_op, extra_us = (best_op - best_raw) / 1e3;
        if (ctx->json)
            printf("{\"suite\":\"collectives\",\"case\":\"all_reduce_f32\",\"ranks\":%d,"
                   "\"bytes\":%zu,\"us\":%.3f,\"raw_us\":%.3f,\"gb_per_s\":%.3f,\"of_raw\":%.3f,"
                   "\"extra_us\":%.3f}\n",
                   size, bytes, best_op / 1e3, best_raw / 1e3, bytes / best_op, of_raw, extra_us);
        else
            printf("collectives all_reduce_f32 %9zu B  %10.2f us  %8.3f GB/s  %5.3f of raw MPI "
                   "(%.2f us)  %+.3f us\n",
                   bytes, best_op / 1e3, bytes / best_op, of_raw, best_raw / 1e3, extra_us);
        fflush(stdout);
    }
    opreg_group_destroy("bench");
    MPI_Comm_free(&raw);
    if (!initialized) MPI_Finalize();
    return rc;
}

#else

int bench_collectives(const struct bench_ctx *ctx) {
    (void)ctx;
    fprintf(stderr, "collectives: this opreg was built without MPI (install libopenmpi-dev and "
                    "configure again)\n");
    return 1;
}

#endif
