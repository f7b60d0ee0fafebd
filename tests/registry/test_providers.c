/* Providers: order (priority, before/after, anchors registered later or
 * never), predicates and their reasons, the one-call fast path, same-name
 * replacement, pins and disables (API and OPREG_PROVIDERS), explanations
 * of real arguments, and every refusal of the registration API. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "reg_helpers.h"

#include "common/internal.h"

#include <stddef.h>

#define FOO "foo(Tensor x) -> ()"

/* A provider's context: its name, calls, and whether its predicate accepts. */
struct prov {
    const char *name;
    int calls;
    bool accept;
};

static opreg_status prov_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                opreg_value *rets) {
    (void)op, (void)args, (void)rets;
    struct prov *p = ctx;
    p->calls++;
    last_ran = p->name;
    return OPREG_OK;
}

static bool prov_supports(void *ctx, const opreg_op *op, const opreg_value *args, char *why,
                          size_t cap) {
    (void)op;
    struct prov *p = ctx;
    if (!p->accept)
        snprintf(why, cap, "%s says no to %d rows", p->name, (int)args[0].u.tensor->shape[0]);
    return p->accept;
}

static opreg_provider make(struct prov *p, bool predicate, opreg_provider_place place,
                           int32_t priority, const char *anchor) {
    opreg_provider d = { 0 };
    d.struct_size = sizeof d;
    d.name = p->name;
    d.kernel.fn = prov_kernel;
    d.kernel.context = p;
    d.supports = predicate ? prov_supports : NULL;
    d.place = place;
    d.priority = priority;
    d.anchor = anchor;
    return d;
}

struct env {
    opreg_registry *reg;
    opreg_library *def, *lib;
    const opreg_op *op;
};

static void setup(struct env *e) {
    memset(e, 0, sizeof *e);
    if (opreg_registry_create(&e->reg) != OPREG_OK) abort();
    opreg_library_create(&e->def, e->reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "d.c", 1);
    opreg_library_def(&e->op, e->def, FOO);
    opreg_library_create(&e->lib, e->reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "p.c", 7);
}

static void teardown(struct env *e) {
    opreg_library_close(e->lib);
    opreg_library_close(e->def);
    opreg_registry_destroy(e->reg);
}

static opreg_status add(struct env *e, struct prov *p, bool predicate, opreg_provider_place place,
                        int32_t priority, const char *anchor) {
    opreg_provider d = make(p, predicate, place, priority, anchor);
    return opreg_library_provider(e->lib, "foo", OPREG_KEY_NONE, &d);
}

static opreg_status call_cpu(const opreg_op *op) {
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLCPU, 0));
    last_ran = NULL;
    return opreg_call_boxed(op, &v, 1, NULL, 0, NULL, 0);
}

/* The names of the CPU key's providers in order, "a,b,c". */
static const char *order_of(const opreg_op *op, char *buf, size_t cap) {
    static opreg_call_explanation x;
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLCPU, 0));
    buf[0] = '\0';
    if (opreg_explain_call(&x, op, OPREG_KEY_NONE, &v, 1, NULL, 0) != OPREG_OK) return "error";
    size_t used = 0;
    for (size_t i = 0; i < x.nproviders; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "," : "", x.providers[i].name);
    return buf;
}

TEST(priority_order_and_default) {
    struct env e;
    setup(&e);
    struct prov a = { "a", 0, true }, b = { "b", 0, true }, c = { "c", 0, true };
    struct probe impl = { "impl", 0 };
    CHECK_OK(add(&e, &a, false, OPREG_PROVIDER_AT_PRIORITY, 10, NULL));
    CHECK_OK(opreg_library_impl_fn(e.lib, "foo", OPREG_KEY_NONE, probe_kernel, &impl));
    CHECK_OK(add(&e, &b, false, OPREG_PROVIDER_AT_PRIORITY, 20, NULL));
    CHECK_OK(add(&e, &c, false, OPREG_PROVIDER_AT_PRIORITY, 20, NULL));
    char buf[256];
    /* Highest first; among equals, the earlier registration; impl is `default` at 0. */
    CHECK_EQ_STR(order_of(e.op, buf, sizeof buf), "b,c,a,default");
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "b");
    /* A negative priority goes after default. */
    struct prov z = { "z", 0, true };
    CHECK_OK(add(&e, &z, false, OPREG_PROVIDER_AT_PRIORITY, -1, NULL));
    CHECK_EQ_STR(order_of(e.op, buf, sizeof buf), "b,c,a,default,z");
    teardown(&e);
}

