/// @file tensor.h
/// @brief Tensors (DLPack's `DLTensor`), dtypes, devices and the helpers that
/// create CPU and Meta tensors, views and contiguity checks.
///
/// An opreg tensor *is* a `DLTensor` from Debian's `libdlpack-dev`: nothing
/// is converted or copied on the way in or out. A DLPack producer's tensor
/// can be passed as it is, and a tensor that opreg allocates can be handed to
/// any DLPack consumer.
///
/// DLPack 0.6 (Debian 12) has no bool and no fp8 type codes. opreg uses the
/// codes that later DLPack releases assigned (bool = 6 from DLPack 0.8,
/// float8_e4m3fn = 10 and float8_e5m2 = 12 from DLPack 1.1), each with
/// `bits = 8, lanes = 1`, so the tensors read the same to a newer consumer.
///
/// The Meta device carries a shape and a dtype but no data (`data == NULL`).
/// DLPack has no such device type; opreg uses ::OPREG_DEVICE_META, a value
/// outside the range DLPack assigns.
#ifndef OPREG_TENSOR_H
#define OPREG_TENSOR_H

#include "opreg/common.h"

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The tensor type of opreg: DLPack's plain tensor. It does not own memory.
typedef DLTensor opreg_tensor;

/// DLPack type code of bool (DLPack >= 0.8 `kDLBool`).
#define OPREG_DL_BOOL 6
/// DLPack type code of float8_e4m3fn (DLPack >= 1.1 `kDLFloat8_e4m3fn`).
#define OPREG_DL_FLOAT8_E4M3FN 10
/// DLPack type code of float8_e5m2 (DLPack >= 1.1 `kDLFloat8_e5m2`).
#define OPREG_DL_FLOAT8_E5M2 12

/// The device type of Meta tensors (no data). Outside DLPack's range.
#define OPREG_DEVICE_META ((DLDeviceType)0x4D45)

/// The element types of opreg. The numbers are PyTorch's `ScalarType`
/// numbers, so a `ScalarType` default such as `dtype=float32` maps directly.
typedef enum opreg_dtype {
    OPREG_DTYPE_U8 = 0,         ///< uint8
    OPREG_DTYPE_I8 = 1,         ///< int8
    OPREG_DTYPE_I16 = 2,        ///< int16
    OPREG_DTYPE_I32 = 3,        ///< int32
    OPREG_DTYPE_I64 = 4,        ///< int64
    OPREG_DTYPE_F16 = 5,        ///< IEEE half
    OPREG_DTYPE_F32 = 6,        ///< float
    OPREG_DTYPE_F64 = 7,        ///< double
    OPREG_DTYPE_BOOL = 11,      ///< bool, one byte
    OPREG_DTYPE_BF16 = 15,      ///< bfloat16
    OPREG_DTYPE_F8_E5M2 = 23,   ///< float8 e5m2, one byte
    OPREG_DTYPE_F8_E4M3FN = 24, ///< float8 e4m3fn, one byte
} opreg_dtype;

/// The DLPack data type of @p dtype. An unknown dtype gives `{0, 0, 0}`.
OPREG_API DLDataType opreg_dtype_to_dlpack(opreg_dtype dtype);

/// The opreg dtype of a DLPack data type (lanes must be 1).
/// @return ::OPREG_OK, or ::OPREG_ERR_SHAPE when opreg has no such dtype;
/// `*out` is left unchanged then.
OPREG_API opreg_status opreg_dtype_from_dlpack(opreg_dtype *out, DLDataType type);

/// The short name of a dtype ("f32", "bf16", "f8_e4m3fn", ...), or NULL when
/// unknown. The string is static.
OPREG_API const char *opreg_dtype_name(opreg_dtype dtype);

/// The dtype of a name as opreg_dtype_name() gives it, or as PyTorch spells
/// it ("float32", "half", "bfloat16", "float8_e4m3fn", ...).
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT naming the text.
OPREG_API opreg_status opreg_dtype_from_name(opreg_dtype *out, const char *name);

/// Bytes of one element of @p dtype, or 0 when unknown.
OPREG_API size_t opreg_dtype_size(opreg_dtype dtype);

/// Print a device as "cpu", "cuda:1", "meta" or a plugin's name into @p buf
/// (snprintf semantics; returns the full length).
OPREG_API size_t opreg_device_format(DLDevice device, char *buf, size_t cap);

/// Parse "cpu", "cuda", "cuda:1", "meta" or a plugin backend's name.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT naming the text.
OPREG_API opreg_status opreg_device_parse(DLDevice *out, const char *text);

/// Number of elements (1 for a 0-d tensor).
OPREG_API int64_t opreg_tensor_numel(const DLTensor *tensor);

/// Bytes spanned by the tensor's elements (numel times element size; for
/// strided tensors, the extent from the first to the last element).
OPREG_API size_t opreg_tensor_nbytes(const DLTensor *tensor);

/// True when the tensor is row-major contiguous: `strides` is NULL, or every
/// stride equals the product of the later sizes (sizes of 1 are ignored).
OPREG_API bool opreg_tensor_is_contiguous(const DLTensor *tensor);

/// Create a contiguous tensor on @p device with memory from that device's
/// backend allocator (no data for Meta). Shape and strides live in the same
/// allocation as the tensor. Data is not initialised.
///
/// `*out` receives a tensor that the caller owns and releases with
/// opreg_tensor_free(); it is set to NULL on failure.
/// @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT (negative size, ndim out
/// of 0..64, unknown dtype), ::OPREG_ERR_BACKEND_UNAVAILABLE (no backend for
/// the device, or it is not available), ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_tensor_empty(DLTensor **out, DLDevice device, opreg_dtype dtype,
                                          int ndim, const int64_t *shape);

/// opreg_tensor_empty() on the CPU.
OPREG_API opreg_status opreg_tensor_empty_cpu(DLTensor **out, opreg_dtype dtype, int ndim,
                                              const int64_t *shape);

/// opreg_tensor_empty() on the Meta device: shape and dtype, no data.
OPREG_API opreg_status opreg_tensor_empty_meta(DLTensor **out, opreg_dtype dtype, int ndim,
                                               const int64_t *shape);

/// Create a view of @p base's data with its own shape, strides (NULL for
/// contiguous) and a byte offset added to base's. The view does not own the
/// data: @p base (and whoever owns its data) must outlive it. Shape and
/// strides are copied. Release the view with opreg_tensor_free(), which does
/// not touch the data.
/// @return ::OPREG_OK, ::OPREG_ERR_INVALID_ARGUMENT, ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_tensor_view(DLTensor **out, const DLTensor *base, int ndim,
                                         const int64_t *shape, const int64_t *strides,
                                         uint64_t byte_offset);

/// Release a tensor that opreg created (opreg_tensor_empty*(),
/// opreg_tensor_view(), or a tensor that an op returned), and its data
/// through the backend that allocated it; a view leaves the data alone.
/// NULL is a no-op. Passing a tensor that opreg did not create is undefined.
OPREG_API void opreg_tensor_free(DLTensor *tensor);

#ifdef __cplusplus
}
#endif

#endif
