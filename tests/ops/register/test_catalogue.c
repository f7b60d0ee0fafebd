/* The op catalogue in the default registry: every op defined with vLLM's
 * schema, Meta kernels that check like the real ones and shape linear's
 * result, and Reference kernels chosen explicitly. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "test.h"

#include <math.h>

static const char *const ops[] = {
    "rms_norm",
    "fused_add_rms_norm",
    "silu_and_mul",
    "gelu_and_mul",
    "gelu_tanh_and_mul",
    "gelu_new",
    "gelu_fast",
    "gelu_quick",
    "rotary_embedding",
    "batched_rotary_embedding",
    "reshape_and_cache",
    "reshape_and_cache_flash",
    "copy_blocks",
    "swap_blocks",
    "static_scaled_fp8_quant",
    "dynamic_scaled_fp8_quant",
    "static_scaled_int8_quant",
    "dynamic_scaled_int8_quant",
    "moe_align_block_size",
    "topk_softmax",
    "paged_attention_v1",
    "cutlass_scaled_mm",
    "linear",
};
#define NOPS (sizeof ops / sizeof ops[0])

static const opreg_op *find(const char *name) {
    char full[160];
    snprintf(full, sizeof full, "_C::%s", name);
    const opreg_op *op = NULL;
    opreg_op_find(&op, opreg_registry_default(), full);
    return op;
}

TEST(every_op_is_defined) {
    CHECK(opreg_registry_default() != NULL);
    for (size_t i = 0; i < NOPS; i++) {
        const opreg_op *op = find(ops[i]);
        if (!op) TEST_FAIL_AT("_C::%s is not defined: %s", ops[i], opreg_last_error());
        CHECK(op != NULL);
        CHECK(opreg_op_is_defined(op));
    }
    const opreg_op *linear = find("linear");
    char text[256];
    opreg_schema_format(opreg_op_schema(linear), OPREG_SCHEMA_CANONICAL, text, sizeof text);
    CHECK_EQ_STR(text, "_C::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
}

/* Each op's schema is the one vLLM passes to ops.def, read from the corpus. */
TEST(schemas_are_vllms) {
    FILE *f = fopen(OPREG_CORPUS_DIR "/vllm.schemas", "r");
    if (!f) {
        printf("corpus not found: schema comparison skipped\n");
        return;
    }
    char line[4096];
    size_t matched = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char name[120];
        size_t n = strcspn(line, "(");
        if (n >= sizeof name) continue;
        memcpy(name, line, n);
        name[n] = '\0';
        const opreg_op *op = find(name);
        if (!op) continue;
        char qualified[4200];
        snprintf(qualified, sizeof qualified, "_C::%s", line);
        opreg_schema *s;
        CHECK_EQ_INT(opreg_schema_parse(&s, qualified, strlen(qualified), 0, NULL), OPREG_OK);
        bool same = opreg_schema_equal(s, opreg_op_schema(op));
        opreg_schema_free(s);
        if (!same) TEST_FAIL_AT("_C::%s differs from vLLM's schema", name);
        CHECK(same);
        matched++;
    }
    fclose(f);
    /* vllm.schemas has every catalogue op but opreg's own linear. */
    CHECK(matched >= NOPS - 1);
}

