/* The ops suite: the catalogue's memory-bound ops and GEMMs called through
 * the registry (opreg_call_boxed on CPU tensors), each beside an anchor
 * measured in the same run: a STREAM triad for GB/s, and the raw oneDNN
 * matmul primitive on the same shape for linear's GFLOP/s. Sizes move at
 * least 64 MiB a call, well beyond the caches. Best of several runs. */
#include "opreg/opreg.h"
#include "tools/bench.h"
#include "tools/op_inputs.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#define REPEATS 5

static double best_of(double *t, int n) {
    double b = t[0];
    for (int i = 1; i < n; i++)
        if (t[i] < b) b = t[i];
    return b;
}

/* a[i] = b[i] + s * c[i] over 16 Mi floats: 3 x 64 MiB, threaded like the
 * kernels. Bytes: two reads and one write. */
static double stream_triad(const struct bench_ctx *ctx) {
    const size_t n = (size_t)16 << 20;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return 0;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++)
        a[i] = 0, b[i] = 1.0f, c[i] = 2.0f;
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        bench_progress(ctx, "ops stream_triad: run %d of %d", r + 1, REPEATS);
        uint64_t t0 = bench_now_ns();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < (long)n; i++)
            a[i] = b[i] + 3.0f * c[i];
        t[r] = (double)(bench_now_ns() - t0) / 1e9;
    }
    volatile float sink = a[n / 2];
    (void)sink;
    free(a), free(b), free(c);
    return 3.0 * (double)n * sizeof(float) / best_of(t, REPEATS) / 1e9;
}

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
};

static size_t tensor_bytes(const opreg_value *v) {
    if (v->kind == OPREG_VALUE_TENSOR && v->u.tensor) return opreg_tensor_nbytes(v->u.tensor);
    size_t n = 0;
    if (v->kind == OPREG_VALUE_TENSOR_LIST)
        for (size_t i = 0; i < v->u.tensors.len; i++)
            n += v->u.tensors.items[i] ? opreg_tensor_nbytes(v->u.tensors.items[i]) : 0;
    return n;
}

/* Build the inputs, time the call, return seconds (best of REPEATS) and
 * the bytes one call moves; 0 seconds when the case cannot run. */
static double time_op(const struct bench_ctx *ctx, const char *name, const char *opname,
                      opreg_dtype dtype, const char *shape_text, const char *const *rw,
                      size_t *bytes) {
    const opreg_op *op;
    if (opreg_op_find(&op, opreg_registry_default(), opname) != OPREG_OK) return 0;
    op_shape shape;
    char err[256];
    op_inputs *in;
    if (op_shape_parse(&shape, shape_text, err, sizeof err) != 0 ||
        op_inputs_build(&in, op, (int)dtype, &shape, 7, err, sizeof err) != OPREG_OK) {
        fprintf(stderr, "opreg bench ops: %s: %s\n", name, err);
        return 0;
    }
    const opreg_schema *s = opreg_op_schema(op);
    *bytes = 0;
    for (size_t i = 0; i < op_inputs_nargs(in); i++) {
        const char *arg = opreg_argument_name(opreg_schema_argument(s, i));
        size_t b = tensor_bytes(&op_inputs_args(in)[i]);
        *bytes += b;
        for (int k = 0; k < 2; k++)
            if (rw[k] && strcmp(rw[k], arg) == 0) *bytes += b;
    }
    double t[REPEATS];
    double secs = 0;
    for (int r = 0; r <= REPEATS; r++) {
        bench_progress(ctx, "ops %s: run %d of %d", name, r, REPEATS);
        op_inputs_clear_rets(in);
        uint64_t t0 = bench_now_ns();
        opreg_status st = opreg_call_boxed(op, op_inputs_args(in), op_inputs_nargs(in), NULL, 0,
                                           op_inputs_rets(in), op_inputs_nrets(in));
        double dt = (double)(bench_now_ns() - t0) / 1e9;
        if (st != OPREG_OK) {
            fprintf(stderr, "opreg bench ops: %s: %s\n", name, opreg_last_error());
            op_inputs_free(in);
            return 0;
        }
        if (r > 0) t[r - 1] = dt; /* the first call warms caches and creates primitives */
    }
    op_inputs_clear_rets(in);
    op_inputs_free(in);
    secs = best_of(t, REPEATS);
    return secs;
}

/* The raw oneDNN matmul on input [m,k] x weight [n,k]^T, timed like the op;
 * GFLOP/s, or 0 when oneDNN has no implementation for the dtype here. */
