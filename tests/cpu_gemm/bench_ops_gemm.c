/* opreg bench ops, the GEMM cases: linear and cutlass_scaled_mm on oneDNN,
 * each beside the raw oneDNN matmul primitive on the same shape, dtypes and
 * layouts (weights [K, N] in "ba" layout, as linear passes them), created
 * once and executed in a loop. The target is linear_bf16 >= 0.95 of
 * onednn_matmul_bf16; each linear line carries that ratio as "vs_onednn",
 * measured in the same run. Every case reports the best of REPS runs, each
 * long enough (MIN_REP_NS) to hide the clock.
 *
 * On a CPU where oneDNN 2.6 has no bf16 matmul (AVX2 only), the raw bf16
 * case prints "available":false and linear_bf16 runs its f32 fallback; the
 * f32 pair then shows the kernel's overhead over raw oneDNN.
 *
 * The kernels are called directly (internal opreg__ functions), so this
 * file links against opreg_static; once linear and cutlass_scaled_mm are
 * registered it can call them through the registry instead. */
#include "backends/cpu/onednn/onednn.h"
#include "tools/bench.h"

#include <oneapi/dnnl/dnnl.h>

#include <stdlib.h>
#include <string.h>

/* Declared here until tools/bench.h lists the suite. */
int bench_ops_gemm(const struct bench_ctx *ctx);

#define REPS       5
#define MIN_REP_NS 100000000ull

struct shape {
    int64_t m, n, k;
};

/* A decode GEMV, a small batch and a prefill-sized GEMM of a 7B-class layer. */
static const struct shape shapes[] = { { 1, 4096, 4096 }, { 32, 4096, 4096 }, { 512, 4096, 4096 } };

typedef int (*run_fn)(void *arg);

/* Seconds per call of each of @p n cases, best of REPS rounds. The cases
 * take turns within a round, so that drift (clock speed, other load) hits
 * them alike and their ratio stays fair. Returns -1 when a call failed. */
static int best_seconds(int n, run_fn *fn, void **arg, double *seconds) {
    uint64_t iters[2], best[2] = { UINT64_MAX, UINT64_MAX };
    for (int c = 0; c < n; c++) {
        uint64_t t0 = bench_now_ns(), one;
        if (fn[c](arg[c])) return -1; /* also the warm-up: creates the primitive */
        one = bench_now_ns() - t0;
        iters[c] = one ? MIN_REP_NS / one + 1 : 1000;
    }
    for (int r = 0; r < REPS; r++)
        for (int c = 0; c < n; c++) {
            uint64_t t0 = bench_now_ns(), t;
            for (uint64_t i = 0; i < iters[c]; i++)
                if (fn[c](arg[c])) return -1;
            t = bench_now_ns() - t0;
            if (t < best[c]) best[c] = t;
        }
    for (int c = 0; c < n; c++)
        seconds[c] = (double)best[c] / 1e9 / (double)iters[c];
    return 0;
}

/* ---- the kernels ---- */

struct kernel_arg {
    opreg_tensor out, x, w, as, bs, bias;
    int64_t out_shape[2], x_shape[2], w_shape[2], w_strides[2], as_shape[1], bs_shape[1];
    bool scaled_mm;
};

static int run_kernel(void *p) {
    struct kernel_arg *a = p;
    if (a->scaled_mm)
        return opreg__onednn_scaled_mm(&a->out, &a->x, &a->w, &a->as, &a->bs, &a->bias);
    return opreg__onednn_linear(&a->out, &a->x, &a->w, NULL) != OPREG_OK;
}

static void tensor(opreg_tensor *t, void *data, opreg_dtype dt, int ndim, int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device = (DLDevice){ kDLCPU, 0 };
    t->ndim = ndim;
    t->dtype = opreg_dtype_to_dlpack(dt);
    t->shape = shape;
}

/* ---- the raw primitive ---- */

struct raw_arg {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t mem[3];
    dnnl_exec_arg_t args[3];
};

static int run_raw(void *p) {
    struct raw_arg *r = p;
    return dnnl_primitive_execute(r->prim, r->stream, 3, r->args) != dnnl_success ||
           dnnl_stream_wait(r->stream) != dnnl_success;
}

