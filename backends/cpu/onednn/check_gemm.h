/* The argument checks of the oneDNN GEMM kernels, one per op, run before
 * anything is written. They read metadata only (never tensor data) and
 * never write to a tensor. Each failure sets a message
 * "<op>: argument '<arg>': <reason>" and returns
 *   OPREG_ERR_SHAPE            dtype, rank, size, contiguity or strides;
 *   OPREG_ERR_INVALID_ARGUMENT NULL tensor or data, out overlapping an input;
 *   OPREG_ERR_DEVICE_MISMATCH  a tensor that is not on the CPU.
 *
 * The names carry "gemm" because ops/check/check.h (the catalogue's Meta
 * checks, written alongside) already declares opreg__check_linear with a
 * different signature; two definitions would not link. */
#ifndef OPREG_BACKENDS_CPU_ONEDNN_CHECK_GEMM_H
#define OPREG_BACKENDS_CPU_ONEDNN_CHECK_GEMM_H

#include "opreg/tensor.h"

/* Most dims of linear's input (and so of its result). */
#define OPREG__GEMM_MAX_NDIM 16

/* The result shape of linear: input.shape[:-1] + [weight.shape[0]], with
 * input's dtype. Checks input, weight and bias as the kernel does, except
 * devices and data, so it serves a Meta function. @p out_shape holds
 * OPREG__GEMM_MAX_NDIM entries. */
opreg_status opreg__gemm_linear_out_shape(const opreg_tensor *input, const opreg_tensor *weight,
                                          const opreg_tensor *bias, int *out_ndim,
                                          int64_t *out_shape, opreg_dtype *out_dtype);

/* Everything the CPU linear kernel needs: the checks above, plus out's
 * dtype, shape and contiguity, CPU devices, data present, no overlap. */
opreg_status opreg__gemm_check_linear(const opreg_tensor *out, const opreg_tensor *input,
                                      const opreg_tensor *weight, const opreg_tensor *bias);

/* Everything the CPU cutlass_scaled_mm kernel needs (see onednn.h). */
opreg_status opreg__gemm_check_scaled_mm(const opreg_tensor *out, const opreg_tensor *a,
                                         const opreg_tensor *b, const opreg_tensor *a_scales,
                                         const opreg_tensor *b_scales, const opreg_tensor *bias);

#endif
