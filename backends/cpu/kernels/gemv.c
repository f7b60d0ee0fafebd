/* Decode-sized GEMMs: entry points and the portable path. The SIMD paths
 * are in gemv_simd.h; cpu_kernels.h says what each entry computes. The
 * output columns are the unit spread over threads: each thread streams its
 * own contiguous part of the weights. */
#include "backends/cpu/kernels/kern_internal.h"

#include <stdlib.h>

/* e4m3fn S.EEEE.MMM, bias 7: a normal magnitude m is bf16 bits
 * (m << 4) + (120 << 7); the subnormals m * 2^-9 and the NaN are listed. */
const uint16_t opreg__e4m3_bf16[128] = {
    0x0000, 0x3B00, 0x3B80, 0x3BC0, 0x3C00, 0x3C20, 0x3C40, 0x3C60, 0x3C80, 0x3C90, 0x3CA0, 0x3CB0,
    0x3CC0, 0x3CD0, 0x3CE0, 0x3CF0, 0x3D00, 0x3D10, 0x3D20, 0x3D30, 0x3D40, 0x3D50, 0x3D60, 0x3D70,
    0x3D80, 0x3D90, 0x3DA0, 0x3DB0, 0x3DC0, 0x3DD0, 0x3DE0, 0x3DF0, 0x3E00, 0x3E10, 0x3E20, 0x3E30,
    0x3E40, 0x3E50, 0x3E60, 0x3E70, 0x3E80, 0x3E90, 0x3EA0, 0x3EB0, 0x3EC0, 0x3ED0, 0x3EE0, 0x3EF0,
    0x3F00, 0x3F10, 0x3F20, 0x3F30, 0x3F40, 0x3F50, 0x3F60, 0x3F70, 0x3F80, 0x3F90, 0x3FA0, 0x3FB0,
    0x3FC0, 0x3FD0, 0x3FE0, 0x3FF0, 0x4000, 0x4010, 0x4020, 0x4030, 0x4040, 0x4050, 0x4060, 0x4070,
    0x4080, 0x4090, 0x40A0, 0x40B0, 0x40C0, 0x40D0, 0x40E0, 0x40F0, 0x4100, 0x4110, 0x4120, 0x4130,
    0x4140, 0x4150, 0x4160, 0x4170, 0x4180, 0x4190, 0x41A0, 0x41B0, 0x41C0, 0x41D0, 0x41E0, 0x41F0,
    0x4200, 0x4210, 0x4220, 0x4230, 0x4240, 0x4250, 0x4260, 0x4270, 0x4280, 0x4290, 0x42A0, 0x42B0,
    0x42C0, 0x42D0, 0x42E0, 0x42F0, 0x4300, 0x4310, 0x4320, 0x4330, 0x4340, 0x4350, 0x4360, 0x4370,
    0x4380, 0x4390, 0x43A0, 0x43B0, 0x43C0, 0x43D0, 0x43E0, 0x7FC0,
};

static float ld_float(int dt, const void *p, int64_t i) {
    if (dt == OPREG_DTYPE_F8_E4M3FN) return opreg__e4m3fn_to_f32(((const uint8_t *)p)[i]);
    return opreg__cpu_ld(dt, p, i);
}

/* The float types (linear) and fp8 (cutlass_scaled_mm): f32 sums. */
static void gemv_float_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t end = c1 * OPREG__GEMV_COLS < a->n ? c1 * OPREG__GEMV_COLS : a->n;
    for (int64_t j = c0 * OPREG__GEMV_COLS; j < end; j++)
        for (int64_t i = 0; i < a->m; i++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < a->k; p++)
                acc += ld_float(a->dt, a->in, i * a->in_stride + p) *
                       ld_float(a->dt, a->w, j * a->w_stride + p);
            if (a->dt == OPREG_DTYPE_F8_E4M3FN)
                opreg__gemv_scaled_out(a, i, j, acc);
            else
                opreg__gemv_linear_out(a->dt, a, i, j, acc);
        }
}

/* int8: exact integer sums. */
static void gemv_int8_portable(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__gemv_args *a = args;
    int64_t end = c1 * OPREG__GEMV_COLS < a->n ? c1 * OPREG__GEMV_COLS : a->n;
    for (int64_t j = c0 * OPREG__GEMV_COLS; j < end; j++)
        for (int64_t i = 0; i < a->m; i++) {
            const int8_t *x = (const int8_t *)a->in + i * a->in_stride;
            const int8_t *w = (const int8_t *)a->w + j * a->w_stride;
            int64_t acc = 0;
            for (int64_t p = 0; p < a->k; p++)
                acc += (int64_t)x[p] * w[p];
            opreg__gemv_scaled_out(a, i, j, (float)acc);
        }
}

static int64_t groups(int64_t n) {
    return (n + OPREG__GEMV_COLS - 1) / OPREG__GEMV_COLS;
}

/* For the panel kernels: the input rows converted by the path into blocks
 * of k (f32; uint8 x + 128 for int8), in memory the caller frees; NULL
 * when the path has no panel kernels for the dtype, the rows fit one tile,
 * or there is no memory (the tiles then take the call). */
