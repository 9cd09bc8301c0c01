// CUDA GELU, per-sample scaling, global average pooling and drop-path scales: kernels, launchers, entries. GELU and
// the per-sample scale move 16-byte packs where the pointers allow (core/cuda_pack.cuh): one element per 2-byte access
// left FP16 GELU at under half of memory speed.
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/elementwise/elementwise_launch.cuh"
#include "kernels/pointwise/pointwise_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int kBlock = 256;
constexpr int kGapThreads = 128;  // channels per block of the pooling kernel
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// Exact GELU (erf), x Phi(x), and its derivative Phi(x) + x phi(x) times dy.
struct GeluOp {
  __device__ float operator()(float v, float) const { return 0.5f * v * (1.0f + erff(v * kInvSqrt2)); }
};
struct GeluBackwardOp {  // a = x, b = dy
  __device__ float operator()(float v, float dy) const {
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2)), pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    return dy * (cdf + v * pdf);
  }
};

// y = x * s[sample] over packs of kN elements [p kN, (p + 1) kN); per % kN == 0, so a pack lies within one sample
// (kN = 1: element by element).
template <class T, int kN>
__global__ void sample_scale_kernel(const T* __restrict__ x, const float* __restrict__ s, T* __restrict__ y,
                                    int64_t packs, int64_t per) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs; p += int64_t(gridDim.x) * blockDim.x) {
    float v[kN];
    cuda::load_n<kN>(x + p * kN, v);
    const float scale = s[p * kN / per];
#pragma unroll
    for (int k = 0; k < kN; ++k) v[k] *= scale;
    cuda::store_n<kN>(y + p * kN, v);
  }
}

// One thread per (sample, channel): consecutive threads read consecutive channels of a pixel row.
template <class T>
__global__ void gap_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t pixels, int64_t c) {
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, n = blockIdx.y;
  if (ch >= c) return;
  const T* xn = x + n * pixels * c + ch;
  float s = 0.f;
  for (int64_t p = 0; p < pixels; ++p) s += widen(xn[p * c]);
  y[n * c + ch] = device_cast<T>(s / float(pixels));
}

template <class T>
__global__ void gap_backward_kernel(const T* __restrict__ dy, T* __restrict__ dx, int64_t total, int64_t pixels,
                                    int64_t c, float inv_pixels) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c, n = i / (pixels * c);
    dx[i] = device_cast<T>(widen(dy[n * c + ch]) * inv_pixels);
  }
}

__global__ void drop_scales_kernel(const float* __restrict__ u, float* __restrict__ s, int64_t n, float keep,
                                   float inv_keep) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) s[i] = u[i] < keep ? inv_keep : 0.0f;
}

}  // namespace

template <class T>
void gelu_forward_cuda(const T* x, T* y, int64_t n, cudaStream_t s) {
  launch_elementwise<T>(x, nullptr, y, n, 1, GeluOp{}, s, "gelu_forward");
}

template <class T>
void gelu_backward_cuda(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t s) {
  launch_elementwise(x, dy, dx, n, n, GeluBackwardOp{}, s, "gelu_backward");
}

template <class T>
void sample_scale_cuda(const T* x, const float* sc, T* y, int64_t samples, int64_t per, cudaStream_t s) {
  if (samples * per == 0) return;
  cuda::with_pack<T>(per, cuda::common_alignment(x, y), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    const int64_t packs = samples * per / kN;
    sample_scale_kernel<T, kN><<<grid_for(packs, kBlock), kBlock, 0, s>>>(x, sc, y, packs, per);
  });
  CNN_CHECK_LAUNCH("sample_scale");
}

template <class T>
void gap_forward_cuda(const T* x, T* y, int64_t samples, int64_t pixels, int64_t c, cudaStream_t s) {
  CNN_CHECK(samples >= 1 && samples <= 65535 && pixels >= 1 && c >= 1,
            "global_avg_pool cuda: expected 1 <= N <= 65535, H*W >= 1, C >= 1, got N=", samples, " H*W=", pixels,
            " C=", c);
  const dim3 grid(unsigned((c + kGapThreads - 1) / kGapThreads), unsigned(samples));
  gap_forward_kernel<T><<<grid, kGapThreads, 0, s>>>(x, y, pixels, c);
  CNN_CHECK_LAUNCH("global_avg_pool forward");
}

template <class T>
void gap_backward_cuda(const T* dy, T* dx, int64_t samples, int64_t pixels, int64_t c, cudaStream_t s) {
  const int64_t total = samples * pixels * c;
  if (total == 0) return;
  gap_backward_kernel<T><<<grid_for(total, kBlock), kBlock, 0, s>>>(dy, dx, total, pixels, c, 1.0f / float(pixels));
  CNN_CHECK_LAUNCH("global_avg_pool backward");
}

void drop_scales_cuda(const float* u, float* sc, int64_t n, float keep, cudaStream_t s) {
  if (n == 0) return;
  drop_scales_kernel<<<unsigned((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(u, sc, n, keep, 1.0f / keep);
  CNN_CHECK_LAUNCH("drop_path scales");
}

#define CNN_POINTWISE_CUDA(T)                                                                               \
  template void gelu_forward_cuda<T>(const T*, T*, int64_t, cudaStream_t);                                  \
  template void gelu_backward_cuda<T>(const T*, const T*, T*, int64_t, cudaStream_t);                       \
  template void sample_scale_cuda<T>(const T*, const float*, T*, int64_t, int64_t, cudaStream_t);           \
  template void gap_forward_cuda<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);                 \
  template void gap_backward_cuda<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);
CNN_POINTWISE_CUDA(float)
CNN_POINTWISE_CUDA(__half)
#undef CNN_POINTWISE_CUDA

}  // namespace cnn::kernels
