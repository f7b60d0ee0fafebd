/* _C::linear on oneDNN: out = input . weight^T + bias, f32 and bf16.
 *
 * The weight [N, K] row-major is handed to oneDNN as matmul weights [K, N]
 * in "ba" layout, which is the same bytes, so nothing is transposed or
 * copied. A weight-packing layout (format "any") would be faster for large
 * M, but it needs a reorder of the weight per call or a cache keyed by the
 * weight's address, which breaks when the caller rewrites the weight.
 *
 * bf16 runs oneDNN's bf16 matmul, which oneDNN 2.6 implements on AMX and
 * AVX512-BF16/AVX512 CPUs. On other CPUs (AVX2 only) oneDNN 2.6 has no bf16
 * matmul at all, so the kernel widens input and weight to f32 (exact),
 * runs the f32 matmul and rounds the result to bf16 once. Both give one
 * rounding of an f32-accumulated sum. The bias is passed as f32 in both
 * cases: exact, and the bias type every bf16 matmul implementation takes. */
#include "backends/cpu/onednn/onednn.h"
#include "backends/cpu/onednn/onednn_internal.h"

#include <stdio.h>
#include <string.h>

static int64_t leading_rows(const opreg_tensor *input) {
    int64_t m = 1;
    for (int d = 0; d + 1 < input->ndim; d++)
        m *= input->shape[d];
    return m;
}

static const void *ptr_of(const opreg_tensor *t) {
    return t ? (const char *)t->data + t->byte_offset : NULL;
}

static opreg__mm_key key_of(opreg_dtype dt, int64_t m, int64_t n, int64_t k, bool has_bias) {
    dnnl_data_type_t d = dt == OPREG_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
    opreg__mm_key key = { d, d, has_bias ? dnnl_f32 : dnnl_data_type_undef, d, m, n, k, 0 };
    return key;
}

/* Carve @p count float arrays out of this thread's scratch, each starting
 * on a 64-byte boundary. */
static opreg_status scratch_floats(float **out, const size_t *count, int arrays) {
    size_t total = 0;
    char *base;
    for (int i = 0; i < arrays; i++)
        total += (count[i] + 15u) & ~(size_t)15u;
    OPREG__TRY(opreg__onednn_scratch(total * sizeof(float), (void **)&base));
    for (int i = 0; i < arrays; i++) {
        out[i] = (float *)base;
        base += ((count[i] + 15u) & ~(size_t)15u) * sizeof(float);
    }
    return OPREG_OK;
}

/* Run @p key's primitive; with bf16 data, the f32 bias is widened first. */
static opreg_status run_native(opreg__mm_prim *prim, const opreg_tensor *out,
                               const opreg_tensor *input, const opreg_tensor *weight,
                               const opreg_tensor *bias, int64_t n) {
    const void *bias_f32 = ptr_of(bias);
    if (bias && bias->dtype.code == kDLBfloat) {
        float *buf;
        size_t count = (size_t)n;
        OPREG__TRY(scratch_floats(&buf, &count, 1));
        opreg__bf16_to_f32_n(buf, ptr_of(bias), count);
        bias_f32 = buf;
    }
    return opreg__mm_execute(prim, ptr_of(input), ptr_of(weight), bias_f32, (void *)ptr_of(out));
}

