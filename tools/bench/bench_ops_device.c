/* The ops suite on a device other than the CPU (`opreg bench ops --device
 * D`: cuda, cuda:1, a plugin's device such as opencl): each memory-bound op
 * of the catalogue that the device's key runs, called through the registry
 * on device tensors, beside the anchor measured in the same run, a copy
 * within the device's memory through its backend table (`copy_on_device`:
 * cudaMemcpyAsync on CUDA, clEnqueueCopyBuffer on OpenCL). Nothing here
 * names a device: the key and its table say what the device can do. Sizes
 * move at least 256 MiB a call, well beyond a GPU's L2 cache (--quick: a
 * 64th of that and one timed run, to check that the suite runs). A case's
 * time is the best of several runs of back-to-back calls, each run ended by
 * the backend's synchronize; bytes count reads plus writes, as on the CPU.
 * Public API only. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"
#include "opreg/inputs.h"

#include <stdlib.h>
#include <string.h>

#define REPEATS 5
#define ITERS   20 /* calls a timed run */

/* The device under test: its key's backend table, and how hard to run. */
struct dev {
    DLDevice where;
    const opreg_backend *be;
    int repeats, iters;
    int shift; /* tokens and blocks are divided by 2^shift (--quick) */
};

static const struct dev_case {
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

static opreg_status dev_sync(const struct dev *d) {
    return d->be->synchronize ? d->be->synchronize(d->be->context, d->where.device_id) : OPREG_OK;
}

/* Seconds of one copy of @p bytes within the device (best run), or 0. */
static double device_copy(const struct dev *d, size_t bytes) {
    DLTensor *a = NULL, *b = NULL;
    int64_t n = (int64_t)bytes;
    double t[REPEATS] = { 0 }, secs = 0;
    opreg_status st;
    void *ctx = d->be->context;
    int id = d->where.device_id;
    if (opreg_tensor_empty(&a, d->where, OPREG_DTYPE_U8, 1, &n) != OPREG_OK ||
        opreg_tensor_empty(&b, d->where, OPREG_DTYPE_U8, 1, &n) != OPREG_OK)
        goto done;
    st = d->be->copy_on_device(ctx, b->data, 0, a->data, 0, bytes, id);
    if (st == OPREG_OK) st = dev_sync(d);
    for (int r = 0; r < d->repeats && st == OPREG_OK; r++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < d->iters && st == OPREG_OK; i++)
            st = d->be->copy_on_device(ctx, b->data, 0, a->data, 0, bytes, id);
        if (st == OPREG_OK) st = dev_sync(d);
        t[r] = (double)(bench_now_ns() - t0) / 1e9 / d->iters;
    }
    if (st == OPREG_OK) secs = best_of(t, d->repeats);
done:
    if (secs == 0) fprintf(stderr, "opreg bench ops: device_copy: %s\n", opreg_last_error());
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

/* @p shape with tokens and blocks divided by 2^@p shift, into @p out. */
static int scaled_shape(opreg_sizes *out, const char *shape, int shift, char *err, size_t cap) {
    static const char *const scaled[] = { "tokens", "blocks" };
    if (opreg_sizes_parse(out, shape, err, cap) != 0) return -1;
    for (size_t k = 0; k < sizeof scaled / sizeof scaled[0] && shift > 0; k++)
        for (size_t i = 0; i < out->n; i++)
            if (strcmp(out->kv[i].name, scaled[k]) == 0) out->kv[i].value >>= shift;
    return 0;
}

/* Seconds of one call of a case on the device (best run) and its bytes;
 * 0 when it failed (after a message), -1 when the device's key has no
 * kernel for the op. */
static double time_case(const struct bench_ctx *ctx, const struct dev_case *c, const struct dev *d,
                        size_t *bytes) {
    const opreg_op *op;
    opreg_sizes shape;
    char err[256];
    opreg_inputs *host = NULL, *in = NULL;
    double t[REPEATS] = { 0 }, secs = 0;
    opreg_status st;
    if (!opreg_is_op_supported_on(opreg_registry_default(), c->op, d->where)) return -1;
    if (opreg_op_find(&op, opreg_registry_default(), c->op) != OPREG_OK) return 0;
    if (scaled_shape(&shape, c->shape, d->shift, err, sizeof err) != 0 ||
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
    st = opreg_inputs_to_device(&in, host, d->where, 0);
    for (int r = 0; r <= d->repeats && st == OPREG_OK; r++) {
        bench_progress(ctx, "ops %s on %s: run %d of %d", c->name, ctx->device, r, d->repeats);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < (r ? d->iters : 1) && st == OPREG_OK; i++)
            st = opreg_call_boxed(op, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                  opreg_inputs_rets(in), opreg_inputs_nrets(in));
        if (st == OPREG_OK) st = dev_sync(d);
        if (r > 0) t[r - 1] = (double)(bench_now_ns() - t0) / 1e9 / d->iters; /* run 0 warms up */
    }
    if (st != OPREG_OK)
        fprintf(stderr, "opreg bench ops: %s: %s\n", c->name, opreg_last_error());
    else
        secs = best_of(t, d->repeats);
    opreg_inputs_free(in);
    opreg_inputs_free(host);
    return secs;
}

/* One result line: GB/s and the share of the copy, or why the case did
 * not run (-1: the key has no kernel for the op). */
static void report(const struct bench_ctx *ctx, const char *name, double secs, size_t bytes,
                   double copy) {
    double gbs = secs > 0 ? (double)bytes / secs / 1e9 : 0;
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (ctx->json && secs < 0)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"%s\",\"skipped\":"
               "\"no kernel on this device\"}\n",
               ctx->device, name);
    else if (ctx->json)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"%s\",\"bytes\":%zu,"
               "\"gb_per_s\":%.2f,\"of_copy\":%.3f,\"us_per_call\":%.2f}\n",
               ctx->device, name, bytes, gbs, copy > 0 ? gbs / copy : 0, secs * 1e6);
    else if (secs < 0)
        printf("ops     %-32s   (no kernel on %s)\n", name, ctx->device);
    else
        printf("ops     %-32s %8.2f GB/s  %5.3f of the copy  (%zu MiB a call)\n", name, gbs,
               copy > 0 ? gbs / copy : 0, bytes >> 20);
    fflush(stdout);
}

