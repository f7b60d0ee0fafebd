/* The small suite: every op of the catalogue at serving sizes, called
 * through the registry from C (opreg_call_boxed on CPU tensors, the default
 * width of opreg's pool): 1, 16 and 256 tokens of hidden 4096 for the
 * token-wise ops and the GEMMs, 1 to 16 sequences of 128 to 2048 tokens for
 * paged attention, and cache writes of as many tokens. Each line gives the
 * time per call (median of alternating batches), the bytes one call moves
 * and its GB/s beside the STREAM triad measured in the same run: at these
 * sizes much of the data sits in the caches, so a ratio above 1 is common
 * and a low one says the call is bound by something other than memory.
 *
 * `bench_python.py --small` measures the same calls from Python beside
 * torch's own ops; tools/bench/plot_small.py draws both from the JSON. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include <stdlib.h>
#include <string.h>

#define ROUNDS 7
/* Each timed batch runs about this long. */
#define BATCH_NS 10000000.0

static const struct small_case {
    const char *name, *op;
    opreg_dtype dtype;
    const char *rw[2];
    const char *shape; /* printf format taking the size */
    int sizes[3];
    const char *size_name; /* what the size counts */
    /* Arguments a call touches only in part (caches), left out of the
     * bytes; the written part is counted through `rw` instead. */
    const char *skip[2];
    bool no_bytes; /* the bytes moved are not known: time only */
} small_cases[] = {
#define TOKENS { 1, 16, 256 }, "tokens"
    { "rms_norm",
      "_C::rms_norm",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "fused_add_rms_norm",
      "_C::fused_add_rms_norm",
      OPREG_DTYPE_BF16,
      { "input", "residual" },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "silu_and_mul",
      "_C::silu_and_mul",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "gelu_and_mul",
      "_C::gelu_and_mul",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "gelu_tanh_and_mul",
      "_C::gelu_tanh_and_mul",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "gelu_new",
      "_C::gelu_new",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "gelu_fast",
      "_C::gelu_fast",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "gelu_quick",
      "_C::gelu_quick",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "rotary_embedding",
      "_C::rotary_embedding",
      OPREG_DTYPE_BF16,
      { "query", "key" },
      "tokens=%d,heads=32,kv_heads=8,head_size=128,max_pos=4096",
      TOKENS,
      { "cos_sin_cache" },
      false },
    { "batched_rotary_embedding",
      "_C::batched_rotary_embedding",
      OPREG_DTYPE_BF16,
      { "query", "key" },
      "tokens=%d,heads=32,kv_heads=8,head_size=128,max_pos=4096",
      TOKENS,
      { "cos_sin_cache" },
      false },
    { "static_scaled_int8_quant",
      "_C::static_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "dynamic_scaled_int8_quant",
      "_C::dynamic_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "static_scaled_fp8_quant",
      "_C::static_scaled_fp8_quant",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "dynamic_scaled_fp8_quant",
      "_C::dynamic_scaled_fp8_quant",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096",
      TOKENS,
      { 0 },
      false },
    { "reshape_and_cache",
      "_C::reshape_and_cache",
      OPREG_DTYPE_BF16,
      { "key", "value" },
      "tokens=%d,kv_heads=8,head_size=128,blocks=512,block_size=16",
      TOKENS,
      { "key_cache", "value_cache" },
      false },
    { "reshape_and_cache_flash",
      "_C::reshape_and_cache_flash",
      OPREG_DTYPE_BF16,
      { "key", "value" },
      "tokens=%d,kv_heads=8,head_size=128,blocks=512,block_size=16",
      TOKENS,
      { "key_cache", "value_cache" },
      false },
    { "topk_softmax",
      "_C::topk_softmax",
      OPREG_DTYPE_F32,
      { 0 },
      "tokens=%d,experts=64,topk=8",
      TOKENS,
      { 0 },
      false },
    { "moe_align_block_size",
      "_C::moe_align_block_size",
      (opreg_dtype)-1,
      { 0 },
      "tokens=%d,topk=8,experts=64,block_size=16",
      TOKENS,
      { 0 },
      false },
    { "linear",
      "_C::linear",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096,out_features=4096",
      TOKENS,
      { 0 },
      false },
    { "cutlass_scaled_mm_int8",
      "_C::cutlass_scaled_mm",
      OPREG_DTYPE_BF16,
      { 0 },
      "tokens=%d,hidden=4096,out_features=4096,per_token=1,per_channel=1",
      TOKENS,
      { 0 },
      false },
    { "copy_blocks",
      "_C::copy_blocks",
      OPREG_DTYPE_BF16,
      { 0 },
      "layers=2,pairs=%d,kv_heads=8,head_size=128,blocks=512,block_size=16",
      { 1, 16, 64 },
      "pairs",
      { 0 },
      true },
#undef TOKENS
    /* Paged attention: sequences x tokens per sequence. */
    { "paged_attention_v1_len128",
      "_C::paged_attention_v1",
      OPREG_DTYPE_BF16,
      { 0 },
      "seqs=%d,heads=32,kv_heads=8,head_size=128,max_seq_len=128,block_size=16",
      { 1, 4, 16 },
      "seqs",
      { 0 },
      false },
    { "paged_attention_v1_len2048",
      "_C::paged_attention_v1",
      OPREG_DTYPE_BF16,
      { 0 },
      "seqs=%d,heads=32,kv_heads=8,head_size=128,max_seq_len=2048,block_size=16",
      { 1, 4, 16 },
      "seqs",
      { 0 },
      false },
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median seconds per call over ROUNDS batches of about BATCH_NS; -1 when a
 * call failed. */
static double median_call(struct op_case *c, const char *name) {
    double t = op_case_call(c, name); /* warm: pages, primitives, workers */
    if (t < 0 || (t = op_case_call(c, name)) < 0) return -1;
    int reps = (int)(BATCH_NS / (t * 1e9 + 1));
    if (reps < 1) reps = 1;
    if (reps > 100000) reps = 100000;
    double per[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double total = 0;
        for (int i = 0; i < reps; i++) {
            double dt = op_case_call(c, name);
            if (dt < 0) return -1;
            total += dt;
        }
        per[r] = total / reps;
    }
    qsort(per, ROUNDS, sizeof per[0], cmp_double);
    return per[ROUNDS / 2];
}

int bench_small(const struct bench_ctx *ctx) {
    if (!opreg_registry_default()) {
        fprintf(stderr, "opreg bench small: %s\n", opreg_last_error());
        return 1;
    }
    struct triad tr;
    if (triad_init(&tr) != 0) {
        fprintf(stderr, "opreg bench small: out of memory for the triad's 192 MiB\n");
        return 1;
    }
    double triad = 0;
    triad_run(&tr);
    for (int r = 0; r < 5; r++) {
        double g = triad_run(&tr);
        if (g > triad) triad = g;
    }
    triad_free(&tr);
    int threads = opreg_get_num_threads();
    if (ctx->json)
        printf("{\"suite\":\"small\",\"case\":\"stream_triad\",\"gb_per_s\":%.2f,\"threads\":%d}\n",
               triad, threads);
    else
        printf("small   stream_triad %.1f GB/s; every call on %d threads, median of %d batches\n",
               triad, threads, ROUNDS);
    int status = 0;
    for (size_t c = 0; c < sizeof small_cases / sizeof small_cases[0]; c++) {
        const struct small_case *sc = &small_cases[c];
        for (int s = 0; s < 3; s++) {
            char shape[160];
            snprintf(shape, sizeof shape, sc->shape, sc->sizes[s]);
            struct op_case oc;
            bench_progress(ctx, "small %s %s=%d", sc->name, sc->size_name, sc->sizes[s]);
            if (op_case_open(&oc, sc->name, sc->op, sc->dtype, shape, sc->rw) != 0) {
                status = 1;
                continue;
            }
            double t = median_call(&oc, sc->name);
            size_t bytes = oc.bytes;
            for (int k = 0; k < 2; k++)
                if (sc->skip[k]) bytes -= op_case_arg_bytes(&oc, sc->skip[k]);
            if (sc->no_bytes) bytes = 0;
            op_case_close(&oc);
            if (ctx->progress) fputs("\r\033[K", stderr);
            if (t < 0) {
                status = 1;
                continue;
            }
            double gbs = (double)bytes / t / 1e9;
            if (ctx->json)
                printf("{\"suite\":\"small\",\"case\":\"%s\",\"op\":\"%s\",\"%s\":%d,"
                       "\"shape\":\"%s\",\"us\":%.3f,\"bytes\":%zu,\"gb_per_s\":%.2f,"
                       "\"of_triad\":%.2f}\n",
                       sc->name, sc->op, sc->size_name, sc->sizes[s], shape, t * 1e6, bytes, gbs,
                       gbs / triad);
            else if (!bytes)
                printf("small   %-27s %4d %-6s %10.2f us\n", sc->name, sc->sizes[s], sc->size_name,
                       t * 1e6);
            else
                printf("small   %-27s %4d %-6s %10.2f us  %9.1f KiB  %7.2f GB/s  %5.2f of the "
                       "triad\n",
                       sc->name, sc->sizes[s], sc->size_name, t * 1e6, (double)bytes / 1024, gbs,
                       gbs / triad);
            fflush(stdout);
        }
    }
    return status;
}
