/* The mutation sanitizer (registry/mutation.c): kernels that write their
 * read-only arguments are reported, in REPORT and FAIL mode, on the boxed,
 * unboxed and typed paths; written outputs, padding between a view's rows,
 * aliased outputs, Meta and data-less tensors are not; a device read through
 * its backend's copy to the host is checked, one without a copy is skipped;
 * switching off brings back the kernels' own entries; OPREG_CHECK_MUTATION. */
#define _POSIX_C_SOURCE 200809L
#include "reg_helpers.h"

#include <stdlib.h>

/* What a writer kernel does: change byte @c byte of argument @c arg (item
 * @c item of a list), or the byte at @c raw, then return @c ret. */
struct writer {
    int arg, item;
    size_t byte;
    char *raw;
    opreg_status ret;
    int calls;
};

static opreg_status writer_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                  opreg_value *rets) {
    (void)op;
    (void)rets;
    struct writer *w = ctx;
    w->calls++;
    if (w->raw) {
        w->raw[0]++;
    } else if (w->arg >= 0) {
        const opreg_value *v = &args[w->arg];
        DLTensor *t = v->kind == OPREG_VALUE_TENSOR ? v->u.tensor : v->u.tensors.items[w->item];
        ((char *)t->data + t->byte_offset)[w->byte]++;
    }
    if (w->ret != OPREG_OK) return opreg_set_error(w->ret, "writer: refused after writing");
    return OPREG_OK;
}

static opreg_registry *reg;
static opreg_library *def, *cpu;
static struct writer w_in = { 1, -1, 5, NULL, OPREG_OK, 0 },
                     w_out = { 0, -1, 3, NULL, OPREG_OK, 0 },
                     w_item = { 1, 1, 0, NULL, OPREG_OK, 0 },
                     w_raw = { -1, -1, 0, NULL, OPREG_OK, 0 },
                     w_refuse = { 1, -1, 0, NULL, OPREG_ERR_SHAPE, 0 };

static const opreg_op *find(const char *name) {
    const opreg_op *op = NULL;
    opreg_op_find(&op, reg, name);
    return op;
}

static int setup(void) {
    if (opreg_registry_create(&reg) != OPREG_OK) return 1;
    if (opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "t", OPREG_KEY_NONE, "d.c", 1) ||
        opreg_library_create(&cpu, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CPU, "c.c", 7))
        return 1;
    static const char *defs[] = {
        "bad(Tensor! out, Tensor input) -> ()",    "good(Tensor! out, Tensor input) -> ()",
        "lst(Tensor! out, Tensor[] xs) -> ()",     "raw(Tensor! out, Tensor input) -> ()",
        "refuse(Tensor! out, Tensor input) -> ()", "opt(Tensor! out, Tensor? input) -> ()",
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (opreg_library_def(NULL, def, defs[i]) != OPREG_OK) return 1;
    if (opreg_library_impl_fn(cpu, "bad", OPREG_KEY_NONE, writer_kernel, &w_in) ||
        opreg_library_impl_fn(cpu, "good", OPREG_KEY_NONE, writer_kernel, &w_out) ||
        opreg_library_impl_fn(cpu, "lst", OPREG_KEY_NONE, writer_kernel, &w_item) ||
        opreg_library_impl_fn(cpu, "raw", OPREG_KEY_NONE, writer_kernel, &w_raw) ||
        opreg_library_impl_fn(cpu, "refuse", OPREG_KEY_NONE, writer_kernel, &w_refuse) ||
        opreg_library_impl_fn(cpu, "opt", OPREG_KEY_NONE, writer_kernel, &w_in))
        return 1;
    opreg_set_log_callback(capture_log, NULL, OPREG_LOG_DEBUG);
    return 0;
}

static DLTensor *cpu_f32(int64_t rows, int64_t cols) {
    DLTensor *t = NULL;
    int64_t shape[2] = { rows, cols };
    if (opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 2, shape) != OPREG_OK) return NULL;
    memset(t->data, 0, (size_t)(rows * cols) * 4);
    return t;
}

static void reset_log(void) {
    log_count = 0;
    log_last[0] = '\0';
}

