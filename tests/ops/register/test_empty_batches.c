/* Empty batches: every op of the catalogue with zero tokens (zero sequences,
 * zero block pairs, zero layers) on every key that has a kernel and can run
 * here (Reference, Meta, CPU, CUDA where a GPU is present, and a plugin's
 * keys, such as OpenCL's when the default registry loaded it through
 * OPREG_PLUGIN_PATH). Serving engines make such calls for an empty decode
 * or prefill step; as in PyTorch and vLLM, each is OK and a no-op: every
 * byte of every argument is as it was. The strides of the empty tensors are
 * deliberately odd (0 in every dimension, as some exporters write for
 * size-0 tensors), since a stride is irrelevant where a size is 0.
 *
 * moe_align_block_size is the one op whose outputs mean something for zero
 * tokens (the padded count is 0); it is checked for that instead. */
#include "test.h"
#include "ops/register/catalogue.h"
#include "opreg/inputs.h"

#include <stdio.h>
#include <string.h>

typedef struct empty_case {
    const char *op, *shape;
} empty_case;

static const empty_case cases[] = {
    { "rms_norm", "tokens=0,hidden=64" },
    { "rms_norm", "tokens=0,hidden=64,row_pad=8" },
    { "fused_add_rms_norm", "tokens=0,hidden=64" },
    { "silu_and_mul", "tokens=0,hidden=64" },
    { "gelu_and_mul", "tokens=0,hidden=64" },
    { "gelu_tanh_and_mul", "tokens=0,hidden=64" },
    { "gelu_new", "tokens=0,hidden=64" },
    { "gelu_fast", "tokens=0,hidden=64" },
    { "gelu_quick", "tokens=0,hidden=64" },
    { "rotary_embedding", "tokens=0,heads=4,kv_heads=2,head_size=64,max_pos=16" },
    { "batched_rotary_embedding", "tokens=0,heads=4,kv_heads=2,head_size=64,max_pos=16" },
    { "reshape_and_cache", "tokens=0,kv_heads=2,head_size=32,blocks=4,block_size=8" },
    { "reshape_and_cache_flash", "tokens=0,kv_heads=2,head_size=32,blocks=4,block_size=8" },
    { "copy_blocks", "pairs=0,kv_heads=2,head_size=32,blocks=4,block_size=8,layers=2" },
    { "copy_blocks", "pairs=2,kv_heads=2,head_size=32,blocks=4,block_size=8,layers=0" },
    { "swap_blocks", "pairs=0,kv_heads=2,head_size=32,blocks=4,block_size=8" },
    { "static_scaled_fp8_quant", "tokens=0,hidden=64" },
    { "dynamic_scaled_fp8_quant", "tokens=0,hidden=64" },
    { "static_scaled_int8_quant", "tokens=0,hidden=64" },
    { "dynamic_scaled_int8_quant", "tokens=0,hidden=64" },
    { "moe_align_block_size", "tokens=0,topk=2,experts=8,block_size=16" },
    { "topk_softmax", "tokens=0,experts=8,topk=2" },
    { "paged_attention_v1",
      "seqs=0,heads=4,kv_heads=2,head_size=64,max_seq_len=16,block_size=8,blocks=4" },
    { "cutlass_scaled_mm", "tokens=0,hidden=32,out_features=16" },
    { "cutlass_scaled_mm", "tokens=0,hidden=32,out_features=16,fp8=1,per_token=1" },
    { "linear", "tokens=0,hidden=32,out_features=16" },
    { "linear", "tokens=0,hidden=32,out_features=16,bias=0" },
};

/* Give every tensor with no element the strides 0 (its bytes stay). */
static void zero_strides_of_empty(opreg_inputs *in) {
    const opreg_value *args = opreg_inputs_args(in);
    for (size_t i = 0; i < opreg_inputs_nargs(in); i++) {
        DLTensor *t = args[i].kind == OPREG_VALUE_TENSOR ? args[i].u.tensor : NULL;
        if (t && t->strides && opreg_tensor_numel(t) == 0)
            for (int d = 0; d < t->ndim; d++)
                t->strides[d] = 0;
    }
}

/* Element @p i (in row-major order over the shape) of @p t, as bytes. */
static const unsigned char *element(const DLTensor *t, int64_t i, size_t es) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d], idx = i % n, stride = 1;
        i /= n;
        if (t->strides)
            stride = t->strides[d];
        else
            for (int e = d + 1; e < t->ndim; e++)
                stride *= t->shape[e];
        off += idx * stride;
    }
    return (const unsigned char *)t->data + t->byte_offset + (size_t)off * es;
}

static bool same_bytes(const DLTensor *a, const DLTensor *b) {
    size_t es = (size_t)(a->dtype.bits / 8) * a->dtype.lanes;
    int64_t n = opreg_tensor_numel(a);
    if (n != opreg_tensor_numel(b)) return false;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(element(a, i, es), element(b, i, es), es) != 0) return false;
    return true;
}

/* Every tensor argument (and every tensor of a list) of @p a is
 * byte-identical to @p b's; names the first that is not. */
