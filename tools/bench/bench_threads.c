/* The threads suite: the memory-bound ops at serving sizes (16, 256 and 2048
 * tokens of hidden 4096, bf16) and linear at decode sizes (1, 4 and 16
 * tokens, a 4096x4096 bf16 weight), each on one thread and on all threads,
 * first on a quiet machine and then while a competing process, started by
 * the suite, keeps one core busy. Each figure is the median over rounds in
 * which one-thread and all-thread batches alternate, so that both see the
 * same machine.
 *
 * Targets (docs/performance.md, "Threads"): all threads never slower than
 * one thread, quiet or loaded (time ratio at most 1.05), and at least 1.6x
 * faster than one thread on the quiet machine from 256 tokens up. */
#define _GNU_SOURCE /* kill, fork */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 9
/* Each timed batch runs about this long. */
#define BATCH_NS 20000000.0

static const struct thread_case {
    const char *name, *op;
    const char *rw[2];
    const char *shape; /* printf format of the token count */
} thread_cases[] = {
    { "rms_norm_bf16", "_C::rms_norm", { 0 }, "tokens=%d,hidden=4096" },
    { "fused_add_rms_norm_bf16",
      "_C::fused_add_rms_norm",
      { "input", "residual" },
      "tokens=%d,hidden=4096" },
    { "silu_and_mul_bf16", "_C::silu_and_mul", { 0 }, "tokens=%d,hidden=4096" },
    { "rotary_embedding_bf16",
      "_C::rotary_embedding",
      { "query", "key" },
      "tokens=%d,heads=32,kv_heads=8,head_size=128,max_pos=4096" },
    { "static_scaled_int8_quant_bf16",
      "_C::static_scaled_int8_quant",
      { 0 },
      "tokens=%d,hidden=4096" },
    { "dynamic_scaled_int8_quant_bf16",
      "_C::dynamic_scaled_int8_quant",
      { 0 },
      "tokens=%d,hidden=4096" },
    { "linear_bf16", "_C::linear", { 0 }, "tokens=%d,hidden=4096,out_features=4096" },
};

static const int mem_tokens[] = { 16, 256, 2048 };
static const int gemm_tokens[] = { 1, 4, 16 };

/* A process that keeps one core busy until it is killed. */
static pid_t competitor_start(void) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        volatile uint64_t sink = 0;
        for (;;)
            sink++;
    }
    return pid;
}

static void competitor_stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per call of @p reps calls; -1 on failure. */
static double batch(struct op_case *c, const char *name, int reps) {
    double total = 0;
    for (int i = 0; i < reps; i++) {
        double t = op_case_call(c, name);
        if (t < 0) return -1;
        total += t;
    }
    return total / reps;
}

struct timing {
    double one, all; /* median seconds per call */
};

/* Alternating rounds of one thread and all threads (@p width). */
static int measure(struct op_case *c, const char *name, int width, int reps, struct timing *out) {
    double one[ROUNDS], all[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        opreg_set_num_threads(1);
        one[r] = batch(c, name, reps);
        opreg_set_num_threads(width);
        all[r] = batch(c, name, reps);
        if (one[r] < 0 || all[r] < 0) return -1;
    }
    qsort(one, ROUNDS, sizeof one[0], cmp_double);
    qsort(all, ROUNDS, sizeof all[0], cmp_double);
    out->one = one[ROUNDS / 2];
    out->all = all[ROUNDS / 2];
    return 0;
}