TEST(off_by_default) {
    CHECK_EQ_INT(opreg_registry_mutation_check(reg), OPREG_MUTATION_OFF);
    CHECK_EQ_INT(opreg_registry_mutation_check(NULL), OPREG_MUTATION_OFF);
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 0);
    /* The table's entry is the kernel itself. */
    const opreg_dispatch_table *tab =
        atomic_load(&((const struct opreg_op_head *)(const void *)find("t::bad"))->table);
    CHECK(tab->by_device_type[kDLCPU].fn == writer_kernel);
    CHECK_STATUS(opreg_registry_set_mutation_check(NULL, OPREG_MUTATION_REPORT),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_registry_set_mutation_check(reg, (opreg_mutation_mode)7),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "unknown mode 7");
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

TEST(report_names_op_key_argument_and_place) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    CHECK_EQ_INT(opreg_registry_mutation_check(reg), OPREG_MUTATION_REPORT);
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    CHECK_EQ_STR(log_last, "mutation check: t::bad on CPU wrote its read-only argument 'input' "
                           "(kernel registered at c.c:7 by library t)");
    /* A kernel that writes only its Tensor! output is not reported. */
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::good"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(w_out.calls, 1);
    CHECK_EQ_INT(log_count, 0);
    /* An optional tensor that is present is checked; None is nothing to read. */
    CHECK_OK(opreg_call_boxed(find("t::opt"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::opt on CPU wrote its read-only argument 'input'");
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

TEST(fail_mode_fails_the_call) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_FAIL));
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_STATUS(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0), OPREG_ERR_MUTATION);
    CHECK_CONTAINS(opreg_last_error(),
                   "mutation check: t::bad on CPU wrote its read-only argument 'input'");
    CHECK_EQ_INT(log_count, 1);
    CHECK_EQ_STR(opreg_status_name(OPREG_ERR_MUTATION), "OPREG_ERR_MUTATION");
    CHECK_EQ_STR(opreg_status_str(OPREG_ERR_MUTATION), "a kernel wrote a read-only argument");
    /* The output alone written: the call succeeds. */
    CHECK_OK(opreg_call_boxed(find("t::good"), v, 2, NULL, 0, NULL, 0));
    /* A kernel that refuses after writing is reported, and its own status
     * and message are the call's. */
    reset_log();
    CHECK_STATUS(opreg_call_boxed(find("t::refuse"), v, 2, NULL, 0, NULL, 0), OPREG_ERR_SHAPE);
    CHECK_EQ_STR(opreg_last_error(), "writer: refused after writing");
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::refuse on CPU wrote its read-only argument 'input'");
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

TEST(list_items_are_checked) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    DLTensor *out = cpu_f32(2, 2), *a = cpu_f32(3, 5), *b = cpu_f32(1, 7);
    DLTensor *xs[2] = { a, b };
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_list_value(xs, 2) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::lst"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::lst on CPU wrote its read-only argument 'xs' (item 1) (kernel "
                             "registered at c.c:7 by library t)");
    opreg_tensor_free(out);
    opreg_tensor_free(a);
    opreg_tensor_free(b);
}