static double raw_onednn(const struct bench_ctx *ctx, dnnl_data_type_t dt, int64_t m, int64_t n,
                         int64_t k) {
    dnnl_engine_t eng = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t mem[3] = { NULL, NULL, NULL };
    double gflops = 0;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t a_dims = { m, k }, b_dims = { k, n }, c_dims = { m, n };
    dnnl_matmul_desc_t md;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, dt, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dt, dnnl_ba) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dt, dnnl_ab) != dnnl_success ||
        dnnl_matmul_desc_init(&md, &a_md, &b_md, NULL, &c_md) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL) != dnnl_success ||
        dnnl_primitive_create(&prim, pd) != dnnl_success)
        goto done;
    const dnnl_memory_desc_t *mds[3] = { &a_md, &b_md, &c_md };
    for (int i = 0; i < 3; i++) {
        if (dnnl_memory_create(&mem[i], mds[i], eng, DNNL_MEMORY_ALLOCATE) != dnnl_success)
            goto done;
        void *p;
        dnnl_memory_get_data_handle(mem[i], &p);
        memset(p, 0x3c, dnnl_memory_desc_get_size(mds[i])); /* small finite values */
    }
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, mem[0] },
                                { DNNL_ARG_WEIGHTS, mem[1] },
                                { DNNL_ARG_DST, mem[2] } };
    double t[REPEATS];
    for (int r = 0; r <= REPEATS; r++) {
        bench_progress(ctx, "ops onednn matmul: run %d of %d", r, REPEATS);
        uint64_t t0 = bench_now_ns();
        if (dnnl_primitive_execute(prim, stream, 3, args) != dnnl_success ||
            dnnl_stream_wait(stream) != dnnl_success)
            goto done;
        if (r > 0) t[r - 1] = (double)(bench_now_ns() - t0) / 1e9;
    }
    gflops = 2.0 * (double)m * (double)n * (double)k / best_of(t, REPEATS) / 1e9;
done:
    for (int i = 0; i < 3; i++)
        dnnl_memory_destroy(mem[i]);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
    return gflops;
}

static void gemm_cases(const struct bench_ctx *ctx) {
    static const struct {
        const char *name, *raw_name;
        opreg_dtype dtype;
        dnnl_data_type_t dnnl;
    } cases[] = { { "linear_bf16", "onednn_matmul_bf16", OPREG_DTYPE_BF16, dnnl_bf16 },
                  { "linear_f32", "onednn_matmul_f32", OPREG_DTYPE_F32, dnnl_f32 } };
    const int64_t m = 512, n = 4096, k = 4096;
    char shape[96];
    snprintf(shape, sizeof shape, "tokens=%lld,hidden=%lld,out_features=%lld,bias=0", (long long)m,
             (long long)k, (long long)n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *none[2] = { NULL, NULL };
        size_t bytes;
        double secs =
            time_op(ctx, cases[c].name, "_C::linear", cases[c].dtype, shape, none, &bytes);
        double op_gflops = secs > 0 ? 2.0 * (double)m * n * k / secs / 1e9 : 0;
        double raw = raw_onednn(ctx, cases[c].dnnl, m, n, k);
        if (ctx->progress) fputs("\r\033[K", stderr);
        if (ctx->json) {
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"gflops\":%.1f}\n",
                   cases[c].name, (long long)m, (long long)n, (long long)k, op_gflops);
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"gflops\":%.1f,\"available\":%s}\n",
                   cases[c].raw_name, (long long)m, (long long)n, (long long)k, raw,
                   raw > 0 ? "true" : "false");
        } else {
            printf("ops     %-32s %8.1f GFLOP/s   %-20s %8.1f GFLOP/s%s\n", cases[c].name,
                   op_gflops, cases[c].raw_name, raw,
                   raw > 0 ? "" : " (oneDNN has no such primitive on this CPU)");
        }
        fflush(stdout);
    }
}

int bench_ops(const struct bench_ctx *ctx) {
    if (ctx->device && strncmp(ctx->device, "cuda", 4) == 0) return bench_ops_cuda(ctx);
    if (!opreg_registry_default()) {
        fprintf(stderr, "opreg bench ops: %s\n", opreg_last_error());
        return 1;
    }
    double triad = stream_triad(ctx);
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"case\":\"stream_triad\",\"gb_per_s\":%.2f}\n", triad);
    else
        printf("ops     %-32s %8.2f GB/s\n", "stream_triad", triad);
    fflush(stdout);
    for (size_t c = 0; c < sizeof mem_cases / sizeof mem_cases[0]; c++) {
        size_t bytes = 0;
        double secs = time_op(ctx, mem_cases[c].name, mem_cases[c].op, mem_cases[c].dtype,
                              mem_cases[c].shape, mem_cases[c].read_write, &bytes);
        if (ctx->progress) fputs("\r\033[K", stderr);
        double gbs = secs > 0 ? (double)bytes / secs / 1e9 : 0;
        if (ctx->json)
            printf("{\"suite\":\"ops\",\"case\":\"%s\",\"bytes\":%zu,\"gb_per_s\":%.2f,"
                   "\"of_triad\":%.2f}\n",
                   mem_cases[c].name, bytes, gbs, triad > 0 ? gbs / triad : 0);
        else
            printf("ops     %-32s %8.2f GB/s  %4.2f of the triad  (%zu MiB a call)\n",
                   mem_cases[c].name, gbs, triad > 0 ? gbs / triad : 0, bytes >> 20);
        fflush(stdout);
    }
    gemm_cases(ctx);
    return 0;
}
