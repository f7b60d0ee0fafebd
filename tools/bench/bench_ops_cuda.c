/* The ops suite on a CUDA device (`opreg bench ops --device cuda`): each
 * memory-bound op of the catalogue, called through the registry on device
 * tensors, beside the anchor measured in the same run, a device-to-device
 * copy (cudaMemcpyAsync through opreg_cuda_memcpy). Sizes move at least
 * 256 MiB a call, well beyond the L2 cache. A case's time is the best of
 * several runs of ITERS back-to-back calls on the current stream, each run
 * ended by a synchronisation; bytes count reads plus writes, as on the CPU.
 * Public API only. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"
#include "opreg/inputs.h"

#include <stdlib.h>
#include <string.h>

#define REPEATS 5
#define ITERS   20 /* calls a timed run */

static const struct cuda_case {
    const char *name, *op;
    opreg_dtype dtype;
    const char *shape;
    const char *read_write[2]; /* arguments both read and written (counted twice) */
} cases[] = {
    { "rms_norm_bf16", "_C::rms_norm", OPREG_DTYPE_BF16, "tokens=32768,hidden=4096", { 0 } },
    { "rms_norm_f32", "_C::rms_norm", OPREG_DTYPE_F32, "tokens=16384,hidden=4096", { 0 } },
    { "fused_add_rms_norm_bf16",
      "_C::fused_add_rms_norm",
      OPREG_DTYPE_BF16,
      "tokens=16384,hidden=4096",
      { "input", "residual" } },
    { "silu_and_mul_bf16",
      "_C::silu_and_mul",
      OPREG_DTYPE_BF16,
      "tokens=16384,hidden=8192",
      { 0 } },
    { "gelu_and_mul_bf16",
      "_C::gelu_and_mul",
      OPREG_DTYPE_BF16,
      "tokens=16384,hidden=8192",
      { 0 } },
    { "gelu_new_bf16", "_C::gelu_new", OPREG_DTYPE_BF16, "tokens=32768,hidden=4096", { 0 } },
    { "rotary_embedding_bf16",
      "_C::rotary_embedding",
      OPREG_DTYPE_BF16,
      "tokens=32768,heads=32,kv_heads=8,head_size=128",
      { "query", "key" } },
    { "static_scaled_int8_quant_bf16",
      "_C::static_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      "tokens=32768,hidden=4096",
      { 0 } },
    { "static_scaled_fp8_quant_bf16",
      "_C::static_scaled_fp8_quant",
      OPREG_DTYPE_BF16,
      "tokens=32768,hidden=4096",
      { 0 } },
    { "dynamic_scaled_int8_quant_bf16",
      "_C::dynamic_scaled_int8_quant",
      OPREG_DTYPE_BF16,
      "tokens=32768,hidden=4096",
      { 0 } },
    { "reshape_and_cache_bf16",
      "_C::reshape_and_cache",
      OPREG_DTYPE_BF16,
      "tokens=32768,kv_heads=8,head_size=128,blocks=4096,block_size=16",
      { 0 } },
};

static double best_of(const double *t, int n) {
    double b = t[0];
    for (int i = 1; i < n; i++)
        if (t[i] < b) b = t[i];
    return b;
}

/* Seconds of one device-to-device copy of @p bytes (best run), or 0. */
static double d2d_copy(DLDevice dev, size_t bytes) {
    DLTensor *a = NULL, *b = NULL;
    int64_t n = (int64_t)bytes;
    double t[REPEATS], secs = 0;
    if (opreg_tensor_empty(&a, dev, OPREG_DTYPE_U8, 1, &n) != OPREG_OK ||
        opreg_tensor_empty(&b, dev, OPREG_DTYPE_U8, 1, &n) != OPREG_OK)
        goto done;
    if (opreg_cuda_memcpy(b->data, a->data, bytes, dev.device_id) != OPREG_OK ||
        opreg_cuda_synchronize(dev.device_id) != OPREG_OK)
        goto done;
    for (int r = 0; r < REPEATS; r++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < ITERS; i++)
            if (opreg_cuda_memcpy(b->data, a->data, bytes, dev.device_id) != OPREG_OK) goto done;
        if (opreg_cuda_synchronize(dev.device_id) != OPREG_OK) goto done;
        t[r] = (double)(bench_now_ns() - t0) / 1e9 / ITERS;
    }
    secs = best_of(t, REPEATS);
done:
    if (secs == 0) fprintf(stderr, "opreg bench ops: d2d_copy: %s\n", opreg_last_error());
    opreg_tensor_free(a);
    opreg_tensor_free(b);
    return secs;
}

static size_t arg_bytes(const opreg_value *v) {
    size_t n = 0;
    if (v->kind == OPREG_VALUE_TENSOR && v->u.tensor) return opreg_tensor_nbytes(v->u.tensor);
    if (v->kind == OPREG_VALUE_TENSOR_LIST)
        for (size_t i = 0; i < v->u.tensors.len; i++)
            n += v->u.tensors.items[i] ? opreg_tensor_nbytes(v->u.tensors.items[i]) : 0;
    return n;
}

