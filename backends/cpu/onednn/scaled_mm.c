/* _C::cutlass_scaled_mm on oneDNN: int8 x int8 with per-tensor or per-row
 * a-scales, per-tensor or per-column b-scales and an optional bias.
 *
 * The order of operations is that of vLLM's CUTLASS epilogue
 * (ScaledEpilogue / ScaledEpilogueBias), which the CPU kernel matches:
 * acc = A.B exactly in int32; t = (float)acc * b_scale[n] (rounded to f32);
 * v = fmaf(a_scale[m], t, bias[n]), without a bias a_scale[m] * t; then one
 * rounding of v to out's dtype.
 *
 * Design: oneDNN computes only the int32 accumulators (s8 x s8 -> s32, no
 * output scales), and a vectorised pass here applies both scales and the
 * bias. Why not oneDNN's output scales: oneDNN 2.6 takes scales with a mask
 * over N only, so per-row a-scales need a pass of our own anyway, and
 * oneDNN's epilogue may fold the per-tensor product a_s * b_s into one
 * scale or apply it in another order, which rounds differently from the
 * CUTLASS order. With int32 out of oneDNN every configuration rounds the
 * same way, bit for bit; and one primitive serves a shape whatever the
 * scale configuration, since scale values never reach the cache key.
 *
 * Exactness on CPUs without VNNI: there oneDNN multiplies (a + 128) as u8
 * by b with vpmaddubsw, whose int16 sum of two products saturates when
 * |b| > 64 (255 * 127 * 2 > 32767), so full-range int8 weights give wrong
 * sums (seen on AVX2 with oneDNN 2.6). So on such CPUs b is split as
 * b = b_hi + b_lo with b_hi = floor(b / 2) in [-64, 63] and b_lo in
 * [-64, 64], both GEMMs run as one [K, 2N] GEMM, and the epilogue adds the
 * halves. VNNI (vpdpbusd) and AMX accumulate in int32 and take b as it is.
 *
 * Without the split and with f32 out, the accumulators go straight into
 * out's buffer (int32 and f32 are the same size) and the pass converts in
 * place; otherwise they go to this thread's scratch buffer.
 *
 * int32 accumulation is exact while K * 128 * 128 < 2^31, i.e. K < 131072,
 * as in CUTLASS; larger K wraps in both. */
#include "backends/cpu/onednn/onednn.h"
#include "backends/cpu/onednn/onednn_internal.h"

#include <string.h>

static void *ptr_of(const opreg_tensor *t) {
    return t ? (char *)t->data + t->byte_offset : NULL;
}

static int64_t numel(const opreg_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* Elements between consecutive indices of dim @p d (strides NULL: dense). */
static int64_t stride_of(const opreg_tensor *t, int d) {
    int64_t s = 1;
    if (t->strides) return t->strides[d];
    for (int i = d + 1; i < t->ndim; i++)
        s *= t->shape[i];
    return s;
}

/* True when oneDNN's int8 GEMM may saturate on this CPU: no VNNI or AMX. */
static bool int8_needs_split(void) {
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_vnni) != dnnl_cpu_isa_avx512_core_vnni &&
           (isa & dnnl_cpu_isa_avx2_vnni) != dnnl_cpu_isa_avx2_vnni;
}

/* b [K, N] column-major into [K, 2N] column-major: halves that each fit
 * vpmaddubsw's int16 pair sums. (b - (b & 1)) / 2 is floor(b / 2) without
 * relying on >> of a negative number. */
static void split_weights(int8_t *dst, const int8_t *b, size_t count) {
    for (size_t i = 0; i < count; i++) {
        int hi = (b[i] - (b[i] & 1)) / 2;
        dst[i] = (int8_t)hi;
        dst[count + i] = (int8_t)(b[i] - hi);
    }
}

/* int32 accumulators of a [M,K] . w [K,n_cols] into @p acc [M, n_cols]. */
static opreg_status int8_gemm(int32_t *acc, const void *a, const void *w, int64_t m, int64_t n_cols,
                              int64_t k) {
    opreg__mm_key key = { dnnl_s8, dnnl_s8, dnnl_data_type_undef, dnnl_s32, m, n_cols, k, 0 };
    opreg__mm_prim *prim;
    opreg_status st;
    if (k == 0) {
        memset(acc, 0, (size_t)(m * n_cols) * sizeof *acc);
        return OPREG_OK;
    }
    OPREG__TRY(opreg__mm_acquire(&key, &prim));
    st = opreg__mm_execute(prim, a, w, NULL, acc);
    opreg__mm_release(prim);
    return st;
}

/* Where the accumulators go and, when split, the split weights. */
static opreg_status accumulate(const opreg_tensor *out, const opreg_tensor *a,
                               const opreg_tensor *b, int64_t m, int64_t n, int64_t k, bool split,
                               int32_t **acc) {
    size_t acc_bytes = (size_t)(m * n) * sizeof(int32_t) * (split ? 2u : 1u);
    size_t acc_room = (acc_bytes + 63u) & ~(size_t)63u;
    char *scratch = NULL;
    const void *w = ptr_of(b);
    bool in_place = !split && out->dtype.code == kDLFloat;
    if (!in_place)
        OPREG__TRY(opreg__onednn_scratch(acc_room + (split ? 2u * (size_t)(n * k) : 0),
                                         (void **)&scratch));
    *acc = in_place ? ptr_of(out) : (int32_t *)(void *)scratch;
    if (split) {
        int8_t *halves = (int8_t *)scratch + acc_room;
        split_weights(halves, ptr_of(b), (size_t)(n * k));
        w = halves;
    }
    return int8_gemm(*acc, ptr_of(a), w, m, split ? 2 * n : n, k);
}

