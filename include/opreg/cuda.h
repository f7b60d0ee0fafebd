/// @file cuda.h
/// @brief The CUDA backend's streams, copies and synchronisation.
///
/// Kernels under the CUDA key are enqueued on the calling thread's current
/// stream for the tensors' device and return without waiting, like
/// PyTorch's current stream. Each thread has its own current stream per
/// device; it starts as NULL, CUDA's legacy default stream. Streams are
/// passed as `void *` (a `cudaStream_t`), so callers need no CUDA header.
///
/// These functions exist in every build. Where opreg was built without the
/// CUDA backend, or no CUDA device is present, the ones that touch a device
/// return ::OPREG_ERR_BACKEND_UNAVAILABLE with the reason.
#ifndef OPREG_CUDA_H
#define OPREG_CUDA_H

#include "opreg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most CUDA devices a process can hold a current stream for.
#define OPREG_CUDA_MAX_DEVICES 64

/// Make @p stream (a `cudaStream_t` of device @p device, or NULL for the
/// default stream) the calling thread's current stream for that device.
/// The stream is not owned: the caller keeps it alive while it is current,
/// and sets another one before destroying it. Other threads are unaffected.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT (device outside
/// 0..::OPREG_CUDA_MAX_DEVICES-1).
OPREG_API opreg_status opreg_cuda_set_stream(int device, void *stream);

/// The calling thread's current stream for @p device (NULL: the default
/// stream, also for a device outside the range). Not owned by the caller.
OPREG_API void *opreg_cuda_stream(int device);

/// Wait until the calling thread's current stream of @p device has finished
/// its work. An asynchronous kernel failure (an illegal address, say) is
/// reported here.
/// @return ::OPREG_OK, ::OPREG_ERR_BACKEND_UNAVAILABLE, or
/// ::OPREG_ERR_DEVICE with CUDA's error text.
OPREG_API opreg_status opreg_cuda_synchronize(int device);

/// Copy @p bytes from @p src to @p dst, in either direction between host
/// and device memory or within a device (CUDA infers the direction from the
/// addresses), enqueued on the current stream of @p device. A copy from or
/// to pageable host memory returns when the host side is done; call
/// opreg_cuda_synchronize() before reading @p dst on the host. Neither
/// pointer is retained.
/// @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT,
/// ::OPREG_ERR_BACKEND_UNAVAILABLE, or ::OPREG_ERR_DEVICE with CUDA's text.
OPREG_API opreg_status opreg_cuda_memcpy(void *dst, const void *src, size_t bytes, int device);

#ifdef __cplusplus
}
#endif

#endif
