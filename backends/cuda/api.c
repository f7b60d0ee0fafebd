/* The public CUDA functions of include/opreg/cuda.h: the per-thread current
 * stream of each device, copies and synchronisation. Built in every
 * configuration; without the CUDA backend, or without a device, the calls
 * that need one report the backend unavailable. Without the backend this
 * file also holds opreg_nccl_group_create(), which then only says so (with
 * it, the NCCL engine in nccl.c defines it). */
#include "common/internal.h"
#include "opreg/backend.h"
#include "opreg/cuda.h"

#ifdef OPREG_HAVE_CUDA
#include "backends/cuda/cuda_internal.h"

#include <cuda_runtime_api.h>
#endif

static _Thread_local void *current[OPREG_CUDA_MAX_DEVICES];

opreg_status opreg_cuda_set_stream(int device, void *stream) {
    if (device < 0 || device >= OPREG_CUDA_MAX_DEVICES)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_cuda_set_stream: device %d is outside 0..%d", device,
                           OPREG_CUDA_MAX_DEVICES - 1);
    current[device] = stream;
    return OPREG_OK;
}

void *opreg_cuda_stream(int device) {
    return device >= 0 && device < OPREG_CUDA_MAX_DEVICES ? current[device] : NULL;
}

#ifdef OPREG_HAVE_CUDA
void *opreg__cuda_current_stream(int device) {
    return opreg_cuda_stream(device);
}
#endif

/* The backend's availability, as a status naming @p fn. */
static opreg_status require_cuda(const char *fn, int device) {
    char why[200];
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why))
        return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE, "%s: the CUDA backend is unavailable: %s",
                           fn, why);
    if (device < 0 || device >= OPREG_CUDA_MAX_DEVICES)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: device %d is outside 0..%d", fn, device,
                           OPREG_CUDA_MAX_DEVICES - 1);
    return OPREG_OK;
}

opreg_status opreg_cuda_synchronize(int device) {
    const char *fn = "opreg_cuda_synchronize";
    OPREG__TRY(require_cuda(fn, device));
#ifdef OPREG_HAVE_CUDA
    int prev;
    OPREG__TRY(opreg__cuda_enter(device, &prev, fn));
    opreg_status st = opreg__cuda_status((int)cudaStreamSynchronize((cudaStream_t)current[device]),
                                         fn, "cudaStreamSynchronize");
    opreg__cuda_leave(device, prev);
    return st;
#else
    return OPREG_OK; /* not reached: require_cuda() fails without the backend */
#endif
}

opreg_status opreg_cuda_memcpy(void *dst, const void *src, size_t bytes, int device) {
    const char *fn = "opreg_cuda_memcpy";
    if ((!dst || !src) && bytes)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_cuda_memcpy: %s is NULL",
                           dst ? "src" : "dst");
    OPREG__TRY(require_cuda(fn, device));
#ifdef OPREG_HAVE_CUDA
    if (bytes == 0) return OPREG_OK;
    int prev;
    OPREG__TRY(opreg__cuda_enter(device, &prev, fn));
    opreg_status st = opreg__cuda_status(
        (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)current[device]), fn,
        "cudaMemcpyAsync");
    opreg__cuda_leave(device, prev);
    return st;
#else
    return OPREG_OK;
#endif
}

#ifndef OPREG_HAVE_CUDA
opreg_status opreg_nccl_group_create(const char *name, void *nccl_comm, uint32_t flags,
                                     uint32_t timeout_ms) {
    (void)name, (void)nccl_comm, (void)flags, (void)timeout_ms;
    return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE,
                       "opreg_nccl_group_create: opreg was built without the CUDA backend");
}
#endif
