/* paged_attention_v1 on the GPU, written to be right first: one block a
 * (sequence, query head), grid-stride.
 *   1. the query row goes to shared memory, in float;
 *   2. each thread takes tokens j = tid, tid + blockDim, ...: the dot
 *      product of q with the token's key (the paged layout of
 *      ops/cache_layout.h), times scale, plus the ALiBi bias
 *      slope * (j - L + 1); the logits go to a scratch row in device memory;
 *   3. block reductions give the max logit and the sum of exp(logit - max);
 *   4. each thread takes output dims i and sums p_j * v_j[i] over the tokens.
 * fp8 caches are dequantised as fp8 * kv_scale. A sequence length is
 * clamped to max_seq_len and to the block table's width, and a block id
 * outside the cache drops its token, so a bad table cannot make the kernel
 * read outside the cache (the host cannot read the device's tables to
 * refuse them; docs/cuda.md). An empty sequence gives zeros. */
#include "backends/cuda/common.cuh"
#include "ops/cache_layout.h"

namespace {

template <typename T>
__device__ __forceinline__ float cache_ld(const void *c, int64_t i, int kind, float kv_scale) {
    if (kind == 0) return opreg_cuda::to_f32(((const T *)c)[i]);
    uint8_t v = ((const uint8_t *)c)[i];
    return (kind == 1 ? opreg__e4m3fn_to_f32(v) : opreg__e5m2_to_f32(v)) * kv_scale;
}

template <typename T>
__global__ void attention_kernel(opreg__cuda_attention_args a, float *logits) {
    extern __shared__ float q[];
    const int64_t group = a.heads / a.kv_heads, D = a.head_size, bs = a.block_size;
    for (int64_t sh = blockIdx.x; sh < a.seqs * a.heads; sh += gridDim.x) {
        const int64_t s = sh / a.heads, h = sh % a.heads, kvh = h / group;
        int64_t L = a.seq_lens[s];
        if (L < 0) L = 0;
        if (L > a.max_seq_len) L = a.max_seq_len;
        if (L > a.max_blocks * bs) L = a.max_blocks * bs;
        const int32_t *table = a.block_tables + s * a.max_blocks;
        const T *qrow = (const T *)a.query + s * a.q_stride + h * D;
        float *lg = logits + sh * a.max_seq_len;
        const float slope = a.alibi ? a.alibi[h] : 0.0f;
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
            q[i] = opreg_cuda::to_f32(qrow[i]);
        __syncthreads();

        float mx = -INFINITY;
        for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
            int64_t blk = table[j / bs], off = j % bs;
            float v = -INFINITY;
            if (blk >= 0 && blk < a.num_blocks) {
                float dot = 0.0f;
                for (int64_t i = 0; i < D; i++)
                    dot += q[i] * cache_ld<T>(a.key_cache,
                                              opreg__kcache_index(blk, a.key_block_stride, kvh, i,
                                                                  D, a.x, off, bs),
                                              a.kind, a.kv_scale);
                v = a.scale * dot + slope * (float)(j - L + 1);
            }
            lg[j] = v;
            mx = fmaxf(mx, v);
        }
        mx = opreg_cuda::block_reduce<true>(mx, -INFINITY);

        float sum = 0.0f;
        for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
            float p = lg[j] == -INFINITY ? 0.0f : expf(lg[j] - mx);
            lg[j] = p;
            sum += p;
        }
        sum = opreg_cuda::block_reduce<false>(sum, 0.0f); /* its barrier publishes lg */

        T *orow = (T *)a.out + sh * D;
        for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
            float acc = 0.0f;
            for (int64_t j = 0; j < L; j++) {
                float p = lg[j];
                if (p == 0.0f) continue; /* also every dropped token */
                int64_t blk = table[j / bs], off = j % bs;
                acc += p * cache_ld<T>(
                               a.value_cache,
                               opreg__vcache_index(blk, a.value_block_stride, kvh, i, D, off, bs),
                               a.kind, a.kv_scale);
            }
            orow[i] = opreg_cuda::from_f32<T>(sum > 0.0f ? acc / sum : 0.0f);
        }
        __syncthreads(); /* q and lg are reused by the block's next row */
    }
}

template <typename T> opreg_status launch(const opreg__cuda_attention_args *a, void *stream) {
    const char *op = "_C::paged_attention_v1";
    const int64_t rows = a->seqs * a->heads;
    const size_t shared = (size_t)a->head_size * sizeof(float);
    if (rows == 0 || a->head_size == 0) return OPREG_OK;
    if (shared > 48 * 1024)
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "%s: argument 'query': head_size %lld is more than the CUDA kernel "
                           "takes (12288)",
                           op, (long long)a->head_size);
    /* A row of logits holds the longest sequence there can be: max_seq_len
     * bounds it, but so does the block table, and max_seq_len may be far
     * larger (up to INT64_MAX). The kernel clamps each length to both. */
    opreg__cuda_attention_args tight = *a;
    if (a->block_size > 0 && a->max_blocks <= a->max_seq_len / a->block_size)
        tight.max_seq_len = a->max_blocks * a->block_size;
    if (tight.max_seq_len > 0 && rows > INT64_MAX / (int64_t)sizeof(float) / tight.max_seq_len)
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY,
                           "%s: %lld rows of %lld logits do not fit in memory", op, (long long)rows,
                           (long long)tight.max_seq_len);
    void *logits;
    OPREG__TRY(opreg__cuda_scratch(&logits, (size_t)(rows * tight.max_seq_len) * sizeof(float),
                                   stream, op));
    attention_kernel<T><<<opreg_cuda::grid_for(rows, 1), 128, shared, (cudaStream_t)stream>>>(
        tight, (float *)logits);
    opreg_status st = opreg__cuda_launched(op, "attention_kernel");
    opreg_status freed = opreg__cuda_scratch_free(logits, stream, op);
    return st != OPREG_OK ? st : freed;
}

} // namespace

extern "C" opreg_status opreg__cuda_paged_attention_v1(const opreg__cuda_attention_args *a,
                                                       void *stream) {
    return OPREG_CUDA_BY_FLOAT(a->dt, "_C::paged_attention_v1", launch, a, stream);
}
