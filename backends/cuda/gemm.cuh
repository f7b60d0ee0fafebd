/* The tiled GEMM shared by cutlass_scaled_mm.cu and linear.cu:
 *   C[i][j] = sum_p A[i * lda + p] * B[j * ldb + p]
 * (both operands K-contiguous: a row-major a and a column-major b, or an
 * input and the rows of a weight). A block computes a 64 x 64 tile of C
 * with 256 threads, 4 x 4 outputs each, staging 32-deep slices of A and B
 * in shared memory. The epilogue functor receives (i, j, accumulator).
 *
 * Integer inputs (int8) accumulate exactly: each 32-deep slice in int32
 * (at most 32 * 128 * 128), added to an int64 total. Float inputs (fp8,
 * f16, bf16, f32) accumulate in float. This is a plain, portable kernel,
 * correct before fast: it uses neither tensor cores nor cuBLAS (docs/cuda.md
 * says why and what would be faster). */
#ifndef OPREG_BACKENDS_CUDA_GEMM_CUH
#define OPREG_BACKENDS_CUDA_GEMM_CUH

#include "backends/cuda/common.cuh"

namespace opreg_cuda {

constexpr int GEMM_BM = 64, GEMM_BN = 64, GEMM_BK = 32, GEMM_THREADS = 256;

/* The value an input element contributes: int for int8, float otherwise. */
__device__ __forceinline__ int gemm_in(int8_t v) {
    return v;
}
struct e4m3 {
    uint8_t bits;
};
__device__ __forceinline__ float gemm_in(e4m3 v) {
    return opreg__e4m3fn_to_f32(v.bits);
}
template <typename T> __device__ __forceinline__ float gemm_in(T v) {
    return to_f32(v);
}

template <typename TIN> struct gemm_acc {
    typedef float slice; /* the accumulator of one slice */
    typedef float total; /* the running total */
};
template <> struct gemm_acc<int8_t> {
    typedef int slice;
    typedef long long total;
};

template <typename TIN, typename EPI>
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_kernel(const TIN *A, int64_t lda, const TIN *B, int64_t ldb, int64_t M, int64_t N,
                int64_t K, EPI epi) {
    typedef typename gemm_acc<TIN>::slice S;
    typedef typename gemm_acc<TIN>::total U;
    __shared__ S as[GEMM_BK][GEMM_BM + 1], bsh[GEMM_BK][GEMM_BN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t mtiles = (M + GEMM_BM - 1) / GEMM_BM;
    const int64_t j0 = (int64_t)blockIdx.x * GEMM_BN;
    for (int64_t mt = blockIdx.y; mt < mtiles; mt += gridDim.y) {
        const int64_t i0 = mt * GEMM_BM;
        U total[4][4];
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                total[r][c] = 0;
        for (int64_t k0 = 0; k0 < K; k0 += GEMM_BK) {
            for (int l = threadIdx.x; l < GEMM_BM * GEMM_BK; l += GEMM_THREADS) {
                int row = l / GEMM_BK, kk = l % GEMM_BK;
                int64_t gk = k0 + kk, gi = i0 + row, gj = j0 + row;
                as[kk][row] = gi < M && gk < K ? (S)gemm_in(A[gi * lda + gk]) : (S)0;
                bsh[kk][row] = gj < N && gk < K ? (S)gemm_in(B[gj * ldb + gk]) : (S)0;
            }
            __syncthreads();
            S part[4][4];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++)
                    part[r][c] = 0;
            for (int kk = 0; kk < GEMM_BK; kk++) {
                S av[4], bv[4];
                for (int r = 0; r < 4; r++)
                    av[r] = as[kk][ty + 16 * r];
                for (int c = 0; c < 4; c++)
                    bv[c] = bsh[kk][tx + 16 * c];
                for (int r = 0; r < 4; r++)
                    for (int c = 0; c < 4; c++)
                        part[r][c] += av[r] * bv[c];
            }
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++)
                    total[r][c] += (U)part[r][c];
            __syncthreads();
        }
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++) {
                int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
                if (i < M && j < N) epi(i, j, total[r][c]);
            }
    }
}

template <typename TIN, typename EPI>
opreg_status launch_gemm(const char *op, const TIN *A, int64_t lda, const TIN *B, int64_t ldb,
                         int64_t M, int64_t N, int64_t K, EPI epi, void *stream) {
    if (M == 0 || N == 0) return OPREG_OK;
    int64_t nt = (N + GEMM_BN - 1) / GEMM_BN, mt = (M + GEMM_BM - 1) / GEMM_BM;
    if (nt > 0x7FFFFFFF)
        return opreg__fail(OPREG_ERR_UNSUPPORTED, "%s: N = %lld is too large for the CUDA kernel",
                           op, (long long)N);
    dim3 grid((unsigned)nt, (unsigned)(mt < 65535 ? mt : 65535));
    gemm_kernel<TIN, EPI>
        <<<grid, GEMM_THREADS, 0, (cudaStream_t)stream>>>(A, lda, B, ldb, M, N, K, epi);
    return opreg__cuda_launched(op, "gemm_kernel");
}

} // namespace opreg_cuda

#endif
