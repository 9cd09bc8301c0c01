// CUDA elementwise kernels: one functor per op, run by launch_elementwise (elementwise_launch.cuh); then the exported
// entries. FP32 math for f16; outputs may alias inputs (each element is read and written by the same thread).
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/elementwise/elementwise_cuda.h"
#include "kernels/elementwise/elementwise_launch.cuh"

namespace cnn::kernels {

namespace {

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct ScaleOp {
  float alpha;
  __device__ float operator()(float a, float) const { return alpha * a; }
};
struct ReluOp {
  __device__ float operator()(float a, float) const { return a > 0.f ? a : 0.f; }
};
struct ReluBackwardOp {  // a = y, b = dy
  __device__ float operator()(float y, float dy) const { return y > 0.f ? dy : 0.f; }
};

template <class T>
__global__ void broadcast_kernel(const T* v, T* y, int64_t n, int64_t nv, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = device_cast<T>(alpha * widen(v[i % nv]));
}

}  // namespace

template <class T>
void binary_forward_cuda(const T* a, const T* b, T* y, const BinaryParams& p, cudaStream_t stream) {
  CNN_CHECK(p.nb >= 1 && p.n % p.nb == 0, "binary_forward_cuda: b of ", p.nb, " elements does not tile ", p.n);
  if (p.op == BinaryOp::add)
    launch_elementwise(a, b, y, p.n, p.nb, AddOp{}, stream, "binary add");
  else
    launch_elementwise(a, b, y, p.n, p.nb, MulOp{}, stream, "binary mul");
}

template <class T>
void scale_cuda(const T* x, T* y, int64_t n, float alpha, cudaStream_t stream) {
  launch_elementwise<T>(x, nullptr, y, n, 1, ScaleOp{alpha}, stream, "scale");
}

template <class T>
void broadcast_cuda(const T* v, T* y, int64_t n, int64_t nv, float alpha, cudaStream_t stream) {
  CNN_CHECK(nv >= 1 && n % nv == 0, "broadcast_cuda: ", nv, " values do not tile ", n);
  if (n == 0) return;
  broadcast_kernel<T><<<grid_for(n, kElementBlock), kElementBlock, 0, stream>>>(v, y, n, nv, alpha);
  CNN_CHECK_LAUNCH("broadcast_kernel");
}

template <class T>
void relu_forward_cuda(const T* x, T* y, int64_t n, cudaStream_t stream) {
  launch_elementwise<T>(x, nullptr, y, n, 1, ReluOp{}, stream, "relu forward");
}

template <class T>
void relu_backward_cuda(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream) {
  launch_elementwise(y, dy, dx, n, n, ReluBackwardOp{}, stream, "relu backward");
}

#define CNN_INSTANTIATE(T)                                                                         \
  template void binary_forward_cuda<T>(const T*, const T*, T*, const BinaryParams&, cudaStream_t); \
  template void scale_cuda<T>(const T*, T*, int64_t, float, cudaStream_t);                         \
  template void broadcast_cuda<T>(const T*, T*, int64_t, int64_t, float, cudaStream_t);            \
  template void relu_forward_cuda<T>(const T*, T*, int64_t, cudaStream_t);                         \
  template void relu_backward_cuda<T>(const T*, const T*, T*, int64_t, cudaStream_t);
CNN_INSTANTIATE(float)
CNN_INSTANTIATE(__half)
#undef CNN_INSTANTIATE

}  // namespace cnn::kernels