/* Seconds of one call of a case on @p dev (best run) and its bytes, or 0. */
static double time_case(const struct bench_ctx *ctx, const struct cuda_case *c, DLDevice dev,
                        size_t *bytes) {
    const opreg_op *op;
    opreg_sizes shape;
    char err[256];
    opreg_inputs *host = NULL, *in = NULL;
    double t[REPEATS], secs = 0;
    opreg_status st;
    if (opreg_op_find(&op, opreg_registry_default(), c->op) != OPREG_OK) return 0;
    if (opreg_sizes_parse(&shape, c->shape, err, sizeof err) != 0 ||
        opreg_inputs_build(&host, op, (int)c->dtype, &shape, 7, err, sizeof err) != OPREG_OK) {
        fprintf(stderr, "opreg bench ops: %s: %s\n", c->name, err);
        return 0;
    }
    *bytes = 0;
    for (size_t i = 0; i < opreg_inputs_nargs(host); i++) {
        const char *arg = opreg_argument_name(opreg_schema_argument(opreg_op_schema(op), i));
        size_t b = arg_bytes(&opreg_inputs_args(host)[i]);
        *bytes += b;
        for (int k = 0; k < 2; k++)
            if (c->read_write[k] && strcmp(c->read_write[k], arg) == 0) *bytes += b;
    }
    st = opreg_inputs_to_device(&in, host, dev, 0);
    for (int r = 0; r <= REPEATS && st == OPREG_OK; r++) {
        bench_progress(ctx, "ops %s on cuda: run %d of %d", c->name, r, REPEATS);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < (r ? ITERS : 1) && st == OPREG_OK; i++)
            st = opreg_call_boxed(op, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                  opreg_inputs_rets(in), opreg_inputs_nrets(in));
        if (st == OPREG_OK) st = opreg_cuda_synchronize(dev.device_id);
        if (r > 0) t[r - 1] = (double)(bench_now_ns() - t0) / 1e9 / ITERS; /* run 0 warms up */
    }
    if (st != OPREG_OK)
        fprintf(stderr, "opreg bench ops: %s: %s\n", c->name, opreg_last_error());
    else
        secs = best_of(t, REPEATS);
    opreg_inputs_free(in);
    opreg_inputs_free(host);
    return secs;
}

int bench_ops_cuda(const struct bench_ctx *ctx) {
    DLDevice dev;
    char why[256];
    if (!opreg_registry_default() || opreg_device_parse(&dev, ctx->device) != OPREG_OK) {
        fprintf(stderr, "opreg bench ops: %s\n", opreg_last_error());
        return 1;
    }
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why)) {
        fprintf(stderr, "opreg bench ops --device %s: the CUDA backend is unavailable: %s\n",
                ctx->device, why);
        return 1;
    }
    const size_t copy_bytes = (size_t)512 << 20;
    double cs = d2d_copy(dev, copy_bytes);
    double copy = cs > 0 ? 2.0 * (double)copy_bytes / cs / 1e9 : 0; /* read + write */
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"d2d_copy\",\"bytes\":%zu,"
               "\"gb_per_s\":%.2f}\n",
               ctx->device, 2 * copy_bytes, copy);
    else
        printf("ops     %-32s %8.2f GB/s  (%s, %zu MiB a copy)\n", "d2d_copy", copy, ctx->device,
               copy_bytes >> 20);
    fflush(stdout);
    int rc = cs > 0 ? 0 : 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t bytes = 0;
        double secs = time_case(ctx, &cases[c], dev, &bytes);
        double gbs = secs > 0 ? (double)bytes / secs / 1e9 : 0;
        if (ctx->progress) fputs("\r\033[K", stderr);
        if (secs == 0) rc = 1;
        if (ctx->json)
            printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"%s\",\"bytes\":%zu,"
                   "\"gb_per_s\":%.2f,\"of_copy\":%.3f,\"us_per_call\":%.2f}\n",
                   ctx->device, cases[c].name, bytes, gbs, copy > 0 ? gbs / copy : 0, secs * 1e6);
        else
            printf("ops     %-32s %8.2f GB/s  %5.3f of the copy  (%zu MiB a call)\n", cases[c].name,
                   gbs, copy > 0 ? gbs / copy : 0, bytes >> 20);
        fflush(stdout);
    }
    /* Launch-bound: one small row, so the time a call is the host's cost of
     * dispatch, checks and launch (compare with `opreg bench dispatch`). */
    static const struct cuda_case small = {
        "rms_norm_small_bf16", "_C::rms_norm", OPREG_DTYPE_BF16, "tokens=1,hidden=128", { 0 }
    };
    size_t bytes = 0;
    double secs = time_case(ctx, &small, dev, &bytes);
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (secs == 0) rc = 1;
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"%s\",\"us_per_call\":%.3f}\n",
               ctx->device, small.name, secs * 1e6);
    else
        printf("ops     %-32s %8.3f us a call (launch-bound)\n", small.name, secs * 1e6);
    return rc;
}
