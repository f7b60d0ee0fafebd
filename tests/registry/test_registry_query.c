/* Lookup, support queries and their explanations, listing. */
#include <string.h>

#include "reg_helpers.h"

static opreg_registry *reg;
static struct probe p = { "p", 0 };

TEST(lookup_by_name_and_overload) {
    const opreg_op *a, *b;
    CHECK_OK(opreg_op_find(&a, reg, "_C::rms_norm"));
    CHECK_OK(opreg_op_find(&b, reg, "_C::add.out"));
    CHECK(a != b);
    CHECK_EQ_STR(opreg_op_name(b), "_C::add.out");
    const opreg_op *again;
    CHECK_OK(opreg_op_find_n(&again, reg, "_C::rms_normXYZ", 12));
    CHECK(again == a);
    CHECK_STATUS(opreg_op_find(&again, reg, "_C::add.in"), OPREG_ERR_NOT_FOUND);
    CHECK(again == NULL);
    CHECK_STATUS(opreg_op_find(&again, NULL, "_C::add"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "reg is NULL");
}

TEST(unknown_names_get_the_nearest) {
    const opreg_op *op;
    CHECK_STATUS(opreg_op_find(&op, reg, "_C::rms_nrom"), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(),
                   "Could not find schema for _C::rms_nrom; did you mean: _C::rms_norm");
    CHECK_STATUS(opreg_op_find(&op, reg, "_C::add.ot"), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "did you mean: _C::add.out, _C::add");
    opreg_registry *empty;
    CHECK_OK(opreg_registry_create(&empty));
    CHECK_STATUS(opreg_op_find(&op, empty, "_C::x"), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(opreg_last_error(), "the registry defines no ops");
    opreg_registry_destroy(empty);
}

TEST(is_op_supported_variants) {
    DLDevice cpu = { kDLCPU, 0 }, cuda = { kDLCUDA, 0 }, meta = { OPREG_DEVICE_META, 0 };
    opreg_clear_error();
    CHECK(opreg_is_op_supported(reg, "_C::rms_norm"));
    CHECK(opreg_is_op_supported_on(reg, "_C::rms_norm", cpu));
    CHECK(!opreg_is_op_supported_on(reg, "_C::rms_norm", cuda)); /* a kernel, but no backend */
    CHECK(!opreg_is_op_supported_on(reg, "_C::rms_norm", meta));
    CHECK(!opreg_is_op_supported(reg, "_C::meta_only")); /* Meta alone does not count */
    CHECK(opreg_is_op_supported_on(reg, "_C::meta_only", meta));
    CHECK(opreg_is_op_supported(reg, "_C::add")); /* composite */
    CHECK(opreg_is_op_supported_on(reg, "_C::add", meta));
    CHECK(!opreg_is_op_supported(reg, "_C::add.out")); /* no kernel */
    CHECK(!opreg_is_op_supported(reg, "_C::nope"));
    CHECK(!opreg_is_op_supported(NULL, "_C::add"));
    CHECK(!opreg_is_op_supported(reg, NULL));
    CHECK(!opreg_is_op_supported(reg, "_C::cuda_only"));
    CHECK_EQ_STR(opreg_last_error(), ""); /* queries do not set errors */
    opreg_support_info info;
    CHECK_OK(opreg_explain_support(&info, reg, "_C::cuda_only", NULL));
    CHECK(!info.supported);
    CHECK_EQ_INT(info.reason, OPREG_SUPPORT_BACKEND_UNAVAILABLE);
    CHECK_EQ_INT(info.key, OPREG_KEY_CUDA);
}

TEST(explain_says_which_kernel_or_why_not) {
    opreg_support_info info;
    DLDevice cpu = { kDLCPU, 0 }, cuda = { kDLCUDA, 0 }, meta = { OPREG_DEVICE_META, 0 },
             odd = { kDLVPI, 0 };
    CHECK_OK(opreg_explain_support(&info, reg, "_C::rms_norm", &cpu));
    CHECK(info.supported);
    CHECK_EQ_INT(info.kind, OPREG_KERNEL_DIRECT);
    CHECK_EQ_INT(info.key, OPREG_KEY_CPU);
    CHECK_CONTAINS(
        info.message,
        "_C::rms_norm on CPU: supported: runs the CPU kernel (direct), registered at q.c:2");
    CHECK_OK(opreg_explain_support(&info, reg, "_C::rms_norm", &cuda));
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) {
        /* built without the CUDA backend, or with it and no device here */
        CHECK(!info.supported);
        CHECK_EQ_INT(info.reason, OPREG_SUPPORT_BACKEND_UNAVAILABLE);
        CHECK_CONTAINS(info.message, "the CUDA backend is unavailable: ");
        CHECK(strstr(info.message, "opreg was built without the CUDA backend") ||
              strstr(info.message, "no CUDA device is present"));
        CHECK_CONTAINS(info.message, " (a kernel is registered)");
    }
    CHECK_OK(opreg_explain_support(&info, reg, "_C::rms_norm", &meta));
    CHECK_EQ_INT(info.reason, OPREG_SUPPORT_NO_KERNEL);
    CHECK_CONTAINS(info.message, "no direct, composite or fallback kernel for Meta");
    CHECK_OK(opreg_explain_support(&info, reg, "_C::add", &meta));
    CHECK(info.supported);
    CHECK_EQ_INT(info.kind, OPREG_KERNEL_COMPOSITE);
    CHECK_CONTAINS(info.message, "runs the Composite kernel (composite)");
    CHECK_OK(opreg_explain_support(&info, reg, "_C::fb", &cpu));
    CHECK_EQ_INT(info.kind, OPREG_KERNEL_FALLBACK);
    CHECK_CONTAINS(info.message, "runs the CPU kernel (fallback), registered at q.c:4");
    CHECK_OK(opreg_explain_support(&info, reg, "_C::nope", &cpu));
    CHECK_EQ_INT(info.reason, OPREG_SUPPORT_NO_SUCH_OP);
    CHECK_CONTAINS(info.message, "Could not find schema for _C::nope");
    CHECK_OK(opreg_explain_support(&info, reg, "_C::add", &odd));
    CHECK_EQ_INT(info.reason, OPREG_SUPPORT_NO_BACKEND);
    /* Without a device: the first backend that would run, or the best reason. */
    CHECK_OK(opreg_explain_support(&info, reg, "_C::rms_norm", NULL));
    CHECK(info.supported);
    CHECK_OK(opreg_explain_support(&info, reg, "_C::cuda_only", NULL));
    CHECK(info.supported); /* the CPU fallback serves it */
    CHECK_EQ_INT(info.kind, OPREG_KERNEL_FALLBACK);
    CHECK_STATUS(opreg_explain_support(NULL, reg, "x", NULL), OPREG_ERR_INVALID_ARGUMENT);
}

TEST(listing) {
    size_t n = opreg_registry_num_ops(reg), defined = 0;
    for (size_t i = 0; i < n; i++)
        defined += opreg_op_is_defined(opreg_registry_op(reg, i));
    CHECK_EQ_INT(defined, 7);
    CHECK(opreg_registry_op(reg, n) == NULL);
    const opreg_op *op;
    CHECK_OK(opreg_op_find(&op, reg, "_C::rms_norm"));
    CHECK_EQ_INT(opreg_op_kernel_kind(op, OPREG_KEY_CPU), OPREG_KERNEL_DIRECT);
    CHECK_EQ_INT(opreg_op_kernel_kind(op, OPREG_KEY_CUDA), OPREG_KERNEL_DIRECT);
    CHECK_EQ_INT(opreg_op_kernel_kind(op, OPREG_KEY_META), OPREG_KERNEL_NONE);
    CHECK(!opreg_op_has_composite(op));
    char buf[256];
    opreg_schema_format(opreg_op_schema(op), OPREG_SCHEMA_CANONICAL, buf, sizeof buf);
    CHECK_EQ_STR(buf,
                 "_C::rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
}

TEST(keys) {
    CHECK_EQ_STR(opreg_key_name(OPREG_KEY_CPU), "CPU");
    CHECK_EQ_STR(opreg_key_name(OPREG_KEY_CUDA), "CUDA");
    CHECK_EQ_STR(opreg_key_name(OPREG_KEY_META), "Meta");
    CHECK_EQ_STR(opreg_key_name(OPREG_KEY_COMPOSITE), "Composite");
    CHECK(opreg_key_name(99) == NULL);
    opreg_dispatch_key k;
    CHECK_OK(opreg_key_find(&k, "meta"));
    CHECK_EQ_INT(k, OPREG_KEY_META);
    CHECK_OK(opreg_key_find(&k, "Composite"));
    CHECK_EQ_INT(k, OPREG_KEY_COMPOSITE);
    CHECK_STATUS(opreg_key_find(&k, "tpu"), OPREG_ERR_NOT_FOUND);
    CHECK_CONTAINS(
        opreg_last_error(),
        "no dispatch key named 'tpu'; known keys: cpu, cuda, meta, reference, composite");
    char why[128];
    CHECK(opreg_key_is_available(OPREG_KEY_CPU, why, sizeof why));
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why))
        CHECK(strstr(why, "built without the CUDA backend") ||
              strstr(why, "no CUDA device is present"));
    CHECK_EQ_INT(opreg_key_count(), 4);
    CHECK_EQ_STR(opreg_key_name(OPREG_KEY_REFERENCE), "Reference");
    CHECK(opreg_key_is_available(OPREG_KEY_REFERENCE, why, sizeof why));
    CHECK_STATUS(opreg_key_attach_backend(OPREG_KEY_CPU, opreg_key_backend(OPREG_KEY_CPU)),
                 OPREG_ERR_INVALID_ARGUMENT);
}

