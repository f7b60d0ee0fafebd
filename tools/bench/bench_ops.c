/* The ops suite: the catalogue's memory-bound ops and GEMMs called through
 * the registry (opreg_call_boxed on CPU tensors), each beside an anchor
 * measured in the same run: a STREAM triad for GB/s, and the raw oneDNN
 * matmul primitive on the same shape for linear's GFLOP/s. Sizes move at
 * least 64 MiB a call, well beyond the caches.
 *
 * Each case runs ROUNDS rounds of one anchor call then one op call, and
 * reports the best of each: on a shared machine the bandwidth on offer
 * drifts over seconds, and a ratio of two figures taken side by side holds
 * where one triad at the start would not. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"
#include "opreg/inputs.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 10

/* The memory-bound cases: op, dtype, sizes, and the arguments that the op
 * both reads and writes (counted twice in the bytes moved). */
static const struct mem_case {
    const char *name; /* the case's name in the output */
    const char *op;
    opreg_dtype dtype;
    const char *shape;
    const char *read_write[2];
} mem_cases[] = {
    { "rms_norm_bf16", "_C::rms_norm", OPREG_DTYPE_BF16, "tokens=8192,hidden=4096", { 0 } },
    { "rms_norm_f32", "_C::rms_norm", OPREG_DTYPE_F32, "tokens=4096,hidden=4096", { 0 } },
    { "fused_add_rms_norm_bf16",
      "_C::fused_add_rms_norm",
      OPREG_DTYPE_BF16,
      "tokens=8192,hidden=4096",
      { "input", "residual" } },
    { "silu_and_mul_bf16", "_C::silu_and_mul", OPREG_DTYPE_BF16, "tokens=4096,hidden=4096", { 0 } },
    { "silu_and_mul_f32", "_C::silu_and_mul", OPREG_DTYPE_F32, "tokens=2048,hidden=4096", { 0 } },
    { "rotary_embedding_bf16",
      "_C::rotary_embedding",
      OPREG_DTYPE_BF16,
      "tokens=16384,heads=32,kv_heads=8,head_size=128",
      { "query", "key" } },
    { "static_scaled_int8_quant_bf16",
      "_C::static_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      "tokens=8192,hidden=4096",
      { 0 } },
    { "static_scaled_int8_quant_f32",
      "_C::static_scaled_int8_quant",
      OPREG_DTYPE_F32,
      "tokens=4096,hidden=4096",
      { 0 } },
    { "dynamic_scaled_int8_quant_bf16",
      "_C::dynamic_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      "tokens=8192,hidden=4096",
      { 0 } },
};

/* The raw oneDNN matmul on input [m,k] x weight [n,k]^T, as linear runs it. */
struct raw_matmul {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
};

static void raw_close(struct raw_matmul *r) {
    for (int i = 0; i < 3; i++)
        dnnl_memory_destroy(r->mem[i]);
    dnnl_primitive_destroy(r->prim);
    dnnl_primitive_desc_destroy(r->pd);
    dnnl_stream_destroy(r->stream);
    dnnl_engine_destroy(r->eng);
    memset(r, 0, sizeof *r);
}

/* 0, or -1 when oneDNN has no implementation for the dtype here. */
static int raw_open(struct raw_matmul *r, dnnl_data_type_t dt, int64_t m, int64_t n, int64_t k) {
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t a_dims = { m, k }, b_dims = { k, n }, c_dims = { m, n };
    dnnl_matmul_desc_t md;
    memset(r, 0, sizeof *r);
    if (dnnl_engine_create(&r->eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&r->stream, r->eng, dnnl_stream_default_flags) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, dt, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dt, dnnl_ba) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dt, dnnl_ab) != dnnl_success ||
        dnnl_matmul_desc_init(&md, &a_md, &b_md, NULL, &c_md) != dnnl_success ||
        dnnl_primitive_desc_create(&r->pd, &md, NULL, r->eng, NULL) != dnnl_success ||
        dnnl_primitive_create(&r->prim, r->pd) != dnnl_success) {
        raw_close(r);
        return -1;
    }
    const dnnl_memory_desc_t *mds[3] = { &a_md, &b_md, &c_md };
    for (int i = 0; i < 3; i++) {
        void *p;
        if (dnnl_memory_create(&r->mem[i], mds[i], r->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
            dnnl_memory_get_data_handle(r->mem[i], &p) != dnnl_success) {
            raw_close(r);
            return -1;
        }
        memset(p, 0x3c, dnnl_memory_desc_get_size(mds[i])); /* small finite values */
    }
    return 0;
}

