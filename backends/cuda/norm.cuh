/* The norm kernel shared by rms_norm.cu and fused_add_rms_norm.cu. One block
 * a row; the block reduces the row's sum of squares in float.
 *   plain: out[r] = norm(x[r]);
 *   fused: z = (T)(out[r] + x[r]) is stored to x[r] (the residual), and
 *          out[r] (the input) = norm(z);
 * rows of x lie x_stride elements apart, rows of out out_stride apart. */
#ifndef OPREG_BACKENDS_CUDA_NORM_CUH
#define OPREG_BACKENDS_CUDA_NORM_CUH

#include "backends/cuda/common.cuh"

namespace opreg_cuda {

/* One element of the second pass: (T)((T)(v * r) * w). */
template <typename T> __device__ __forceinline__ T norm_one(float v, float r, T w) {
    return from_f32<T>(round_to<T>(v * r) * to_f32(w));
}

template <typename T, bool FUSED, bool VEC>
__global__ void norm_kernel(T *out, int64_t out_stride, T *x, int64_t x_stride, const T *w,
                            int64_t rows, int64_t h, float eps) {
    constexpr int V = VEC ? vec16<T>::n : 1;
    typedef vec16<T> vt;
    const int64_t nv = h / V;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        T *xr = x + r * x_stride;
        T *orow = out + r * out_stride;
        float ss = 0.0f;
        for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
            if (VEC) {
                vt a = reinterpret_cast<const vt *>(xr)[i];
                if (FUSED) {
                    vt b = reinterpret_cast<const vt *>(orow)[i];
                    for (int j = 0; j < vt::n; j++)
                        a.e[j] = from_f32<T>(to_f32(b.e[j]) + to_f32(a.e[j]));
                    reinterpret_cast<vt *>(xr)[i] = a;
                }
                for (int j = 0; j < vt::n; j++) {
                    float f = to_f32(a.e[j]);
                    ss += f * f;
                }
            } else {
                T a = xr[i];
                if (FUSED) {
                    a = from_f32<T>(to_f32(orow[i]) + to_f32(a));
                    xr[i] = a;
                }
                float f = to_f32(a);
                ss += f * f;
            }
        }
        ss = block_reduce<false>(ss, 0.0f);
        const float rs = rsqrtf(ss / (float)h + eps);
        /* each thread reads back only the elements it handled above */
        for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
            if (VEC) {
                vt a = reinterpret_cast<const vt *>(xr)[i];
                vt b = reinterpret_cast<const vt *>(w)[i], o;
                for (int j = 0; j < vt::n; j++)
                    o.e[j] = norm_one<T>(to_f32(a.e[j]), rs, b.e[j]);
                reinterpret_cast<vt *>(orow)[i] = o;
            } else {
                orow[i] = norm_one<T>(to_f32(xr[i]), rs, w[i]);
            }
        }
    }
}

template <typename T>
opreg_status launch_norm(void *out, int64_t out_stride, const void *x, int64_t x_stride,
                         const void *w, int64_t rows, int64_t h, float eps, bool fused,
                         void *stream) {
    const char *op = fused ? "_C::fused_add_rms_norm" : "_C::rms_norm";
    if (rows == 0 || h == 0) return OPREG_OK;
    constexpr int V = vec16<T>::n;
    bool vec = h % V == 0 && x_stride % V == 0 && out_stride % V == 0 && aligned16(out) &&
               aligned16(x) && aligned16(w);
    unsigned threads = threads_for(vec ? h / V : h), grid = grid_for(rows, 1);
    cudaStream_t s = (cudaStream_t)stream;
    T *o = (T *)out, *xx = (T *)x;
    const T *ww = (const T *)w;
    if (fused && vec)
        norm_kernel<T, true, true>
            <<<grid, threads, 0, s>>>(o, out_stride, xx, x_stride, ww, rows, h, eps);
    else if (fused)
        norm_kernel<T, true, false>
            <<<grid, threads, 0, s>>>(o, out_stride, xx, x_stride, ww, rows, h, eps);
    else if (vec)
        norm_kernel<T, false, true>
            <<<grid, threads, 0, s>>>(o, out_stride, xx, x_stride, ww, rows, h, eps);
    else
        norm_kernel<T, false, false>
            <<<grid, threads, 0, s>>>(o, out_stride, xx, x_stride, ww, rows, h, eps);
    return opreg__cuda_launched(op, "norm_kernel");
}

} // namespace opreg_cuda

#endif
