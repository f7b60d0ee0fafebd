/* Decode-sized GEMMs: entry points and the portable path. The SIMD paths
 * are in gemv_simd.h; cpu_kernels.h says what each entry computes. The
 * output columns are the unit spread over threads: each thread streams its
 * own contiguous part of the weights. */
#include "backends/cpu/kernels/kern_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

/* What the range functions take: column groups, or whole panels for the
 * panel kernels (gemv_simd.h, GEMV_PANEL_GROUPS). */
static int64_t units(int64_t n, bool panel) {
    return panel ? (n + OPREG__GEMV_PANEL - 1) / OPREG__GEMV_PANEL : groups(n);
}

/* Memory for the input rows as f32 in blocks of OPREG__GEMV_KB, as
 * gemv_pack and gemv_pack_fp8_split fill it; the caller frees it. NULL
 * without memory. */
static float *f32_rows(const struct opreg__gemv_args *a) {
    int64_t blocks = (a->k + OPREG__GEMV_KB - 1) / OPREG__GEMV_KB;
    return aligned_alloc(64, (size_t)(blocks * a->m * OPREG__GEMV_KB) * sizeof(float));
}

/* The input rows converted once by the path (f32 by gemv_pack, or with
 * @p u8 int8 in blocks of OPREG__GEMV_KB8 and each row's sum by
 * gemv_pack_u8), in memory the caller frees; NULL without memory. */
static void *pack_rows(const struct opreg__cpu_simd *s, const struct opreg__gemv_args *a, bool u8) {
    if (!u8) {
        float *x = f32_rows(a);
        if (x) s->gemv_pack(a, x);
        return x;
    }
    size_t bytes = (size_t)opreg__gemv_u8_blocks_bytes(a) + (size_t)a->m * sizeof(uint32_t);
    void *x = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (x) s->gemv_pack_u8(a, x);
    return x;
}

/* For the panel kernels: pack_rows, or NULL when the path has no panel
 * kernels for the dtype, the rows fit one tile, or there is no memory (the
 * tiles then take the call). */
static void *panel_rows(const struct opreg__cpu_simd *s, const struct opreg__gemv_args *a) {
    bool u8 = a->dt == OPREG_DTYPE_I8;
    if (!s || (u8 ? !s->gemv_panel_int8 : !s->gemv_pack) || a->m <= s->gemv_tile_rows || a->k == 0)
        return NULL;
    return pack_rows(s, a, u8);
}

/* VDPBF16PS does two products a lane where an FMA does one: at half FMA's
 * instruction rate or better the pairs kernels do more arithmetic a
 * second than the FMA ones, and they widen less. Measured:
 * docs/performance.md, "bf16 pairs where VDPBF16PS is fast". */
#define PAIRS_MIN_RATE 0.5

/* The choice, once made: OPREG__GEMV_PAIRS_OFF or _ON (cpu_kernels.h);
 * -1 until first asked, then OPREG_CPU_VDPBF16PS (0 or 1) or what
 * gemv_pairs_rate measured, once. Where VDPBF16PS is slow, fp8 of one or
 * two rows took the pairs kernels until the split kernels measured faster
 * there too (docs/performance.md, "fp8 through the table on the FMA
 * kernels"), so the choice has two values again. */
static atomic_int pairs_on = -1;

int opreg__cpu_set_gemv_pairs(int on) {
    return atomic_exchange_explicit(&pairs_on, on, memory_order_relaxed);
}

/* The choice for the path now in force; OFF where it has no pairs
 * kernels. */
static int pairs_choice(void) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(opreg__cpu_isa());
    int on = atomic_load_explicit(&pairs_on, memory_order_relaxed);
    if (!s || !s->gemv_pairs) return OPREG__GEMV_PAIRS_OFF;
    if (on < 0) {
        const char *e = getenv("OPREG_CPU_VDPBF16PS");
        if (e && (strcmp(e, "0") == 0 || strcmp(e, "1") == 0))
            on = e[0] == '1' ? OPREG__GEMV_PAIRS_ON : OPREG__GEMV_PAIRS_OFF;
        else
            on = s->gemv_pairs->rate() >= PAIRS_MIN_RATE ? OPREG__GEMV_PAIRS_ON
                                                         : OPREG__GEMV_PAIRS_OFF;
        atomic_store_explicit(&pairs_on, on, memory_order_relaxed);
    }
    return on;
}

int opreg__cpu_gemv_pairs(void) {
    return pairs_choice() == OPREG__GEMV_PAIRS_ON;
}

bool opreg__cpu_gemv_takes_pairs(int isa, int dt, int64_t m) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    if (!s || !s->gemv_pairs) return false;
    if (dt == OPREG_DTYPE_BF16)
        return m > s->gemv_tile_rows && pairs_choice() == OPREG__GEMV_PAIRS_ON;
    return dt == OPREG_DTYPE_F8_E4M3FN && opreg__cpu_has_vbmi() &&
           pairs_choice() == OPREG__GEMV_PAIRS_ON;
}

/* The pairs kernels for dt on path s, with their input rows packed into
 * *packed (which the caller frees); NULL when they do not take the call
 * or there is no memory. */