/* One execution; its seconds, or -1. */
static double raw_run(struct raw_matmul *r) {
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, r->mem[0] },
                                { DNNL_ARG_WEIGHTS, r->mem[1] },
                                { DNNL_ARG_DST, r->mem[2] } };
    uint64_t t0 = bench_now_ns();
    if (dnnl_primitive_execute(r->prim, r->stream, 3, args) != dnnl_success ||
        dnnl_stream_wait(r->stream) != dnnl_success)
        return -1;
    return (double)(bench_now_ns() - t0) / 1e9;
}

static double min_pos(double best, double t) {
    return t > 0 && (best <= 0 || t < best) ? t : best;
}

static void gemm_cases(const struct bench_ctx *ctx) {
    static const struct {
        const char *name, *raw_name;
        opreg_dtype dtype;
        dnnl_data_type_t dnnl;
    } cases[] = { { "linear_bf16", "onednn_matmul_bf16", OPREG_DTYPE_BF16, dnnl_bf16 },
                  { "linear_f32", "onednn_matmul_f32", OPREG_DTYPE_F32, dnnl_f32 } };
    const int64_t m = 512, n = 4096, k = 4096;
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    char shape[96];
    snprintf(shape, sizeof shape, "tokens=%lld,hidden=%lld,out_features=%lld,bias=0", (long long)m,
             (long long)k, (long long)n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *none[2] = { NULL, NULL };
        struct op_case oc;
        struct raw_matmul raw;
        double best_op = 0, best_raw = 0;
        bool op_ok =
            op_case_open(&oc, cases[c].name, "_C::linear", cases[c].dtype, shape, none) == 0;
        bool raw_ok = raw_open(&raw, cases[c].dnnl, m, n, k) == 0;
        /* round 0 warms both: caches, page faults, primitive creation */
        for (int r = 0; r <= ROUNDS && (op_ok || raw_ok); r++) {
            bench_progress(ctx, "ops %s: round %d of %d", cases[c].name, r, ROUNDS);
            double tr = raw_ok ? raw_run(&raw) : -1,
                   to = op_ok ? op_case_call(&oc, cases[c].name) : -1;
            if (raw_ok && tr < 0) raw_ok = false;
            if (op_ok && to < 0) op_ok = false;
            if (r > 0) best_raw = min_pos(best_raw, tr), best_op = min_pos(best_op, to);
        }
        op_case_close(&oc);
        raw_close(&raw);
        double op_gflops = op_ok && best_op > 0 ? flop / best_op / 1e9 : 0;
        double raw_gflops = raw_ok && best_raw > 0 ? flop / best_raw / 1e9 : 0;
        if (ctx->progress) fputs("\r\033[K", stderr);
        if (ctx->json) {
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"gflops\":%.1f,\"of_raw\":%.3f}\n",
                   cases[c].name, (long long)m, (long long)n, (long long)k, op_gflops,
                   raw_gflops > 0 ? op_gflops / raw_gflops : 0);
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"gflops\":%.1f,\"available\":%s}\n",
                   cases[c].raw_name, (long long)m, (long long)n, (long long)k, raw_gflops,
                   raw_gflops > 0 ? "true" : "false");
        } else if (raw_gflops > 0) {
            printf("ops     %-32s %8.1f GFLOP/s  %4.2f of %s (%.1f GFLOP/s)\n", cases[c].name,
                   op_gflops, op_gflops / raw_gflops, cases[c].raw_name, raw_gflops);
        } else {
            printf("ops     %-32s %8.1f GFLOP/s  (oneDNN has no %s primitive on this CPU)\n",
                   cases[c].name, op_gflops, cases[c].raw_name);
        }
        fflush(stdout);
    }
}

/* Decode-shaped GEMMs: a few tokens against a weight, one pass over it, so
 * their figure is the weight's bytes per second beside the triad measured
 * in the same rounds. Each runs as the registry chooses (the gemv provider
 * up to its bound) and pinned to oneDNN, the provider it displaces. */
