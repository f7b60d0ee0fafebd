/* Tensors and dtypes: DLPack codes (fp8 and bool included), CPU and Meta
 * tensors, views, contiguity, device names. */
#include <string.h>

#include "reg_helpers.h"

TEST(dtypes_map_to_dlpack_and_back) {
    static const struct {
        opreg_dtype d;
        uint8_t code, bits;
        const char *name;
    } t[] = {
        { OPREG_DTYPE_F32, kDLFloat, 32, "f32" },      { OPREG_DTYPE_F16, kDLFloat, 16, "f16" },
        { OPREG_DTYPE_BF16, kDLBfloat, 16, "bf16" },   { OPREG_DTYPE_F64, kDLFloat, 64, "f64" },
        { OPREG_DTYPE_I8, kDLInt, 8, "i8" },           { OPREG_DTYPE_U8, kDLUInt, 8, "u8" },
        { OPREG_DTYPE_I16, kDLInt, 16, "i16" },        { OPREG_DTYPE_I32, kDLInt, 32, "i32" },
        { OPREG_DTYPE_I64, kDLInt, 64, "i64" },        { OPREG_DTYPE_BOOL, 6, 8, "bool" },
        { OPREG_DTYPE_F8_E4M3FN, 10, 8, "f8_e4m3fn" }, { OPREG_DTYPE_F8_E5M2, 12, 8, "f8_e5m2" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        DLDataType dl = opreg_dtype_to_dlpack(t[i].d);
        CHECK_EQ_INT(dl.code, t[i].code);
        CHECK_EQ_INT(dl.bits, t[i].bits);
        CHECK_EQ_INT(dl.lanes, 1);
        opreg_dtype back;
        CHECK_OK(opreg_dtype_from_dlpack(&back, dl));
        CHECK_EQ_INT(back, t[i].d);
        CHECK_EQ_STR(opreg_dtype_name(t[i].d), t[i].name);
        CHECK_EQ_INT(opreg_dtype_size(t[i].d), t[i].bits / 8);
        CHECK_OK(opreg_dtype_from_name(&back, t[i].name));
        CHECK_EQ_INT(back, t[i].d);
    }
    opreg_dtype d;
    CHECK_OK(opreg_dtype_from_name(&d, "bfloat16"));
    CHECK_EQ_INT(d, OPREG_DTYPE_BF16);
    CHECK_OK(opreg_dtype_from_name(&d, "half"));
    CHECK_EQ_INT(d, OPREG_DTYPE_F16);
    CHECK_EQ_INT(OPREG_DTYPE_F32, 6); /* PyTorch's ScalarType numbers */
    CHECK_STATUS(opreg_dtype_from_name(&d, "f128"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "unknown dtype 'f128'");
    DLDataType vec = { kDLFloat, 32, 4 };
    CHECK_STATUS(opreg_dtype_from_dlpack(&d, vec), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "(code 2, bits 32, lanes 4) is not an opreg dtype");
    CHECK(opreg_dtype_name((opreg_dtype)99) == NULL);
    CHECK_EQ_INT(opreg_dtype_size((opreg_dtype)99), 0);
}

TEST(cpu_and_meta_tensors) {
    DLTensor *t, *m;
    int64_t shape[3] = { 2, 3, 5 };
    CHECK_OK(opreg_tensor_empty_cpu(&t, OPREG_DTYPE_BF16, 3, shape));
    CHECK(t->data != NULL);
    CHECK_EQ_INT((uintptr_t)t->data % 64, 0);
    CHECK_EQ_INT(t->device.device_type, kDLCPU);
    CHECK_EQ_INT(opreg_tensor_numel(t), 30);
    CHECK_EQ_INT(opreg_tensor_nbytes(t), 60);
    CHECK(opreg_tensor_is_contiguous(t));
    memset(t->data, 0, 60);
    CHECK_OK(opreg_tensor_empty_meta(&m, OPREG_DTYPE_F8_E5M2, 3, shape));
    CHECK(m->data == NULL);
    CHECK_EQ_INT(m->device.device_type, OPREG_DEVICE_META);
    CHECK_EQ_INT(m->shape[2], 5);
    opreg_tensor_free(m);
    /* A 0-d tensor and an empty one. */
    DLTensor *s, *e;
    CHECK_OK(opreg_tensor_empty_cpu(&s, OPREG_DTYPE_I64, 0, NULL));
    CHECK_EQ_INT(opreg_tensor_numel(s), 1);
    int64_t zero[1] = { 0 };
    CHECK_OK(opreg_tensor_empty_cpu(&e, OPREG_DTYPE_F32, 1, zero));
    CHECK_EQ_INT(opreg_tensor_numel(e), 0);
    opreg_tensor_free(s);
    opreg_tensor_free(e);
    /* Views share the data and do not free it. */
    DLTensor *v;
    int64_t vshape[2] = { 3, 2 }, vstrides[2] = { 5, 1 };
    CHECK_OK(opreg_tensor_view(&v, t, 2, vshape, vstrides, 2 * 2));
    CHECK(v->data == t->data);
    CHECK_EQ_INT(v->byte_offset, 4);
    CHECK(!opreg_tensor_is_contiguous(v));
    CHECK_EQ_INT(opreg_tensor_nbytes(v), (1 + 2 * 5 + 1) * 2);
    opreg_tensor_free(v);
    int64_t flat[1] = { 30 };
    CHECK_OK(opreg_tensor_view(&v, t, 1, flat, NULL, 0));
    CHECK(opreg_tensor_is_contiguous(v));
    opreg_tensor_free(v);
    opreg_tensor_free(t);
    opreg_tensor_free(NULL);
}

TEST(contiguity_ignores_size_one_dims) {
    int64_t shape[3] = { 4, 1, 8 }, strides[3] = { 8, 999, 1 };
    DLTensor t = { 0 };
    t.ndim = 3;
    t.shape = shape;
    t.strides = strides;
    CHECK(opreg_tensor_is_contiguous(&t));
    strides[2] = 2;
    CHECK(!opreg_tensor_is_contiguous(&t));
    CHECK(!opreg_tensor_is_contiguous(NULL));
}

TEST(tensor_errors) {
    DLTensor *t = (DLTensor *)1;
    int64_t bad[1] = { -1 };
    CHECK_STATUS(opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 1, bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(t == NULL);
    CHECK_CONTAINS(opreg_last_error(), "shape[0] is negative (-1)");
    CHECK_STATUS(opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 65, bad), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "ndim 65 is outside 0..64");
    CHECK_STATUS(opreg_tensor_empty_cpu(&t, (opreg_dtype)99, 0, NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "unknown dtype 99");
    DLDevice cuda = { kDLCUDA, 0 }, odd = { kDLVPI, 0 };
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) {
        CHECK_STATUS(opreg_tensor_empty(&t, cuda, OPREG_DTYPE_F32, 0, NULL),
                     OPREG_ERR_BACKEND_UNAVAILABLE);
        CHECK_CONTAINS(opreg_last_error(), "backend CUDA is unavailable: ");
        CHECK(strstr(opreg_last_error(), "opreg was built without the CUDA backend") ||
              strstr(opreg_last_error(), "no CUDA device is present"));
    }
    CHECK_STATUS(opreg_tensor_empty(&t, odd, OPREG_DTYPE_F32, 0, NULL),
                 OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(opreg_last_error(), "no backend handles device type 9");
    CHECK_STATUS(opreg_tensor_view(&t, NULL, 0, NULL, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "base is NULL");
}

TEST(device_names) {
    char buf[32];
    DLDevice d;
    CHECK_OK(opreg_device_parse(&d, "cuda:1"));
    CHECK(d.device_type == kDLCUDA && d.device_id == 1);
    opreg_device_format(d, buf, sizeof buf);
    CHECK_EQ_STR(buf, "cuda:1");
    CHECK_OK(opreg_device_parse(&d, "cpu"));
    opreg_device_format(d, buf, sizeof buf);
    CHECK_EQ_STR(buf, "cpu");
    CHECK_OK(opreg_device_parse(&d, "meta"));
    CHECK_EQ_INT(d.device_type, OPREG_DEVICE_META);
    opreg_device_format(d, buf, sizeof buf);
    CHECK_EQ_STR(buf, "meta");
    CHECK_STATUS(opreg_device_parse(&d, "tpu:0"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "device 'tpu:0': no backend named 'tpu'");
    CHECK_STATUS(opreg_device_parse(&d, "cuda:x"), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "the index after ':' must be a number");
    CHECK_STATUS(opreg_device_parse(&d, "composite"), OPREG_ERR_INVALID_ARGUMENT);
}

/* Shapes whose element count or byte size does not fit in int64_t are
 * refused, never allocated (an overflowed count wrapped to a small block
 * that the kernel then wrote past); a size of 0 makes any shape empty.
 * numel, nbytes and is_contiguous stay defined on such shapes. Found by
 * tests/fuzz/fuzz_call (linear's result shaped from a huge input). */
TEST(sizes_past_int64_refused) {
    DLTensor *t = (DLTensor *)1;
    int64_t square[3] = { (int64_t)1 << 40, (int64_t)1 << 40, 4 };
    int64_t bytes[2] = { (int64_t)1 << 61, 2 }; /* 2^62 elements, 2^64 bytes of f32 */
    int64_t empty[3] = { 0, (int64_t)1 << 40, (int64_t)1 << 40 };
    int64_t max[2] = { INT64_MAX, 2 };
    CHECK_STATUS(opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 3, square),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK(t == NULL);
    CHECK_CONTAINS(opreg_last_error(),
                   "the shape's element count of 4-byte elements does not fit in int64_t");
    CHECK_STATUS(opreg_tensor_empty_meta(&t, OPREG_DTYPE_F32, 2, max), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 2, bytes), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "byte size of 4-byte elements does not fit");
    CHECK_OK(opreg_tensor_empty_meta(&t, OPREG_DTYPE_U8, 2, bytes)); /* 2^62 bytes: fits */
    opreg_tensor_free(t);
    for (int meta = 0; meta < 2; meta++) {
        CHECK_OK(meta ? opreg_tensor_empty_meta(&t, OPREG_DTYPE_F32, 3, empty)
                      : opreg_tensor_empty_cpu(&t, OPREG_DTYPE_F32, 3, empty));
        CHECK_EQ_INT(opreg_tensor_numel(t), 0);
        CHECK_EQ_INT(opreg_tensor_nbytes(t), 0);
        opreg_tensor_free(t);
    }
    struct fake {
        DLTensor t;
        int64_t strides[3];
    } f;
    memset(&f, 0, sizeof f);
    f.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F32);
    f.t.ndim = 3;
    f.t.shape = square;
    CHECK_STATUS(opreg_tensor_view(&t, &f.t, 3, square, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(opreg_tensor_numel(&f.t), -1);
    CHECK(opreg_tensor_nbytes(&f.t) == SIZE_MAX);
    f.t.shape = empty;
    CHECK_EQ_INT(opreg_tensor_numel(&f.t), 0);
    int64_t negative[3] = { 2, -3, 4 };
    f.t.shape = negative;
    CHECK_EQ_INT(opreg_tensor_numel(&f.t), -1); /* a negative size */
    /* Strides that span past size_t saturate; INT64_MIN's magnitude is fine. */
    int64_t two[3] = { 2, 2, 2 };
    f.t.shape = two;
    f.t.strides = f.strides;
    f.strides[0] = INT64_MIN;
    f.strides[1] = INT64_MIN;
    f.strides[2] = 1;
    CHECK(opreg_tensor_nbytes(&f.t) == SIZE_MAX);
    CHECK(!opreg_tensor_is_contiguous(&f.t));
    f.t.shape = square; /* the strides' running product passes int64_t at the end */
    f.strides[0] = (int64_t)1 << 42;
    f.strides[1] = 4;
    f.strides[2] = 1;
    CHECK(opreg_tensor_is_contiguous(&f.t));
}

int main(void) {
    RUN(dtypes_map_to_dlpack_and_back);
    RUN(cpu_and_meta_tensors);
    RUN(contiguity_ignores_size_one_dims);
    RUN(tensor_errors);
    RUN(sizes_past_int64_refused);
    RUN(device_names);
    return test_summary();
}
