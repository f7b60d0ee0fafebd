/* The activation kernels, shared by the six activation .cu files; the math
 * of each is a float function of ops/act_math.h.
 *   gated:       one block a row; out[r][i] = (T)((T)act(x) * y) with x =
 *                in[r][i], y = in[r][d + i], as the reference;
 *   elementwise: a grid-stride loop over the flat tensor, out = (T)act(x).
 * Both move 16-byte vectors when sizes and pointers allow. */
#ifndef OPREG_BACKENDS_CUDA_ACT_CUH
#define OPREG_BACKENDS_CUDA_ACT_CUH

#include "backends/cuda/common.cuh"
#include "ops/act_math.h"

namespace opreg_cuda {

#define OPREG_CUDA_ACT(name, fn)                                                                   \
    struct name {                                                                                  \
        __device__ __forceinline__ float operator()(float x) const {                               \
            return fn(x);                                                                          \
        }                                                                                          \
    };
OPREG_CUDA_ACT(act_silu, opreg__act_silu)
OPREG_CUDA_ACT(act_gelu_erf, opreg__act_gelu_erf)
OPREG_CUDA_ACT(act_gelu_tanh, opreg__act_gelu_tanh)
OPREG_CUDA_ACT(act_gelu_new, opreg__act_gelu_new)
OPREG_CUDA_ACT(act_gelu_fast, opreg__act_gelu_fast)
OPREG_CUDA_ACT(act_gelu_quick, opreg__act_gelu_quick)
#undef OPREG_CUDA_ACT

template <typename T, typename ACT> __device__ __forceinline__ T gated_one(T x, T y) {
    return from_f32<T>(round_to<T>(ACT()(to_f32(x))) * to_f32(y));
}

template <typename T, typename ACT, bool VEC>
__global__ void gated_kernel(T *out, const T *in, int64_t rows, int64_t d) {
    constexpr int V = VEC ? vec16<T>::n : 1;
    typedef vec16<T> vt;
    const int64_t nv = d / V;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = in + r * 2 * d, *y = x + d;
        T *o = out + r * d;
        for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
            if (VEC) {
                vt a = reinterpret_cast<const vt *>(x)[i], b = reinterpret_cast<const vt *>(y)[i];
                vt c;
                for (int j = 0; j < vt::n; j++)
                    c.e[j] = gated_one<T, ACT>(a.e[j], b.e[j]);
                reinterpret_cast<vt *>(o)[i] = c;
            } else {
                o[i] = gated_one<T, ACT>(x[i], y[i]);
            }
        }
    }
}

template <typename ACT> struct gated_launch {
    template <typename T>
    static opreg_status run(const char *op, void *out, const void *in, int64_t rows, int64_t d,
                            void *stream) {
        if (rows == 0 || d == 0) return OPREG_OK;
        constexpr int V = vec16<T>::n;
        bool vec = d % V == 0 && aligned16(out) && aligned16(in);
        unsigned threads = threads_for(vec ? d / V : d), grid = grid_for(rows, 1);
        cudaStream_t s = (cudaStream_t)stream;
        if (vec)
            gated_kernel<T, ACT, true><<<grid, threads, 0, s>>>((T *)out, (const T *)in, rows, d);
        else
            gated_kernel<T, ACT, false><<<grid, threads, 0, s>>>((T *)out, (const T *)in, rows, d);
        return opreg__cuda_launched(op, "gated_kernel");
    }
};

/* out may be in (in place): each element is read before it is written, by
 * the same thread. */
template <typename T, typename ACT, bool VEC>
__global__ void elementwise_kernel(T *out, const T *in, int64_t n) {
    constexpr int V = VEC ? vec16<T>::n : 1;
    typedef vec16<T> vt;
    const int64_t nv = n / V;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t v = i; v < nv; v += step) {
        if (VEC) {
            vt a = reinterpret_cast<const vt *>(in)[v], c;
            for (int j = 0; j < vt::n; j++)
                c.e[j] = from_f32<T>(ACT()(to_f32(a.e[j])));
            reinterpret_cast<vt *>(out)[v] = c;
        } else {
            out[v] = from_f32<T>(ACT()(to_f32(in[v])));
        }
    }
    /* the tail after the last whole vector */
    for (int64_t t = nv * V + i; t < n; t += step)
        out[t] = from_f32<T>(ACT()(to_f32(in[t])));
}

template <typename ACT> struct elementwise_launch {
    template <typename T>
    static opreg_status run(const char *op, void *out, const void *in, int64_t n, void *stream) {
        if (n == 0) return OPREG_OK;
        bool vec = aligned16(out) && aligned16(in);
        unsigned threads = 256, grid = grid_for(vec ? n / vec16<T>::n + 1 : n, threads);
        cudaStream_t s = (cudaStream_t)stream;
        if (vec)
            elementwise_kernel<T, ACT, true><<<grid, threads, 0, s>>>((T *)out, (const T *)in, n);
        else
            elementwise_kernel<T, ACT, false><<<grid, threads, 0, s>>>((T *)out, (const T *)in, n);
        return opreg__cuda_launched(op, "elementwise_kernel");
    }
};

} // namespace opreg_cuda

/* The launcher of a gated activation .cu file. */
#define OPREG_CUDA_GATED_OP(op, ACT)                                                               \
    extern "C" opreg_status opreg__cuda_##op(void *out, const void *in, int64_t rows, int64_t d,   \
                                             int dt, void *stream) {                               \
        return OPREG_CUDA_BY_FLOAT(dt, "_C::" #op, opreg_cuda::gated_launch<ACT>::run, "_C::" #op, \
                                   out, in, rows, d, stream);                                      \
    }

/* The launcher of an elementwise activation .cu file. */
#define OPREG_CUDA_ELEMENTWISE_OP(op, ACT)                                                         \
    extern "C" opreg_status opreg__cuda_##op(void *out, const void *in, int64_t n, int dt,         \
                                             void *stream) {                                       \
        return OPREG_CUDA_BY_FLOAT(dt, "_C::" #op, opreg_cuda::elementwise_launch<ACT>::run,       \
                                   "_C::" #op, out, in, n, stream);                                \
    }

#endif