static const struct decode_case {
    const char *name, *op;
    opreg_dtype dtype;
    const char *extra; /* shape options of the op's builder */
    int weight_bytes;  /* per element */
} decode_cases[] = {
    { "linear_bf16", "_C::linear", OPREG_DTYPE_BF16, "", 2 },
    { "linear_f32", "_C::linear", OPREG_DTYPE_F32, "", 4 },
    { "scaled_mm_int8", "_C::cutlass_scaled_mm", OPREG_DTYPE_BF16, ",per_token=1,per_channel=1",
      1 },
    { "scaled_mm_fp8", "_C::cutlass_scaled_mm", OPREG_DTYPE_BF16, ",fp8=1,per_channel=1", 1 },
};

/* The best seconds of ROUNDS calls of @p c, each after a triad (which also
 * evicts the weight from the caches); the best triad beside them goes to
 * @p triad. 0 when a call failed. */
static double decode_best(const struct bench_ctx *ctx, struct op_case *c, const char *name,
                          const struct triad *tr, double *triad) {
    double best = 0;
    for (int r = 0; r <= ROUNDS; r++) {
        bench_progress(ctx, "ops %s: round %d of %d", name, r, ROUNDS);
        double g = triad_run(tr), t = op_case_call(c, name);
        if (t < 0) return 0;
        if (r == 0) continue;
        if (g > *triad) *triad = g;
        best = min_pos(best, t);
    }
    return best;
}

static void decode_cases_run(const struct bench_ctx *ctx, const struct triad *tr) {
    static const int64_t tokens[] = { 1, 4, 16 };
    static const int64_t nk[][2] = { { 4096, 4096 }, { 14336, 4096 }, { 4096, 14336 } };
    opreg_registry *reg = opreg_registry_default();
    for (size_t c = 0; c < sizeof decode_cases / sizeof decode_cases[0]; c++)
        for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++)
            for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
                const struct decode_case *dc = &decode_cases[c];
                const char *none[2] = { NULL, NULL };
                char shape[160], name[96], pin[64];
                struct op_case oc;
                double triad = 0, best, best_onednn;
                int64_t n = nk[s][0], k = nk[s][1];
                snprintf(shape, sizeof shape, "tokens=%lld,hidden=%lld,out_features=%lld,bias=0%s",
                         (long long)tokens[t], (long long)k, (long long)n, dc->extra);
                snprintf(name, sizeof name, "%s_m%lld_n%lld_k%lld", dc->name, (long long)tokens[t],
                         (long long)n, (long long)k);
                if (op_case_open(&oc, name, dc->op, dc->dtype, shape, none) != 0) continue;
                best = decode_best(ctx, &oc, name, tr, &triad);
                snprintf(pin, sizeof pin, "%s=onednn", dc->op);
                opreg_registry_set_providers(reg, pin);
                best_onednn = decode_best(ctx, &oc, name, tr, &triad);
                opreg_registry_set_providers(reg, NULL);
                op_case_close(&oc);
                if (ctx->progress) fputs("\r\033[K", stderr);
                double bytes = (double)n * (double)k * dc->weight_bytes;
                double gbs = best > 0 ? bytes / best / 1e9 : 0;
                double onednn = best_onednn > 0 ? bytes / best_onednn / 1e9 : 0;
                if (ctx->json)
                    printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,"
                           "\"k\":%lld,\"weight_gb_per_s\":%.2f,\"of_triad\":%.2f,"
                           "\"triad_gb_per_s\":%.2f,\"onednn_weight_gb_per_s\":%.2f}\n",
                           name, (long long)tokens[t], (long long)n, (long long)k, gbs,
                           triad > 0 ? gbs / triad : 0, triad, onednn);
                else
                    printf("ops     %-32s %8.2f GB/s  %4.2f of the triad (%.1f GB/s beside it); "
                           "oneDNN %.2f GB/s\n",
                           name, gbs, triad > 0 ? gbs / triad : 0, triad, onednn);
                fflush(stdout);
            }
}

/* fp8 cutlass_scaled_mm beside bf16 linear on one prefill-sized shape: the
 * fp8 path widens to bf16 and runs oneDNN's bf16 GEMM, so its GFLOP/s is
 * read against linear's. */