static dnnl_status_t raw_create(struct raw_arg *r, dnnl_engine_t eng, dnnl_data_type_t in,
                                dnnl_data_type_t out, const struct shape *s, void *x, void *w,
                                void *y) {
    dnnl_dims_t sd = { s->m, s->k }, wd = { s->k, s->n }, dd = { s->m, s->n };
    dnnl_memory_desc_t smd, wmd, dmd;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st;
    memset(r, 0, sizeof *r);
    st = dnnl_memory_desc_init_by_tag(&smd, 2, sd, in, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wmd, 2, wd, in, dnnl_ba);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&dmd, 2, dd, out, dnnl_ab);
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&desc, &smd, &wmd, NULL, &dmd);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&r->prim, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (st == dnnl_success) st = dnnl_stream_create(&r->stream, eng, dnnl_stream_default_flags);
    if (st == dnnl_success) st = dnnl_memory_create(&r->mem[0], &smd, eng, x);
    if (st == dnnl_success) st = dnnl_memory_create(&r->mem[1], &wmd, eng, w);
    if (st == dnnl_success) st = dnnl_memory_create(&r->mem[2], &dmd, eng, y);
    r->args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, r->mem[0] };
    r->args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, r->mem[1] };
    r->args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, r->mem[2] };
    return st;
}

static void raw_destroy(struct raw_arg *r) {
    for (int i = 0; i < 3; i++)
        if (r->mem[i]) dnnl_memory_destroy(r->mem[i]);
    if (r->stream) dnnl_stream_destroy(r->stream);
    if (r->prim) dnnl_primitive_destroy(r->prim);
}

/* ---- output ---- */

static void report(const struct bench_ctx *ctx, const char *name, const struct shape *s,
                   double seconds, double ratio) {
    double gflops = 2.0 * (double)s->m * (double)s->n * (double)s->k / seconds / 1e9;
    if (ctx->json) {
        printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
               "\"gflops\":%.2f",
               name, (long long)s->m, (long long)s->n, (long long)s->k, gflops);
        if (ratio > 0) printf(",\"vs_onednn\":%.3f", ratio);
        printf("}\n");
    } else {
        printf("ops  %-22s m=%-4lld n=%-5lld k=%-5lld %9.2f GFLOP/s", name, (long long)s->m,
               (long long)s->n, (long long)s->k, gflops);
        if (ratio > 0) printf("  (%.3f of raw oneDNN)", ratio);
        printf("\n");
    }
    fflush(stdout);
}

static void report_unavailable(const struct bench_ctx *ctx, const char *name, const struct shape *s,
                               const char *why) {
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
               "\"available\":false,\"reason\":\"%s\"}\n",
               name, (long long)s->m, (long long)s->n, (long long)s->k, why);
    else
        printf("ops  %-22s m=%-4lld n=%-5lld k=%-5lld unavailable: %s\n", name, (long long)s->m,
               (long long)s->n, (long long)s->k, why);
}

/* ---- the cases ---- */

/* Values of a few significant bits in [-1, 1): exact in bf16, no
 * denormals, so every dtype runs at its normal speed. */
static void fill(void *buf, opreg_dtype dt, size_t n) {
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        float v;
        uint32_t bits;
        x = x * 1664525u + 1013904223u;
        v = (float)((x >> 9) & 0xFF) / 128.0f - 1.0f;
        memcpy(&bits, &v, sizeof bits);
        if (dt == OPREG_DTYPE_F32)
            ((float *)buf)[i] = v;
        else if (dt == OPREG_DTYPE_BF16)
            ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
        else
            ((int8_t *)buf)[i] = (int8_t)(x >> 24);
    }
}

/* aligned_alloc wants a size that is a multiple of the alignment. */
static void *alloc64(size_t bytes) {
    return aligned_alloc(64, (bytes + 63u) & ~(size_t)63u);
}

struct buffers {
    void *x, *w, *y, *bias;
    float *as, *bs;
};

/* The kernel's arguments: linear (x [M,K], w [N,K]) or, for int8,
 * cutlass_scaled_mm with per-row and per-column scales, a bf16 bias and
 * bf16 out, vLLM's usual configuration. */
static void kernel_setup(struct kernel_arg *a, const struct shape *s, opreg_dtype dt,
                         const struct buffers *b) {
    opreg_dtype out_dt = dt == OPREG_DTYPE_I8 ? OPREG_DTYPE_BF16 : dt;
    memset(a, 0, sizeof *a);
    a->scaled_mm = dt == OPREG_DTYPE_I8;
    a->x_shape[0] = s->m;
    a->x_shape[1] = s->k;
    a->out_shape[0] = s->m;
    a->out_shape[1] = s->n;
    tensor(&a->x, b->x, dt, 2, a->x_shape);
    tensor(&a->out, b->y, out_dt, 2, a->out_shape);
    if (!a->scaled_mm) {
        a->w_shape[0] = s->n;
        a->w_shape[1] = s->k;
        tensor(&a->w, b->w, dt, 2, a->w_shape);
        return;
    }
    a->w_shape[0] = s->k;
    a->w_shape[1] = s->n;
    a->w_strides[0] = 1;
    a->w_strides[1] = s->k;
    tensor(&a->w, b->w, dt, 2, a->w_shape);
    a->w.strides = a->w_strides;
    a->as_shape[0] = s->m;
    a->bs_shape[0] = s->n;
    tensor(&a->as, b->as, OPREG_DTYPE_F32, 1, a->as_shape);
    tensor(&a->bs, b->bs, OPREG_DTYPE_F32, 1, a->bs_shape);
    tensor(&a->bias, b->bias, OPREG_DTYPE_BF16, 1, a->bs_shape);
}

