// CUDA softmax cross-entropy: one warp per row for the forward, an ordered block sum for the mean, an elementwise
// backward. Kernels, then launchers and entries.
#include <cmath>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/loss/softmax_xent_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kCombineThreads = 1024;

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__global__ void xent_rows_kernel(const T* __restrict__ z, const int64_t* __restrict__ labels, int64_t B, int64_t K,
                                 float on, float off, float* __restrict__ lse, float* __restrict__ row_loss) {
  const int lane = threadIdx.x & 31;
  const int64_t b = blockIdx.x * int64_t(kWarpsPerBlock) + (threadIdx.x >> 5);
  if (b >= B) return;  // whole warps exit together
  const T* zr = z + b * K;
  float mx = -INFINITY;
  for (int64_t k = lane; k < K; k += 32) mx = fmaxf(mx, widen(zr[k]));
  mx = warp_max(mx);
  float se = 0.f, sz = 0.f;
  for (int64_t k = lane; k < K; k += 32) {
    const float v = widen(zr[k]);
    se += expf(v - mx);
    sz += v;
  }
  se = warp_sum(se);
  sz = warp_sum(sz);
  if (lane == 0) {
    const float l = mx + logf(se);
    const int64_t y = labels[b];
    lse[b] = l;
    row_loss[b] = (y >= 0 && y < K) ? l - on * widen(zr[y]) - off * sz : NAN;
  }
}

__global__ void xent_mean_kernel(const float* __restrict__ row_loss, int64_t B, float* __restrict__ loss) {
  __shared__ float sums[kCombineThreads / 32];
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < B; i += kCombineThreads) s += row_loss[i];
  s = warp_sum(s);
  if ((threadIdx.x & 31) == 0) sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = warp_sum(sums[threadIdx.x]);
    if (threadIdx.x == 0) loss[0] = s / float(B);
  }
}

template <class T>
__global__ void xent_backward_kernel(const T* __restrict__ z, const int64_t* __restrict__ labels,
                                     const float* __restrict__ lse, const float* __restrict__ dloss, int64_t B,
                                     int64_t K, float on, float off, T* __restrict__ dz) {
  const float g = dloss[0] / float(B);
  const int64_t n = B * K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / K, k = i - b * K;
    const int64_t y = labels[b];
    const float q = off + (k == y ? on : 0.f);
    const float v = (y >= 0 && y < K) ? g * (expf(widen(z[i]) - lse[b]) - q) : NAN;
    dz[i] = device_cast<T>(v);
  }
}

}  // namespace

size_t softmax_xent_workspace_bytes(int64_t batch) { return size_t(batch) * sizeof(float); }

template <class T>
void softmax_xent_forward_cuda(const T* logits, const int64_t* labels, float* lse, float* loss, const XentParams& p,
                               float* workspace, cudaStream_t stream) {
  p.validate("softmax_xent_forward_cuda");
  const float on = float(1.0 - p.label_smoothing), off = float(p.label_smoothing / double(p.classes));
  const int64_t blocks = (p.batch + kWarpsPerBlock - 1) / kWarpsPerBlock;
  CNN_CHECK(blocks < (int64_t(1) << 31), "softmax_xent_forward_cuda: batch too large, got ", p.batch);
  xent_rows_kernel<T><<<unsigned(blocks), kWarpsPerBlock * 32, 0, stream>>>(logits, labels, p.batch, p.classes, on,
                                                                            off, lse, workspace);
  CNN_CHECK_LAUNCH("xent_rows_kernel");
  xent_mean_kernel<<<1, kCombineThreads, 0, stream>>>(workspace, p.batch, loss);
  CNN_CHECK_LAUNCH("xent_mean_kernel");
}

template <class T>
void softmax_xent_backward_cuda(const T* logits, const int64_t* labels, const float* lse, const float* dloss,
                                T* dlogits, const XentParams& p, cudaStream_t stream) {
  p.validate("softmax_xent_backward_cuda");
  const float on = float(1.0 - p.label_smoothing), off = float(p.label_smoothing / double(p.classes));
  xent_backward_kernel<T><<<grid_for(p.batch * p.classes, 256), 256, 0, stream>>>(logits, labels, lse, dloss, p.batch,
                                                                                  p.classes, on, off, dlogits);
  CNN_CHECK_LAUNCH("xent_backward_kernel");
}

template void softmax_xent_forward_cuda<float>(const float*, const int64_t*, float*, float*, const XentParams&, float*,
                                               cudaStream_t);
template void softmax_xent_forward_cuda<__half>(const __half*, const int64_t*, float*, float*, const XentParams&,
                                                float*, cudaStream_t);
template void softmax_xent_backward_cuda<float>(const float*, const int64_t*, const float*, const float*, float*,
                                                const XentParams&, cudaStream_t);
template void softmax_xent_backward_cuda<__half>(const __half*, const int64_t*, const float*, const float*, __half*,
                                                 const XentParams&, cudaStream_t);

}  // namespace cnn::kernels
