/* opcheck finds real faults: a library of deliberately broken kernels, one
 * per check, each of which opcheck must name exactly (that check fails on
 * the CPU key, the others hold), beside a correct op that passes
 * everything; the report's JSON and the API's refusals. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every op: (Tensor! out, Tensor x) -> (), out = 2 * x, f32 [n]. */
static const char *const kOps[] = { "good",          "writes_input",  "writes_past", "meta_lax",
                                    "off_tolerance", "partial_write", "racy" };
#define NOPS (sizeof kOps / sizeof kOps[0])

static float *f32(const DLTensor *t) {
    return (float *)((char *)t->data + t->byte_offset);
}

/* The op's contract: both 1-d f32 of one size. */
static opreg_status check_args(const DLTensor *out, const DLTensor *x) {
    if (out->ndim != 1 || x->ndim != 1)
        return opreg_set_error(OPREG_ERR_SHAPE, "bad: out and x must be 1-d");
    if (out->shape[0] != x->shape[0])
        return opreg_set_error(OPREG_ERR_SHAPE, "bad: out and x differ in size");
    if (opreg_gen_dtype_of(out) != OPREG_DTYPE_F32 || opreg_gen_dtype_of(x) != OPREG_DTYPE_F32)
        return opreg_set_error(OPREG_ERR_SHAPE, "bad: out and x must be f32");
    return OPREG_OK;
}

static void twice(DLTensor *out, const DLTensor *x) {
    for (int64_t i = 0; i < x->shape[0]; i++)
        f32(out)[i] = 2 * f32(x)[i];
}

static opreg_status ref_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    opreg_status st = check_args(out, x);
    if (st == OPREG_OK) twice(out, x);
    return st;
}

static opreg_status meta_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    return check_args(args[0].u.tensor, args[1].u.tensor);
}

/* Meta that accepts every shape and dtype. */
static opreg_status meta_lax_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                    opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

static opreg_status writes_input(void *ctx, const opreg_op *op, const opreg_value *args,
                                 opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    opreg_status st = check_args(out, x);
    if (st != OPREG_OK) return st;
    twice(out, x);
    f32(x)[x->shape[0] - 1] = -1.0f; /* scratch in the input */
    return OPREG_OK;
}

static opreg_status writes_past(void *ctx, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    opreg_status st = check_args(out, x);
    if (st != OPREG_OK) return st;
    twice(out, x);
    f32(out)[out->shape[0]] = 0.0f; /* one element too many: the vector tail */
    return OPREG_OK;
}

static opreg_status off_tolerance(void *ctx, const opreg_op *op, const opreg_value *args,
                                  opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    opreg_status st = check_args(out, x);
    if (st != OPREG_OK) return st;
    twice(out, x);
    /* past the tolerance by a little: f32's atol scaled by max(1, |2x|) <= 2 */
    opreg_tolerance tol = opreg_tolerance_of(OPREG_DTYPE_F32);
    f32(out)[3] += (float)(2.5 * tol.atol + 3 * tol.rtol);
    return OPREG_OK;
}

static opreg_status partial_write(void *ctx, const opreg_op *op, const opreg_value *args,
                                  opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    if (out->ndim >= 1 && out->shape[0] >= 1 && opreg_gen_dtype_of(out) == OPREG_DTYPE_F32)
        f32(out)[0] = 42.0f; /* starts before it has checked everything */
    opreg_status st = check_args(out, x);
    if (st == OPREG_OK) twice(out, x);
    return st;
}

/* A scratch buffer shared by every call, without a lock. */
static float g_scratch[1024];