static bool unchanged(const opreg_inputs *a, const opreg_inputs *b, char *why, size_t cap) {
    const opreg_value *x = opreg_inputs_args(a), *y = opreg_inputs_args(b);
    for (size_t i = 0; i < opreg_inputs_nargs(a); i++) {
        if (x[i].kind == OPREG_VALUE_TENSOR && !same_bytes(x[i].u.tensor, y[i].u.tensor)) {
            snprintf(why, cap, "argument %zu changed", i);
            return false;
        }
        if (x[i].kind == OPREG_VALUE_TENSOR_LIST)
            for (size_t j = 0; j < x[i].u.tensors.len; j++)
                if (!same_bytes(x[i].u.tensors.items[j], y[i].u.tensors.items[j])) {
                    snprintf(why, cap, "argument %zu[%zu] changed", i, j);
                    return false;
                }
    }
    return true;
}

/* The device a key's kernels take tensors on, or false for none here. */
static bool device_of_key(opreg_dispatch_key key, DLDevice *dev) {
    const opreg_backend *b = opreg_key_backend(key);
    if (key == OPREG_KEY_REFERENCE || key == OPREG_KEY_META) {
        *dev = (DLDevice){ kDLCPU, 0 };
        return true;
    }
    if (!b || !opreg_key_is_available(key, NULL, 0)) return false;
    *dev = (DLDevice){ (DLDeviceType)b->device_type, 0 };
    return opreg_inputs_device_reachable(*dev);
}

static int runs;

static void run_case(const opreg_op *op, const char *name, opreg_dispatch_key key, int dtype,
                     const char *shape_text) {
    opreg_sizes shape;
    opreg_inputs *base = NULL, *host = NULL, *dev_in = NULL;
    char err[256] = "", why[128] = "";
    DLDevice dev;
    const char *dt = opreg_dtype_name((opreg_dtype)dtype), *kn = opreg_key_name(key);
    if (!device_of_key(key, &dev)) return;
    if (opreg_sizes_parse(&shape, shape_text, err, sizeof err) != 0 ||
        opreg_inputs_build(&base, op, dtype, &shape, 7, err, sizeof err) != OPREG_OK) {
        TEST_FAIL_AT("%s %s %s: building inputs: %s %s", name, dt, shape_text, err,
                     opreg_last_error());
        return;
    }
    zero_strides_of_empty(base);
    CHECK_EQ_INT(opreg_inputs_clone(&host, base), OPREG_OK);
    bool on_host = dev.device_type == kDLCPU;
    if (host && !on_host) {
        /* swap_blocks takes its mapping on the host */
        uint32_t host_args = strcmp(name, "_C::swap_blocks") == 0 ? 1u << 2 : 0;
        CHECK_EQ_INT(opreg_inputs_to_device(&dev_in, host, dev, host_args), OPREG_OK);
    }
    opreg_inputs *in = on_host ? host : dev_in;
    if (in) {
        opreg_status st =
            opreg_call_boxed_key(op, key, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                 opreg_inputs_rets(in), opreg_inputs_nrets(in));
        if (st != OPREG_OK)
            TEST_FAIL_AT("%s %s %s on %s: %s: %s", name, dt, shape_text, kn, opreg_status_name(st),
                         opreg_last_error());
        else if (!on_host && opreg_inputs_fetch(host, in) != OPREG_OK)
            TEST_FAIL_AT("%s on %s: fetching the results: %s", name, kn, opreg_last_error());
        else if (strcmp(name, "_C::moe_align_block_size") == 0) {
            /* num_tokens_post_pad (argument 5) is 0 for no token */
            const DLTensor *post = opreg_inputs_args(host)[5].u.tensor;
            if (key != OPREG_KEY_META && ((const int32_t *)post->data)[0] != 0)
                TEST_FAIL_AT("%s on %s: num_tokens_post_pad %d for no token", name, kn,
                             ((const int32_t *)post->data)[0]);
        } else if (!unchanged(host, base, why, sizeof why))
            TEST_FAIL_AT("%s %s %s on %s: an empty call wrote memory: %s", name, dt, shape_text, kn,
                         why);
        runs++;
    }
    opreg_inputs_free(dev_in);
    opreg_inputs_free(host);
    opreg_inputs_free(base);
}

TEST(every_op_accepts_an_empty_batch_on_every_key) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const opreg_generator *e = opreg__catalogue_generators;
        const opreg_op *op = NULL;
        char full[96];
        while (e->name && strcmp(e->name, cases[c].op) != 0)
            e++;
        snprintf(full, sizeof full, "_C::%s", cases[c].op);
        CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), full), OPREG_OK);
        if (!e->name || !op) continue;
        for (opreg_dispatch_key key = 0; key < opreg_key_count(); key++) {
            if (opreg_op_kernel_kind(op, key) != OPREG_KERNEL_DIRECT) continue;
            for (int dt = 0; dt < 32; dt++)
                if (e->dtypes & (1u << dt)) run_case(op, full, key, dt, cases[c].shape);
        }
    }
    printf("  %d empty calls, each OK and a no-op\n", runs);
    CHECK(runs > 0);
}

/* Every op of the catalogue has an empty case above. */
TEST(cases_cover_the_catalogue) {
    for (const opreg_generator *e = opreg__catalogue_generators; e->name; e++) {
        bool found = false;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            found |= strcmp(cases[c].op, e->name) == 0;
        if (!found) TEST_FAIL_AT("no empty case for %s", e->name);
    }
}

int main(void) {
    RUN(cases_cover_the_catalogue);
    RUN(every_op_accepts_an_empty_batch_on_every_key);
    return test_summary();
}
