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

/// Register a process group @p name (include/opreg/collective.h) on
/// @p nccl_comm, an `ncclComm_t` that the program made (ncclCommInitRank,
/// ncclCommInitAll, ncclCommSplit, or PyTorch's): from then on the `dist`
/// ops on CUDA tensors of the communicator's device run on it with NCCL.
/// The group's rank and size are ncclCommUserRank() and ncclCommCount();
/// its device is ncclCommCuDevice(), and tensors on another device are
/// refused (::OPREG_ERR_DEVICE_MISMATCH).
///
/// `libnccl.so.2` is loaded at the first call (libopreg itself does not
/// need it); a program that already loaded NCCL shares that copy.
/// Collectives are enqueued on the calling thread's current stream of the
/// device (opreg_cuda_set_stream()) and return without waiting, except
/// `dist::barrier`, which waits for that stream. NCCL's failures are
/// ::OPREG_ERR_COMMUNICATION with NCCL's text. The group's calls are
/// serialised (a communicator takes one call at a time). @p flags are
/// ::opreg_group_flags. A collective that runs longer than @p timeout_ms
/// (0: no limit) is logged and the communicator is aborted with
/// ncclCommAbort(), which frees it: after ::OPREG_ERR_TIMEOUT the program
/// destroys the group and must neither use nor destroy the communicator.
///
/// The communicator stays the program's: opreg never destroys it. Call
/// opreg_group_destroy() first (it waits for calls in flight), then
/// ncclCommDestroy(). The same communicator may be registered under
/// several names (with different flags, say); their calls are then not
/// serialised against each other.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (NULL @p name or
/// @p nccl_comm, a bad name, or a nonblocking communicator that is still
/// being made); ::OPREG_ERR_BACKEND_UNAVAILABLE (opreg was built without
/// the CUDA backend, no CUDA device is present, or `libnccl.so.2` cannot be
/// loaded or lacks a function; the message says which);
/// ::OPREG_ERR_COMMUNICATION (NCCL's queries of the communicator fail, or
/// it has already failed); ::OPREG_ERR_ALREADY_DEFINED (a live group of
/// that name); ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_nccl_group_create(const char *name, void *nccl_comm, uint32_t flags,
                                               uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
