/* The CUDA backend as a program sees it: availability and its reason, the
 * support queries, the per-thread current stream, and errors. Without a
 * device (or without the backend) it checks that everything says so; with
 * one, it checks allocation, copies, a returned tensor (linear), the mixed
 * devices of swap_blocks, and the mapping of a CUDA error. */
#define _POSIX_C_SOURCE 200809L
#include "cuda_test.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static const DLDevice cuda0 = { kDLCUDA, 0 };

static void *other_thread(void *arg) {
    *(void **)arg = opreg_cuda_stream(0);
    return NULL;
}

TEST(streams_are_per_thread_and_per_device) {
    void *mine = (void *)(uintptr_t)0x1234, *seen = (void *)1;
    CHECK(opreg_cuda_stream(0) == NULL);
    CHECK_EQ_INT(opreg_cuda_set_stream(0, mine), OPREG_OK);
    CHECK(opreg_cuda_stream(0) == mine);
    CHECK(opreg_cuda_stream(1) == NULL);
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, other_thread, &seen), 0);
    pthread_join(th, NULL);
    CHECK(seen == NULL);
    CHECK_EQ_INT(opreg_cuda_set_stream(-1, NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "device -1 is outside 0..63");
    CHECK_EQ_INT(opreg_cuda_set_stream(OPREG_CUDA_MAX_DEVICES, NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(opreg_cuda_stream(OPREG_CUDA_MAX_DEVICES) == NULL);
    CHECK_EQ_INT(opreg_cuda_set_stream(0, NULL), OPREG_OK);
}

TEST(every_op_has_a_cuda_kernel) {
#ifdef OPREG_HAVE_CUDA
    opreg_registry *reg = opreg_registry_default();
    int n = 0;
    CHECK(reg != NULL);
    for (size_t k = 0; k < opreg_registry_num_ops(reg); k++) {
        const opreg_op *op = opreg_registry_op(reg, k);
        if (!opreg_op_is_defined(op) || strncmp(opreg_op_name(op), "_C::", 4) != 0) continue;
        if (opreg_op_kernel_kind(op, OPREG_KEY_CUDA) != OPREG_KERNEL_DIRECT)
            TEST_FAIL_AT("%s has no CUDA kernel", opreg_op_name(op));
        n++;
    }
    CHECK_EQ_INT(n, 23);
#else
    printf("the CUDA backend is not built: no CUDA kernels to look for\n");
#endif
}

TEST(without_a_device_everything_says_so) {
    char why[256];
    if (opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why)) return; /* a GPU is here */
    opreg_registry *reg = opreg_registry_default();
    CHECK(reg != NULL);
#ifdef OPREG_HAVE_CUDA
    CHECK_CONTAINS(why, "no CUDA device is present");
#else
    CHECK_CONTAINS(why, "opreg was built without the CUDA backend");
#endif
    CHECK(!opreg_is_op_supported_on(reg, "_C::rms_norm", cuda0));
    opreg_support_info info;
    CHECK_EQ_INT(opreg_explain_support(&info, reg, "_C::rms_norm", &cuda0), OPREG_OK);
    CHECK(!info.supported);
    CHECK_EQ_INT(info.reason, OPREG_SUPPORT_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(info.message, "the CUDA backend is unavailable");
#ifdef OPREG_HAVE_CUDA
    CHECK_CONTAINS(info.message, "no CUDA device is present");
    CHECK_CONTAINS(info.message, "(a kernel is registered)");
#endif
    CHECK_EQ_INT(opreg_cuda_synchronize(0), OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(opreg_last_error(), "opreg_cuda_synchronize: the CUDA backend is unavailable");
    char buf[4] = "abc", dst[4];
    CHECK_EQ_INT(opreg_cuda_memcpy(dst, buf, 4, 0), OPREG_ERR_BACKEND_UNAVAILABLE);
    DLTensor *t = NULL;
    int64_t n = 4;
    CHECK_EQ_INT(opreg_tensor_empty(&t, cuda0, OPREG_DTYPE_F32, 1, &n),
                 OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK(t == NULL);
#ifdef OPREG_HAVE_CUDA
    /* tensors that claim to be on the GPU reach the CUDA kernel, which
     * refuses them after the checks, before touching CUDA */
    float x[4] = { 1, 2, 3, 4 }, y[4], w[4] = { 1, 1, 1, 1 };
    int64_t shape[1] = { 4 };
    DLTensor tx = { x, cuda0, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    DLTensor ty = tx, tw = tx;
    ty.data = y, tw.data = w;
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, reg, "_C::rms_norm"), OPREG_OK);
    opreg_value args[4] = { opreg_tensor_value(&ty), opreg_tensor_value(&tx),
                            opreg_tensor_value(&tw), opreg_float_value(1e-6) };
    CHECK_EQ_INT(opreg_call_boxed(op, args, 4, NULL, 0, NULL, 0), OPREG_ERR_BACKEND_UNAVAILABLE);
    CHECK_CONTAINS(opreg_last_error(),
                   "_C::rms_norm: the CUDA backend is unavailable: no CUDA device is present");
    tw.dtype.bits = 64; /* a bad dtype is refused by the shared checks first */
    CHECK_EQ_INT(opreg_call_boxed(op, args, 4, NULL, 0, NULL, 0), OPREG_ERR_SHAPE);
    CHECK_CONTAINS(opreg_last_error(), "_C::rms_norm: argument 'weight'");
#endif
}

TEST(memory_copies_and_a_returned_tensor) {
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) return;
    const opreg_backend *be = opreg_key_backend(OPREG_KEY_CUDA);
    CHECK(be && be->device_count && be->device_count(be->context) >= 1);
    int64_t n = 1000;
    DLTensor *d = NULL, *h = NULL, *back = NULL;
    CHECK_EQ_INT(opreg_tensor_empty(&d, cuda0, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&h, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&back, OPREG_DTYPE_F32, 1, &n), OPREG_OK);
    for (int i = 0; i < n; i++)
        ((float *)h->data)[i] = (float)i;
    CHECK_EQ_INT(opreg_cuda_memcpy(d->data, h->data, 4000, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_memcpy(back->data, d->data, 4000, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_synchronize(0), OPREG_OK);
    CHECK(memcmp(h->data, back->data, 4000) == 0);

    /* linear returns a tensor from the CUDA allocator: [1, 1000] x [2, 1000]^T */
    int64_t ws[2] = { 2, 1000 }, is[2] = { 1, 1000 };
    DLTensor *w = NULL, *in = NULL;
    CHECK_EQ_INT(opreg_tensor_empty(&w, cuda0, OPREG_DTYPE_F32, 2, ws), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_view(&in, d, 2, is, NULL, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_memcpy(w->data, h->data, 4000, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_memcpy((char *)w->data + 4000, h->data, 4000, 0), OPREG_OK);
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), "_C::linear"), OPREG_OK);
    opreg_value args[3] = { opreg_tensor_value(in), opreg_tensor_value(w), opreg_none() };
    opreg_value ret = opreg_none();
    CHECK_EQ_INT(opreg_call_boxed(op, args, 3, NULL, 0, &ret, 1), OPREG_OK);
    CHECK_EQ_INT(ret.kind, OPREG_VALUE_TENSOR);
    CHECK_EQ_INT(ret.u.tensor->device.device_type, kDLCUDA);
    CHECK_EQ_INT(ret.u.tensor->shape[1], 2);
    float r[2];
    CHECK_EQ_INT(opreg_cuda_memcpy(r, ret.u.tensor->data, sizeof r, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_synchronize(0), OPREG_OK);
    double want = 0; /* sum of i^2, i < 1000 */
    for (int i = 0; i < 1000; i++)
        want += (double)i * i;
    CHECK(fabs(r[0] - want) <= 1e-4 * want && fabs(r[1] - want) <= 1e-4 * want);
    opreg_tensor_free(ret.u.tensor);
    opreg_tensor_free(in);
    opreg_tensor_free(w);
    opreg_tensor_free(d);
    opreg_tensor_free(h);
    opreg_tensor_free(back);
}

TEST(swap_blocks_takes_mixed_devices) {
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) return;
    int64_t shape[2] = { 4, 64 }, ms[2] = { 2, 2 };
    DLTensor *host = NULL, *dev = NULL, *back = NULL, *map = NULL;
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&host, OPREG_DTYPE_F32, 2, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&back, OPREG_DTYPE_F32, 2, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty(&dev, cuda0, OPREG_DTYPE_F32, 2, shape), OPREG_OK);
    CHECK_EQ_INT(opreg_tensor_empty_cpu(&map, OPREG_DTYPE_I64, 2, ms), OPREG_OK);
    for (int i = 0; i < 256; i++)
        ((float *)host->data)[i] = (float)i, ((float *)back->data)[i] = -1.0f;
    int64_t *m = map->data;
    m[0] = 0, m[1] = 3, m[2] = 2, m[3] = 1; /* host block 0 -> device 3, 2 -> 1 */
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), "_C::swap_blocks"), OPREG_OK);
    opreg_value in[3] = { opreg_tensor_value(host), opreg_tensor_value(dev),
                          opreg_tensor_value(map) };
    CHECK_EQ_INT(opreg_call_boxed(op, in, 3, NULL, 0, NULL, 0), OPREG_OK);
    m[0] = 3, m[1] = 0, m[2] = 1, m[3] = 2; /* and back: device 3 -> host 0, 1 -> 2 */
    opreg_value out[3] = { opreg_tensor_value(dev), opreg_tensor_value(back),
                           opreg_tensor_value(map) };
    CHECK_EQ_INT(opreg_call_boxed(op, out, 3, NULL, 0, NULL, 0), OPREG_OK);
    CHECK_EQ_INT(opreg_cuda_synchronize(0), OPREG_OK);
    const float *b = back->data;
    CHECK(b[0] == 0.0f && b[63] == 63.0f && b[128] == 128.0f && b[191] == 191.0f);
    CHECK(b[64] == -1.0f && b[192] == -1.0f);
    /* a pair outside the device tensor is refused before anything is copied */
    m[0] = 0, m[1] = 4;
    CHECK_EQ_INT(opreg_call_boxed(op, in, 3, NULL, 0, NULL, 0), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "destination block 4 of pair 0 is outside 0..3");
    opreg_tensor_free(host);
    opreg_tensor_free(back);
    opreg_tensor_free(dev);
    opreg_tensor_free(map);
}

TEST(cuda_errors_carry_cuda_text) {
    if (!opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) return;
    const opreg_backend *be = opreg_key_backend(OPREG_KEY_CUDA);
    if (be->device_count(be->context) >= OPREG_CUDA_MAX_DEVICES) return;
    CHECK_EQ_INT(opreg_cuda_synchronize(OPREG_CUDA_MAX_DEVICES - 1), OPREG_ERR_DEVICE);
    CHECK_CONTAINS(opreg_last_error(), "opreg_cuda_synchronize: cudaSetDevice: ");
    CHECK_CONTAINS(opreg_last_error(), "cudaErrorInvalidDevice");
}

int main(void) {
    RUN(streams_are_per_thread_and_per_device);
    RUN(every_op_has_a_cuda_kernel);
    RUN(without_a_device_everything_says_so);
    RUN(memory_copies_and_a_returned_tensor);
    RUN(swap_blocks_takes_mixed_devices);
    RUN(cuda_errors_carry_cuda_text);
    return test_summary();
}
