/* opreg run NAME [--device D] [--dtype T] [--shape k=v,...] [--iters N]
 * [--seed S] [--json] [--row]: run an op of the catalogue on random inputs on
 * a device's backend and on the Reference key, compare what they wrote, and
 * time the device's kernel. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "opreg/inputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void) {
    printf("usage: opreg run NAME [--device D] [--dtype T] [--shape k=v,...] [--iters N]\n"
           "                [--seed S] [--json] [--row] [--explain]\n\n"
           "Runs op NAME (\"rms_norm\" or \"_C::rms_norm\") of the default registry on seeded\n"
           "random inputs, built on the CPU, with the kernel that dispatch by device picks\n"
           "(--device cpu, the default; --device cuda or a plugin's device such as opencl\n"
           "copies the inputs there and the results back) or with the Reference key (--device "
           "reference), and again with\n"
           "the Reference key; compares every written argument (Tensor!) and\n"
           "every returned tensor; prints the max absolute and relative error, whether it\n"
           "is within tolerance, and the median time per call of N calls (default 10).\n\n"
           "--dtype    f32 (default), f16 or bf16 for the op's float data; the output dtype\n"
           "           of cutlass_scaled_mm; i32 or i64 for moe_align_block_size's topk_ids.\n"
           "--explain  first print which provider of the key runs these inputs, and why\n"
           "           each one before it declined (with --json, on stderr)\n"
           "--shape    sizes and flags, e.g. tokens=64,hidden=4096 (the output lists the\n"
           "           sizes an op uses: tokens, hidden, heads, kv_heads, head_size, blocks,\n"
           "           block_size, experts, topk, seqs, max_seq_len, out_features, ...;\n"
           "           flags: gptj, kv_fp8, alibi, bias, per_token, per_channel, fp8; row_pad\n"
           "           leaves gaps between rows where the op takes strided rows)\n"
           "--json     one JSON object for the run\n"
           "--row      one table row, without the header (for tools/demo.sh)\n\n"
           "tolerance: |got - ref| <= atol * max(1, max|ref|) + rtol * |ref|, per dtype:\n"
           "           f32 atol 1e-5 rtol 1e-4; f16 atol 1e-3 rtol 2e-3; bf16 atol 8e-3\n"
           "           rtol 1.6e-2; fp8 one ulp; int8 one step; int32/int64 exact\n\n"
           "exit codes: 0 within tolerance, 1 not within tolerance, or the op is not\n"
           "supported on the device (the reason is printed: with --device cuda on a\n"
           "machine without a GPU, that no CUDA device is present), or a kernel failed;\n"
           "2 usage error\n");
}

struct run_opts {
    const char *name, *dev, *dtype, *shape;
    long iters;
    unsigned long long seed;
    bool json, row, explain;
};

static int parse(struct run_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->iters = 10;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--row") == 0) {
            o->row = true;
        } else if (strcmp(a, "--explain") == 0) {
            o->explain = true;
        } else if (v && strcmp(a, "--device") == 0) {
            o->dev = argv[++i];
        } else if (v && strcmp(a, "--dtype") == 0) {
            o->dtype = argv[++i];
        } else if (v && strcmp(a, "--shape") == 0) {
            o->shape = argv[++i];
        } else if (v && strcmp(a, "--iters") == 0) {
            o->iters = strtol(argv[++i], &end, 10);
            if (*end || o->iters < 1 || o->iters > 1000000) {
                fprintf(stderr, "opreg run: --iters wants a number in 1..1000000\n");
                return 2;
            }
        } else if (v && strcmp(a, "--seed") == 0) {
            o->seed = strtoull(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "opreg run: --seed wants a number\n");
                return 2;
            }
        } else if (!o->name && a[0] != '-') {
            o->name = a;
        } else {
            fprintf(stderr, "opreg run: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!o->name) {
        fprintf(stderr, "opreg run: missing NAME\n");
        return 2;
    }
    return 0;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call of @p op on @p in: by device, or on @p key when it is not NONE. */
static opreg_status call(const opreg_op *op, opreg_dispatch_key key, opreg_inputs *in) {
    opreg_inputs_clear_rets(in);
    if (key == OPREG_KEY_NONE)
        return opreg_call_boxed(op, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                opreg_inputs_rets(in), opreg_inputs_nrets(in));
    return opreg_call_boxed_key(op, key, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                opreg_inputs_rets(in), opreg_inputs_nrets(in));
}