TEST(strided_view_padding_is_not_the_view) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    /* A 4x3 view of a 4x8 buffer, from column 2: columns 0, 1 and 5..7 of
     * every row are padding. */
    DLTensor *base = cpu_f32(4, 8), *out = cpu_f32(4, 3), *view = NULL;
    int64_t shape[2] = { 4, 3 }, strides[2] = { 8, 1 };
    CHECK_OK(opreg_tensor_view(&view, base, 2, shape, strides, 2 * 4));
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(view) };
    char *bytes = base->data;
    size_t padding[] = { 0, 1 * 4, 5 * 4, 7 * 4 + 3, (8 + 6) * 4, (3 * 8 + 1) * 4 };
    reset_log();
    for (size_t i = 0; i < sizeof padding / sizeof padding[0]; i++) {
        w_raw.raw = bytes + padding[i];
        CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    }
    CHECK_EQ_INT(log_count, 0);
    /* The view's own elements, first, inner and last. */
    size_t inside[] = { 2 * 4, (8 + 3) * 4 + 1, (3 * 8 + 4) * 4 + 3 };
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        reset_log();
        w_raw.raw = bytes + inside[i];
        CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
        CHECK_EQ_INT(log_count, 1);
        CHECK_CONTAINS(log_last, "wrote its read-only argument 'input'");
    }
    /* A size-1 dimension's stride is never used, however large. */
    int64_t oshape[3] = { 4, 1, 3 }, ostrides[3] = { 8, INT64_MAX, 1 };
    DLTensor odd = *view;
    odd.ndim = 3;
    odd.shape = oshape;
    odd.strides = ostrides;
    v[1] = opreg_tensor_value(&odd);
    reset_log();
    w_raw.raw = bytes;
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 0);
    w_raw.raw = bytes + (8 + 2) * 4;
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    /* A transposed view (column-major strides) and a broadcast one (stride 0). */
    DLTensor *tview = NULL, *bview = NULL;
    int64_t tshape[2] = { 8, 4 }, tstrides[2] = { 1, 8 }, bshape[2] = { 5, 8 },
            bstrides[2] = { 0, 1 };
    CHECK_OK(opreg_tensor_view(&tview, base, 2, tshape, tstrides, 0));
    CHECK_OK(opreg_tensor_view(&bview, base, 2, bshape, bstrides, 8 * 4));
    reset_log();
    v[1] = opreg_tensor_value(tview);
    w_raw.raw = bytes + (2 * 8 + 5) * 4;
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    v[1] = opreg_tensor_value(bview);
    w_raw.raw = bytes + 2 * 8 * 4; /* row 2: outside the broadcast row 1 */
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    w_raw.raw = bytes + (8 + 7) * 4;
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 2);
    w_raw.raw = NULL;
    opreg_tensor_free(tview);
    opreg_tensor_free(bview);
    opreg_tensor_free(view);
    opreg_tensor_free(out);
    opreg_tensor_free(base);
}

TEST(large_tensors_every_byte_counts) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    /* 1 MiB plus an odd tail, so that the hash's blocks and its tail both
     * see a change. */
    DLTensor *out = cpu_f32(1, 1), *in = NULL;
    int64_t shape[1] = { (1 << 20) + 13 };
    CHECK_OK(opreg_tensor_empty(&in, (DLDevice){ kDLCPU, 0 }, OPREG_DTYPE_U8, 1, shape));
    memset(in->data, 0x5a, (size_t)shape[0]);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    size_t at[] = { 0, 31, 32, 4097, (size_t)shape[0] - 14, (size_t)shape[0] - 1 };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        reset_log();
        w_raw.raw = (char *)in->data + at[i];
        CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0));
        CHECK_EQ_INT(log_count, 1);
    }
    w_raw.raw = NULL;
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

TEST(an_output_aliasing_an_input_is_not_a_violation) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    DLTensor *t = cpu_f32(4, 8), *half = NULL;
    int64_t shape[2] = { 2, 8 };
    CHECK_OK(opreg_tensor_view(&half, t, 2, shape, NULL, 2 * 8 * 4));
    opreg_value v[2] = { opreg_tensor_value(t), opreg_tensor_value(t) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::good"), v, 2, NULL, 0, NULL, 0));
    v[1] = opreg_tensor_value(half); /* out covers the input's bytes */
    CHECK_OK(opreg_call_boxed(find("t::good"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 0);
    opreg_tensor_free(half);
    opreg_tensor_free(t);
}

TEST(meta_and_dataless_tensors_are_skipped) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_FAIL));
    opreg_library *meta;
    struct writer w_none = { -1, -1, 0, NULL, OPREG_OK, 0 };
    CHECK_OK(opreg_library_create(&meta, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_META, "m.c", 3));
    CHECK_OK(opreg_library_impl_fn(meta, "bad", OPREG_KEY_NONE, writer_kernel, &w_none));
    DLTensor *m1, *m2;
    int64_t shape[2] = { 4, 8 };
    CHECK_OK(opreg_tensor_empty_meta(&m1, OPREG_DTYPE_F32, 2, shape));
    CHECK_OK(opreg_tensor_empty_meta(&m2, OPREG_DTYPE_F32, 2, shape));
    opreg_value v[2] = { opreg_tensor_value(m1), opreg_tensor_value(m2) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(w_none.calls, 1);
    /* CPU tensor headers without data (the kernel's checks refuse those). */
    struct fake_tensor a, b;
    v[0] = opreg_tensor_value(fake(&a, kDLCPU, 0));
    v[1] = opreg_tensor_value(fake(&b, kDLCPU, 0));
    CHECK_OK(opreg_call_boxed(find("t::raw"), v, 2, NULL, 0, NULL, 0)); /* writes nothing */
    CHECK_EQ_INT(log_count, 0);
    opreg_library_close(meta);
    opreg_tensor_free(m1);
    opreg_tensor_free(m2);
}