static void report(const struct bench_ctx *ctx, const char *name, int tokens, int width,
                   size_t bytes, const struct timing *q, const struct timing *l,
                   bool speedup_target, int *on_target, int *cases) {
    double quiet_ratio = q->all / q->one, loaded_ratio = l->all / l->one;
    double speedup = q->one / q->all;
    bool ok = quiet_ratio <= 1.05 && loaded_ratio <= 1.05 && (!speedup_target || speedup >= 1.6);
    (*cases)++;
    *on_target += ok;
    if (ctx->json) {
        printf("{\"suite\":\"threads\",\"case\":\"%s\",\"tokens\":%d,\"threads\":%d,\"bytes\":%zu,"
               "\"quiet_one_us\":%.2f,\"quiet_all_us\":%.2f,\"loaded_one_us\":%.2f,"
               "\"loaded_all_us\":%.2f,\"quiet_speedup\":%.2f,\"quiet_ratio\":%.2f,"
               "\"loaded_ratio\":%.2f,\"speedup_target\":%s,\"on_target\":%s}\n",
               name, tokens, width, bytes, q->one * 1e6, q->all * 1e6, l->one * 1e6, l->all * 1e6,
               speedup, quiet_ratio, loaded_ratio, speedup_target ? "true" : "false",
               ok ? "true" : "false");
    } else {
        printf("threads %-31s %5d tok  quiet %9.1f -> %9.1f us (%4.2fx)  loaded %9.1f -> %9.1f us "
               "(ratio %4.2f)%s\n",
               name, tokens, q->one * 1e6, q->all * 1e6, speedup, l->one * 1e6, l->all * 1e6,
               loaded_ratio, ok ? "" : "  off target");
    }
    fflush(stdout);
}

int bench_threads(const struct bench_ctx *ctx) {
    if (!opreg_registry_default()) {
        fprintf(stderr, "opreg bench threads: %s\n", opreg_last_error());
        return 1;
    }
    opreg_set_num_threads(0);
    int width = opreg_get_num_threads();
    if (!ctx->json)
        printf("threads one thread -> %d threads, median of %d alternating rounds; loaded: a "
               "competing process keeps one core busy\n",
               width, ROUNDS);
    int on_target = 0, cases = 0, status = 0;
    for (size_t c = 0; c < sizeof thread_cases / sizeof thread_cases[0]; c++) {
        const struct thread_case *tc = &thread_cases[c];
        bool gemm = strcmp(tc->op, "_C::linear") == 0;
        const int *tokens = gemm ? gemm_tokens : mem_tokens;
        for (int s = 0; s < 3; s++) {
            char shape[128];
            snprintf(shape, sizeof shape, tc->shape, tokens[s]);
            struct op_case oc;
            if (op_case_open(&oc, tc->name, tc->op, OPREG_DTYPE_BF16, shape, tc->rw) != 0) {
                status = 1;
                continue;
            }
            bench_progress(ctx, "threads %s %d tokens", tc->name, tokens[s]);
            opreg_set_num_threads(1);
            double t1 = batch(&oc, tc->name, 3); /* warm: pages, primitives, workers */
            opreg_set_num_threads(width);
            batch(&oc, tc->name, 3);
            int reps = t1 > 0 ? (int)(BATCH_NS / (t1 * 1e9)) : 1;
            if (reps < 1) reps = 1;
            if (reps > 20000) reps = 20000;
            struct timing quiet, loaded;
            int rc = t1 < 0 ? -1 : measure(&oc, tc->name, width, reps, &quiet);
            pid_t busy = rc == 0 ? competitor_start() : -1;
            if (rc == 0 && busy < 0) {
                fprintf(stderr, "opreg bench threads: no competing process (fork failed)\n");
                rc = -1;
            }
            if (rc == 0) rc = measure(&oc, tc->name, width, reps, &loaded);
            competitor_stop(busy);
            if (ctx->progress) fputs("\r\033[K", stderr);
            if (rc == 0)
                report(ctx, tc->name, tokens[s], width, oc.bytes, &quiet, &loaded,
                       !gemm && tokens[s] >= 256, &on_target, &cases);
            else
                status = 1;
            op_case_close(&oc);
        }
    }
    opreg_set_num_threads(0);
    if (ctx->json)
        printf("{\"suite\":\"threads\",\"case\":\"summary\",\"threads\":%d,\"on_target\":%d,"
               "\"cases\":%d}\n",
               width, on_target, cases);
    else
        printf("threads %d of %d cases on target (ratio <= 1.05 quiet and loaded; >= 1.6x quiet "
               "from 256 tokens)\n",
               on_target, cases);
    return status;
}