/* bf16 on a CPU where oneDNN has no bf16 matmul: widen, f32 matmul, round. */
static opreg_status linear_bf16_via_f32(const opreg_tensor *out, const opreg_tensor *input,
                                        const opreg_tensor *weight, const opreg_tensor *bias,
                                        int64_t m, int64_t n, int64_t k) {
    opreg__mm_key key = key_of(OPREG_DTYPE_F32, m, n, k, bias != NULL);
    opreg__mm_prim *prim;
    size_t count[4] = { (size_t)(m * k), (size_t)(n * k), (size_t)(m * n), (size_t)n };
    float *buf[4];
    opreg_status st;
    OPREG__TRY(opreg__mm_acquire(&key, &prim));
    st = scratch_floats(buf, count, bias ? 4 : 3);
    if (st == OPREG_OK) {
        opreg__bf16_to_f32_n(buf[0], ptr_of(input), count[0]);
        opreg__bf16_to_f32_n(buf[1], ptr_of(weight), count[1]);
        if (bias) opreg__bf16_to_f32_n(buf[3], ptr_of(bias), count[3]);
        st = opreg__mm_execute(prim, buf[0], buf[1], bias ? buf[3] : NULL, buf[2]);
    }
    if (st == OPREG_OK) opreg__f32_to_bf16_n((uint16_t *)ptr_of(out), buf[2], count[2]);
    opreg__mm_release(prim);
    return st;
}

/* K == 0: an empty sum, so every row is the bias (or zero). oneDNN is not
 * asked, since zero-sized reductions are not something it promises. */
static void fill_bias_rows(const opreg_tensor *out, const opreg_tensor *bias, int64_t m,
                           int64_t n) {
    size_t row = (size_t)n * (out->dtype.bits / 8u);
    char *dst = (char *)ptr_of(out);
    for (int64_t i = 0; i < m; i++, dst += row) {
        if (bias)
            memcpy(dst, ptr_of(bias), row);
        else
            memset(dst, 0, row);
    }
}

opreg_status opreg__onednn_linear(opreg_tensor *out, const opreg_tensor *input,
                                  const opreg_tensor *weight, const opreg_tensor *bias) {
    int64_t m, n, k;
    opreg_dtype dt;
    opreg__mm_key key;
    opreg__mm_prim *prim;
    opreg_status st;
    dt = input->dtype.code == kDLBfloat ? OPREG_DTYPE_BF16 : OPREG_DTYPE_F32;
    m = leading_rows(input);
    n = weight->shape[0];
    k = weight->shape[1];
    if (m == 0 || n == 0) return OPREG_OK;
    if (k == 0) {
        fill_bias_rows(out, bias, m, n);
        return OPREG_OK;
    }
    key = key_of(dt, m, n, k, bias != NULL);
    st = opreg__mm_acquire(&key, &prim);
    if (st == OPREG_ERR_UNSUPPORTED && dt == OPREG_DTYPE_BF16) {
        opreg_clear_error();
        return linear_bf16_via_f32(out, input, weight, bias, m, n, k);
    }
    if (st != OPREG_OK) return st;
    st = run_native(prim, out, input, weight, bias, n);
    opreg__mm_release(prim);
    return st;
}

opreg_status opreg__onednn_linear_impl(opreg_dtype dtype, int64_t m, int64_t n, int64_t k,
                                       bool has_bias, char *buf, size_t cap) {
    opreg__mm_key key;
    opreg__mm_prim *prim;
    opreg_status st;
    const char *suffix = "";
    if (dtype != OPREG_DTYPE_F32 && dtype != OPREG_DTYPE_BF16)
        return opreg__fail(OPREG_ERR_SHAPE, "_C::linear: dtype %d has no oneDNN kernel",
                           (int)dtype);
    if (m < 1 || n < 1 || k < 1)
        return opreg__fail(OPREG_ERR_SHAPE, "_C::linear: sizes must be >= 1 to run oneDNN");
    key = key_of(dtype, m, n, k, has_bias);
    st = opreg__mm_acquire(&key, &prim);
    if (st == OPREG_ERR_UNSUPPORTED && dtype == OPREG_DTYPE_BF16) {
        opreg_clear_error();
        key = key_of(OPREG_DTYPE_F32, m, n, k, has_bias);
        suffix = " (bf16 via f32)";
        st = opreg__mm_acquire(&key, &prim);
    }
    if (st != OPREG_OK) return st;
    snprintf(buf, cap, "%s%s", opreg__mm_impl(prim), suffix);
    opreg__mm_release(prim);
    return OPREG_OK;
}