TEST(predicates_choose_and_explain) {
    struct env e;
    setup(&e);
    struct prov fast = { "fast", 0, false }, mid = { "mid", 0, true }, slow = { "slow", 0, true };
    CHECK_OK(add(&e, &fast, true, OPREG_PROVIDER_AT_PRIORITY, 30, NULL));
    CHECK_OK(add(&e, &mid, true, OPREG_PROVIDER_AT_PRIORITY, 20, NULL));
    CHECK_OK(add(&e, &slow, false, OPREG_PROVIDER_AT_PRIORITY, 10, NULL));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "mid");
    CHECK_EQ_INT(fast.calls, 0);
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLCPU, 0));
    opreg_call_explanation x;
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK(x.supported);
    CHECK_EQ_INT(x.key, OPREG_KEY_CPU);
    CHECK_EQ_INT(x.chosen, 1);
    CHECK_EQ_INT((int)x.nproviders, 3);
    CHECK_EQ_INT(x.providers[0].verdict, OPREG_PROVIDER_DECLINED);
    CHECK_EQ_STR(x.providers[0].reason, "fast says no to 2 rows");
    CHECK_EQ_STR(x.providers[0].where, "p.c:7");
    CHECK_EQ_INT(x.providers[1].verdict, OPREG_PROVIDER_RUNS);
    CHECK_EQ_INT(x.providers[2].verdict, OPREG_PROVIDER_NOT_REACHED);
    CHECK_CONTAINS(x.message, "_C::foo on CPU: provider 'mid' runs");
    CHECK_CONTAINS(x.message, "1. fast           declined: fast says no to 2 rows  [p.c:7]");
    CHECK_EQ_INT(fast.calls + mid.calls + slow.calls, 1); /* explaining runs no kernel */
    CHECK(opreg_is_supported_for(e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    /* Nobody accepts: the call fails with every reason, and the query says no. */
    mid.accept = false;
    opreg_library *other;
    CHECK_OK(
        opreg_library_create(&other, e.reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "o.c", 1));
    CHECK_OK(opreg_registry_set_providers(e.reg, "_C::foo=-slow"));
    CHECK_STATUS(call_cpu(e.op), OPREG_ERR_UNSUPPORTED);
    CHECK_CONTAINS(opreg_last_error(),
                   "_C::foo on CPU: no provider accepts these arguments (fast: fast says no to 2 "
                   "rows; mid: mid says no to 2 rows; slow: disabled by '_C::foo=-slow' "
                   "(opreg_registry_set_providers))");
    CHECK(!opreg_is_supported_for(e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK(!x.supported);
    CHECK_EQ_INT(x.chosen, -1);
    CHECK_CONTAINS(x.message, "not supported: no provider accepts these arguments");
    /* The op still has a kernel for CPU (which may accept other arguments). */
    CHECK(opreg_is_op_supported(e.reg, "_C::foo"));
    opreg_library_close(other);
    teardown(&e);
}

TEST(fast_path_is_one_call) {
    struct env e;
    setup(&e);
    struct prov only = { "only", 0, true }, more = { "more", 0, true };
    CHECK_OK(add(&e, &only, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL));
    const opreg_dispatch_table *t = atomic_load(&((const struct opreg_op_head *)e.op)->table);
    CHECK(t->by_device_type[kDLCPU].fn == prov_kernel);
    CHECK(t->by_device_type[kDLCPU].context == &only);
    /* A second provider puts the list in front of both. */
    CHECK_OK(add(&e, &more, false, OPREG_PROVIDER_AT_PRIORITY, -5, NULL));
    t = atomic_load(&((const struct opreg_op_head *)e.op)->table);
    CHECK(t->by_device_type[kDLCPU].fn != prov_kernel);
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "only");
    /* Pinning one of them brings the direct call back. */
    CHECK_OK(opreg_registry_set_providers(e.reg, "_C::foo=more"));
    t = atomic_load(&((const struct opreg_op_head *)e.op)->table);
    CHECK(t->by_device_type[kDLCPU].fn == prov_kernel);
    CHECK(t->by_device_type[kDLCPU].context == &more);
    /* One provider with a predicate still goes through the list. */
    CHECK_OK(opreg_registry_set_providers(e.reg, NULL));
    opreg_library *l2;
    struct prov pred = { "only", 0, true };
    CHECK_OK(opreg_library_create(&l2, e.reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "q.c", 1));
    opreg_provider d = make(&pred, true, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    CHECK_OK(opreg_library_provider(l2, "foo", OPREG_KEY_NONE, &d));
    CHECK_OK(opreg_registry_set_providers(e.reg, "_C::foo=-more"));
    t = atomic_load(&((const struct opreg_op_head *)e.op)->table);
    CHECK(t->by_device_type[kDLCPU].fn != prov_kernel);
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_INT(pred.calls, 1);
    opreg_library_close(l2);
    teardown(&e);
}

TEST(before_after_and_anchors) {
    struct env e;
    setup(&e);
    struct prov base = { "base", 0, true }, top = { "top", 0, true }, b1 = { "b1", 0, true },
                b2 = { "b2", 0, true }, a1 = { "a1", 0, true }, late = { "late", 0, true },
                lost = { "lost", 0, true }, chain = { "chain", 0, true };
    CHECK_OK(add(&e, &base, false, OPREG_PROVIDER_AT_PRIORITY, 10, NULL));
    CHECK_OK(add(&e, &b1, false, OPREG_PROVIDER_BEFORE, 0, "base"));
    CHECK_OK(add(&e, &b2, false, OPREG_PROVIDER_BEFORE, 0, "base"));
    CHECK_OK(add(&e, &a1, false, OPREG_PROVIDER_AFTER, 0, "base"));
    /* Placed after a provider that comes later: it waits for it. */
    CHECK_OK(add(&e, &chain, false, OPREG_PROVIDER_AFTER, 0, "late"));
    CHECK_OK(add(&e, &lost, false, OPREG_PROVIDER_BEFORE, 0, "nobody"));
    CHECK_OK(add(&e, &top, false, OPREG_PROVIDER_AT_PRIORITY, 100, NULL));
    CHECK_OK(add(&e, &late, false, OPREG_PROVIDER_AT_PRIORITY, 5, NULL));
    char buf[256];
    CHECK_EQ_STR(order_of(e.op, buf, sizeof buf), "top,b1,b2,base,a1,late,chain,lost");
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "top");
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLCPU, 0));
    opreg_call_explanation x;
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK_CONTAINS(x.providers[7].where, "its anchor is absent: placed last");
    teardown(&e);
}

