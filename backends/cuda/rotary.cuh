/* The rotary embedding kernel shared by rotary_embedding.cu and
 * batched_rotary_embedding.cu. One block a token (grid-stride); its threads
 * take the (head, pair) rotations of the query, then of the key, in place:
 * x' = x cos - y sin, y' = y cos + x sin, in float, rounded once to T. The
 * pair is (i, i + rot_dim/2) for NeoX and (2i, 2i + 1) for GPT-J. A token
 * whose cache row is outside the cache is left as it is (the host cannot
 * read the positions to refuse it; see docs/cuda.md). */
#ifndef OPREG_BACKENDS_CUDA_ROTARY_CUH
#define OPREG_BACKENDS_CUDA_ROTARY_CUH

#include "backends/cuda/common.cuh"

namespace opreg_cuda {

template <typename T>
__device__ __forceinline__ void rotate_pair(T *e, const T *cs, int64_t half, int64_t j, bool neox) {
    int64_t xi = neox ? j : 2 * j, yi = neox ? j + half : 2 * j + 1;
    float c = to_f32(cs[j]), s = to_f32(cs[half + j]);
    float x = to_f32(e[xi]), y = to_f32(e[yi]);
    e[xi] = from_f32<T>(x * c - y * s);
    e[yi] = from_f32<T>(y * c + x * s);
}

template <typename T> __global__ void rotary_kernel(opreg__cuda_rotary_args a) {
    const int64_t half = a.rot_dim / 2;
    const int64_t nq = a.q_row / a.head_size * half, nk = a.k_row / a.head_size * half;
    const T *cache = (const T *)a.cache;
    for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
        int64_t p = a.positions[t], o = a.offsets ? a.offsets[t] : 0;
        if (p < 0 || o < 0 || p >= a.cache_rows || o >= a.cache_rows - p) continue;
        const T *cs = cache + (p + o) * a.rot_dim;
        T *q = (T *)a.query + t * a.q_stride, *k = (T *)a.key + t * a.k_stride;
        for (int64_t i = threadIdx.x; i < nq; i += blockDim.x)
            rotate_pair(q + i / half * a.head_size, cs, half, i % half, a.is_neox != 0);
        for (int64_t i = threadIdx.x; i < nk; i += blockDim.x)
            rotate_pair(k + i / half * a.head_size, cs, half, i % half, a.is_neox != 0);
    }
}

template <typename T>
opreg_status launch_rotary(const char *op, const opreg__cuda_rotary_args *a, void *stream) {
    if (a->tokens == 0 || a->rot_dim == 0) return OPREG_OK;
    int64_t half = a->rot_dim / 2;
    int64_t most = (a->q_row > a->k_row ? a->q_row : a->k_row) / a->head_size * half;
    rotary_kernel<T><<<grid_for(a->tokens, 1), threads_for(most), 0, (cudaStream_t)stream>>>(*a);
    return opreg__cuda_launched(op, "rotary_kernel");
}

} // namespace opreg_cuda

#endif
