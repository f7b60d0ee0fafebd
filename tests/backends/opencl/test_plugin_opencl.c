/* The OpenCL backend plugin (backends/opencl) against the reference: every
 * op it registers, in f32, f16 and bf16, on tensors copied to the device and
 * back; the same refusals as the catalogue's checks (bad shapes through the
 * shared checks, bad positions and slots through the plugin's own data
 * checks); and is_op_supported on opencl for exactly its ops. Skips (77)
 * when no OpenCL device is present. */
#include "ops/ops_internal.h"
#include "registry/plugin/plugin_test.h"

#include <math.h>

static opreg_registry *reg;
static opreg_dispatch_key key;
static const opreg_backend *be;
static const DLDevice dev = { kDLOpenCL, 0 };

static unsigned rng = 12345u;
static double urand(void) {
    rng = rng * 1103515245u + 12345u;
    return (double)((rng >> 8) & 0xFFFFFF) / 16777216.0;
}

/* A CPU tensor of random values in [lo, hi) (integers: rounded), or zeros. */
static DLTensor *host_tensor(opreg_dtype dt, int ndim, const int64_t *shape, double lo, double hi,
                             bool zero) {
    DLTensor *t;
    if (opreg_tensor_empty_cpu(&t, dt, ndim, shape) != OPREG_OK) return NULL;
    int64_t n = opreg_tensor_numel(t);
    memset(t->data, 0, opreg_tensor_nbytes(t));
    for (int64_t i = 0; i < n && !zero; i++) {
        double v = lo + (hi - lo) * urand();
        if (dt == OPREG_DTYPE_I64)
            ((int64_t *)t->data)[i] = (int64_t)floor(v);
        else
            opreg__st(t->data, dt, i, v);
    }
    return t;
}

static DLTensor *to_device(const DLTensor *h) {
    DLTensor *d;
    opreg_dtype dt;
    if (opreg_dtype_from_dlpack(&dt, h->dtype) != OPREG_OK) return NULL;
    if (opreg_tensor_empty(&d, dev, dt, h->ndim, h->shape) != OPREG_OK) return NULL;
    if (be->copy_to_device(be->context, d->data, 0, h->data, opreg_tensor_nbytes(h), 0) !=
        OPREG_OK) {
        opreg_tensor_free(d);
        return NULL;
    }
    return d;
}

static DLTensor *clone_cpu(const DLTensor *h) {
    DLTensor *c;
    opreg_dtype dt;
    opreg_dtype_from_dlpack(&dt, h->dtype);
    if (opreg_tensor_empty_cpu(&c, dt, h->ndim, h->shape) != OPREG_OK) return NULL;
    memcpy(c->data, h->data, opreg_tensor_nbytes(h));
    return c;
}

/* Tolerances of a float dtype: |a - b| <= atol + rtol |b|. */
static double tol(int dt) {
    return dt == OPREG_DTYPE_F32 ? 2e-6 : dt == OPREG_DTYPE_F16 ? 2e-3 : 1.6e-2;
}

/* Compare device tensor @p d with reference CPU tensor @p r. */
static int same(const char *what, const DLTensor *d, const DLTensor *r) {
    size_t bytes = opreg_tensor_nbytes(r);
    char *got = malloc(bytes ? bytes : 1);
    if (!got || be->copy_to_host(be->context, got, d->data, 0, bytes, 0) != OPREG_OK) {
        free(got);
        fprintf(stderr, "%s: copy back failed: %s\n", what, opreg_last_error());
        return 0;
    }
    int dt = opreg__dtype_of(r), ok = 1;
    bool fl = dt == OPREG_DTYPE_F32 || dt == OPREG_DTYPE_F16 || dt == OPREG_DTYPE_BF16;
    int64_t n = opreg_tensor_numel(r), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fl) {
            double a = opreg__ld(got, dt, i), b = opreg__ld(r->data, dt, i);
            double t = tol(dt);
            if (!(fabs(a - b) <= t + t * fabs(b))) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: element %lld: opencl %.9g, reference %.9g\n", what,
                            (long long)i, a, b);
                ok = 0;
            }
        } else {
            size_t es = opreg_dtype_size((opreg_dtype)dt);
            if (memcmp(got + (size_t)i * es, (char *)r->data + (size_t)i * es, es) != 0) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: element %lld differs (exact dtype %s)\n", what,
                            (long long)i, opreg_dtype_name((opreg_dtype)dt));
                ok = 0;
            }
        }
    }
    free(got);
    return ok;
}