TEST(same_name_replaces_and_close_restores) {
    struct env e;
    setup(&e);
    opreg_set_log_callback(capture_log, NULL, OPREG_LOG_WARN);
    log_count = 0;
    struct prov old = { "x", 0, true }, neu = { "x", 0, true };
    CHECK_OK(add(&e, &old, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL));
    opreg_library *l2;
    CHECK_OK(opreg_library_create(&l2, e.reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "n.c", 3));
    opreg_provider d = make(&neu, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    CHECK_OK(opreg_library_provider(l2, "foo", OPREG_KEY_NONE, &d));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "Overriding a previously registered kernel");
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_INT(neu.calls, 1);
    char buf[64];
    CHECK_EQ_STR(order_of(e.op, buf, sizeof buf), "x");
    opreg_library_close(l2);
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_INT(old.calls, 1);
    /* Closing the last library of providers leaves no kernel. */
    opreg_library_close(e.lib);
    e.lib = NULL;
    CHECK_STATUS(call_cpu(e.op), OPREG_ERR_NO_KERNEL);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_WARN);
    teardown(&e);
}

TEST(pins_and_disables) {
    struct env e;
    setup(&e);
    struct prov a = { "a", 0, true }, b = { "b", 0, true }, c = { "c", 0, true };
    CHECK_OK(add(&e, &a, false, OPREG_PROVIDER_AT_PRIORITY, 3, NULL));
    CHECK_OK(add(&e, &b, false, OPREG_PROVIDER_AT_PRIORITY, 2, NULL));
    CHECK_OK(add(&e, &c, false, OPREG_PROVIDER_AT_PRIORITY, 1, NULL));
    CHECK_OK(opreg_registry_set_providers(e.reg, "_C::foo=c"));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "c");
    CHECK_OK(opreg_registry_set_providers(e.reg, "*=-a, _C::*=-b"));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "c");
    char text[128];
    CHECK_EQ_INT((int)opreg_registry_providers(e.reg, text, sizeof text), 14);
    CHECK_EQ_STR(text, "*=-a, _C::*=-b");
    /* A pin whose name the key lacks changes nothing; the last pin that
     * applies decides. */
    CHECK_OK(opreg_registry_set_providers(e.reg, "*=portable,_C::foo=a,_C::foo=b"));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "b");
    CHECK_OK(opreg_registry_set_providers(e.reg, "other::*=c,_C::bar=c"));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "a");
    /* Everything disabled: no kernel for CPU, and the query says why. */
    CHECK_OK(opreg_registry_set_providers(e.reg, "_C::foo=-a,_C::foo=-b,_C::foo=-c"));
    CHECK_STATUS(call_cpu(e.op), OPREG_ERR_UNSUPPORTED);
    CHECK(!opreg_is_op_supported(e.reg, "_C::foo"));
    opreg_support_info info;
    DLDevice cpu = { kDLCPU, 0 };
    CHECK_OK(opreg_explain_support(&info, e.reg, "_C::foo", &cpu));
    CHECK(!info.supported);
    CHECK_CONTAINS(info.message, "each of its 3 providers is disabled");
    /* Bad specs: refused, with the item, and the old spec stays. */
    CHECK_STATUS(opreg_registry_set_providers(e.reg, "_C::foo"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "item '_C::foo' is not OP=NAME or OP=-NAME");
    CHECK_STATUS(opreg_registry_set_providers(e.reg, "foo=a"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "'foo' is not an op (ns::name), a namespace (ns::*) or *");
    CHECK_STATUS(opreg_registry_set_providers(e.reg, "_C::foo=-"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "is not a provider name");
    CHECK_STATUS(opreg_registry_set_providers(e.reg, "_C::foo=a b"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_registry_set_providers(NULL, ""), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(call_cpu(e.op), OPREG_ERR_UNSUPPORTED);
    /* Empty items are allowed; an empty spec clears. */
    CHECK_OK(opreg_registry_set_providers(e.reg, ",,"));
    CHECK_EQ_INT((int)opreg_registry_providers(e.reg, text, sizeof text), 0);
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "a");
    teardown(&e);
}

TEST(env_spec) {
    setenv("OPREG_PROVIDERS", "_C::foo=b", 1);
    struct env e;
    setup(&e);
    struct prov a = { "a", 0, true }, b = { "b", 0, true };
    CHECK_OK(add(&e, &a, false, OPREG_PROVIDER_AT_PRIORITY, 3, NULL));
    CHECK_OK(add(&e, &b, false, OPREG_PROVIDER_AT_PRIORITY, 2, NULL));
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "b");
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLCPU, 0));
    opreg_call_explanation x;
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK_EQ_STR(x.providers[0].reason, "pinned away by '_C::foo=b' (OPREG_PROVIDERS)");
    teardown(&e);
    /* A bad spec is logged and ignored. */
    setenv("OPREG_PROVIDERS", "nonsense", 1);
    opreg_set_log_callback(capture_log, NULL, OPREG_LOG_WARN);
    log_count = 0;
    setup(&e);
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "OPREG_PROVIDERS is ignored: provider spec 'nonsense'");
    char text[16];
    CHECK_EQ_INT((int)opreg_registry_providers(e.reg, text, sizeof text), 0);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_WARN);
    teardown(&e);
    unsetenv("OPREG_PROVIDERS");
}

