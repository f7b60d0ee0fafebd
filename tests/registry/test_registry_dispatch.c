/* The dispatch key of a call: from the devices of plain, optional and list
 * tensor arguments; Meta dispatch; mixed devices; plugin keys. */
#include "reg_helpers.h"

static opreg_registry *reg;
static opreg_library *def, *cpu_lib, *meta_lib;
static struct probe pcpu = { "cpu", 0 }, pmeta = { "meta", 0 };

static void setup(void) {
    opreg_registry_create(&reg);
    opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "t", OPREG_KEY_NONE, "d.c", 1);
    opreg_library_def(NULL, def, "two(Tensor a, Tensor b) -> ()");
    opreg_library_def(NULL, def, "opt(Tensor a, Tensor? b) -> ()");
    opreg_library_def(NULL, def, "lst(Tensor[] xs, Tensor?[] ys) -> ()");
    opreg_library_def(NULL, def, "none(int x) -> ()");
    opreg_library_def(NULL, def,
                      "swap_blocks(Tensor src, Tensor! dst, Tensor block_mapping) -> ()");
    opreg_library_create(&cpu_lib, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CPU, "c.c", 1);
    opreg_library_create(&meta_lib, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_META, "m.c", 1);
    const char *names[] = { "two", "opt", "lst", "none" };
    for (int i = 0; i < 4; i++) {
        opreg_library_impl_fn(cpu_lib, names[i], OPREG_KEY_NONE, probe_kernel, &pcpu);
        opreg_library_impl_fn(meta_lib, names[i], OPREG_KEY_NONE, probe_kernel, &pmeta);
    }
}

static const opreg_op *find(const char *name) {
    const opreg_op *op = NULL;
    opreg_op_find(&op, reg, name);
    return op;
}