TEST(typed_and_unboxed_calls_are_checked) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_OK(opreg_call_on_device(find("t::bad"), in->device, v, NULL));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::bad on CPU wrote its read-only argument 'input'");
    CHECK_OK(opreg_call_unboxed(find("t::bad"), v, NULL));
    CHECK_EQ_INT(log_count, 2);
    CHECK_OK(opreg_call_boxed_key(find("t::bad"), OPREG_KEY_CPU, v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 3);
    /* FAIL mode on the typed path too. */
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_FAIL));
    CHECK_STATUS(opreg_call_on_device(find("t::bad"), in->device, v, NULL), OPREG_ERR_MUTATION);
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

static bool accept_wide(void *ctx, const opreg_op *op, const opreg_value *args, char *why,
                        size_t cap) {
    (void)ctx;
    (void)op;
    bool ok = args[1].u.tensor->shape[1] >= 8;
    if (!ok && why) snprintf(why, cap, "narrow");
    return ok;
}

TEST(providers_composites_and_fallbacks_are_named) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    CHECK_OK(opreg_library_def(NULL, def, "prov(Tensor! out, Tensor input) -> ()"));
    CHECK_OK(opreg_library_def(NULL, def, "comp(Tensor! out, Tensor input) -> ()"));
    opreg_library *lib, *fb;
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CPU, "p.c", 11));
    struct writer w_wide = { 1, -1, 0, NULL, OPREG_OK, 0 },
                  w_plain = { 0, -1, 0, NULL, OPREG_OK, 0 };
    opreg_provider p = { sizeof p,
                         "wide",
                         { writer_kernel, &w_wide, NULL, 0 },
                         accept_wide,
                         OPREG_PROVIDER_AT_PRIORITY,
                         10,
                         NULL };
    CHECK_OK(opreg_library_provider(lib, "prov", OPREG_KEY_NONE, &p));
    CHECK_OK(opreg_library_impl_fn(lib, "prov", OPREG_KEY_NONE, writer_kernel, &w_plain));
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8), *narrow = cpu_f32(4, 2);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::prov"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(w_wide.calls, 1);
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::prov on CPU wrote its read-only argument 'input' (provider "
                             "'wide' registered at p.c:11 by library t)");
    v[1] = opreg_tensor_value(narrow); /* the default provider runs, and writes out only */
    CHECK_OK(opreg_call_boxed(find("t::prov"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(w_plain.calls, 1);
    CHECK_EQ_INT(log_count, 1);
    /* A composite, and a fallback. */
    struct writer w_comp = { 1, -1, 0, NULL, OPREG_OK, 0 };
    CHECK_OK(opreg_library_impl_fn(lib, "comp", OPREG_KEY_COMPOSITE, writer_kernel, &w_comp));
    v[1] = opreg_tensor_value(in);
    CHECK_OK(opreg_call_boxed(find("t::comp"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 2);
    CHECK_CONTAINS(log_last, "t::comp on CPU wrote its read-only argument 'input' (composite "
                             "kernel registered at p.c:11 by library t)");
    opreg_library_close(lib);
    CHECK_OK(opreg_library_create(&fb, reg, OPREG_LIBRARY_IMPL, "t", OPREG_KEY_CPU, "f.c", 2));
    opreg_kernel k = { writer_kernel, &w_comp, NULL, 0 };
    CHECK_OK(opreg_library_fallback(fb, OPREG_KEY_CPU, &k));
    CHECK_OK(opreg_call_boxed(find("t::comp"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 3);
    CHECK_CONTAINS(log_last, "(fallback kernel registered at f.c:2 by library t)");
    opreg_library_close(fb);
    opreg_registry_reclaim(reg);
    opreg_tensor_free(out);
    opreg_tensor_free(in);
    opreg_tensor_free(narrow);
}

/* A device whose memory the host cannot read: its "data" is a handle to a
 * host buffer that only copy_to_host reads. */
static int copies;

static opreg_status dev_alloc(void *ctx, void **out, size_t bytes, int id) {
    (void)ctx;
    (void)id;
    *out = calloc(1, bytes ? bytes : 1);
    return *out ? OPREG_OK : OPREG_ERR_OUT_OF_MEMORY;
}

static void dev_free(void *ctx, void *p, size_t bytes, int id) {
    (void)ctx;
    (void)bytes;
    (void)id;
    free(p);
}

static opreg_status dev_to_host(void *ctx, void *dst, const void *src, size_t off, size_t bytes,
                                int id) {
    (void)ctx;
    (void)id;
    copies++;
    memcpy(dst, (const char *)src + off, bytes);
    return OPREG_OK;
}

TEST(devices_are_read_through_their_copy) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    opreg_backend be = { .struct_size = sizeof be,
                         .abi_version = OPREG_BACKEND_ABI_VERSION,
                         .name = "mutdev",
                         .device_type = 40,
                         .alloc = dev_alloc,
                         .free = dev_free,
                         .flags = OPREG_BACKEND_DATA_IS_HANDLE,
                         .copy_to_host = dev_to_host };
    opreg_backend blind = be;
    blind.name = "blinddev";
    blind.device_type = 41;
    blind.copy_to_host = NULL;
    opreg_dispatch_key key, bkey;
    CHECK_OK(opreg_key_register(&key, &be));
    CHECK_OK(opreg_key_register(&bkey, &blind));
    opreg_library *lib, *blib;
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "t", key, "dev.c", 5));
    CHECK_OK(opreg_library_create(&blib, reg, OPREG_LIBRARY_IMPL, "t", bkey, "blind.c", 5));
    struct writer w_dev = { 1, -1, 0, NULL, OPREG_OK, 0 };
    CHECK_OK(opreg_library_impl_fn(lib, "bad", OPREG_KEY_NONE, writer_kernel, &w_dev));
    CHECK_OK(opreg_library_impl_fn(blib, "bad", OPREG_KEY_NONE, writer_kernel, &w_dev));
    DLTensor *out, *in, *view;
    int64_t shape[2] = { 512, 1024 }; /* 2 MiB: more than one copy each way */
    CHECK_OK(opreg_tensor_empty(&out, (DLDevice){ 40, 0 }, OPREG_DTYPE_F32, 2, shape));
    CHECK_OK(opreg_tensor_empty(&in, (DLDevice){ 40, 0 }, OPREG_DTYPE_F32, 2, shape));
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    copies = 0;
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "t::bad on mutdev wrote its read-only argument 'input' (kernel "
                             "registered at dev.c:5 by library t)");
    CHECK(copies >= 4);
    /* A strided view on the device: its span is copied once, then walked. */
    int64_t vshape[2] = { 2, 3 }, vstrides[2] = { 1024, 2 };
    CHECK_OK(opreg_tensor_view(&view, in, 2, vshape, vstrides, 4));
    v[1] = opreg_tensor_value(view);
    w_dev.byte = 2 * 4 + 1; /* element [0][1] of the view */
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 2);
    w_dev.byte = 4; /* between its elements */
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 2);
    /* No copy to the host: not checked, and said once (at INFO). */
    DLTensor *bout, *bin;
    CHECK_OK(opreg_tensor_empty(&bout, (DLDevice){ 41, 0 }, OPREG_DTYPE_F32, 2, shape));
    CHECK_OK(opreg_tensor_empty(&bin, (DLDevice){ 41, 0 }, OPREG_DTYPE_F32, 2, shape));
    v[0] = opreg_tensor_value(bout);
    v[1] = opreg_tensor_value(bin);
    w_dev.byte = 0;
    reset_log();
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_OK(opreg_call_boxed(find("t::bad"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(w_dev.calls, 5);
    CHECK_EQ_INT(log_count, 1);
    CHECK_CONTAINS(log_last, "tensors on blinddev are not checked");
    opreg_tensor_free(view);
    opreg_tensor_free(out);
    opreg_tensor_free(in);
    opreg_tensor_free(bout);
    opreg_tensor_free(bin);
    opreg_library_close(lib);
    opreg_library_close(blib);
}

TEST(off_again_restores_the_kernels) {
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    const opreg_op *op = find("t::bad");
    const opreg_dispatch_table *tab =
        atomic_load(&((const struct opreg_op_head *)(const void *)op)->table);
    CHECK(tab->by_device_type[kDLCPU].fn != writer_kernel);
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_OFF));
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_OFF)); /* no change */
    tab = atomic_load(&((const struct opreg_op_head *)(const void *)op)->table);
    CHECK(tab->by_device_type[kDLCPU].fn == writer_kernel);
    CHECK(tab->by_device_type[kDLCPU].context == (void *)&w_in);
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    reset_log();
    CHECK_OK(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 0);
    /* Ops defined while it is on are guarded from their first table. */
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_REPORT));
    CHECK_OK(opreg_library_def(NULL, def, "late(Tensor! out, Tensor input) -> ()"));
    CHECK_OK(opreg_library_impl_fn(cpu, "late", OPREG_KEY_NONE, writer_kernel, &w_in));
    CHECK_OK(opreg_call_boxed(find("t::late"), v, 2, NULL, 0, NULL, 0));
    CHECK_EQ_INT(log_count, 1);
    CHECK_OK(opreg_registry_set_mutation_check(reg, OPREG_MUTATION_OFF));
    opreg_registry_reclaim(reg);
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