static void nap_ms(long ms) {
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

static opreg_status racy(void *ctx, const opreg_op *op, const opreg_value *args,
                         opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *x = args[1].u.tensor;
    opreg_status st = check_args(out, x);
    if (st != OPREG_OK) return st;
    if (x->shape[0] > 1024) return opreg_set_error(OPREG_ERR_SHAPE, "bad: at most 1024");
    memset(g_scratch, 0, sizeof g_scratch);
    nap_ms(20);
    for (int64_t i = 0; i < x->shape[0]; i++)
        g_scratch[i] += 2 * f32(x)[i];
    nap_ms(20);
    for (int64_t i = 0; i < x->shape[0]; i++)
        f32(out)[i] = g_scratch[i];
    return OPREG_OK;
}

static void gen_pair(opreg_gen *g) {
    int64_t n = opreg_gen_count(g, "n", 33);
    DLTensor *out = opreg_gen_tensor(g, OPREG_DTYPE_F32, 1, &n);
    DLTensor *x = opreg_gen_tensor(g, OPREG_DTYPE_F32, 1, &n);
    opreg_gen_fill(g, x, -1, 1);
    opreg_gen_arg_tensor(g, out);
    opreg_gen_arg_tensor(g, x);
}

static const opreg_generator kGen = { NULL, gen_pair, 1u << OPREG_DTYPE_F32, OPREG_DTYPE_F32,
                                      0,    NULL };

static opreg_library *g_def, *g_cpu, *g_ref, *g_meta;

static void open_libraries(void) {
    opreg_registry *reg = opreg_registry_default();
    CHECK_EQ_INT(opreg_library_create(&g_def, reg, OPREG_LIBRARY_DEF, "bad", OPREG_KEY_NONE,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_create(&g_cpu, reg, OPREG_LIBRARY_IMPL, "bad", OPREG_KEY_CPU,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_create(&g_ref, reg, OPREG_LIBRARY_IMPL, "bad", OPREG_KEY_REFERENCE,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_create(&g_meta, reg, OPREG_LIBRARY_IMPL, "bad", OPREG_KEY_META,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    opreg_kernel_fn cpu[NOPS] = { ref_kernel,    writes_input,  writes_past, ref_kernel,
                                  off_tolerance, partial_write, racy };
    for (size_t i = 0; i < NOPS; i++) {
        char schema[128];
        snprintf(schema, sizeof schema, "%s(Tensor! out, Tensor x) -> ()", kOps[i]);
        CHECK_EQ_INT(opreg_library_def(NULL, g_def, schema), OPREG_OK);
        CHECK_EQ_INT(opreg_library_generator(g_def, kOps[i], &kGen), OPREG_OK);
        CHECK_EQ_INT(opreg_library_impl_fn(g_cpu, kOps[i], OPREG_KEY_NONE, cpu[i], NULL), OPREG_OK);
        CHECK_EQ_INT(opreg_library_impl_fn(g_ref, kOps[i], OPREG_KEY_NONE, ref_kernel, NULL),
                     OPREG_OK);
        CHECK_EQ_INT(opreg_library_impl_fn(
                         g_meta, kOps[i], OPREG_KEY_NONE,
                         strcmp(kOps[i], "meta_lax") ? meta_kernel : meta_lax_kernel, NULL),
                     OPREG_OK);
    }
}

static const opreg_check_item *find(const opreg_check_report *r, const char *op, const char *key,
                                    opreg_check_kind check) {
    for (size_t i = 0; i < opreg_check_report_count(r); i++) {
        const opreg_check_item *it = opreg_check_report_item(r, i);
        if (!strcmp(it->op, op) && !strcmp(it->key, key) && it->check == check) return it;
    }
    return NULL;
}

/* Op bad::@p name fails exactly @p check on CPU, with @p needle in the
 * message; every other check of it holds. */
static void expect_fault(const opreg_check_report *r, const char *name, opreg_check_kind check,
                         const char *needle) {
    char op[64];
    static const opreg_check_kind all[] = { OPREG_CHECK_MUTATION, OPREG_CHECK_SCHEMA,
                                            OPREG_CHECK_META,     OPREG_CHECK_BACKENDS,
                                            OPREG_CHECK_REFUSALS, OPREG_CHECK_THREADS,
                                            OPREG_CHECK_EDGES };
    snprintf(op, sizeof op, "bad::%s", name);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const opreg_check_item *it = find(r, op, "CPU", all[i]);
        CHECK(it != NULL);
        if (!it) continue;
        bool want_fail = all[i] == check;
        /* a fault that shows at every size shows in the edge cases too */
        bool edge_too = all[i] == OPREG_CHECK_EDGES &&
                        (check == OPREG_CHECK_MUTATION || check == OPREG_CHECK_BACKENDS);
        if (want_fail) {
            if (it->result != OPREG_CHECK_FAILED || !strstr(it->message, needle))
                fprintf(stderr, "%s %s: %s: %s\n", op, opreg_check_kind_name(all[i]),
                        opreg_check_result_name(it->result), it->message);
            CHECK_EQ_INT(it->result, OPREG_CHECK_FAILED);
            CHECK(strstr(it->message, needle) != NULL);
            CHECK(strstr(it->message, "dtype f32") != NULL); /* the counter-example */
        } else if (!edge_too && check) {
            if (it->result == OPREG_CHECK_FAILED)
                fprintf(stderr, "%s %s unexpectedly failed: %s\n", op,
                        opreg_check_kind_name(all[i]), it->message);
            CHECK(it->result != OPREG_CHECK_FAILED);
        } else if (!check) {
            if (it->result != OPREG_CHECK_PASSED)
                fprintf(stderr, "%s %s: %s: %s\n", op, opreg_check_kind_name(all[i]),
                        opreg_check_result_name(it->result), it->message);
            CHECK_EQ_INT(it->result, OPREG_CHECK_PASSED);
        }
        /* the Reference key runs the correct kernel everywhere */
        const opreg_check_item *ref = find(r, op, "Reference", all[i]);
        CHECK(ref != NULL);
        if (ref && all[i] != OPREG_CHECK_META && strcmp(name, "meta_lax"))
            CHECK_EQ_INT(ref->result, OPREG_CHECK_PASSED);
    }
}

TEST(every_fault_is_named) {
    opreg_check_report *r = NULL;
    opreg_opcheck_options o = { .struct_size = sizeof o, .seed = 7 };
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::*", &o, &r), OPREG_OK);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT((int)opreg_check_report_count(r), (int)(NOPS * 2 * 7));
    expect_fault(r, "good", 0, "");
    expect_fault(r, "writes_input", OPREG_CHECK_MUTATION, "read-only argument 'x'");
    expect_fault(r, "writes_past", OPREG_CHECK_MUTATION, "past the end of the buffer of 'out'");
    expect_fault(r, "meta_lax", OPREG_CHECK_META, "Meta accepts a call that CPU refuses");
    expect_fault(r, "off_tolerance", OPREG_CHECK_BACKENDS, "differs from Reference");
    expect_fault(r, "partial_write", OPREG_CHECK_REFUSALS, "but changed memory: 'out'");
    expect_fault(r, "racy", OPREG_CHECK_THREADS, "concurrent");
    /* JSON: one object per item, with the failure's text */
    char *json = opreg_check_report_json(r);
    CHECK(json != NULL);
    if (json) {
        size_t objects = 0;
        for (const char *p = json; (p = strstr(p, "\"op\": ")); p++)
            objects++;
        CHECK_EQ_INT((int)objects, (int)opreg_check_report_count(r));
        CHECK(strstr(json, "\"op\": \"bad::racy\", \"key\": \"CPU\", \"check\": \"threads\", "
                           "\"result\": \"failed\"") != NULL);
        opreg_string_free(json);
    }
    opreg_check_report_free(r);
}

TEST(options_and_refusals) {
    opreg_check_report *r = NULL;
    /* one check, one key */
    opreg_opcheck_options o = { .struct_size = sizeof o,
                                .checks = OPREG_CHECK_MUTATION,
                                .keys = 1u << OPREG_KEY_CPU };
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::writes_input", &o, &r), OPREG_OK);
    CHECK_EQ_INT((int)opreg_check_report_count(r), 1);
    CHECK_EQ_INT(opreg_check_report_tally(r, OPREG_CHECK_FAILED), 1);
    opreg_check_report_free(r);
    /* one key that is not the Reference: Reference still anchors the
     * comparison, and is not reported */
    o.checks = OPREG_CHECK_BACKENDS;
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::off_tolerance", &o, &r), OPREG_OK);
    CHECK_EQ_INT((int)opreg_check_report_count(r), 1);
    CHECK(strcmp(opreg_check_report_item(r, 0)->key, "CPU") == 0);
    CHECK_EQ_INT(opreg_check_report_item(r, 0)->result, OPREG_CHECK_FAILED);
    CHECK(strstr(opreg_check_report_item(r, 0)->message, "Reference") != NULL);
    opreg_check_report_free(r);
    /* sizes: n=0 is an empty call, which the mutation check passes */
    o.sizes = "n=0";
    o.checks = OPREG_CHECK_BACKENDS;
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::off_tolerance", &o, &r), OPREG_OK);
    CHECK_EQ_INT(opreg_check_report_tally(r, OPREG_CHECK_FAILED), 0);
    opreg_check_report_free(r);
    /* errors */
    o.sizes = "n=";
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::good", &o, &r), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK(strstr(opreg_last_error(), "bad value") != NULL);
    CHECK_EQ_INT(opreg_opcheck(NULL, "nosuch::*", NULL, &r), OPREG_ERR_NOT_FOUND);
    CHECK(strstr(opreg_last_error(), "nosuch::*") != NULL);
    CHECK_EQ_INT(opreg_opcheck(NULL, "bad::good", NULL, NULL), OPREG_ERR_INVALID_ARGUMENT);
    /* a generator for an op the library does not define */
    CHECK_EQ_INT(opreg_library_generator(g_def, "nosuch", &kGen), OPREG_ERR_NOT_FOUND);
    CHECK_EQ_INT(opreg_library_generator(g_cpu, "good", &kGen), OPREG_ERR_NOT_FOUND);
    CHECK_EQ_INT(opreg_library_generator(g_def, "good", NULL), OPREG_ERR_INVALID_ARGUMENT);
}

/* An op without a generator gets inputs from its schema. */
static opreg_status add_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    DLTensor *out = args[0].u.tensor, *a = args[1].u.tensor;
    if (out->ndim != 2 || a->ndim != 2 || out->shape[0] != a->shape[0] ||
        out->shape[1] != a->shape[1] || opreg_gen_dtype_of(out) != opreg_gen_dtype_of(a))
        return opreg_set_error(OPREG_ERR_SHAPE, "plain::scale: shapes or dtypes differ");
    for (int64_t i = 0; i < opreg_tensor_numel(a); i++)
        opreg_gen_set(out, i, opreg_gen_get(a, i) * (double)args[2].u.f);
    return OPREG_OK;
}

TEST(schema_derived_inputs) {
    opreg_registry *reg = opreg_registry_default();
    opreg_library *def = NULL, *cpu = NULL;
    const opreg_op *op = NULL;
    CHECK_EQ_INT(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "plain", OPREG_KEY_NONE,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_def(&op, def, "scale(Tensor! out, Tensor a, float s) -> ()"),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_create(&cpu, reg, OPREG_LIBRARY_IMPL, "plain", OPREG_KEY_CPU,
                                      __FILE__, __LINE__),
                 OPREG_OK);
    CHECK_EQ_INT(opreg_library_impl_fn(cpu, "scale", OPREG_KEY_NONE, add_kernel, NULL), OPREG_OK);
    CHECK(opreg_op_generator(op) == NULL);
    opreg_check_report *r = NULL;
    opreg_opcheck_options o = { .struct_size = sizeof o, .sizes = "rows=3,cols=5" };
    CHECK_EQ_INT(opreg_opcheck(NULL, "plain::scale", &o, &r), OPREG_OK);
    CHECK_EQ_INT(opreg_check_report_tally(r, OPREG_CHECK_FAILED), 0);
    const opreg_check_item *it = find(r, "plain::scale", "CPU", OPREG_CHECK_MUTATION);
    CHECK(it && it->result == OPREG_CHECK_PASSED);
    it = find(r, "plain::scale", "CPU", OPREG_CHECK_META);
    CHECK(it && it->result == OPREG_CHECK_NOT_APPLICABLE);
    it = find(r, "plain::scale", "CPU", OPREG_CHECK_BACKENDS);
    CHECK(it && it->result == OPREG_CHECK_NOT_APPLICABLE);
    opreg_check_report_free(r);
    /* the derived inputs themselves */
    opreg_sizes sizes;
    opreg_inputs *in = NULL;
    char err[200];
    memset(&sizes, 0, sizeof sizes);
    CHECK_EQ_INT(opreg_sizes_parse(&sizes, "rows=3,cols=5", err, sizeof err), 0);
    CHECK_EQ_INT(opreg_inputs_build(&in, op, OPREG_DTYPE_BF16, &sizes, 1, err, sizeof err),
                 OPREG_OK);
    CHECK_EQ_INT((int)opreg_inputs_nargs(in), 3);
    const DLTensor *a = opreg_inputs_args(in)[1].u.tensor;
    CHECK(a->ndim == 2 && a->shape[0] == 3 && a->shape[1] == 5);
    CHECK_EQ_INT(opreg_gen_dtype_of(a), OPREG_DTYPE_BF16);
    opreg_inputs_free(in);
    opreg_library_close(cpu);
    opreg_library_close(def);
}

/* The mutation sanitizer (opreg/mutation.h) catches the first fault in a
 * running process: a plain call, no opcheck. */
static char g_log[1024];
static void capture(void *user, opreg_log_level level, const char *message) {
    (void)user;
    if (level >= OPREG_LOG_ERROR && !g_log[0]) snprintf(g_log, sizeof g_log, "%s", message);
}

TEST(sanitizer_catches_the_first_fault) {
    opreg_registry *reg = opreg_registry_default();
    const opreg_op *op = NULL;
    int64_t n = 16;
    DLTensor *out = NULL, *x = NULL;
    CHECK_EQ_INT(opreg_op_find(&op, reg, "bad::writes_input"), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&out, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&x, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    for (int64_t i = 0; i < n; i++)
        f32(x)[i] = (float)i;
    opreg_value args[2] = { opreg_tensor_value(out), opreg_tensor_value(x) };
    opreg_set_log_callback(capture, NULL, OPREG_LOG_WARN);
    CHECK_EQ_INT(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT), OPREG_OK);
    g_log[0] = '\0';
    CHECK_EQ_INT(opreg_call_boxed(op, args, 2, NULL, 0, NULL, 0), OPREG_OK);
    CHECK(strstr(g_log, "bad::writes_input") != NULL);
    CHECK(strstr(g_log, "'x'") != NULL);
    CHECK(strstr(g_log, "CPU") != NULL);
    CHECK(strstr(g_log, "test_opcheck_faults.c") != NULL); /* where it was registered */
    /* the correct op is not reported */
    const opreg_op *good = NULL;
    CHECK_EQ_INT(opreg_op_find(&good, reg, "bad::good"), OPREG_OK);
    g_log[0] = '\0';
    CHECK_EQ_INT(opreg_call_boxed(good, args, 2, NULL, 0, NULL, 0), OPREG_OK);
    CHECK(g_log[0] == '\0');
    /* The first call left -1 in x's last element: a second would write the
     * same byte again and change nothing, so x gets its values back. */
    f32(x)[n - 1] = (float)(n - 1);
    CHECK_EQ_INT(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_FAIL), OPREG_OK);
    CHECK_EQ_INT(opreg_call_boxed(op, args, 2, NULL, 0, NULL, 0), OPREG_ERR_MUTATION);
    CHECK(strstr(opreg_last_error(), "'x'") != NULL);
    /* the kernel did run: its output is written */
    CHECK(f32(out)[1] == 2.0f);
    CHECK_EQ_INT(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_OFF), OPREG_OK);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_WARN);
    opreg_tensor_free(out);
    opreg_tensor_free(x);
}

int main(void) {
    open_libraries();
    RUN(every_fault_is_named);
    RUN(options_and_refusals);
    RUN(schema_derived_inputs);
    RUN(sanitizer_catches_the_first_fault);
    opreg_library_close(g_meta);
    opreg_library_close(g_ref);
    opreg_library_close(g_cpu);
    opreg_library_close(g_def);
    return test_summary();
}
