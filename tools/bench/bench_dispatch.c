/* opreg bench dispatch: the cost of the registry's hot paths, for a
 * 4-argument op with rms_norm's schema and a trivial kernel, in one run:
 *
 *   direct_call      the kernel function called directly, with the same
 *                    value array the typed entry point builds
 *   typed_call       the generated entry point opreg_op_bench_rms_norm()
 *                    (default registry, cached handle)
 *   boxed_call       opreg_call_boxed() with full validation
 *   lookup           opreg_op_find() by name
 *   is_op_supported  opreg_is_op_supported() by name
 *   is_op_supported_on  opreg_is_op_supported_on() by name and device
 *
 * Each case runs several rounds and reports the fastest, in ns per call. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include "bench_dispatch_typed.h"

#include <string.h>

#define ROUNDS 7
#define ITERS  2000000

static uint64_t calls;

static opreg_status trivial_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                   opreg_value *rets) {
    (void)op;
    (void)args;
    (void)rets;
    (*(uint64_t *)ctx)++;
    return OPREG_OK;
}

/* Volatile, so the compiler cannot inline the kernel into direct_call. */
static opreg_kernel_fn volatile kernel_ptr = trivial_kernel;

__attribute__((noinline)) static opreg_status direct_call(const opreg_op *op, DLTensor *out,
                                                          const DLTensor *input,
                                                          const DLTensor *weight, double eps) {
    opreg_value a[4];
    a[0] = opreg_tensor_value(out);
    a[1] = opreg_tensor_value((DLTensor *)(uintptr_t)input);
    a[2] = opreg_tensor_value((DLTensor *)(uintptr_t)weight);
    a[3] = opreg_float_value(eps);
    return kernel_ptr(&calls, op, a, NULL);
}

enum bench_case { DIRECT, TYPED, BOXED, LOOKUP, SUPPORTED, SUPPORTED_ON, NCASES };
static const char *case_names[NCASES] = { "direct_call", "typed_call",      "boxed_call",
                                          "lookup",      "is_op_supported", "is_op_supported_on" };

struct fixture {
    opreg_registry *reg;
    const opreg_op *op;
    DLTensor *out, *input, *weight;
    opreg_value args[4];
};

static uint64_t run_case(const struct fixture *f, enum bench_case c, int *errors) {
    const char *name = "bench::rms_norm";
    DLDevice cpu = { kDLCPU, 0 };
    uint64_t t0 = bench_now_ns();
    int bad = 0;
    for (int i = 0; i < ITERS; i++) {
        switch (c) {
        case DIRECT:
            bad |= direct_call(f->op, f->out, f->input, f->weight, 1e-6) != OPREG_OK;
            break;
        case TYPED:
            bad |= opreg_op_bench_rms_norm(f->out, f->input, f->weight, 1e-6) != OPREG_OK;
            break;
        case BOXED:
            bad |= opreg_call_boxed(f->op, f->args, 4, NULL, 0, NULL, 0) != OPREG_OK;
            break;
        case LOOKUP: {
            const opreg_op *op;
            bad |= opreg_op_find(&op, f->reg, name) != OPREG_OK;
            break;
        }
        case SUPPORTED:
            bad |= !opreg_is_op_supported(f->reg, name);
            break;
        case SUPPORTED_ON:
            bad |= !opreg_is_op_supported_on(f->reg, name, cpu);
            break;
        default:
            break;
        }
    }
    uint64_t t1 = bench_now_ns();
    *errors |= bad;
    return t1 - t0;
}

static int setup(struct fixture *f, opreg_library **lib) {
    f->reg = opreg_registry_default();
    if (!f->reg) return 1;
    if (opreg_library_create(lib, f->reg, OPREG_LIBRARY_DEF, "bench", OPREG_KEY_CPU, __FILE__,
                             __LINE__) != OPREG_OK ||
        opreg_library_def(
            &f->op, *lib,
            "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()") !=
            OPREG_OK ||
        opreg_library_impl_fn(*lib, "rms_norm", OPREG_KEY_CPU, trivial_kernel, &calls) != OPREG_OK)
        return 1;
    int64_t shape[2] = { 4, 64 }, wshape[1] = { 64 };
    if (opreg_tensor_empty_cpu(&f->out, OPREG_DTYPE_F32, 2, shape) != OPREG_OK ||
        opreg_tensor_empty_cpu(&f->input, OPREG_DTYPE_F32, 2, shape) != OPREG_OK ||
        opreg_tensor_empty_cpu(&f->weight, OPREG_DTYPE_F32, 1, wshape) != OPREG_OK)
        return 1;
    f->args[0] = opreg_tensor_value(f->out);
    f->args[1] = opreg_tensor_value(f->input);
    f->args[2] = opreg_tensor_value(f->weight);
    f->args[3] = opreg_float_value(1e-6);
    return 0;
}

int bench_dispatch(const struct bench_ctx *ctx) {
    struct fixture f = { 0 };
    opreg_library *lib = NULL;
    int rc = 0;
    if (setup(&f, &lib) != 0) {
        fprintf(stderr, "opreg bench dispatch: setup failed: %s\n", opreg_last_error());
        rc = 1;
        goto done;
    }
    double best[NCASES];
    int errors = 0;
    for (int c = 0; c < NCASES; c++)
        best[c] = 1e300;
    /* Rounds interleave the cases, so drift in clock speed hits all alike. */
    for (int r = 0; r < ROUNDS; r++) {
        for (int c = 0; c < NCASES; c++) {
            bench_progress(ctx, "dispatch: round %d/%d, %s", r + 1, ROUNDS, case_names[c]);
            double ns = (double)run_case(&f, (enum bench_case)c, &errors) / ITERS;
            if (ns < best[c]) best[c] = ns;
        }
    }
    if (ctx->progress) fputs("\r\033[K", stderr);
    if (errors) {
        fprintf(stderr, "opreg bench dispatch: a call failed: %s\n", opreg_last_error());
        rc = 1;
        goto done;
    }
    for (int c = 0; c < NCASES; c++) {
        if (ctx->json)
            printf("{\"suite\":\"dispatch\",\"case\":\"%s\",\"ns_per_call\":%.2f}\n", case_names[c],
                   best[c]);
        else
            printf("dispatch  %-20s %8.2f ns/call\n", case_names[c], best[c]);
    }
    if (!ctx->json)
        printf("dispatch  typed_call - direct_call = %.2f ns (target <= 3)\n",
               best[TYPED] - best[DIRECT]);
done:
    opreg_tensor_free(f.out);
    opreg_tensor_free(f.input);
    opreg_tensor_free(f.weight);
    opreg_library_close(lib);
    return rc;
}