/* Run op @p name with @p n arguments (CPU tensors or scalars) on the
 * reference and on the device; compare statuses, messages and every tensor
 * afterwards. Frees the tensors of @p args. */
static int compare(const char *name, const char *label, opreg_value *args, size_t n) {
    const opreg_op *op;
    if (opreg_op_find(&op, reg, name) != OPREG_OK) return 0;
    opreg_value ref[16], onDev[16];
    for (size_t i = 0; i < n; i++) {
        ref[i] = onDev[i] = args[i];
        if (args[i].kind == OPREG_VALUE_TENSOR) {
            ref[i].u.tensor = clone_cpu(args[i].u.tensor);
            onDev[i].u.tensor = to_device(args[i].u.tensor);
            if (!ref[i].u.tensor || !onDev[i].u.tensor) return 0;
        }
    }
    opreg_status rs = opreg_call_boxed_key(op, OPREG_KEY_REFERENCE, ref, n, NULL, 0, NULL, 0);
    char rmsg[1024];
    snprintf(rmsg, sizeof rmsg, "%s", opreg_last_error());
    opreg_status ds = opreg_call_boxed(op, onDev, n, NULL, 0, NULL, 0);
    char dmsg[1024];
    snprintf(dmsg, sizeof dmsg, "%s", opreg_last_error());
    int ok = 1;
    if (rs != ds || (rs != OPREG_OK && strcmp(rmsg, dmsg) != 0)) {
        fprintf(stderr, "%s %s: reference %s \"%s\", opencl %s \"%s\"\n", name, label,
                opreg_status_name(rs), rmsg, opreg_status_name(ds), dmsg);
        ok = 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (args[i].kind != OPREG_VALUE_TENSOR) continue;
        char what[160];
        snprintf(what, sizeof what, "%s %s argument %zu", name, label, i);
        if (ok && rs == OPREG_OK && !same(what, onDev[i].u.tensor, ref[i].u.tensor)) ok = 0;
        opreg_tensor_free(ref[i].u.tensor);
        opreg_tensor_free(onDev[i].u.tensor);
        opreg_tensor_free(args[i].u.tensor);
    }
    return ok;
}

#define TV(t) opreg_tensor_value(t)
static const opreg_dtype dtypes[3] = { OPREG_DTYPE_F32, OPREG_DTYPE_F16, OPREG_DTYPE_BF16 };

TEST(norms) {
    for (int d = 0; d < 3; d++) {
        opreg_dtype dt = dtypes[d];
        const char *l = opreg_dtype_name(dt);
        int64_t th[2] = { 7, 67 }, h[1] = { 67 };
        opreg_value a[4] = { TV(host_tensor(dt, 2, th, 0, 0, true)),
                             TV(host_tensor(dt, 2, th, -2, 2, false)),
                             TV(host_tensor(dt, 1, h, 0.5, 1.5, false)), opreg_float_value(1e-6) };
        CHECK(compare("_C::rms_norm", l, a, 4));
        opreg_value b[4] = { TV(host_tensor(dt, 2, th, -2, 2, false)),
                             TV(host_tensor(dt, 2, th, -2, 2, false)),
                             TV(host_tensor(dt, 1, h, 0.5, 1.5, false)), opreg_float_value(1e-5) };
        CHECK(compare("_C::fused_add_rms_norm", l, b, 4));
    }
}

TEST(activations) {
    const char *ops[3] = { "_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul" };
    for (int o = 0; o < 3; o++)
        for (int d = 0; d < 3; d++) {
            int64_t in[3] = { 2, 3, 74 }, out[3] = { 2, 3, 37 };
            opreg_value a[2] = { TV(host_tensor(dtypes[d], 3, out, 0, 0, true)),
                                 TV(host_tensor(dtypes[d], 3, in, -4, 4, false)) };
            CHECK(compare(ops[o], opreg_dtype_name(dtypes[d]), a, 2));
        }
}