/* The tensor arguments that stay in host memory when the inputs go to a
 * CUDA device: swap_blocks' src (so the run copies host to device) and its
 * block_mapping (which the op takes on the host). */
static uint32_t host_args_of(const opreg_op *op) {
    return strcmp(opreg_op_name(op), "_C::swap_blocks") == 0 ? (1u << 0) | (1u << 2) : 0;
}

/* Wait for the work queued on @p device: its backend's synchronize (a
 * stream, a plugin's queue), where it has one. */
static opreg_status wait_for(DLDevice device) {
    const opreg_backend *b = opreg_key_backend(opreg_key_of_device(device));
    return b && b->synchronize ? b->synchronize(b->context, device.device_id) : OPREG_OK;
}

/* The median time of @p iters calls on a copy of @p base, in microseconds. */
static opreg_status time_calls(double *out, const opreg_op *op, opreg_dispatch_key key,
                               const opreg_inputs *base, long iters, DLDevice device) {
    opreg_inputs *in;
    bool remote = device.device_type != kDLCPU;
    opreg_status st = remote ? opreg_inputs_to_device(&in, base, device, host_args_of(op))
                             : opreg_inputs_clone(&in, base);
    double *t = malloc((size_t)iters * sizeof *t);
    if (st != OPREG_OK || !t) {
        opreg_inputs_free(in);
        free(t);
        return st != OPREG_OK ? st : OPREG_ERR_OUT_OF_MEMORY;
    }
    for (long i = 0; i < iters && st == OPREG_OK; i++) {
        opreg_inputs_clear_rets(in);
        double t0 = now_us();
        st = call(op, key, in);
        if (st == OPREG_OK && remote) st = wait_for(device);
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    *out = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
    free(t);
    opreg_inputs_free(in);
    return st;
}

/* What one run found, for printing. */
struct run_report {
    bool json, row, supported;
    long iters;
    char name[128], device[32], dtype[16];
    char reason[600];  /* why the op is not supported */
    char failure[700]; /* why a call failed */
    opreg_sizes shape;
    const opreg_op *op;
    opreg_dispatch_key key, call_key; /* call_key NONE: dispatch by device */
    DLDevice device_value;            /* the --device (cpu for reference) */
    opreg_kernel_kind kind;
    opreg_diff diff;
    double us, ref_us;
};

static const char *kind_name(opreg_kernel_kind k) {
    return k == OPREG_KERNEL_DIRECT      ? "direct"
           : k == OPREG_KERNEL_COMPOSITE ? "composite"
           : k == OPREG_KERNEL_FALLBACK  ? "fallback"
                                         : "none";
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_num(const char *key, double v) {
    printf(",\"%s\":", key);
    if (isfinite(v))
        printf("%.6g", v);
    else
        printf("null");
}

static void print_json(const struct run_report *r, const char *result) {
    printf("{\"op\":");
    json_str(r->name);
    printf(",\"device\":");
    json_str(r->device);
    printf(",\"dtype\":");
    json_str(r->dtype);
    printf(",\"supported\":%s,\"result\":\"%s\"", r->supported ? "true" : "false", result);
    if (!r->supported || r->failure[0]) {
        printf(",\"reason\":");
        json_str(r->supported ? r->failure : r->reason);
        printf("}\n");
        return;
    }
    printf(",\"kernel\":\"%s\",\"shape\":{", kind_name(r->kind));
    for (size_t i = 0, n = 0; i < r->shape.n; i++)
        if (r->shape.kv[i].used)
            printf("%s\"%s\":%lld", n++ ? "," : "", r->shape.kv[i].name,
                   (long long)r->shape.kv[i].value);
    printf("}");
    json_num("max_abs_err", r->diff.max_abs);
    json_num("max_rel_err", r->diff.max_rel);
    printf(",\"within_tolerance\":%s,\"elements\":%lld,\"bad_elements\":%lld",
           r->diff.ok ? "true" : "false", (long long)r->diff.checked, (long long)r->diff.bad);
    json_num("us_per_call", r->us);
    printf(",\"iters\":%ld", r->iters);
    json_num("reference_us", r->ref_us);
    printf("}\n");
}

static int run_print(const struct run_report *r) {
    bool ran = r->supported && !r->failure[0];
    const char *result = !r->supported ? "unsupported"
                         : !ran        ? "failed"
                         : r->diff.ok  ? "ok"
                                       : "MISMATCH";
    if (!r->supported)
        fprintf(stderr, "opreg run: %s is not supported on %s: %s\n", r->name, r->device,
                r->reason);
    else if (!ran)
        fprintf(stderr, "opreg run: %s on %s: %s\n", r->name, r->device, r->failure);
    if (r->json) {
        print_json(r, result);
        return ran && r->diff.ok ? 0 : 1;
    }
    if (!r->row)
        printf("%-30s %-9s %-9s %11s %11s %-11s %11s %11s\n", "op", "device", "dtype",
               "max_abs_err", "max_rel_err", "result", "us/call", "ref_us");
    if (ran)
        printf("%-30s %-9s %-9s %11.3g %11.3g %-11s %11.2f %11.2f\n", r->name, r->device, r->dtype,
               r->diff.max_abs, r->diff.max_rel, result, r->us, r->ref_us);
    else
        printf("%-30s %-9s %-9s %11s %11s %-11s %11s %11s\n", r->name, r->device, r->dtype, "-",
               "-", result, "-", "-");
    if (r->row || !ran) return ran && r->diff.ok ? 0 : 1;
    char sizes[256];
    opreg_dtype dt = OPREG_DTYPE_F32;
    (void)opreg_dtype_from_name(&dt, r->dtype);
    opreg_tolerance tol = opreg_tolerance_of(dt);
    opreg_sizes_format(&r->shape, sizes, sizeof sizes);
    printf("  kernel %s (%s); sizes %s; %lld elements compared; median of %ld calls\n",
           r->call_key == OPREG_KEY_NONE ? opreg_key_name(r->key) : "Reference", kind_name(r->kind),
           sizes, (long long)r->diff.checked, r->iters);
    if (tol.units < 0)
        printf("  tolerance of %s data: atol %g (times max(1, max|ref|)), rtol %g;", r->dtype,
               tol.atol, tol.rtol);
    else
        printf("  tolerance:");
    printf(" fp8 1 ulp, int8 1 step, int32/int64 exact\n");
    if (r->diff.why[0]) printf("  %s\n", r->diff.why);
    if (r->diff.bad)
        printf("  %lld elements outside tolerance; first: %s\n", (long long)r->diff.bad,
               r->diff.first_bad);
    return r->diff.ok ? 0 : 1;
}

/* Find the op and the key it runs on; 0, or the exit code (after printing).
 * An op that cannot run there is left for after the inputs are built, so
 * that a usage error is reported as one. */
static int run_resolve(struct run_report *r) {
    opreg_registry *reg = opreg_registry_default();
    r->supported = true;
    r->call_key = OPREG_KEY_NONE;
    if (!reg) return fprintf(stderr, "opreg run: %s\n", opreg_last_error()), 1;
    if (opreg_op_find(&r->op, reg, r->name) != OPREG_OK) {
        r->supported = false;
        snprintf(r->reason, sizeof r->reason, "%s", opreg_last_error());
        return run_print(r); /* no op, no inputs to build */
    }
    if (strcmp(r->device, "reference") == 0 || strcmp(r->device, "Reference") == 0) {
        r->key = r->call_key = OPREG_KEY_REFERENCE;
        r->kind = opreg_op_kernel_kind(r->op, OPREG_KEY_REFERENCE);
        r->device_value.device_type = kDLCPU; /* the Reference key runs on CPU tensors */
        r->device_value.device_id = 0;
    } else {
        DLDevice device;
        opreg_support_info info;
        if (opreg_device_parse(&device, r->device) != OPREG_OK)
            return fprintf(stderr, "opreg run: %s\n", opreg_last_error()), 2;
        if (opreg_explain_support(&info, reg, r->name, &device) != OPREG_OK)
            return fprintf(stderr, "opreg run: %s\n", opreg_last_error()), 1;
        r->key = info.key;
        r->kind = info.kind;
        if (!info.supported) {
            r->supported = false;
            snprintf(r->reason, sizeof r->reason, "%s", info.message);
            return 0;
        }
        if (!opreg_inputs_device_reachable(device)) {
            r->supported = false;
            snprintf(r->reason, sizeof r->reason,
                     "opreg run builds its inputs in CPU memory and copies them with the "
                     "backend's copy functions; this backend has none");
            return 0;
        }
        r->device_value = device;
    }
    if (r->supported && opreg_op_kernel_kind(r->op, OPREG_KEY_REFERENCE) == OPREG_KERNEL_NONE) {
        r->supported = false;
        snprintf(r->reason, sizeof r->reason, "no Reference kernel to run or compare with");
    }
    return 0;
}

/* The checked call on the device: on the CPU, @p in itself; on a CUDA
 * device, a copy of it made there, whose results are copied back into
 * @p in for the comparison. */
static opreg_status call_on(const struct run_report *r, opreg_inputs *in) {
    if (r->call_key != OPREG_KEY_NONE || r->device_value.device_type == kDLCPU)
        return call(r->op, r->call_key, in);
    opreg_inputs *dev = NULL;
    opreg_status st = opreg_inputs_to_device(&dev, in, r->device_value, host_args_of(r->op));
    if (st == OPREG_OK) st = call(r->op, r->call_key, dev);
    if (st == OPREG_OK) st = opreg_inputs_fetch(in, dev);
    opreg_inputs_free(dev);
    return st;
}

int cmd_run(int argc, char **argv) {
    struct run_opts o;
    struct run_report r;
    char err[512];
    int rc;
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    if ((rc = parse(&o, argc, argv)) != 0) return rc;
    memset(&r, 0, sizeof r);
    r.json = o.json;
    r.row = o.row;
    r.iters = o.iters;
    snprintf(r.name, sizeof r.name, "%s%s", strstr(o.name, "::") ? "" : "_C::", o.name);
    snprintf(r.device, sizeof r.device, "%s", o.dev ? o.dev : "cpu");
    snprintf(r.dtype, sizeof r.dtype, "%s", o.dtype ? o.dtype : "-");
    int dtype = -1;
    if (o.dtype) {
        opreg_dtype dt;
        if (opreg_dtype_from_name(&dt, o.dtype) != OPREG_OK)
            return fprintf(stderr, "opreg run: %s\n", opreg_last_error()), 2;
        dtype = (int)dt;
    }
    if (opreg_sizes_parse(&r.shape, o.shape ? o.shape : "", err, sizeof err) != 0)
        return fprintf(stderr, "opreg run: %s\n", err), 2;
    rc = run_resolve(&r);
    if (rc != 0) return rc;
    opreg_inputs *base = NULL, *ref = NULL, *dev = NULL;
    opreg_status st = opreg_inputs_build(&base, r.op, dtype, &r.shape, o.seed, err, sizeof err);
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg run: %s\n", err);
        return st == OPREG_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    snprintf(r.dtype, sizeof r.dtype, "%s", opreg_dtype_name(opreg_inputs_dtype(base)));
    if (o.explain && r.key != OPREG_KEY_NONE) {
        /* Which provider of the key these very inputs select, before the run. */
        static opreg_call_explanation x;
        if (opreg_explain_call(&x, r.op, r.key, opreg_inputs_args(base), opreg_inputs_nargs(base),
                               NULL, 0) == OPREG_OK)
            fprintf(r.json ? stderr : stdout, "%s\n", x.message);
        else
            fprintf(stderr, "opreg run: --explain: %s\n", opreg_last_error());
    }
    if (!r.supported) {
        opreg_inputs_free(base);
        return run_print(&r);
    }
    if ((st = opreg_inputs_clone(&ref, base)) == OPREG_OK) st = opreg_inputs_clone(&dev, base);
    if (st != OPREG_OK) {
        snprintf(r.failure, sizeof r.failure, "copying the inputs: %s", opreg_status_str(st));
    } else {
        double t0 = now_us();
        st = call(r.op, OPREG_KEY_REFERENCE, ref);
        r.ref_us = now_us() - t0;
        if (st != OPREG_OK)
            snprintf(r.failure, sizeof r.failure, "the reference kernel failed: %s: %s",
                     opreg_status_name(st), opreg_last_error());
        else if ((st = call_on(&r, dev)) != OPREG_OK)
            snprintf(r.failure, sizeof r.failure, "the %s kernel failed: %s: %s", r.device,
                     opreg_status_name(st), opreg_last_error());
        else if ((st = time_calls(&r.us, r.op, r.call_key, base, o.iters, r.device_value)) !=
                 OPREG_OK)
            snprintf(r.failure, sizeof r.failure, "a timed call failed: %s: %s",
                     opreg_status_name(st), opreg_last_error());
        else
            opreg_inputs_compare(&r.diff, dev, ref);
    }
    opreg_inputs_free(dev);
    opreg_inputs_free(ref);
    opreg_inputs_free(base);
    return run_print(&r);
}