int main(void) {
    opreg_library *def, *cpu, *cuda, *meta, *comp, *fb;
    opreg_registry_create(&reg);
    opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "q.c", 1);
    opreg_library_def(NULL, def,
                      "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
    opreg_library_def(NULL, def, "add(Tensor a, Tensor b) -> Tensor");
    opreg_library_def(NULL, def, "add.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)");
    opreg_library_def(NULL, def, "meta_only(Tensor a) -> Tensor");
    opreg_library_def(NULL, def, "cuda_only(Tensor a) -> Tensor");
    opreg_library_def(NULL, def, "fb(Tensor a) -> Tensor");
    opreg_library_def(NULL, def, "other(Tensor a) -> Tensor");
    opreg_library_create(&cpu, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "q.c", 2);
    opreg_library_impl_fn(cpu, "rms_norm", OPREG_KEY_NONE, probe_kernel, &p);
    opreg_library_create(&cuda, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CUDA, "q.c", 3);
    opreg_library_impl_fn(cuda, "rms_norm", OPREG_KEY_NONE, probe_kernel, &p);
    opreg_library_impl_fn(cuda, "cuda_only", OPREG_KEY_NONE, probe_kernel, &p);
    opreg_library_create(&meta, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_META, "q.c", 5);
    opreg_library_impl_fn(meta, "meta_only", OPREG_KEY_NONE, probe_kernel, &p);
    opreg_library_create(&comp, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_COMPOSITE, "q.c", 6);
    opreg_library_impl_fn(comp, "add", OPREG_KEY_NONE, probe_kernel, &p);
    /* A fallback for a key no test op otherwise uses on CPU: only fb has
     * nothing else, so only fb shows it (the others have CPU kernels or none). */
    opreg_library_create(&fb, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "q.c", 4);
    opreg_kernel k = probe_k(&p);
    opreg_library_fallback(fb, OPREG_KEY_NONE, &k);
    RUN(lookup_by_name_and_overload);
    RUN(unknown_names_get_the_nearest);
    RUN(keys);
    RUN(explain_says_which_kernel_or_why_not);
    RUN(listing);
    opreg_library_close(fb);
    RUN(is_op_supported_variants);
    opreg_library_close(comp);
    opreg_library_close(meta);
    opreg_library_close(cuda);
    opreg_library_close(cpu);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
    return test_summary();
}