TEST(meta_checks_and_shapes) {
    int64_t x_shape[2] = { 4, 64 }, w_shape[1] = { 64 }, bad_w[1] = { 32 };
    DLTensor *out, *x, *w, *wb;
    CHECK_EQ_INT(opreg_tensor_empty_meta(&out, OPREG_DTYPE_BF16, 2, x_shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_meta(&x, OPREG_DTYPE_BF16, 2, x_shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_meta(&w, OPREG_DTYPE_BF16, 1, w_shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_meta(&wb, OPREG_DTYPE_BF16, 1, bad_w), OPREG_OK);
    opreg_value args[4] = { opreg_tensor_value(out), opreg_tensor_value(x), opreg_tensor_value(w),
                            opreg_float_value(1e-6) };
    CHECK_EQ_INT(opreg_call_boxed(find("rms_norm"), args, 4, NULL, 0, NULL, 0), OPREG_OK);
    args[2] = opreg_tensor_value(wb);
    CHECK_EQ_INT(opreg_call_boxed(find("rms_norm"), args, 4, NULL, 0, NULL, 0), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "weight");

    /* linear on Meta: a Meta result of shape [4, 16], bias absent. */
    int64_t lw_shape[2] = { 16, 64 };
    DLTensor *lw;
    CHECK_EQ_INT(opreg_tensor_empty_meta(&lw, OPREG_DTYPE_BF16, 2, lw_shape), OPREG_OK);
    opreg_value largs[2] = { opreg_tensor_value(x), opreg_tensor_value(lw) };
    opreg_value ret;
    CHECK_EQ_INT(opreg_call_boxed(find("linear"), largs, 2, NULL, 0, &ret, 1), OPREG_OK);
    CHECK_EQ_INT(ret.kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(ret.u.tensor->device.device_type, OPREG_DEVICE_META);
    CHECK(ret.u.tensor->data == NULL);
    CHECK_EQ_INT(ret.u.tensor->ndim, 2);
    CHECK_EQ_INT(ret.u.tensor->shape[0], 4);
    CHECK_EQ_INT(ret.u.tensor->shape[1], 16);
    opreg_tensor_free(ret.u.tensor);
    opreg_tensor_free(out);
    opreg_tensor_free(x);
    opreg_tensor_free(w);
    opreg_tensor_free(wb);
    opreg_tensor_free(lw);
}

TEST(reference_kernels_by_key) {
    enum { R = 3, H = 5 };
    int64_t shape[2] = { R, H }, wshape[1] = { H };
    DLTensor *out, *x, *w;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&out, OPREG_DTYPE_F32, 2, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&x, OPREG_DTYPE_F32, 2, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&w, OPREG_DTYPE_F32, 1, wshape), OPREG_OK);
    float *xd = x->data, *wd = w->data, *od = out->data;
    for (int i = 0; i < R * H; i++)
        xd[i] = (float)(i % 7) - 2.5f;
    for (int j = 0; j < H; j++)
        wd[j] = 0.5f + (float)j;
    opreg_value args[4] = { opreg_tensor_value(out), opreg_tensor_value(x), opreg_tensor_value(w),
                            opreg_float_value(1e-5) };
    CHECK_EQ_INT(
        opreg_call_boxed_key(find("rms_norm"), OPREG_KEY_REFERENCE, args, 4, NULL, 0, NULL, 0),
        OPREG_OK);
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int j = 0; j < H; j++)
            ss += (double)xd[r * H + j] * xd[r * H + j];
        double inv = 1.0 / sqrt(ss / H + 1e-5);
        for (int j = 0; j < H; j++) {
            double want = (double)(float)(xd[r * H + j] * inv) * wd[j];
            if (fabs(od[r * H + j] - want) > 1e-5 * (1 + fabs(want)))
                TEST_FAIL_AT("rms_norm[%d][%d] = %g, want %g", r, j, od[r * H + j], want);
        }
    }
    /* linear returns a new CPU tensor, owned by the caller. */
    int64_t lw_shape[2] = { 2, H };
    DLTensor *lw;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&lw, OPREG_DTYPE_F32, 2, lw_shape), OPREG_OK);
    float *lwd = lw->data;
    for (int i = 0; i < 2 * H; i++)
        lwd[i] = (float)i * 0.25f;
    opreg_value largs[2] = { opreg_tensor_value(x), opreg_tensor_value(lw) };
    opreg_value ret;
    CHECK_EQ_INT(
        opreg_call_boxed_key(find("linear"), OPREG_KEY_REFERENCE, largs, 2, NULL, 0, &ret, 1),
        OPREG_OK);
    CHECK_EQ_INT(ret.u.tensor->shape[0], R);
    CHECK_EQ_INT(ret.u.tensor->shape[1], 2);
    const float *rd = ret.u.tensor->data;
    for (int r = 0; r < R; r++)
        for (int n = 0; n < 2; n++) {
            double want = 0;
            for (int k = 0; k < H; k++)
                want += (double)xd[r * H + k] * lwd[n * H + k];
            if (fabs(rd[r * 2 + n] - want) > 1e-5 * (1 + fabs(want)))
                TEST_FAIL_AT("linear[%d][%d] = %g, want %g", r, n, rd[r * 2 + n], want);
        }
    opreg_tensor_free(ret.u.tensor);
    opreg_tensor_free(lw);
    opreg_tensor_free(out);
    opreg_tensor_free(x);
    opreg_tensor_free(w);
}

int main(void) {
    RUN(every_op_is_defined);
    RUN(schemas_are_vllms);
    RUN(meta_checks_and_shapes);
    RUN(reference_kernels_by_key);
    return test_summary();
}