static void *panel_rows(const struct opreg__cpu_simd *s, const struct opreg__gemv_args *a) {
    bool u8 = a->dt == OPREG_DTYPE_I8;
    if (!s || (u8 ? !s->gemv_panel_int8 : !s->gemv_pack) || a->m <= s->gemv_tile_rows || a->k == 0)
        return NULL;
    int64_t kb = u8 ? OPREG__GEMV_KB8 : OPREG__GEMV_KB, blocks = (a->k + kb - 1) / kb;
    void *x = aligned_alloc(64, (size_t)(blocks * a->m * kb) * (u8 ? 1 : sizeof(float)));
    if (x && u8)
        s->gemv_pack_u8(a, x);
    else if (x)
        s->gemv_pack(a, x);
    return x;
}

/* The bytes that opreg__cpu_parallel sizes its tasks by: the weights, or a
 * quarter of them for the panel kernels, whose tasks should span a few
 * panels so that each reads the packed rows from L2 fewer times. */
static int64_t task_bytes(int64_t weight_bytes, bool panel) {
    return panel ? weight_bytes / 4 : weight_bytes;
}

static size_t elem_bytes(int dt) {
    return dt == OPREG_DTYPE_F32 ? 4 : dt == OPREG_DTYPE_I8 || dt == OPREG_DTYPE_F8_E4M3FN ? 1 : 2;
}

void opreg__cpu_gemv_linear(int isa, int dt, void *out, const void *in, const void *w,
                            const void *bias, int64_t m, int64_t n, int64_t k) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__gemv_args a = {
        .out = out,
        .in = in,
        .w = w,
        .bias = bias,
        .m = m,
        .n = n,
        .k = k,
        .in_stride = k,
        .w_stride = k,
        .dt = dt,
        .out_dt = dt,
    };
    if (m == 0 || n == 0) return;
    /* k = 0: the result is the bias or zeros, and the operands may have no
     * data to form addresses from; the portable loop reads none. */
    if (k == 0) s = NULL;
    void *packed = panel_rows(s, &a);
    a.packed = packed;
    opreg__cpu_parallel(packed ? s->gemv_panel_linear
                        : s    ? s->gemv_linear
                               : gemv_float_portable,
                        &a, groups(n), task_bytes(n * k * (int64_t)elem_bytes(dt), packed != NULL));
    free(packed);
}

void opreg__cpu_gemv_scaled_mm(int isa, int dt, int out_dt, void *out, const void *a_data,
                               int64_t a_stride, const void *b, int64_t b_stride,
                               const float *a_scales, bool per_token, const float *b_scales,
                               bool per_channel, const void *bias, int64_t m, int64_t n,
                               int64_t k) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    if (k == 0) s = NULL; /* as in opreg__cpu_gemv_linear */
    struct opreg__gemv_args a = {
        .out = out,
        .in = a_data,
        .w = b,
        .bias = bias,
        .a_scales = a_scales,
        .b_scales = b_scales,
        .m = m,
        .n = n,
        .k = k,
        .in_stride = a_stride,
        .w_stride = b_stride,
        .dt = dt,
        .out_dt = out_dt,
        .per_token = per_token,
        .per_channel = per_channel,
    };
    opreg__cpu_range_fn fn;
    void *packed = NULL;
    if (m == 0) return;
    if (dt == OPREG_DTYPE_I8)
        fn = s ? s->gemv_int8 : gemv_int8_portable;
    else
        fn = s ? s->gemv_fp8 : gemv_float_portable;
    /* The packed kernels take the input rows converted once here, a few
     * rows against the whole weight stream; without memory for them, the
     * path's other kernels. */
    bool panel = (packed = panel_rows(s, &a)) != NULL;
    if (panel) {
        fn = dt == OPREG_DTYPE_I8 ? s->gemv_panel_int8 : s->gemv_panel_fp8;
    } else if (s && dt == OPREG_DTYPE_I8 && s->gemv_int8_u8 &&
               (packed = malloc((size_t)(m * k) + 1))) {
        uint8_t *u = packed;
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++)
                u[i * k + p] = (uint8_t)(((const uint8_t *)a_data)[i * a_stride + p] ^ 0x80u);
        fn = s->gemv_int8_u8;
    } else if (s && dt == OPREG_DTYPE_F8_E4M3FN && s->gemv_fp8_bf16 &&
               (packed = malloc((size_t)(m * k) * 2 + 2))) {
        uint16_t *h = packed;
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) {
                uint8_t c = ((const uint8_t *)a_data)[i * a_stride + p];
                h[i * k + p] = (uint16_t)(((unsigned)c & 0x80u) << 8 | opreg__e4m3_bf16[c & 0x7Fu]);
            }
        fn = s->gemv_fp8_bf16;
    }
    a.packed = packed;
    opreg__cpu_parallel(fn, &a, groups(n), task_bytes(n * k, panel));
    free(packed);
}