int bench_ops_device(const struct bench_ctx *ctx) {
    struct dev d = { .repeats = ctx->quick ? 1 : REPEATS,
                     .iters = ctx->quick ? 2 : ITERS,
                     .shift = ctx->quick ? 6 : 0 };
    char why[256];
    if (!opreg_registry_default() || opreg_device_parse(&d.where, ctx->device) != OPREG_OK) {
        fprintf(stderr, "opreg bench ops: %s\n", opreg_last_error());
        return 1;
    }
    opreg_dispatch_key key = opreg_key_of_device(d.where);
    d.be = opreg_key_backend(key);
    if (!d.be || !d.be->alloc) {
        fprintf(stderr, "opreg bench ops --device %s: the device has no memory to measure\n",
                ctx->device);
        return 1;
    }
    if (!opreg_key_is_available(key, why, sizeof why)) {
        fprintf(stderr, "opreg bench ops --device %s: the %s backend is unavailable: %s\n",
                ctx->device, opreg_key_name(key), why);
        return 1;
    }
    if (!d.be->copy_on_device) {
        fprintf(stderr,
                "opreg bench ops --device %s: the %s backend has no copy_on_device (backend "
                "ABI 1.2) to measure the ops against\n",
                ctx->device, opreg_key_name(key));
        return 1;
    }
    const size_t copy_bytes = ((size_t)512 << 20) >> d.shift;
    double cs = device_copy(&d, copy_bytes);
    double copy = cs > 0 ? 2.0 * (double)copy_bytes / cs / 1e9 : 0; /* read + write */
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"device_copy\",\"bytes\":%zu,"
               "\"gb_per_s\":%.2f}\n",
               ctx->device, 2 * copy_bytes, copy);
    else
        printf("ops     %-32s %8.2f GB/s  (%s, %zu MiB a copy)\n", "device_copy", copy, ctx->device,
               copy_bytes >> 20);
    fflush(stdout);
    int rc = cs > 0 ? 0 : 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t bytes = 0;
        double secs = time_case(ctx, &cases[c], &d, &bytes);
        if (secs == 0) rc = 1;
        report(ctx, cases[c].name, secs, bytes, copy);
    }
    /* Launch-bound: one small row, so the time a call is the host's cost of
     * dispatch, checks and launch (compare with `opreg bench dispatch`). */
    static const struct dev_case small = {
        "rms_norm_small_bf16", "_C::rms_norm", OPREG_DTYPE_BF16, "tokens=1,hidden=128", { 0 }
    };
    size_t bytes = 0;
    int shift = d.shift;
    d.shift = 0;
    double secs = time_case(ctx, &small, &d, &bytes);
    d.shift = shift;
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (secs == 0) rc = 1;
    if (secs < 0)
        report(ctx, small.name, secs, bytes, copy);
    else if (ctx->json)
        printf("{\"suite\":\"ops\",\"device\":\"%s\",\"case\":\"%s\",\"us_per_call\":%.3f}\n",
               ctx->device, small.name, secs * 1e6);
    else
        printf("ops     %-32s %8.3f us a call (launch-bound)\n", small.name, secs * 1e6);
    return rc;
}