TEST(rotary) {
    for (int d = 0; d < 3; d++)
        for (int neox = 0; neox < 2; neox++) {
            opreg_dtype dt = dtypes[d];
            int64_t t[1] = { 5 }, q[2] = { 5, 4 * 16 }, k[2] = { 5, 2 * 16 }, c[2] = { 32, 8 };
            opreg_value a[6] = { TV(host_tensor(OPREG_DTYPE_I64, 1, t, 0, 32, false)),
                                 TV(host_tensor(dt, 2, q, -2, 2, false)),
                                 TV(host_tensor(dt, 2, k, -2, 2, false)),
                                 opreg_int_value(16),
                                 TV(host_tensor(dt, 2, c, -1, 1, false)),
                                 opreg_bool_value(neox) };
            CHECK(compare("_C::rotary_embedding", opreg_dtype_name(dt), a, 6));
        }
}

static int cache_case(opreg_dtype dt, const char *kind, opreg_dtype cache_dt, double scale,
                      int64_t bad_slot) {
    int64_t kv[3] = { 6, 2, 16 }, kc[5] = { 4, 2, 2, 4, 8 }, vc[4] = { 4, 2, 16, 4 }, sm[1] = { 6 };
    DLTensor *slots = host_tensor(OPREG_DTYPE_I64, 1, sm, 0, 0, true);
    int64_t want[6] = { 3, 0, -1, 15, 7, 8 };
    memcpy(slots->data, want, sizeof want);
    if (bad_slot) ((int64_t *)slots->data)[4] = bad_slot;
    opreg_value a[7] = { TV(host_tensor(dt, 3, kv, -3, 3, false)),
                         TV(host_tensor(dt, 3, kv, -3, 3, false)),
                         TV(host_tensor(cache_dt, 5, kc, 0, 0, true)),
                         TV(host_tensor(cache_dt, 4, vc, 0, 0, true)),
                         TV(slots),
                         opreg_str_value(kind),
                         opreg_float_value(scale) };
    char label[64];
    snprintf(label, sizeof label, "%s %s", opreg_dtype_name(dt), kind);
    return compare("_C::reshape_and_cache", label, a, 7);
}

TEST(kv_cache) {
    for (int d = 0; d < 3; d++) {
        CHECK(cache_case(dtypes[d], "auto", dtypes[d], 1.0, 0));
        CHECK(cache_case(dtypes[d], "fp8", OPREG_DTYPE_F8_E4M3FN, 0.5, 0));
        CHECK(cache_case(dtypes[d], "fp8_e5m2", OPREG_DTYPE_U8, 0.25, 0));
    }
}

TEST(quant) {
    const char *ops[4] = { "_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant",
                           "_C::static_scaled_int8_quant", "_C::dynamic_scaled_int8_quant" };
    for (int o = 0; o < 4; o++)
        for (int d = 0; d < 3; d++) {
            int64_t s[2] = { 9, 300 }, one[1] = { 1 }, rows[1] = { 9 };
            bool fp8 = o < 2, dyn = o % 2 == 1;
            DLTensor *scale =
                o == 3 ? host_tensor(OPREG_DTYPE_F32, 1, rows, 0, 0, true)
                       : host_tensor(OPREG_DTYPE_F32, 1, one, dyn ? 0 : 0.01, dyn ? 0 : 0.05, dyn);
            opreg_value a[3] = { TV(host_tensor(fp8 ? OPREG_DTYPE_F8_E4M3FN : OPREG_DTYPE_I8, 2, s,
                                                0, 0, true)),
                                 TV(host_tensor(dtypes[d], 2, s, -3, 3, false)), TV(scale) };
            CHECK(compare(ops[o], opreg_dtype_name(dtypes[d]), a, 3));
        }
}

/* Refusals: the shared checks (same status and message as the reference),
 * and the plugin's own checks of index data. */
