/* The avx512bf16 path: the kernel bodies of *_simd.h compiled for
 * "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,avx2,fma,f16c" by a target pragma
 * (struct opreg__cpu_simd in kern_internal.h says why), so the build needs no -m flags; isa.c only
 * points at this table after cpuid has confirmed the CPU runs it. */
#if defined(__x86_64__) && defined(__GNUC__)

#if defined(__clang__)
#pragma clang attribute push(                                                                      \
    __attribute__((                                                                                \
        target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,avx2,fma,f16c"))),        \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,avx2,fma,f16c")
#endif

#define OPREG__SIMD_BF16 1
#include "backends/cpu/kernels/simd_avx512.h"
#include "backends/cpu/kernels/simd_math.h"
#include "backends/cpu/kernels/norms_simd.h"
#include "backends/cpu/kernels/act_simd.h"
#include "backends/cpu/kernels/rotary_simd.h"
#include "backends/cpu/kernels/quant_simd.h"
#include "backends/cpu/kernels/attention_simd.h"
#include "backends/cpu/kernels/gemv_simd.h"
#include "backends/cpu/kernels/moe_simd.h"

const struct opreg__cpu_simd opreg__cpu_simd_avx512bf16 = {
    .rms_norm = rms_norm_range,
    .fused_add_rms_norm = fused_add_range,
    .gated = gated_range,
    .elementwise = elementwise_range,
    .rotary = rotary_range,
    .int8_static = int8_static_range,
    .int8_dynamic = int8_dynamic_range,
    .fp8_static = fp8_static_range,
    .amax = amax_range,
    .gemv_linear = gemv_linear_range,
    .gemv_int8 = gemv_int8_range,
    .gemv_fp8 = gemv_fp8_range,
    .gemv_panel_linear = gemv_panel_linear_range,
    .gemv_panel_fp8 = gemv_panel_fp8_range,
    .gemv_pack = gemv_pack,
    .gemv_tile_rows = VGEMV_ROWS,
    .gemv_fp8_split = gemv_fp8_split_range,
    .gemv_pack_fp8_split = gemv_pack_fp8_split,
    .gemv_int8_u8 = gemv_int8_u8_range,
    .gemv_sums_s8 = gemv_sums_s8,
    .gemv_panel_int8 = gemv_panel_int8_range,
    .gemv_pack_u8 = gemv_pack_u8,
    .gemv_pairs = &gemv_pairs,
    .attention = attention_range,
    .softmax_stats = softmax_stats,
};

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else
/* ISO C forbids an empty translation unit. */
typedef int opreg__cpu_simd_avx512bf16_unused;
#endif
