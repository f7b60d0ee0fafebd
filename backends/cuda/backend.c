/* The CUDA backend table: availability (a driver and a device), the device
 * count, a stream-ordered device allocator, the current stream,
 * synchronisation and copies to and from the host; and the mapping of CUDA
 * errors to opreg statuses. */
#include "backends/cuda/cuda_internal.h"
#include "common/internal.h"
#include "opreg/cuda.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

opreg_status opreg__cuda_status(int err, const char *op, const char *call) {
    cudaError_t e = (cudaError_t)err;
    if (e == cudaSuccess) return OPREG_OK;
    return opreg__fail(e == cudaErrorMemoryAllocation ? OPREG_ERR_OUT_OF_MEMORY : OPREG_ERR_DEVICE,
                       "%s: %s: %s (%s)", op, call, cudaGetErrorString(e), cudaGetErrorName(e));
}

opreg_status opreg__cuda_launched(const char *op, const char *kernel) {
    return opreg__cuda_status((int)cudaGetLastError(), op, kernel);
}

opreg_status opreg__cuda_scratch(void **out, size_t bytes, void *stream, const char *op) {
    *out = NULL;
    if (bytes == 0) return OPREG_OK;
    return opreg__cuda_status((int)cudaMallocAsync(out, bytes, (cudaStream_t)stream), op,
                              "cudaMallocAsync (scratch)");
}

opreg_status opreg__cuda_scratch_free(void *ptr, void *stream, const char *op) {
    if (!ptr) return OPREG_OK;
    return opreg__cuda_status((int)cudaFreeAsync(ptr, (cudaStream_t)stream), op,
                              "cudaFreeAsync (scratch)");
}

opreg_status opreg__cuda_copy_waited(void *dst, const void *src, size_t bytes, void *stream,
                                     const char *op) {
    if (bytes == 0) return OPREG_OK;
    OPREG__TRY(opreg__cuda_status(
        (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), op,
        "cudaMemcpyAsync"));
    return opreg__cuda_status((int)cudaStreamSynchronize((cudaStream_t)stream), op,
                              "cudaStreamSynchronize");
}

opreg_status opreg__cuda_enter(int device, int *prev, const char *op) {
    OPREG__TRY(opreg__cuda_status((int)cudaGetDevice(prev), op, "cudaGetDevice"));
    if (*prev == device) return OPREG_OK;
    return opreg__cuda_status((int)cudaSetDevice(device), op, "cudaSetDevice");
}

/* Restoring the caller's device cannot fail the op that already ran; a
 * failure is logged. */
void opreg__cuda_leave(int device, int prev) {
    cudaError_t e;
    if (prev == device) return;
    e = cudaSetDevice(prev);
    if (e != cudaSuccess)
        opreg__log(OPREG_LOG_WARN, "cuda: restoring device %d: cudaSetDevice: %s: %s", prev,
                   cudaGetErrorName(e), cudaGetErrorString(e));
}

/* ---- the table ---- */

