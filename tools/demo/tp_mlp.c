/* opreg_tp_mlp: a tensor-parallel MLP block across the ranks of an MPI job,
 * checked against the same block in one process.
 *
 *   mpiexec -n 2 build/tools/opreg_tp_mlp [--tokens T] [--hidden H] [--intermediate I]
 *
 * The block is vLLM's gated MLP: y = down(silu(gate(x)) * up(x)). Split
 * Megatron-style over n ranks: the gate and up projections are
 * column-parallel (rank r holds rows [r I/n, (r+1) I/n) of each, stacked as
 * one [2I/n, H] weight, so `linear` then `silu_and_mul` give its I/n
 * columns of the activation with no communication); the down projection is
 * row-parallel (rank r holds columns [r I/n, (r+1) I/n) of the [H, I]
 * weight), and one `dist::all_reduce_` sums the partial outputs. Every
 * rank builds the full weights from the same seed, runs the whole block
 * alone as the reference, and compares. Exit 0 when every rank agrees
 * within f32 rounding, 1 otherwise. */
#include "opreg/mpi.h"
#include "opreg/opreg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void die(const char *what) {
    fprintf(stderr, "opreg_tp_mlp (rank %d): %s: %s\n", rank, what, opreg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static DLTensor *empty(int64_t rows, int64_t cols) {
    int64_t shape[2] = { rows, cols };
    DLTensor *t = NULL;
    if (opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 2, shape) != OPREG_OK) die("tensor");
    return t;
}

static float *at(DLTensor *t) {
    return (float *)t->data;
}

/* The same numbers on every rank: a small LCG in [-scale, scale). */
static void fill(DLTensor *t, uint32_t seed, float scale) {
    uint32_t s = seed;
    size_t n = (size_t)opreg_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        at(t)[i] = ((float)(s >> 8) / (float)(1u << 24) * 2 - 1) * scale;
    }
}

static const opreg_op *op_named(const char *name) {
    const opreg_op *op = NULL;
    if (opreg_op_find(&op, opreg_registry_default(), name) != OPREG_OK) die(name);
    return op;
}

/* _C::linear(input, weight) -> input @ weight^T, a new tensor. */
static DLTensor *linear(DLTensor *x, DLTensor *w) {
    opreg_value args[] = { opreg_tensor_value(x), opreg_tensor_value(w), opreg_none() };
    opreg_value ret;
    if (opreg_call_boxed(op_named("_C::linear"), args, 3, NULL, 0, &ret, 1) != OPREG_OK)
        die("_C::linear");
    return ret.u.tensor;
}

static DLTensor *silu_and_mul(DLTensor *gate_up) {
    DLTensor *out = empty(gate_up->shape[0], gate_up->shape[1] / 2);
    opreg_value args[] = { opreg_tensor_value(out), opreg_tensor_value(gate_up) };
    if (opreg_call_boxed(op_named("_C::silu_and_mul"), args, 2, NULL, 0, NULL, 0) != OPREG_OK)
        die("_C::silu_and_mul");
    return out;
}

static int64_t flag(int argc, char **argv, const char *name, int64_t fallback) {
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return strtoll(argv[i + 1], NULL, 10);
    return fallback;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int64_t T = flag(argc, argv, "--tokens", 16), H = flag(argc, argv, "--hidden", 512),
            I = flag(argc, argv, "--intermediate", 1024);
    if (T < 1 || H < 1 || I < nranks || I % nranks) {
        if (rank == 0)
            fprintf(stderr,
                    "opreg_tp_mlp: --intermediate (%lld) must be a positive multiple of "
                    "the %d ranks\n",
                    (long long)I, nranks);
        MPI_Finalize();
        return 2;
    }
    if (!opreg_registry_default()) die("registry");
    if (opreg_mpi_group_create("tp", MPI_COMM_WORLD, 0, OPREG_MPI_DEFAULT_TIMEOUT_MS) != OPREG_OK)
        die("opreg_mpi_group_create");
    int64_t S = I / nranks; /* this rank's share of the intermediate size */

    /* The full block: gate_up [2I, H] (gate rows, then up rows), down [H, I]. */
    DLTensor *x = empty(T, H), *gate_up = empty(2 * I, H), *down = empty(H, I);
    fill(x, 1, 1.0f);
    fill(gate_up, 2, 1.0f / sqrtf((float)H));
    fill(down, 3, 1.0f / sqrtf((float)I));

    /* This rank's shards. */
    DLTensor *gate_up_r = empty(2 * S, H), *down_r = empty(H, S);
    for (int64_t j = 0; j < S; j++) {
        memcpy(at(gate_up_r) + j * H, at(gate_up) + (rank * S + j) * H, (size_t)H * sizeof(float));
        memcpy(at(gate_up_r) + (S + j) * H, at(gate_up) + (I + rank * S + j) * H,
               (size_t)H * sizeof(float));
    }
    for (int64_t h = 0; h < H; h++)
        memcpy(at(down_r) + h * S, at(down) + h * I + rank * S, (size_t)S * sizeof(float));

    /* Tensor-parallel: column-parallel gate_up, the activation, row-parallel
     * down, one all_reduce. */
    double t0 = MPI_Wtime();
    DLTensor *h_r = linear(x, gate_up_r);
    DLTensor *a_r = silu_and_mul(h_r);
    DLTensor *y = linear(a_r, down_r);
    opreg_value ar[] = { opreg_tensor_value(y), opreg_str_value("sum"), opreg_str_value("tp") };
    if (opreg_call_boxed(op_named("dist::all_reduce_"), ar, 3, NULL, 0, NULL, 0) != OPREG_OK)
        die("dist::all_reduce_");
    double t_tp = MPI_Wtime() - t0;

    /* The same block in this process alone. */
    DLTensor *h = linear(x, gate_up);
    DLTensor *a = silu_and_mul(h);
    DLTensor *y_ref = linear(a, down);

    double max_err = 0, max_ref = 0;
    size_t n = (size_t)(T * H);
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)at(y)[i] - at(y_ref)[i]);
        if (e > max_err) max_err = e;
        if (fabs(at(y_ref)[i]) > max_ref) max_ref = fabs(at(y_ref)[i]);
    }
    /* f32 sums of I products in another order: a few ulps of the output's scale. */
    double tol = 1e-5 * (max_ref > 1 ? max_ref : 1) * sqrt((double)I);
    int ok = max_err <= tol, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    double worst = 0;
    MPI_Reduce(&max_err, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("tensor-parallel MLP on %d ranks (tokens %lld, hidden %lld, intermediate %lld, "
               "%lld per rank): max |y_tp - y_one_process| = %.3g (tolerance %.3g), %s; the "
               "parallel block took %.2f ms\n",
               nranks, (long long)T, (long long)H, (long long)I, (long long)S, worst, tol,
               all_ok ? "agrees" : "DISAGREES", t_tp * 1e3);

    DLTensor *all[] = { x, gate_up, down, gate_up_r, down_r, h_r, a_r, y, h, a, y_ref };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        opreg_tensor_free(all[i]);
    opreg_group_destroy("tp");
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
