/* The oneDNN-backed CPU GEMM kernels, for whoever registers them as the CPU
 * kernels of _C::linear and _C::cutlass_scaled_mm. Not installed; the
 * header needs no oneDNN header, so tests and tools can include it.
 *
 * Every function is thread-safe. The kernels take checked arguments: each
 * has passed the op's check of ops/check (opreg__check_<op>), lies in host
 * memory and is covered by the path (the _covers functions below). The CPU
 * key's registered kernel does all three once, before it chooses a provider
 * (backends/cpu/register.c); nothing here checks again. A kernel fails only
 * for what the check cannot know (memory, oneDNN itself), setting
 * opreg_last_error(). Tensors are borrowed for the call only. */
#ifndef OPREG_BACKENDS_CPU_ONEDNN_H
#define OPREG_BACKENDS_CPU_ONEDNN_H

#include "opreg/tensor.h"

/* out = input . weight^T + bias for f32 and bf16. input [..., K] (leading
 * dims flattened to M), weight [N, K], bias [N] or NULL, out [..., N]; all
 * contiguous CPU tensors of one dtype. bf16 runs oneDNN's bf16 matmul (AMX,
 * AVX512-BF16) where this oneDNN has one for the CPU; otherwise it converts to
 * f32 exactly, runs the f32 matmul and rounds the result to bf16 once. */
opreg_status opreg__onednn_linear(opreg_tensor *out, const opreg_tensor *input,
                                  const opreg_tensor *weight, const opreg_tensor *bias);

/* vLLM's cutlass_scaled_mm on the CPU: out[m,n] = (T)(a_s[m] * ((float)acc[m,n] *
 * b_s[n]) + bias[n]) with acc = a . b in int32, int8 a [M,K] row-major, int8
 * b [K,N] column-major (strides (1,K)), a_scales f32 of numel 1 or M,
 * b_scales f32 of numel 1 or N, bias [N] of out's dtype or NULL, out f32 or
 * bf16 [M,N]. The scale-and-bias step is one fused multiply-add rounded to
 * f32, then to T: the order of vLLM's CUTLASS epilogue (see scaled_mm.c).
 * fp8 e4m3fn a and b (any row and column strides) are widened exactly to
 * bf16 (f32 where this oneDNN has no bf16 matmul), summed in f32 by oneDNN
 * and take the same epilogue. */
opreg_status opreg__onednn_scaled_mm(opreg_tensor *out, const opreg_tensor *a,
                                     const opreg_tensor *b, const opreg_tensor *a_scales,
                                     const opreg_tensor *b_scales, const opreg_tensor *bias);

/* For arguments that passed the op's checks: whether the oneDNN kernel
 * covers them. linear: f32 or bf16. cutlass_scaled_mm: f32 or bf16 out, and
 * fp8 a and b, or int8 ones with a's rows and b's columns K elements apart. */
bool opreg__onednn_linear_covers(const opreg_tensor *input);
bool opreg__onednn_scaled_mm_covers(const opreg_tensor *out, const opreg_tensor *a,
                                    const opreg_tensor *b);

/* How many oneDNN primitives this process has created (cache misses). A
 * repeated call with the same shapes and dtypes does not raise it. */
uint64_t opreg__onednn_primitives_created(void);

/* The ISA that oneDNN dispatches to (dnnl_get_effective_cpu_isa()) as text,
 * e.g. "avx2" or "avx512_core_amx", into @p buf (snprintf semantics; returns
 * the full length). */
size_t opreg__onednn_isa(char *buf, size_t cap);

/* True when the CPU has AMX tiles with bf16 (CPUID) and the OS lets this
 * process use them (XCR0 tile state). */
bool opreg__onednn_has_amx(void);

/* The oneDNN implementation that opreg__onednn_linear() runs for this
 * dtype, shape and bias-ness, as oneDNN names it (e.g.
 * "brg:avx512_core_amx"), with " (bf16 via f32)" appended when bf16 takes
 * the f32 fallback. Creates the primitive if needed, as a call would.
 * Returns ::OPREG_ERR_SHAPE for an unsupported dtype or size. */
opreg_status opreg__onednn_linear_impl(opreg_dtype dtype, int64_t m, int64_t n, int64_t k,
                                       bool has_bias, char *buf, size_t cap);

#endif
