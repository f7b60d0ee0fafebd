/* topk_softmax on the GPU: one warp a token (grid-stride over tokens). The
 * warp reduces the row's max logit and the sum of exp(logit - max) in
 * float, then picks the k largest logits one after another: pick r is the
 * largest (logit, then lowest expert id) that comes after pick r-1 in that
 * order, which is the reference's choice without a "taken" array. The
 * weight of a pick is exp(logit - max) / sum. */
#include "backends/cuda/common.cuh"

namespace {

/* Whether (v, i) ranks before (w, j): larger logit, then lower id; an
 * empty candidate (j < 0) ranks last. */
__device__ __forceinline__ bool before(float v, int64_t i, float w, int64_t j) {
    return i >= 0 && (j < 0 || v > w || (v == w && i < j));
}

template <typename T>
__global__ void topk_softmax_kernel(float *weights, int32_t *indices, int32_t *token_expert,
                                    const T *gating, int64_t tokens, int64_t experts, int64_t k) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t t = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); t < tokens;
         t += warps) {
        const T *g = gating + t * experts;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t e = lane; e < experts; e += 32)
            mx = fmaxf(mx, opreg_cuda::to_f32(g[e]));
        mx = opreg_cuda::warp_max(mx);
        for (int64_t e = lane; e < experts; e += 32)
            sum += expf(opreg_cuda::to_f32(g[e]) - mx);
        sum = opreg_cuda::warp_sum(sum);
        float pv = 0.0f;
        int64_t pi = -1;
        for (int64_t r = 0; r < k; r++) {
            float bv = 0.0f;
            int64_t bi = -1;
            for (int64_t e = lane; e < experts; e += 32) {
                float v = opreg_cuda::to_f32(g[e]);
                bool after = pi < 0 || v < pv || (v == pv && e > pi);
                if (after && before(v, e, bv, bi)) bv = v, bi = e;
            }
            for (int o = 16; o > 0; o >>= 1) {
                float ov = __shfl_xor_sync(0xffffffffu, bv, o);
                long long oi = __shfl_xor_sync(0xffffffffu, (long long)bi, o);
                if (before(ov, oi, bv, bi)) bv = ov, bi = oi;
            }
            if (lane == 0) {
                weights[t * k + r] = bi >= 0 ? expf(bv - mx) / sum : 0.0f;
                indices[t * k + r] = (int32_t)(bi >= 0 ? bi : 0);
                token_expert[t * k + r] = (int32_t)(r * tokens + t);
            }
            pv = bv, pi = bi;
        }
    }
}

template <typename T>
opreg_status launch(float *weights, int32_t *indices, int32_t *token_expert, const void *gating,
                    int64_t tokens, int64_t experts, int64_t k, void *stream) {
    if (tokens == 0 || k == 0) return OPREG_OK;
    topk_softmax_kernel<T><<<opreg_cuda::grid_for(tokens, 8), 256, 0, (cudaStream_t)stream>>>(
        weights, indices, token_expert, (const T *)gating, tokens, experts, k);
    return opreg__cuda_launched("_C::topk_softmax", "topk_softmax_kernel");
}

} // namespace

extern "C" opreg_status opreg__cuda_topk_softmax(float *weights, int32_t *indices,
                                                 int32_t *token_expert, const void *gating,
                                                 int64_t tokens, int64_t experts, int64_t k, int dt,
                                                 void *stream) {
    return OPREG_CUDA_BY_FLOAT(dt, "_C::topk_softmax", launch, weights, indices, token_expert,
                               gating, tokens, experts, k, stream);
}