TEST(bad_inputs) {
    int64_t th[2] = { 4, 8 }, wrong[1] = { 7 };
    opreg_value a[4] = { TV(host_tensor(OPREG_DTYPE_F32, 2, th, 0, 0, true)),
                         TV(host_tensor(OPREG_DTYPE_F32, 2, th, -1, 1, false)),
                         TV(host_tensor(OPREG_DTYPE_F32, 1, wrong, 1, 2, false)),
                         opreg_float_value(1e-6) };
    CHECK(compare("_C::rms_norm", "weight of the wrong size", a, 4));
    opreg_value b[2] = { TV(host_tensor(OPREG_DTYPE_F16, 2, th, 0, 0, true)),
                         TV(host_tensor(OPREG_DTYPE_F32, 2, th, -1, 1, false)) };
    CHECK(compare("_C::silu_and_mul", "mixed dtypes", b, 2));
    /* A slot past the cache: both refuse, with the same status and message
     * (compare() checks them), though the plugin checks it on its own. */
    CHECK(cache_case(OPREG_DTYPE_F32, "auto", OPREG_DTYPE_F32, 1.0, 16));
    /* A position past the cache. */
    int64_t t[1] = { 2 }, q[2] = { 2, 16 }, c[2] = { 4, 16 };
    DLTensor *h[4] = { host_tensor(OPREG_DTYPE_I64, 1, t, 0, 0, true),
                       host_tensor(OPREG_DTYPE_F32, 2, q, 0, 0, true),
                       host_tensor(OPREG_DTYPE_F32, 2, q, 0, 0, true),
                       host_tensor(OPREG_DTYPE_F32, 2, c, 0, 0, true) };
    ((int64_t *)h[0]->data)[1] = 4;
    DLTensor *dv[4];
    for (int i = 0; i < 4; i++)
        dv[i] = to_device(h[i]);
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, reg, "_C::rotary_embedding"), OPREG_OK);
    opreg_value r[6] = { TV(dv[0]),           TV(dv[1]), TV(dv[2]),
                         opreg_int_value(16), TV(dv[3]), opreg_bool_value(true) };
    opreg_status st = opreg_call_boxed(op, r, 6, NULL, 0, NULL, 0);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", opreg_last_error());
    for (int i = 0; i < 4; i++) {
        opreg_tensor_free(dv[i]);
        opreg_tensor_free(h[i]);
    }
    CHECK_EQ_INT(st, OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg, "token 1 uses cache row 4, outside cos_sin_cache's 4 rows");
}

TEST(supported_exactly) {
    static const char *const mine[] = {
        "_C::rms_norm",
        "_C::fused_add_rms_norm",
        "_C::silu_and_mul",
        "_C::gelu_and_mul",
        "_C::gelu_tanh_and_mul",
        "_C::rotary_embedding",
        "_C::reshape_and_cache",
        "_C::static_scaled_fp8_quant",
        "_C::dynamic_scaled_fp8_quant",
        "_C::static_scaled_int8_quant",
        "_C::dynamic_scaled_int8_quant",
    };
    int count = 0;
    for (size_t i = 0; i < opreg_registry_num_ops(reg); i++) {
        const char *name = opreg_op_name(opreg_registry_op(reg, i));
        bool listed = false;
        for (size_t j = 0; j < sizeof mine / sizeof mine[0]; j++)
            listed |= strcmp(name, mine[j]) == 0;
        if (opreg_is_op_supported_on(reg, name, dev) != listed) {
            TEST_FAIL_AT("%s: supported on opencl %d, expected %d", name,
                         (int)opreg_is_op_supported_on(reg, name, dev), (int)listed);
            return;
        }
        count += listed;
    }
    CHECK_EQ_INT(count, 11);
    opreg_support_info info;
    CHECK_EQ_INT(opreg_explain_support(&info, reg, "_C::rms_norm", &dev), OPREG_OK);
    CHECK_CONTAINS(info.message, "registered at plugin 'opencl'");
}

int main(void) {
    reg = opreg_registry_default();
    if (!reg) return 1;
    opreg_plugin *p = NULL;
    if (opreg_key_find(&key, "opencl") != OPREG_OK) { /* not found on the search path */
        if (opreg_plugin_load(&p, reg, OPENCL_PLUGIN) != OPREG_OK) {
            fprintf(stderr, "loading %s: %s\n", OPENCL_PLUGIN, opreg_last_error());
            return 1;
        }
        opreg_key_find(&key, "opencl");
    }
    char why[256];
    if (!opreg_key_is_available(key, why, sizeof why)) {
        printf("skipped: the OpenCL backend is unavailable: %s\n", why);
        return TEST_SKIP_CODE;
    }
    be = opreg_key_backend(key);
    RUN(supported_exactly);
    RUN(norms);
    RUN(activations);
    RUN(rotary);
    RUN(kv_cache);
    RUN(quant);
    RUN(bad_inputs);
    return test_summary();
}
