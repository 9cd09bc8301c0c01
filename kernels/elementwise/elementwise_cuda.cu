// CUDA elementwise kernels (grid-stride loops, FP32 math for f16), then launchers, then the exported entries.
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/elementwise/elementwise_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int kBlock = 256;

#define CNN_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T, BinaryOp kOp>
__global__ void binary_kernel(const T* a, const T* b, T* y, int64_t n, int64_t nb) {
  CNN_GRID_STRIDE(i, n) {
    const float av = widen(a[i]), bv = widen(b[i % nb]);
    y[i] = device_cast<T>(kOp == BinaryOp::add ? av + bv : av * bv);
  }
}

template <class T>
__global__ void scale_kernel(const T* x, T* y, int64_t n, float alpha) {
  CNN_GRID_STRIDE(i, n) { y[i] = device_cast<T>(alpha * widen(x[i])); }
}

template <class T>
__global__ void broadcast_kernel(const T* v, T* y, int64_t n, int64_t nv, float alpha) {
  CNN_GRID_STRIDE(i, n) { y[i] = device_cast<T>(alpha * widen(v[i % nv])); }
}

template <class T>
__global__ void relu_forward_kernel(const T* x, T* y, int64_t n) {
  CNN_GRID_STRIDE(i, n) {
    const float v = widen(x[i]);
    y[i] = device_cast<T>(v > 0.f ? v : 0.f);
  }
}

template <class T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t n) {
  CNN_GRID_STRIDE(i, n) { dx[i] = widen(y[i]) > 0.f ? dy[i] : device_cast<T>(0.f); }
}

#undef CNN_GRID_STRIDE

}  // namespace

template <class T>
void binary_forward_cuda(const T* a, const T* b, T* y, const BinaryParams& p, cudaStream_t stream) {
  CNN_CHECK(p.nb >= 1 && p.n % p.nb == 0, "binary_forward_cuda: b of ", p.nb, " elements does not tile ", p.n);
  if (p.n == 0) return;
  if (p.op == BinaryOp::add) {
    binary_kernel<T, BinaryOp::add><<<grid_for(p.n, kBlock), kBlock, 0, stream>>>(a, b, y, p.n, p.nb);
  } else {
    binary_kernel<T, BinaryOp::mul><<<grid_for(p.n, kBlock), kBlock, 0, stream>>>(a, b, y, p.n, p.nb);
  }
  CNN_CHECK_LAUNCH("binary_kernel");
}

template <class T>
void scale_cuda(const T* x, T* y, int64_t n, float alpha, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(x, y, n, alpha);
  CNN_CHECK_LAUNCH("scale_kernel");
}

template <class T>
void broadcast_cuda(const T* v, T* y, int64_t n, int64_t nv, float alpha, cudaStream_t stream) {
  CNN_CHECK(nv >= 1 && n % nv == 0, "broadcast_cuda: ", nv, " values do not tile ", n);
  if (n == 0) return;
  broadcast_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(v, y, n, nv, alpha);
  CNN_CHECK_LAUNCH("broadcast_kernel");
}

template <class T>
void relu_forward_cuda(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_forward_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(x, y, n);
  CNN_CHECK_LAUNCH("relu_forward_kernel");
}

template <class T>
void relu_backward_cuda(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  relu_backward_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(y, dy, dx, n);
  CNN_CHECK_LAUNCH("relu_backward_kernel");
}

#define CNN_INSTANTIATE(T)                                                                                   \
  template void binary_forward_cuda<T>(const T*, const T*, T*, const BinaryParams&, cudaStream_t);           \
  template void scale_cuda<T>(const T*, T*, int64_t, float, cudaStream_t);                                   \
  template void broadcast_cuda<T>(const T*, T*, int64_t, int64_t, float, cudaStream_t);                      \
  template void relu_forward_cuda<T>(const T*, T*, int64_t, cudaStream_t);                                   \
  template void relu_backward_cuda<T>(const T*, const T*, T*, int64_t, cudaStream_t);
CNN_INSTANTIATE(float)
CNN_INSTANTIATE(__half)
#undef CNN_INSTANTIATE

}  // namespace cnn::kernels
