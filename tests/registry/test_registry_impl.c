/* impl and fallback: registration order, replacement and restoration,
 * resolution order (direct, composite, fallback), and impl's errors. */
#include "reg_helpers.h"

#define FOO "foo(Tensor x) -> ()"

struct env {
    opreg_registry *reg;
    opreg_library *def;
};

static opreg_status call_on(const opreg_op *op, int32_t device_type) {
    struct fake_tensor f;
    opreg_value v = opreg_tensor_value(fake(&f, device_type, 0));
    last_ran = NULL;
    return opreg_call_boxed(op, &v, 1, NULL, 0, NULL, 0);
}

TEST(impl_before_def_is_held) {
    opreg_registry *reg;
    opreg_library *impl, *def;
    struct probe cpu = { "cpu", 0 };
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&impl, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "i.c", 1));
    CHECK_OK(opreg_library_impl_fn(impl, "foo", OPREG_KEY_NONE, probe_kernel, &cpu));
    const opreg_op *op;
    CHECK_STATUS(opreg_op_find(&op, reg, "_C::foo"), OPREG_ERR_NOT_FOUND);
    CHECK(!opreg_is_op_supported(reg, "_C::foo"));
    CHECK_OK(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "d.c", 1));
    CHECK_OK(opreg_library_def(&op, def, FOO));
    CHECK(opreg_is_op_supported(reg, "_C::foo"));
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "cpu");
    CHECK_EQ_INT(opreg_op_kernel_kind(op, OPREG_KEY_CPU), OPREG_KERNEL_DIRECT);
    /* Closing the def withdraws the op; the handle stays and reports it. */
    opreg_library_close(def);
    CHECK(!opreg_op_is_defined(op));
    CHECK(opreg_op_schema(op) == NULL);
    CHECK_STATUS(call_on(op, kDLCPU), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "_C::foo is not defined");
    /* A new def revives the same handle, and the held kernel is back. */
    const opreg_op *again;
    CHECK_OK(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "d.c", 2));
    CHECK_OK(opreg_library_def(&again, def, FOO));
    CHECK(again == op);
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_INT(cpu.calls, 2);
    opreg_library_close(impl);
    CHECK_STATUS(call_on(op, kDLCPU), OPREG_ERR_NO_KERNEL);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
}

TEST(replace_logs_and_close_restores) {
    opreg_registry *reg;
    opreg_library *def, *a, *b;
    struct probe pa = { "a", 0 }, pb = { "b", 0 };
    const opreg_op *op;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "d.c", 1));
    CHECK_OK(opreg_library_def(&op, def, FOO));
    CHECK_OK(opreg_library_create(&a, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "a.c", 11));
    CHECK_OK(opreg_library_create(&b, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "b.c", 22));
    opreg_set_log_callback(capture_log, NULL, OPREG_LOG_WARN);
    log_count = 0;
    CHECK_OK(opreg_library_impl_fn(a, "foo", OPREG_KEY_NONE, probe_kernel, &pa));
    CHECK_EQ_INT(log_count, 0);
    CHECK_OK(opreg_library_impl_fn(b, "_C::foo", OPREG_KEY_NONE, probe_kernel, &pb));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "Overriding a previously registered kernel for the same operator and "
                             "the same dispatch key");
    CHECK_CONTAINS(log_last, "operator: _C::foo");
    CHECK_CONTAINS(log_last, "dispatch key: CPU");
    CHECK_CONTAINS(log_last, "previous kernel: registered at a.c:11");
    CHECK_CONTAINS(log_last, "new kernel: registered at b.c:22");
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_WARN);
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "b");
    opreg_library_close(b);
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "a");
    /* Closing an older registration leaves the newer one in place. */
    CHECK_OK(opreg_library_create(&b, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "b.c", 22));
    CHECK_OK(opreg_library_impl_fn(b, "foo", OPREG_KEY_NONE, probe_kernel, &pb));
    opreg_library_close(a);
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "b");
    opreg_library_close(b);
    CHECK_STATUS(call_on(op, kDLCPU), OPREG_ERR_NO_KERNEL);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
}