/* fp8 e4m3fn: a and b are widened exactly into this thread's scratch,
 * dense, and oneDNN's bf16 matmul (f32 where this oneDNN has none for the
 * CPU) sums their products in f32: a product of two e4m3 values is exact
 * in either. The f32 sums then take the int8 epilogue's steps. The copy
 * of b is written once per call and read by every block of oneDNN's GEMM,
 * a small cost beside the arithmetic once a has more than a few rows (the
 * CPU key's gemv provider takes the few-row calls). */
static opreg_status fp8_accumulate(const opreg_tensor *a, const opreg_tensor *b, int64_t m,
                                   int64_t n, int64_t k, float **acc) {
    opreg__mm_key key = { dnnl_bf16, dnnl_bf16, dnnl_data_type_undef, dnnl_f32, m, n, k, 0 };
    opreg__mm_prim *prim;
    opreg_status st = opreg__mm_acquire(&key, &prim);
    bool bf16 = st == OPREG_OK;
    size_t es = bf16 ? 2 : 4, acc_room = ((size_t)(m * n) * sizeof(float) + 63u) & ~(size_t)63u;
    size_t a_room = ((size_t)(m * k) * es + 63u) & ~(size_t)63u;
    const uint8_t *pa = ptr_of(a), *pb = ptr_of(b);
    int64_t as0 = stride_of(a, 0), bs1 = stride_of(b, 1);
    char *scratch, *wa, *wb;
    if (!bf16) {
        if (st != OPREG_ERR_UNSUPPORTED) return st;
        opreg_clear_error();
        key.src = key.wei = dnnl_f32;
        OPREG__TRY(opreg__mm_acquire(&key, &prim));
    }
    st = opreg__onednn_scratch(acc_room + a_room + (size_t)(n * k) * es, (void **)&scratch);
    if (st != OPREG_OK) {
        opreg__mm_release(prim);
        return st;
    }
    *acc = (float *)(void *)scratch;
    wa = scratch + acc_room;
    wb = wa + a_room;
    for (int64_t i = 0; i < m; i++)
        if (bf16)
            opreg__e4m3_to_bf16_n((uint16_t *)(void *)wa + i * k, pa + i * as0, (size_t)k);
        else
            opreg__e4m3_to_f32_n((float *)(void *)wa + i * k, pa + i * as0, (size_t)k);
    for (int64_t j = 0; j < n; j++)
        if (bf16)
            opreg__e4m3_to_bf16_n((uint16_t *)(void *)wb + j * k, pb + j * bs1, (size_t)k);
        else
            opreg__e4m3_to_f32_n((float *)(void *)wb + j * k, pb + j * bs1, (size_t)k);
    st = opreg__mm_execute(prim, wa, wb, NULL, *acc);
    opreg__mm_release(prim);
    return st;
}

opreg_status opreg__onednn_scaled_mm(opreg_tensor *out, const opreg_tensor *a,
                                     const opreg_tensor *b, const opreg_tensor *a_scales,
                                     const opreg_tensor *b_scales, const opreg_tensor *bias) {
    int64_t m, n, k;
    bool out_bf16, split, fp8;
    int32_t *acc;
    const float *as;
    opreg__mm_epilogue e;
    m = a->shape[0];
    k = a->shape[1];
    n = b->shape[1];
    if (m == 0 || n == 0) return OPREG_OK;
    out_bf16 = out->dtype.code == kDLBfloat;
    fp8 = a->dtype.code != kDLInt;
    split = !fp8 && k > 0 && int8_needs_split();
    /* fp8 with k == 0 takes the int8 route, whose empty sums are zeros */
    if (fp8 && k > 0) {
        float *sums;
        OPREG__TRY(fp8_accumulate(a, b, m, n, k, &sums));
        acc = (int32_t *)(void *)sums;
    } else {
        OPREG__TRY(accumulate(out, a, b, m, n, k, split, &acc));
    }

    as = ptr_of(a_scales);
    e.b_scales = ptr_of(b_scales);
    e.per_col = numel(b_scales) != 1;
    e.bias = ptr_of(bias);
    e.split = split ? (size_t)n : 0;
    e.acc_f32 = fp8 && k > 0;
    for (int64_t i = 0; i < m; i++) {
        const int32_t *row = acc + i * n * (split ? 2 : 1);
        e.a_scale = as[numel(a_scales) == 1 ? 0 : i];
        if (out_bf16)
            opreg__mm_epilogue_row(&e, row, NULL, (uint16_t *)ptr_of(out) + i * n, (size_t)n);
        else
            opreg__mm_epilogue_row(&e, row, (float *)ptr_of(out) + i * n, NULL, (size_t)n);
    }
    return OPREG_OK;
}