TEST(environment_variable) {
    static const struct {
        const char *value;
        opreg_mutation_mode mode;
        bool warns;
    } cases[] = {
        { "1", OPREG_MUTATION_REPORT, false },  { "report", OPREG_MUTATION_REPORT, false },
        { "fail", OPREG_MUTATION_FAIL, false }, { "0", OPREG_MUTATION_OFF, false },
        { "off", OPREG_MUTATION_OFF, false },   { "bogus", OPREG_MUTATION_OFF, true }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("OPREG_CHECK_MUTATION", cases[i].value, 1);
        reset_log();
        opreg_registry *r = NULL;
        CHECK_OK(opreg_registry_create(&r));
        CHECK_EQ_INT(opreg_registry_mutation_check(r), cases[i].mode);
        CHECK_EQ_INT(log_count, cases[i].warns ? 1 : 0);
        if (cases[i].warns) CHECK_CONTAINS(log_last, "OPREG_CHECK_MUTATION='bogus' is ignored");
        opreg_registry_destroy(r);
    }
    unsetenv("OPREG_CHECK_MUTATION");
    /* A registry made with it on guards its ops. */
    setenv("OPREG_CHECK_MUTATION", "fail", 1);
    opreg_registry *r = NULL;
    opreg_library *l = NULL;
    CHECK_OK(opreg_registry_create(&r));
    unsetenv("OPREG_CHECK_MUTATION");
    CHECK_OK(opreg_library_create(&l, r, OPREG_LIBRARY_DEF, "e", OPREG_KEY_CPU, "e.c", 1));
    CHECK_OK(opreg_library_def(NULL, l, "bad(Tensor! out, Tensor input) -> ()"));
    CHECK_OK(opreg_library_impl_fn(l, "bad", OPREG_KEY_NONE, writer_kernel, &w_in));
    const opreg_op *op = NULL;
    CHECK_OK(opreg_op_find(&op, r, "e::bad"));
    DLTensor *out = cpu_f32(4, 8), *in = cpu_f32(4, 8);
    opreg_value v[2] = { opreg_tensor_value(out), opreg_tensor_value(in) };
    CHECK_STATUS(opreg_call_boxed(op, v, 2, NULL, 0, NULL, 0), OPREG_ERR_MUTATION);
    CHECK_CONTAINS(opreg_last_error(), "e::bad on CPU wrote its read-only argument 'input' "
                                       "(kernel registered at e.c:1 by library e)");
    opreg_registry_destroy(r);
    opreg_tensor_free(out);
    opreg_tensor_free(in);
}

int main(void) {
    if (setup() != 0) {
        fprintf(stderr, "setup failed: %s\n", opreg_last_error());
        return 1;
    }
    RUN(off_by_default);
    RUN(report_names_op_key_argument_and_place);
    RUN(fail_mode_fails_the_call);
    RUN(list_items_are_checked);
    RUN(strided_view_padding_is_not_the_view);
    RUN(large_tensors_every_byte_counts);
    RUN(an_output_aliasing_an_input_is_not_a_violation);
    RUN(meta_and_dataless_tensors_are_skipped);
    RUN(typed_and_unboxed_calls_are_checked);
    RUN(providers_composites_and_fallbacks_are_named);
    RUN(devices_are_read_through_their_copy);
    RUN(off_again_restores_the_kernels);
    RUN(environment_variable);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_DEBUG);
    opreg_library_close(cpu);
    opreg_library_close(def);
    opreg_registry_destroy(reg);
    return test_summary();
}