static void fp8_gemm_case(const struct bench_ctx *ctx) {
    static const struct {
        const char *name, *op;
        const char *extra;
    } pair[2] = { { "linear_bf16", "_C::linear", "" },
                  { "scaled_mm_fp8", "_C::cutlass_scaled_mm", ",fp8=1,per_channel=1" } };
    const int64_t m = 512, n = 2048, k = 1024;
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    double gflops[2] = { 0, 0 };
    for (int c = 0; c < 2; c++) {
        const char *none[2] = { NULL, NULL };
        char shape[128], name[64];
        struct op_case oc;
        double best = 0;
        snprintf(shape, sizeof shape, "tokens=%lld,hidden=%lld,out_features=%lld,bias=0%s",
                 (long long)m, (long long)k, (long long)n, pair[c].extra);
        snprintf(name, sizeof name, "%s_m%lld_n%lld_k%lld", pair[c].name, (long long)m,
                 (long long)n, (long long)k);
        if (op_case_open(&oc, name, pair[c].op, OPREG_DTYPE_BF16, shape, none) != 0) continue;
        for (int r = 0; r <= ROUNDS; r++) {
            bench_progress(ctx, "ops %s: round %d of %d", name, r, ROUNDS);
            double t = op_case_call(&oc, name);
            if (t < 0) break;
            if (r > 0) best = min_pos(best, t);
        }
        op_case_close(&oc);
        if (ctx->progress) fputs("\r\033[K", stderr);
        gflops[c] = best > 0 ? flop / best / 1e9 : 0;
        if (ctx->json)
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"gflops\":%.1f,\"of_linear_bf16\":%.2f}\n",
                   name, (long long)m, (long long)n, (long long)k, gflops[c],
                   gflops[0] > 0 ? gflops[c] / gflops[0] : 0);
        else
            printf("ops     %-32s %8.1f GFLOP/s  %4.2f of linear_bf16 on the shape\n", name,
                   gflops[c], gflops[0] > 0 ? gflops[c] / gflops[0] : 0);
        fflush(stdout);
    }
}

int bench_ops(const struct bench_ctx *ctx) {
    if (ctx->device && strcmp(ctx->device, "cpu") != 0) return bench_ops_device(ctx);
    if (!opreg_registry_default()) {
        fprintf(stderr, "opreg bench ops: %s\n", opreg_last_error());
        return 1;
    }
    struct triad tr;
    if (triad_init(&tr) != 0) {
        fprintf(stderr, "opreg bench ops: out of memory for the triad's 192 MiB\n");
        return 1;
    }
    /* The run's triad, printed first: the best of its own rounds. Each case
     * reports the triad measured beside it too. */
    double triad = 0;
    triad_run(&tr); /* warm */
    for (int r = 0; r < ROUNDS; r++) {
        bench_progress(ctx, "ops stream_triad: round %d of %d", r + 1, ROUNDS);
        double g = triad_run(&tr);
        if (g > triad) triad = g;
    }
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"case\":\"stream_triad\",\"gb_per_s\":%.2f}\n", triad);
    else
        printf("ops     %-32s %8.2f GB/s\n", "stream_triad", triad);
    fflush(stdout);
    for (size_t c = 0; c < sizeof mem_cases / sizeof mem_cases[0]; c++) {
        const struct mem_case *mc = &mem_cases[c];
        struct op_case oc;
        double best = 0, case_triad = 0;
        bool ok = op_case_open(&oc, mc->name, mc->op, mc->dtype, mc->shape, mc->read_write) == 0;
        for (int r = 0; ok && r <= ROUNDS; r++) {
            bench_progress(ctx, "ops %s: round %d of %d", mc->name, r, ROUNDS);
            double g = triad_run(&tr), t = op_case_call(&oc, mc->name);
            if (t < 0) ok = false;
            if (r == 0) continue; /* warms caches, page faults, threads */
            if (g > case_triad) case_triad = g;
            best = min_pos(best, t);
        }
        op_case_close(&oc);
        if (ctx->progress) fputs("\r\033[K", stderr);
        double gbs = ok && best > 0 ? (double)oc.bytes / best / 1e9 : 0;
        double ratio = case_triad > 0 ? gbs / case_triad : 0;
        if (ctx->json)
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"bytes\":%zu,\"gb_per_s\":%.2f,"
                   "\"of_triad\":%.2f,\"triad_gb_per_s\":%.2f}\n",
                   mc->name, oc.bytes, gbs, ratio, case_triad);
        else
            printf("ops     %-32s %8.2f GB/s  %4.2f of the triad (%.1f GB/s beside it; %zu MiB a "
                   "call)\n",
                   mc->name, gbs, ratio, case_triad, oc.bytes >> 20);
        fflush(stdout);
    }
    decode_cases_run(ctx, &tr);
    triad_free(&tr);
    gemm_cases(ctx);
    fp8_gemm_case(ctx);
    return 0;
}