/* A Meta kernel that refuses three rows: the op's checks. */
static opreg_status meta_check(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    if (args[0].u.tensor->shape[0] == 3)
        return opreg__fail(OPREG_ERR_SHAPE, "foo: x must not have 3 rows");
    return OPREG_OK;
}

TEST(explain_keys_checks_and_refusals) {
    struct env e;
    setup(&e);
    struct prov a = { "a", 0, true };
    CHECK_OK(add(&e, &a, true, OPREG_PROVIDER_AT_PRIORITY, 0, NULL));
    CHECK_OK(opreg_library_impl_fn(e.def, "foo", OPREG_KEY_META, meta_check, NULL));
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, kDLExtDev + 100, 0)); /* a device nobody has */
    opreg_call_explanation x;
    /* The key of the tensors' device, or one given. */
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK(!x.supported);
    CHECK_CONTAINS(x.message, "no registered backend handles");
    v = opreg_tensor_value(fake(&f, kDLCPU, 0)); /* Meta-like: no data */
    f.t.device.device_type = OPREG_DEVICE_META;
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_CPU, &v, 1, NULL, 0));
    CHECK(x.supported);
    CHECK_EQ_INT(x.key, OPREG_KEY_CPU);
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_NONE, &v, 1, NULL, 0));
    CHECK_EQ_INT(x.key, OPREG_KEY_META);
    CHECK_EQ_STR(x.providers[0].name, "default");
    CHECK_EQ_STR(x.providers[0].where, "d.c:1");
    /* The op's checks refuse: the provider is named, and the check's message. */
    f.shape[0] = 3;
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_CPU, &v, 1, NULL, 0));
    CHECK(!x.supported);
    CHECK_EQ_INT(x.check_status, OPREG_ERR_SHAPE);
    CHECK_CONTAINS(x.message, "provider 'a' would run, but the op's checks refuse these "
                              "arguments: foo: x must not have 3 rows");
    /* No kernel on a key. */
    CHECK_OK(opreg_explain_call(&x, e.op, OPREG_KEY_REFERENCE, &v, 1, NULL, 0));
    CHECK(!x.supported);
    CHECK_EQ_INT((int)x.nproviders, 0);
    CHECK_CONTAINS(x.message, "no provider, composite or fallback kernel for Reference");
    /* The boxed call's own refusals are the answer's status. */
    CHECK_STATUS(opreg_explain_call(&x, e.op, OPREG_KEY_CPU, &v, 0, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "missing argument 'x'");
    opreg_value i = opreg_int_value(3);
    CHECK_STATUS(opreg_explain_call(&x, e.op, OPREG_KEY_CPU, &i, 1, NULL, 0),
                 OPREG_ERR_TYPE_MISMATCH);
    CHECK(!opreg_is_supported_for(e.op, OPREG_KEY_CPU, &i, 1, NULL, 0));
    CHECK_STATUS(opreg_explain_call(&x, e.op, 99, &v, 1, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_explain_call(NULL, e.op, OPREG_KEY_CPU, &v, 1, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_explain_call(&x, NULL, OPREG_KEY_CPU, &v, 1, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_explain_call(&x, e.op, OPREG_KEY_CPU, NULL, 1, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    teardown(&e);
}

TEST(registration_refusals) {
    struct env e;
    setup(&e);
    struct prov a = { "a", 0, true };
    opreg_provider d = make(&a, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    CHECK_STATUS(opreg_library_provider(NULL, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_library_provider(e.lib, NULL, OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, NULL),
                 OPREG_ERR_INVALID_ARGUMENT);
    const char *bad_names[] = { "default", "composite", "fallback",
                                "",        "two words", "a_name_that_is_much_longer_than_31",
                                NULL };
    for (int i = 0; bad_names[i]; i++) {
        d.name = bad_names[i];
        CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                     OPREG_ERR_INVALID_ARGUMENT);
    }
    d.name = NULL;
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    d = make(&a, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    d.kernel.fn = NULL;
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "kernel.fn is NULL");
    d = make(&a, false, OPREG_PROVIDER_BEFORE, 0, NULL);
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "anchor is NULL");
    d = make(&a, false, OPREG_PROVIDER_AFTER, 0, "a");
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    d = make(&a, false, (opreg_provider_place)7, 0, NULL);
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "place 7 is not a place");
    d = make(&a, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    d.struct_size = 8;
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "struct_size 8 is too small");
    d = make(&a, false, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", OPREG_KEY_COMPOSITE, &d),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_library_provider(e.lib, "foo", 77, &d), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_library_provider(e.lib, "other::foo", OPREG_KEY_NONE, &d),
                 OPREG_ERR_NAMESPACE_MISMATCH);
    /* An older caller's struct (up to the kernel) works: the rest reads as zero. */
    d = make(&a, true, OPREG_PROVIDER_AT_PRIORITY, 0, NULL);
    d.struct_size = (uint32_t)(offsetof(opreg_provider, kernel) + sizeof d.kernel);
    CHECK_OK(opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d));
    a.accept = false; /* no predicate was read */
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_INT(a.calls, 1);
    /* At most OPREG_MAX_PROVIDERS over the op's keys. */
    static struct prov many[OPREG_MAX_PROVIDERS];
    static char names[OPREG_MAX_PROVIDERS][8];
    int ok = 1; /* "a" */
    opreg_status last = OPREG_OK;
    for (int i = 0; i < OPREG_MAX_PROVIDERS && last == OPREG_OK; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        many[i] = (struct prov){ names[i], 0, true };
        d = make(&many[i], false, OPREG_PROVIDER_AT_PRIORITY, i, NULL);
        last = opreg_library_provider(e.lib, "foo", OPREG_KEY_NONE, &d);
        if (last == OPREG_OK) ok++;
    }
    CHECK_EQ_INT(ok, OPREG_MAX_PROVIDERS);
    CHECK_STATUS(last, OPREG_ERR_UNSUPPORTED);
    CHECK_CONTAINS(opreg_last_error(), "an op has at most 24 providers");
    struct probe impl = { "impl", 0 };
    CHECK_STATUS(opreg_library_impl_fn(e.lib, "foo", OPREG_KEY_NONE, probe_kernel, &impl),
                 OPREG_ERR_UNSUPPORTED);
    /* The highest priority runs; the registry is whole after the refusals. */
    CHECK_OK(call_cpu(e.op));
    CHECK_EQ_STR(last_ran, "p22");
    teardown(&e);
}

int main(void) {
    unsetenv("OPREG_PROVIDERS");
    RUN(priority_order_and_default);
    RUN(predicates_choose_and_explain);
    RUN(fast_path_is_one_call);
    RUN(before_after_and_anchors);
    RUN(same_name_replaces_and_close_restores);
    RUN(pins_and_disables);
    RUN(env_spec);
    RUN(explain_keys_checks_and_refusals);
    RUN(registration_refusals);
    return test_summary();
}