TEST(plain_tensors_cpu_and_meta) {
    struct fake_tensor a, b;
    opreg_value v[2] = { opreg_tensor_value(fake(&a, kDLCPU, 0)),
                         opreg_tensor_value(fake(&b, kDLCPU, 0)) };
    CHECK_OK(opreg_call_boxed(find("t::two"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
    CHECK_OK(opreg_call_unboxed(find("t::two"), v, NULL));
    CHECK_EQ_STR(last_ran, "cpu");
    /* Pinned host memory is read by the CPU. */
    v[1] = opreg_tensor_value(fake(&b, kDLCUDAHost, 0));
    v[0] = opreg_tensor_value(fake(&a, kDLCUDAHost, 0));
    CHECK_OK(opreg_call_boxed(find("t::two"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
    /* Meta tensors (no data) go to the Meta kernel, boxed and unboxed. */
    DLTensor *m1, *m2;
    int64_t shape[2] = { 4, 8 };
    CHECK_OK(opreg_tensor_empty_meta(&m1, OPREG_DTYPE_BF16, 2, shape));
    CHECK_OK(opreg_tensor_empty_meta(&m2, OPREG_DTYPE_BF16, 2, shape));
    CHECK(m1->data == NULL);
    v[0] = opreg_tensor_value(m1);
    v[1] = opreg_tensor_value(m2);
    CHECK_OK(opreg_call_boxed(find("t::two"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "meta");
    last_ran = NULL;
    CHECK_OK(opreg_call_unboxed(find("t::two"), v, NULL));
    CHECK_EQ_STR(last_ran, "meta");
    opreg_tensor_free(m1);
    opreg_tensor_free(m2);
}

TEST(optional_and_list_tensors_count) {
    struct fake_tensor a, b, c;
    opreg_value v[2] = { opreg_tensor_value(fake(&a, OPREG_DEVICE_META, 0)), opreg_none() };
    CHECK_OK(opreg_call_boxed(find("t::opt"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "meta");
    v[1] = opreg_tensor_value(fake(&b, kDLCPU, 0));
    CHECK_STATUS(opreg_call_boxed(find("t::opt"), v, 2, NULL, 0, NULL, 0),
                 OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "argument 'a' is on meta and argument 'b' is on cpu");
    DLTensor *xs[2] = { fake(&a, OPREG_DEVICE_META, 0), fake(&b, OPREG_DEVICE_META, 0) };
    DLTensor *ys[2] = { NULL, fake(&c, kDLCPU, 0) };
    opreg_value l[2] = { opreg_tensor_list_value(xs, 2), opreg_tensor_list_value(ys, 2) };
    CHECK_STATUS(opreg_call_boxed(find("t::lst"), l, 2, NULL, 0, NULL, 0),
                 OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "argument 'xs' is on meta and argument 'ys' is on cpu");
    fake(&c, OPREG_DEVICE_META, 0);
    CHECK_OK(opreg_call_boxed(find("t::lst"), l, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "meta");
    /* Empty lists and Nones only: the CPU key. */
    opreg_value e[2] = { opreg_tensor_list_value(NULL, 0), opreg_tensor_list_value(ys, 1) };
    CHECK_OK(opreg_call_boxed(find("t::lst"), e, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
}

TEST(op_without_tensors_uses_cpu) {
    opreg_value v = opreg_int_value(3);
    last_ran = NULL;
    CHECK_OK(opreg_call_boxed(find("t::none"), &v, 1, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
}

TEST(mixed_devices_need_a_kernel_that_accepts_them) {
    struct fake_tensor a, b, c;
    struct probe swap = { "swap", 0 };
    opreg_value v[3] = { opreg_tensor_value(fake(&a, kDLCPU, 0)),
                         opreg_tensor_value(fake(&b, kDLCUDA, 1)),
                         opreg_tensor_value(fake(&c, kDLCPU, 0)) };
    const opreg_op *op = find("t::swap_blocks");
    /* CUDA is not available here, but a kernel may be registered for it. */
    opreg_library *cuda;
    CHECK_OK(opreg_library_create(&cuda, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CUDA, "cu.c", 1));
    CHECK_OK(opreg_library_impl_fn(cuda, "swap_blocks", OPREG_KEY_NONE, probe_kernel, &swap));
    CHECK_STATUS(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0), OPREG_ERR_DEVICE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(),
                   "t::swap_blocks: expected all tensors to be on the same device, but argument "
                   "'src' is on cpu and argument 'dst' is on cuda:1");
    CHECK_STATUS(opreg_call_unboxed(op, v, NULL), OPREG_ERR_DEVICE_MISMATCH);
    opreg_library_close(cuda);
    opreg_kernel k = { probe_kernel, &swap, NULL, OPREG_KERNEL_MIXED_DEVICES };
    CHECK_OK(opreg_library_create(&cuda, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CUDA, "cu.c", 2));
    CHECK_OK(opreg_library_impl(cuda, "swap_blocks", OPREG_KEY_NONE, &k));
    last_ran = NULL;
    CHECK_OK(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "swap");
    last_ran = NULL;
    CHECK_OK(opreg_call_unboxed(op, v, NULL));
    CHECK_EQ_STR(last_ran, "swap");
    /* Same device type, other index: still mixed. */
    fake(&a, kDLCUDA, 0);
    fake(&c, kDLCUDA, 0);
    CHECK_OK(opreg_call_boxed(op, v, 3, NULL, 0, NULL, 0));
    opreg_library_close(cuda);
}

static int plugin_free_calls;
static opreg_status plugin_alloc(void *ctx, void **out, size_t bytes, int dev) {
    (void)ctx;
    (void)dev;
    *out = malloc(bytes ? bytes : 1);
    return *out ? OPREG_OK : OPREG_ERR_OUT_OF_MEMORY;
}
static void plugin_free(void *ctx, void *p, size_t bytes, int dev) {
    (void)ctx;
    (void)bytes;
    (void)dev;
    plugin_free_calls++;
    free(p);
}

TEST(plugin_key_registered_after_tables_were_built) {
    struct fake_tensor a, b;
    struct probe pp = { "plugin", 0 };
    opreg_value v[2] = { opreg_tensor_value(fake(&a, kDLVulkan, 0)),
                         opreg_tensor_value(fake(&b, kDLVulkan, 0)) };
    const opreg_op *op = find("t::two");
    CHECK_STATUS(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0), OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(opreg_last_error(),
                   "argument 'a' is on DLPack device type 7, which no registered backend handles");
    CHECK(!opreg_is_op_supported_on(reg, "t::two", a.t.device));
    opreg_backend be = { .struct_size = sizeof be,
                         .abi_version = OPREG_BACKEND_ABI_VERSION,
                         .name = "vulkan",
                         .device_type = kDLVulkan,
                         .alloc = plugin_alloc,
                         .free = plugin_free };
    opreg_dispatch_key key;
    CHECK_OK(opreg_key_register(&key, &be));
    CHECK_EQ_INT(key, 4); /* after CPU, CUDA, Meta and Reference */
    CHECK_EQ_STR(opreg_key_name(key), "vulkan");
    CHECK_EQ_INT(opreg_key_of_device(a.t.device), key);
    opreg_dispatch_key again;
    CHECK_STATUS(opreg_key_register(&again, &be), OPREG_ERR_ALREADY_DEFINED);
    be.abi_version = (2u << 16) | 5u;
    be.name = "other";
    CHECK_STATUS(opreg_key_register(&again, &be), OPREG_ERR_ABI_MISMATCH);
    char want[96];
    snprintf(want, sizeof want, "ABI version 2.5 is not compatible with this library's %u.%u",
             OPREG_BACKEND_ABI_VERSION >> 16, OPREG_BACKEND_ABI_VERSION & 0xffffu);
    CHECK_CONTAINS(opreg_last_error(), want);
    /* Nothing past struct_size is read (an 8-byte table has no name), and a
     * table that can allocate but not free is refused. */
    struct {
        uint32_t struct_size, abi_version;
    } tiny = { 8, OPREG_BACKEND_ABI_VERSION };
    CHECK_STATUS(opreg_key_register(&again, (const opreg_backend *)(const void *)&tiny),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "struct_size 8 is too small");
    opreg_backend half = be;
    half.name = "half";
    half.device_type = 1234;
    half.abi_version = OPREG_BACKEND_ABI_VERSION;
    half.free = NULL;
    CHECK_STATUS(opreg_key_register(&again, &half), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "backend 'half': it has alloc but no free");
    /* A 1.1 producer's table ends before copy_on_device (1.2): what lies
     * after its struct_size is not read, and the member reads as NULL. */
    struct {
        opreg_backend b;
        uint64_t after;
    } old11 = { .b = be, .after = ~0ull };
    old11.b.struct_size = (uint32_t)offsetof(opreg_backend, copy_on_device);
    old11.b.abi_version = (1u << 16) | 1u;
    old11.b.name = "older";
    old11.b.device_type = 1235;
    memset(&old11.b.copy_on_device, 0xA5, sizeof old11.b.copy_on_device);
    opreg_dispatch_key older;
    CHECK_OK(opreg_key_register(&older, &old11.b));
    CHECK(opreg_key_backend(older)->copy_on_device == NULL);
    CHECK(opreg_key_backend(older)->copy_to_host == be.copy_to_host);
    CHECK_OK(opreg_key_find(&again, "VULKAN"));
    CHECK_EQ_INT(again, key);
    /* No kernel yet: the tables built before the key know no kernel for it. */
    CHECK_STATUS(opreg_call_unboxed(op, v, NULL), OPREG_ERR_NO_KERNEL);
    CHECK_CONTAINS(opreg_last_error(), "from the 'vulkan' backend");
    opreg_library *lib;
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "t", key, "p.c", 1));
    CHECK_OK(opreg_library_impl_fn(lib, "two", OPREG_KEY_NONE, probe_kernel, &pp));
    CHECK_OK(opreg_call_unboxed(op, v, NULL));
    CHECK_EQ_STR(last_ran, "plugin");
    CHECK(opreg_is_op_supported_on(reg, "t::two", a.t.device));
    /* Tensors on the plugin's device come from its allocator. */
    DLTensor *t;
    int64_t shape[1] = { 16 };
    CHECK_OK(opreg_tensor_empty(&t, a.t.device, OPREG_DTYPE_F32, 1, shape));
    CHECK(t->data != NULL);
    opreg_tensor_free(t);
    CHECK_EQ_INT(plugin_free_calls, 1);
    opreg_library_close(lib);
}

/* The Reference key is never chosen by device; opreg_call_boxed_key()
 * chooses it (or any backend key) explicitly, with the usual validation. */
TEST(explicit_key_calls) {
    static struct probe pref = { "reference", 0 };
    opreg_library *ref_lib;
    CHECK_OK(opreg_library_create(&ref_lib, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_REFERENCE,
                                  "r.c", 1));
    CHECK_OK(opreg_library_impl_fn(ref_lib, "two", OPREG_KEY_NONE, probe_kernel, &pref));
    struct fake_tensor a, b;
    opreg_value v[2] = { opreg_tensor_value(fake(&a, kDLCPU, 0)),
                         opreg_tensor_value(fake(&b, kDLCPU, 0)) };
    CHECK_OK(opreg_call_boxed(find("t::two"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "cpu");
    CHECK_OK(opreg_call_boxed_key(find("t::two"), OPREG_KEY_REFERENCE, v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "reference");
    CHECK_OK(opreg_call_boxed_key(find("t::two"), OPREG_KEY_META, v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_STR(last_ran, "meta");
    /* A key without a kernel, a key that is no backend, a bad value. */
    CHECK_STATUS(opreg_call_boxed_key(find("t::opt"), OPREG_KEY_REFERENCE, v, 2, NULL, 0, NULL, 0),
                 OPREG_ERR_NO_KERNEL);
    CHECK_STATUS(opreg_call_boxed_key(find("t::two"), OPREG_KEY_COMPOSITE, v, 2, NULL, 0, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    opreg_value bad[2] = { v[0], opreg_int_value(3) };
    CHECK_STATUS(
        opreg_call_boxed_key(find("t::two"), OPREG_KEY_REFERENCE, bad, 2, NULL, 0, NULL, 0),
        OPREG_ERR_TYPE_MISMATCH);
    CHECK_CONTAINS(opreg_last_error(), "argument 'b'");
    /* Mixed devices are refused whatever the key. */
    v[1] = opreg_tensor_value(fake(&b, kDLCUDA, 0));
    CHECK_STATUS(opreg_call_boxed_key(find("t::two"), OPREG_KEY_REFERENCE, v, 2, NULL, 0, NULL, 0),
                 OPREG_ERR_DEVICE_MISMATCH);
    opreg_library_close(ref_lib);
}

int main(void) {
    setup();
    RUN(plain_tensors_cpu_and_meta);
    RUN(optional_and_list_tensors_count);
    RUN(op_without_tensors_uses_cpu);
    RUN(mixed_devices_need_a_kernel_that_accepts_them);
    RUN(explicit_key_calls);
    RUN(plugin_key_registered_after_tables_were_built);
    opreg_library_close(meta_lib);
    opreg_library_close(cpu_lib);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
    return test_summary();
}