/* The kernel and the raw primitive on the same buffers, taking turns.
 * Returns 1 when a call failed; a raw primitive that oneDNN lacks on this
 * CPU is reported as unavailable, not as a failure. */
static int bench_pair(const struct bench_ctx *ctx, dnnl_engine_t eng, const struct shape *s,
                      opreg_dtype dt, const char *raw_name, const char *kernel_name,
                      const struct buffers *b) {
    dnnl_data_type_t in = dt == OPREG_DTYPE_BF16 ? dnnl_bf16
                          : dt == OPREG_DTYPE_I8 ? dnnl_s8
                                                 : dnnl_f32;
    struct raw_arg raw;
    struct kernel_arg ka;
    double raw_s = -1, kernel_s;
    dnnl_status_t st;
    fill(b->x, dt, (size_t)(s->m * s->k));
    fill(b->w, dt, (size_t)(s->n * s->k));
    bench_progress(ctx, "ops: %s m=%lld", kernel_name, (long long)s->m);
    st = raw_create(&raw, eng, in, dt == OPREG_DTYPE_I8 ? dnnl_s32 : in, s, b->x, b->w, b->y);
    kernel_setup(&ka, s, dt, b);
    {
        run_fn fn[2] = { run_kernel, run_raw };
        void *arg[2] = { &ka, &raw };
        double sec[2] = { -1, -1 };
        int failed = best_seconds(st == dnnl_success ? 2 : 1, fn, arg, sec);
        raw_destroy(&raw);
        if (failed) {
            fprintf(stderr, "opreg bench ops: %s or %s failed: %s\n", kernel_name, raw_name,
                    opreg_last_error());
            return 1;
        }
        kernel_s = sec[0];
        raw_s = sec[1];
    }
    if (raw_s > 0)
        report(ctx, raw_name, s, raw_s, -1);
    else
        report_unavailable(ctx, raw_name, s,
                           st == dnnl_unimplemented ? "oneDNN has no implementation on this CPU"
                                                    : "oneDNN failed");
    report(ctx, kernel_name, s, kernel_s, raw_s > 0 ? raw_s / kernel_s : -1);
    return 0;
}

int bench_ops_gemm(const struct bench_ctx *ctx) {
    dnnl_engine_t eng;
    char isa[64];
    int rc = 0;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) {
        fprintf(stderr, "opreg bench ops: no oneDNN CPU engine\n");
        return 1;
    }
    opreg__onednn_isa(isa, sizeof isa);
    if (ctx->json)
        printf("{\"suite\":\"ops\",\"case\":\"gemm_info\",\"onednn_isa\":\"%s\",\"amx\":%s}\n", isa,
               opreg__onednn_has_amx() ? "true" : "false");
    else
        printf("ops  oneDNN ISA %s, AMX %s\n", isa, opreg__onednn_has_amx() ? "yes" : "no");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && rc == 0; i++) {
        const struct shape *s = &shapes[i];
        struct buffers b;
        b.x = alloc64((size_t)(s->m * s->k) * 4u);
        b.w = alloc64((size_t)(s->n * s->k) * 4u);
        b.y = alloc64((size_t)(s->m * s->n) * 4u);
        b.bias = alloc64((size_t)s->n * 4u);
        b.as = alloc64((size_t)s->m * 4u);
        b.bs = alloc64((size_t)s->n * 4u);
        if (!b.x || !b.w || !b.y || !b.bias || !b.as || !b.bs) {
            fprintf(stderr, "opreg bench ops: out of memory for m=%lld\n", (long long)s->m);
            rc = 1;
        } else {
            fill(b.bias, OPREG_DTYPE_BF16, (size_t)s->n);
            for (int64_t j = 0; j < s->m; j++)
                b.as[j] = 0.01f;
            for (int64_t j = 0; j < s->n; j++)
                b.bs[j] = 0.02f;
            rc |=
                bench_pair(ctx, eng, s, OPREG_DTYPE_BF16, "onednn_matmul_bf16", "linear_bf16", &b);
            rc |= bench_pair(ctx, eng, s, OPREG_DTYPE_F32, "onednn_matmul_f32", "linear_f32", &b);
            rc |= bench_pair(ctx, eng, s, OPREG_DTYPE_I8, "onednn_matmul_s8", "scaled_mm_i8_bf16",
                             &b);
        }
        free(b.x);
        free(b.w);
        free(b.y);
        free(b.bias);
        free(b.as);
        free(b.bs);
    }
    bench_progress(ctx, "");
    dnnl_engine_destroy(eng);
    return rc;
}