TEST(resolution_order_direct_composite_fallback) {
    opreg_registry *reg;
    opreg_library *def, *fb, *comp, *direct;
    struct probe pf = { "fallback", 0 }, pc = { "composite", 0 }, pd = { "direct", 0 };
    const opreg_op *op, *other;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "d.c", 1));
    CHECK_OK(opreg_library_def(&op, def, FOO));
    CHECK_OK(opreg_library_def(&other, def, "bar(Tensor x) -> ()"));
    CHECK_OK(
        opreg_library_create(&fb, reg, OPREG_LIBRARY_IMPL, "anything", OPREG_KEY_CPU, "f.c", 1));
    opreg_kernel kf = probe_k(&pf), kc = probe_k(&pc), kd = probe_k(&pd);
    CHECK_OK(opreg_library_fallback(fb, OPREG_KEY_NONE, &kf));
    /* The fallback serves every op on its key, and only its key. */
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "fallback");
    CHECK_OK(call_on(other, kDLCPU));
    CHECK_EQ_STR(last_ran, "fallback");
    CHECK_EQ_INT(opreg_op_kernel_kind(op, OPREG_KEY_CPU), OPREG_KERNEL_FALLBACK);
    CHECK_STATUS(call_on(op, OPREG_DEVICE_META), OPREG_ERR_NO_KERNEL);
    CHECK_CONTAINS(opreg_last_error(), "Kernels are registered for: CPU (fallback)");
    /* A composite kernel beats the fallback, on every key. */
    CHECK_OK(
        opreg_library_create(&comp, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_COMPOSITE, "c.c", 1));
    CHECK_OK(opreg_library_impl(comp, "foo", OPREG_KEY_NONE, &kc));
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "composite");
    CHECK_OK(call_on(op, OPREG_DEVICE_META));
    CHECK_EQ_STR(last_ran, "composite");
    CHECK_OK(call_on(other, kDLCPU));
    CHECK_EQ_STR(last_ran, "fallback");
    CHECK(opreg_op_has_composite(op));
    /* A direct kernel beats both, on its key only. */
    CHECK_OK(
        opreg_library_create(&direct, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_META, "m.c", 1));
    CHECK_OK(opreg_library_impl(direct, "foo", OPREG_KEY_NONE, &kd));
    CHECK_OK(call_on(op, OPREG_DEVICE_META));
    CHECK_EQ_STR(last_ran, "direct");
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "composite");
    /* Withdrawing each one falls back to the next. */
    opreg_library_close(comp);
    CHECK_OK(call_on(op, kDLCPU));
    CHECK_EQ_STR(last_ran, "fallback");
    opreg_library_close(fb);
    CHECK_STATUS(call_on(op, kDLCPU), OPREG_ERR_NO_KERNEL);
    CHECK_CONTAINS(opreg_last_error(),
                   "Could not run '_C::foo' with arguments from the 'CPU' backend");
    CHECK_CONTAINS(opreg_last_error(), "Kernels are registered for: Meta");
    opreg_library_close(direct);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
}

TEST(impl_errors) {
    opreg_registry *reg;
    opreg_library *lib, *nokey;
    struct probe p = { "p", 0 };
    opreg_kernel k = probe_k(&p);
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "i.c", 4));
    CHECK_STATUS(opreg_library_impl(lib, "other::foo", OPREG_KEY_NONE, &k),
                 OPREG_ERR_NAMESPACE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "Explicitly provided namespace (other) in operator name does not match "
                   "namespace of enclosing OPREG_LIBRARY_IMPL block (_C)");
    CHECK_STATUS(opreg_library_impl(lib, "foo.bar.baz", OPREG_KEY_NONE, &k),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "'foo.bar.baz' is not an op name");
    CHECK_STATUS(opreg_library_impl(lib, "foo", 77, &k), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "key 77 is not a dispatch key");
    CHECK_STATUS(opreg_library_impl(lib, "foo", OPREG_KEY_NONE, NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "kernel is NULL");
    opreg_kernel nofn = { NULL, NULL, NULL, 0 };
    CHECK_STATUS(opreg_library_impl(lib, "foo", OPREG_KEY_NONE, &nofn), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "kernel->fn is NULL");
    CHECK_STATUS(opreg_library_fallback(lib, OPREG_KEY_COMPOSITE, &k), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "must be a backend key");
    CHECK_OK(opreg_library_create(&nokey, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_NONE, "n.c", 9));
    CHECK_STATUS(opreg_library_impl(nokey, "foo", OPREG_KEY_NONE, &k), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(),
                   "no dispatch key was given and the library at n.c:9 has no default key");
    opreg_library_close(nokey);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

static int released;
static void release_probe(void *ctx) {
    ((struct probe *)ctx)->calls += 1000;
    released++;
}

TEST(release_runs_at_reclaim_or_destroy) {
    opreg_registry *reg;
    opreg_library *lib;
    struct probe a = { "a", 0 }, b = { "b", 0 };
    opreg_kernel ka = { probe_kernel, &a, release_probe, 0 },
                 kb = { probe_kernel, &b, release_probe, 0 };
    released = 0;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "i.c", 1));
    CHECK_OK(opreg_library_impl(lib, "foo", OPREG_KEY_NONE, &ka));
    opreg_library_close(lib);
    CHECK_EQ_INT(released, 0); /* a call could still be running */
    opreg_registry_reclaim(reg);
    CHECK_EQ_INT(released, 1);
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "i.c", 1));
    CHECK_OK(opreg_library_impl(lib, "foo", OPREG_KEY_NONE, &kb));
    opreg_registry_destroy(reg); /* closes the library, then releases */
    CHECK_EQ_INT(released, 2);
    opreg_registry_reclaim(NULL);
}

int main(void) {
    RUN(impl_before_def_is_held);
    RUN(replace_logs_and_close_restores);
    RUN(resolution_order_direct_composite_fallback);
    RUN(impl_errors);
    RUN(release_runs_at_reclaim_or_destroy);
    return test_summary();
}
