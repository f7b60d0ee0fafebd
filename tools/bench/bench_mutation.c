/* opreg bench mutation: what the mutation sanitizer (opreg/mutation.h)
 * costs a call. `_C::rms_norm` in f32 on the CPU, boxed through the default
 * registry, at 64 and 2048 tokens of hidden 4096, with the sanitizer off and
 * in REPORT mode, in alternating rounds. Each line gives the fastest batch's
 * time per call both ways, the read-only bytes a call hashes (input and
 * weight; twice: before the kernel and after), the overhead per read-only
 * byte and the rate at which the two passes read them. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include <string.h>

#define ROUNDS 7
/* Each timed batch runs about this long. */
#define BATCH_NS 20000000.0

static const struct mut_case {
    const char *name;
    int64_t tokens, hidden;
} cases[] = { { "rms_norm_f32_64x4096", 64, 4096 }, { "rms_norm_f32_2048x4096", 2048, 4096 } };

struct fixture {
    DLTensor *out, *input, *weight;
    opreg_value args[4];
};

static int fixture_open(struct fixture *f, int64_t tokens, int64_t hidden) {
    int64_t shape[2] = { tokens, hidden };
    memset(f, 0, sizeof *f);
    if (opreg_tensor_empty_cpu(&f->out, OPREG_DTYPE_F32, 2, shape) != OPREG_OK ||
        opreg_tensor_empty_cpu(&f->input, OPREG_DTYPE_F32, 2, shape) != OPREG_OK ||
        opreg_tensor_empty_cpu(&f->weight, OPREG_DTYPE_F32, 1, &shape[1]) != OPREG_OK)
        return -1;
    float *x = f->input->data, *w = f->weight->data;
    for (int64_t i = 0; i < tokens * hidden; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int64_t i = 0; i < hidden; i++)
        w[i] = 1.0f + (float)(i % 7) / 8.0f;
    f->args[0] = opreg_tensor_value(f->out);
    f->args[1] = opreg_tensor_value(f->input);
    f->args[2] = opreg_tensor_value(f->weight);
    f->args[3] = opreg_float_value(1e-6);
    return 0;
}

static void fixture_close(struct fixture *f) {
    opreg_tensor_free(f->out);
    opreg_tensor_free(f->input);
    opreg_tensor_free(f->weight);
}

/* @p n calls; ns per call, or -1 when one failed. */
static double batch(const opreg_op *op, const struct fixture *f, int n) {
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        if (opreg_call_boxed(op, f->args, 4, NULL, 0, NULL, 0) != OPREG_OK) return -1;
    return (double)(bench_now_ns() - t0) / n;
}

static int run_case(const struct bench_ctx *ctx, opreg_registry *reg, const opreg_op *op,
                    const struct mut_case *c) {
    struct fixture f;
    if (fixture_open(&f, c->tokens, c->hidden) != 0) {
        fprintf(stderr, "opreg bench mutation: %s: %s\n", c->name, opreg_last_error());
        fixture_close(&f);
        return 1;
    }
    /* Size the batches on the slower mode, after a warm-up call. */
    if (opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT) != OPREG_OK) goto failed;
    double one = batch(op, &f, 1);
    one = batch(op, &f, 3);
    if (one < 0) goto failed;
    int n = (int)(BATCH_NS / (one > 1 ? one : 1));
    if (n < 3) n = 3;
    double best[2] = { 1e300, 1e300 };
    static const opreg_mutation_mode modes[2] = { OPREG_MUTATION_OFF, OPREG_MUTATION_REPORT };
    for (int r = 0; r < ROUNDS; r++)
        for (int m = 0; m < 2; m++) {
            bench_progress(ctx, "mutation: %s, round %d/%d, %s", c->name, r + 1, ROUNDS,
                           m ? "report" : "off");
            if (opreg_registry_set_mutation_check(reg, modes[m]) != OPREG_OK) goto failed;
            double ns = batch(op, &f, n);
            if (ns < 0) goto failed;
            if (ns < best[m]) best[m] = ns;
        }
    size_t ro = opreg_tensor_nbytes(f.input) + opreg_tensor_nbytes(f.weight);
    double extra = best[1] - best[0];
    double per_byte = extra / (double)ro;
    double gbs = extra > 0 ? 2.0 * (double)ro / extra : 0; /* bytes per ns = GB/s */
    if (ctx->json)
        printf("{\"suite\":\"mutation\",\"case\":\"%s\",\"off_ns_per_call\":%.0f,"
               "\"report_ns_per_call\":%.0f,\"read_only_bytes\":%zu,\"overhead_ns_per_byte\":%.4f,"
               "\"hash_gb_per_s\":%.2f}\n",
               c->name, best[0], best[1], ro, per_byte, gbs);
    else
        printf("mutation  %-24s off %10.0f ns  report %10.0f ns  +%.0f%%  %zu read-only bytes: "
               "%.4f ns/byte, hashed at %.1f GB/s (two passes)\n",
               c->name, best[0], best[1], best[0] > 0 ? 100.0 * extra / best[0] : 0, ro, per_byte,
               gbs);
    fixture_close(&f);
    return 0;
failed:
    fprintf(stderr, "opreg bench mutation: %s: %s\n", c->name, opreg_last_error());
    fixture_close(&f);
    return 1;
}

int bench_mutation(const struct bench_ctx *ctx) {
    opreg_registry *reg = opreg_registry_default();
    const opreg_op *op = NULL;
    if (!reg || opreg_op_find(&op, reg, "_C::rms_norm") != OPREG_OK) {
        fprintf(stderr, "opreg bench mutation: %s\n", opreg_last_error());
        return 1;
    }
    opreg_mutation_mode was = opreg_registry_mutation_check(reg);
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && rc == 0; i++)
        rc = run_case(ctx, reg, op, &cases[i]);
    if (ctx->progress) fputs("\r\033[K", stderr);
    opreg_registry_set_mutation_check(reg, was);
    opreg_registry_reclaim(reg);
    return rc;
}
