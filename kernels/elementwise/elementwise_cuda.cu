// CUDA elementwise kernels: one functor per op, run by a pack kernel (core/cuda_pack.cuh: 16-byte packs, or 8 / 4 bytes
// where a broadcast operand's length or the alignment allows no more) over the body and an element kernel over the
// tail or when packs do not apply; then the exported entries.
// FP32 math for f16; outputs may alias inputs (each element is read and written by the same thread).
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/elementwise/elementwise_cuda.h"

namespace cnn::kernels {

namespace {

using cuda::Pack;

constexpr int kBlock = 256;

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

// y[i] = op(a[i], b[i % nb]) for i in [start, n); b may be null (unary ops). b's index is stepped with the loop (one
// 64-bit modulo per thread, not per element).
template <class T, class Op>
__global__ void element_kernel(const T* a, const T* b, T* y, int64_t start, int64_t n, int64_t nb, Op op) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x, step_b = step % nb;
  int64_t i = start + blockIdx.x * int64_t(blockDim.x) + threadIdx.x, ib = i % nb;
  for (; i < n; i += step) {
    y[i] = device_cast<T>(op(widen(a[i]), b != nullptr ? widen(b[ib]) : 0.f));
    ib += step_b;
    if (ib >= nb) ib -= nb;
  }
}

// The same over whole packs of kN: pack p covers elements [p kN, (p + 1) kN); nb % kN == 0, so b's pack is
// contiguous.
template <class T, int kN, class Op>
__global__ void pack_kernel(const T* a, const T* b, T* y, int64_t packs, int64_t nb, Op op) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs; p += int64_t(gridDim.x) * blockDim.x) {
    float av[kN], bv[kN] = {};
    cuda::load_n<kN>(a + p * kN, av);
    if (b != nullptr) cuda::load_n<kN>(b + (p * kN) % nb, bv);
#pragma unroll
    for (int k = 0; k < kN; ++k) av[k] = op(av[k], bv[k]);
    cuda::store_n<kN>(y + p * kN, av);
  }
}

template <class T>
__global__ void broadcast_kernel(const T* v, T* y, int64_t n, int64_t nv, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = device_cast<T>(alpha * widen(v[i % nv]));
}

// ---- launcher ------------------------------------------------------------------------------------------------

template <class T, class Op>
void launch_elementwise(const T* a, const T* b, T* y, int64_t n, int64_t nb, Op op, cudaStream_t s, const char* what) {
  if (n == 0) return;
  // Packs must tile b's period (a broadcast row, e.g. one value per channel); without b any width does.
  int64_t done = 0;
  cuda::with_pack<T>(b != nullptr ? nb : Pack<T>::kN, cuda::common_alignment(a, b, y), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    if constexpr (kN > 1) {
      const int64_t packs = n / kN;
      if (packs == 0) return;
      pack_kernel<T, kN, Op><<<grid_for(packs, kBlock, 32768), kBlock, 0, s>>>(a, b, y, packs, nb, op);
      CNN_CHECK_LAUNCH(what);
      done = packs * kN;
    }
  });
  if (done < n) {
    element_kernel<T, Op><<<grid_for(n - done, kBlock, 32768), kBlock, 0, s>>>(a, b, y, done, n, nb, op);
    CNN_CHECK_LAUNCH(what);
  }
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
  broadcast_kernel<T><<<grid_for(n, kBlock), kBlock, 0, stream>>>(v, y, n, nv, alpha);
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