static bool cuda_available(void *context, char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    (void)context;
    if (e != cudaSuccess) {
        if (why && cap)
            snprintf(why, cap, "no CUDA device is present (cudaGetDeviceCount: %s: %s)",
                     cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError(); /* the error is not sticky; leave none behind */
        return false;
    }
    if (n <= 0) {
        if (why && cap) snprintf(why, cap, "no CUDA device is present (0 devices)");
        return false;
    }
    return true;
}

static int cuda_device_count(void *context) {
    int n = 0;
    (void)context;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* Tensors that ops return (linear's) and opreg_tensor_empty() on a CUDA
 * device: stream-ordered memory from the device's default pool, ordered on
 * the thread's current stream, so a result can be allocated and freed
 * without a device-wide synchronisation. */
static opreg_status cuda_alloc(void *context, void **out, size_t bytes, int device_id) {
    int prev;
    void *stream = opreg__cuda_current_stream(device_id);
    (void)context;
    *out = NULL;
    OPREG__TRY(opreg__cuda_enter(device_id, &prev, "cuda allocator"));
    opreg_status st =
        opreg__cuda_status((int)cudaMallocAsync(out, bytes ? bytes : 1, (cudaStream_t)stream),
                           "cuda allocator", "cudaMallocAsync");
    opreg__cuda_leave(device_id, prev);
    return st;
}

static void cuda_free(void *context, void *ptr, size_t bytes, int device_id) {
    int prev;
    (void)context, (void)bytes;
    if (!ptr || opreg__cuda_enter(device_id, &prev, "cuda allocator") != OPREG_OK) return;
    cudaError_t e = cudaFreeAsync(ptr, (cudaStream_t)opreg__cuda_current_stream(device_id));
    if (e != cudaSuccess) /* free cannot return a status: log it */
        opreg__log(OPREG_LOG_WARN, "cuda allocator: cudaFreeAsync: %s: %s", cudaGetErrorName(e),
                   cudaGetErrorString(e));
    opreg__cuda_leave(device_id, prev);
}

static void *cuda_current_stream(void *context, int device_id) {
    (void)context;
    return opreg__cuda_current_stream(device_id);
}

static opreg_status cuda_synchronize(void *context, int device_id) {
    (void)context;
    return opreg_cuda_synchronize(device_id);
}

/* Host to device and back, for programs that build their data on the host
 * (the tool's inputs): queued on the device's current stream and waited
 * for, so the caller's host memory may be reused when the copy returns. */
static opreg_status cuda_copy(void *dst, const void *src, size_t bytes, int device_id,
                              const char *what) {
    int prev;
    if (bytes == 0) return OPREG_OK;
    OPREG__TRY(opreg__cuda_enter(device_id, &prev, what));
    opreg_status st =
        opreg__cuda_copy_waited(dst, src, bytes, opreg__cuda_current_stream(device_id), what);
    opreg__cuda_leave(device_id, prev);
    return st;
}

static opreg_status cuda_copy_to_device(void *context, void *dst, size_t dst_offset,
                                        const void *src, size_t bytes, int device_id) {
    (void)context;
    return cuda_copy((char *)dst + dst_offset, src, bytes, device_id, "cuda copy to device");
}

static opreg_status cuda_copy_to_host(void *context, void *dst, const void *src, size_t src_offset,
                                      size_t bytes, int device_id) {
    (void)context;
    return cuda_copy(dst, (const char *)src + src_offset, bytes, device_id, "cuda copy to host");
}

/* Device to device, on the current stream, not waited for. */
static opreg_status cuda_copy_on_device(void *context, void *dst, size_t dst_offset,
                                        const void *src, size_t src_offset, size_t bytes,
                                        int device_id) {
    const char *what = "cuda copy on device";
    int prev;
    (void)context;
    if (bytes == 0) return OPREG_OK;
    OPREG__TRY(opreg__cuda_enter(device_id, &prev, what));
    opreg_status st = opreg__cuda_status(
        (int)cudaMemcpyAsync((char *)dst + dst_offset, (const char *)src + src_offset, bytes,
                             cudaMemcpyDeviceToDevice,
                             (cudaStream_t)opreg__cuda_current_stream(device_id)),
        what, "cudaMemcpyAsync");
    opreg__cuda_leave(device_id, prev);
    return st;
}

const opreg_backend opreg__cuda_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "cuda",
    .device_type = kDLCUDA,
    .is_available = cuda_available,
    .device_count = cuda_device_count,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .current_stream = cuda_current_stream,
    .synchronize = cuda_synchronize,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .copy_on_device = cuda_copy_on_device,
};

opreg_status opreg__cuda_bad_dtype(const char *op, int dt) {
    return opreg__fail(OPREG_ERR_INTERNAL, "%s: the CUDA kernel has no variant for dtype %d", op,
                       dt);
}
