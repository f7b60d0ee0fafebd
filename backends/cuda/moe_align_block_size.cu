/* moe_align_block_size on the GPU, one block, stable like the reference:
 * thread t owns a contiguous chunk of the flat topk_ids, so every expert's
 * entries in chunk order are in flat index order.
 *   1. each thread counts its chunk's ids per expert (a row of a scratch
 *      table of threads x experts);
 *   2. per expert, the rows become exclusive prefix sums over threads;
 *   3. one thread pads each expert's count to block_size and sums them into
 *      the experts' start offsets, and writes num_tokens_post_pad;
 *   4. experts_ids gets each padded block's expert;
 *   5. each thread walks its chunk again and places every id at its
 *      expert's start + its own running offset.
 * Padding entries of sorted_token_ids are left as they are, as the
 * reference leaves them. Ids outside 0..num_experts-1 are skipped (the host
 * cannot read them to refuse them; docs/cuda.md).
 * With far more experts than ids the table would follow num_experts, so
 * the registration (register.c, moe_align_sparse) ranks the ids on the host
 * and opreg__cuda_moe_align_ranked runs this kernel over the experts present,
 * naming the blocks' experts back after. */
#include "backends/cuda/common.cuh"

namespace {

template <typename ID>
__global__ void moe_align_kernel(const ID *ids, int64_t n, int64_t experts, int64_t bs,
                                 int32_t *sorted, int32_t *expert_ids, int32_t *post_pad,
                                 int32_t *counts, int64_t *start) {
    const int64_t nt = blockDim.x, t = threadIdx.x;
    const int64_t chunk = (n + nt - 1) / nt, lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    int32_t *mine = counts + t * experts;
    for (int64_t e = 0; e < experts; e++)
        mine[e] = 0;
    for (int64_t i = lo; i < hi; i++) {
        int64_t e = (int64_t)ids[i];
        if (e >= 0 && e < experts) mine[e]++;
    }
    __syncthreads();
    for (int64_t e = t; e < experts; e += nt) {
        int64_t run = 0;
        for (int64_t u = 0; u < nt; u++) {
            int32_t c = counts[u * experts + e];
            counts[u * experts + e] = (int32_t)run;
            run += c;
        }
        start[e + 1] = run; /* the count, until step 3 */
    }
    __syncthreads();
    if (t == 0) {
        start[0] = 0;
        for (int64_t e = 0; e < experts; e++)
            start[e + 1] = start[e] + (start[e + 1] + bs - 1) / bs * bs;
        *post_pad = (int32_t)start[experts];
    }
    __syncthreads();
    for (int64_t e = t; e < experts; e += nt)
        for (int64_t b = start[e] / bs; b < start[e + 1] / bs; b++)
            expert_ids[b] = (int32_t)e;
    for (int64_t i = lo; i < hi; i++) {
        int64_t e = (int64_t)ids[i];
        if (e >= 0 && e < experts) sorted[start[e] + mine[e]++] = (int32_t)i;
    }
}

template <typename ID>
opreg_status launch(const void *ids, int64_t n, int64_t experts, int64_t bs, int32_t *sorted,
                    int32_t *expert_ids, int32_t *post_pad, void *stream) {
    const char *op = "_C::moe_align_block_size";
    /* at most 256 threads, and a table of at most 2^24 counts */
    int64_t threads = ((int64_t)1 << 24) / experts;
    if (threads > 256) threads = 256;
    if (threads > n) threads = n;
    if (threads < 1) threads = 1;
    size_t table = (size_t)(threads * experts) * sizeof(int32_t);
    table = (table + 7) / 8 * 8;
    void *scratch;
    OPREG__TRY(
        opreg__cuda_scratch(&scratch, table + (size_t)(experts + 1) * sizeof(int64_t), stream, op));
    moe_align_kernel<ID><<<1, (unsigned)threads, 0, (cudaStream_t)stream>>>(
        (const ID *)ids, n, experts, bs, sorted, expert_ids, post_pad, (int32_t *)scratch,
        (int64_t *)((char *)scratch + table));
    opreg_status st = opreg__cuda_launched(op, "moe_align_kernel");
    opreg_status freed = opreg__cuda_scratch_free(scratch, stream, op);
    return st != OPREG_OK ? st : freed;
}

/* The blocks' experts are ranks among the experts present: their names
 * back from present. At most n blocks (an expert present has an id). */
__global__ void moe_name_back_kernel(int32_t *expert_ids, const int32_t *post_pad, int64_t bs,
                                     const int32_t *present) {
    const int64_t blocks = *post_pad / bs;
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks;
         b += (int64_t)gridDim.x * blockDim.x)
        expert_ids[b] = present[expert_ids[b]];
}

} // namespace

extern "C" opreg_status opreg__cuda_moe_align_ranked(const int32_t *host, int64_t n, int64_t rows,
                                                     int64_t block_size, int32_t *sorted,
                                                     int32_t *experts, int32_t *post_pad,
                                                     void *stream) {
    const char *op = "_C::moe_align_block_size";
    cudaStream_t s = (cudaStream_t)stream;
    size_t bytes = (size_t)(n + rows) * sizeof(int32_t);
    int64_t grid = (n + 255) / 256;
    void *dev;
    if (grid < 1) grid = 1;
    if (grid > 1024) grid = 1024;
    OPREG__TRY(opreg__cuda_scratch(&dev, bytes, stream, op));
    opreg_status st =
        opreg__cuda_status((int)cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s), op,
                           "cudaMemcpyAsync (to the device)");
    if (st == OPREG_OK)
        st = launch<int32_t>(dev, n, rows, block_size, sorted, experts, post_pad, stream);
    if (st == OPREG_OK) {
        moe_name_back_kernel<<<(unsigned)grid, 256, 0, s>>>(experts, post_pad, block_size,
                                                            (const int32_t *)dev + n);
        st = opreg__cuda_launched(op, "moe_name_back_kernel");
    }
    opreg_status freed = opreg__cuda_scratch_free(dev, stream, op);
    if (st == OPREG_OK) st = freed;
    if (st == OPREG_OK)
        st = opreg__cuda_status((int)cudaStreamSynchronize(s), op, "cudaStreamSynchronize");
    return st;
}

extern "C" opreg_status opreg__cuda_moe_align_block_size(const void *topk_ids, int id_dt, int64_t n,
                                                         int64_t num_experts, int64_t block_size,
                                                         int32_t *sorted, int32_t *experts,
                                                         int32_t *post_pad, void *stream) {
    if (id_dt == OPREG_DTYPE_I32)
        return launch<int32_t>(topk_ids, n, num_experts, block_size, sorted, experts, post_pad,
                               stream);
    if (id_dt == OPREG_DTYPE_I64)
        return launch<int64_t>(topk_ids, n, num_experts, block_size, sorted, experts, post_pad,
                               stream);
    return opreg__cuda_bad_dtype("_C::moe_align_block_size", id_dt);
}