static const struct opreg__gemv_pairs *pairs_rows(int isa, const struct opreg__cpu_simd *s,
                                                  const struct opreg__gemv_args *a, void **packed) {
    bool fp8 = a->dt == OPREG_DTYPE_F8_E4M3FN;
    if (!s || !opreg__cpu_gemv_takes_pairs(isa, a->dt, a->m)) return NULL;
    int64_t blocks = (a->k + OPREG__GEMV_KBP - 1) / OPREG__GEMV_KBP;
    uint16_t *x = aligned_alloc(64, (size_t)(blocks * a->m * OPREG__GEMV_KBP) * sizeof(uint16_t));
    if (!x) return NULL;
    (fp8 ? s->gemv_pairs->pack_fp8 : s->gemv_pairs->pack_bf16)(a, x);
    *packed = x;
    return s->gemv_pairs;
}

/* Whether fp8 calls that the pairs kernels leave take the split kernels
 * where they can (1, the default) or the FMA kernels that widen by
 * conversions (0); set by the tests, which run both. */
static atomic_int split_on = 1;

int opreg__cpu_set_gemv_split(int on) {
    return atomic_exchange_explicit(&split_on, on, memory_order_relaxed);
}

/* fp8 by the split kernels (gemv_simd.h), where the path has them and the
 * CPU AVX512-VBMI, with the input rows packed into *packed (which the
 * caller frees); NULL otherwise or without memory. */
static opreg__cpu_range_fn split_rows(const struct opreg__cpu_simd *s,
                                      const struct opreg__gemv_args *a, void **packed) {
    if (!s || !s->gemv_fp8_split || !opreg__cpu_has_vbmi() ||
        !atomic_load_explicit(&split_on, memory_order_relaxed))
        return NULL;
    float *x = f32_rows(a);
    if (!x) return NULL;
    s->gemv_pack_fp8_split(a, x);
    *packed = x;
    return s->gemv_fp8_split;
}

/* The bytes that opreg__cpu_parallel sizes its tasks by: the weights, or a
 * quarter of them for the panel kernels, whose tasks should span a few
 * panels so that each reads the packed rows from L2 fewer times. */
static int64_t task_bytes(int64_t weight_bytes, bool panel) {
    return panel ? weight_bytes / 4 : weight_bytes;
}

/* The tiles' fetch ahead (gemv_simd.h, GEMV_TILE_AHEAD) pays from 3 input
 * rows everywhere. Below that it depends on the CPU. On an Intel Xeon
 * (Emerald Rapids, 2 vCPUs, 2026-12-07) the hardware's prefetcher alone
 * kept bf16 at M = 1 below M = 4's rate; fetching ahead at every height
 * took bf16 M = 1 from 1.08-1.18 to 1.31-1.53 of the triad (`opreg bench
 * ops`) and from 0.96-0.99 of torch 2.15's F.linear to 1.07-1.12 times
 * faster. On Zen 5 it cost bf16 and f32 up to a tenth at M = 1, so other
 * vendors keep 3 (docs/performance.md, "Fetching ahead at every tile
 * height on Intel"). */
int opreg__cpu_gemv_fetch_rows(void) {
    return opreg__cpu_is_intel() ? 1 : 3;
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
        .fetch_rows = opreg__cpu_gemv_fetch_rows(),
    };
    if (m == 0 || n == 0) return;
    /* k = 0: the result is the bias or zeros, and the operands may have no
     * data to form addresses from; the portable loop reads none. */
    if (k == 0) s = NULL;
    void *packed = NULL;
    opreg__cpu_range_fn fn = s ? s->gemv_linear : gemv_float_portable;
    const struct opreg__gemv_pairs *pairs;
    if (dt == OPREG_DTYPE_BF16 && (pairs = pairs_rows(isa, s, &a, &packed)))
        fn = pairs->bf16;
    else if ((packed = panel_rows(s, &a)))
        fn = s->gemv_panel_linear;
    a.packed = packed;
    opreg__cpu_parallel(fn, &a, units(n, packed != NULL),
                        task_bytes(n * k * (int64_t)elem_bytes(dt), packed != NULL));
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
        .fetch_rows = opreg__cpu_gemv_fetch_rows(),
    };
    opreg__cpu_range_fn fn = dt == OPREG_DTYPE_I8 ? gemv_int8_portable : gemv_float_portable;
    void *packed = NULL;
    const struct opreg__gemv_pairs *pairs;
    opreg__cpu_range_fn split;
    if (m == 0) return;
    /* The packed kernels take the input rows converted once here, a few
     * rows against the whole weight stream; without memory for them, the
     * portable loops or the path's other kernels. */
    bool panel = false;
    if (dt == OPREG_DTYPE_F8_E4M3FN && (pairs = pairs_rows(isa, s, &a, &packed))) {
        fn = pairs->fp8;
        panel = m > s->gemv_tile_rows;
    } else if (dt == OPREG_DTYPE_F8_E4M3FN && (split = split_rows(s, &a, &packed))) {
        fn = split;
        panel = m > s->gemv_tile_rows;
    } else if ((panel = (packed = panel_rows(s, &a)) != NULL)) {
        fn = dt == OPREG_DTYPE_I8 ? s->gemv_panel_int8 : s->gemv_panel_fp8;
    } else if (s && dt == OPREG_DTYPE_I8 && s->gemv_int8_u8 &&
               (packed = malloc((size_t)m * sizeof(uint32_t)))) {
        s->gemv_sums_s8(&a, packed);
        fn = s->gemv_int8_u8;
    } else if (s && dt == OPREG_DTYPE_I8) {
        fn = s->gemv_int8;
    } else if (s && (packed = pack_rows(s, &a, false))) {
        fn = s->gemv_fp8;
    }
    a.packed = packed;
    opreg__cpu_parallel(fn, &a, units(n, panel), task_bytes(n * k, panel));
    free(packed);
}
