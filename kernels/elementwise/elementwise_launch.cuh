// The elementwise launcher of the CUDA backend: y[i] = op(a[i], b[i % nb]) (b null for unary ops) by a pack kernel
// (core/cuda_pack.cuh: 16-byte packs, or 8 / 4 bytes where a broadcast operand's length or the alignment allows no
// more) over the body and an element kernel over the tail or when packs do not apply. Op is a functor
// float(float a, float b) on the device; FP32 math for f16, one rounding per output; y may alias a or b.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"

namespace cnn::kernels {

constexpr int kElementBlock = 256;

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

// The same over whole packs of kN: pack p covers elements [p kN, (p + 1) kN); nb % kN == 0 or nb == n, so b's pack
// is contiguous.
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

template <class T, class Op>
void launch_elementwise(const T* a, const T* b, T* y, int64_t n, int64_t nb, Op op, cudaStream_t s, const char* what) {
  if (n == 0) return;
  // Packs must tile b's period (a broadcast row, e.g. one value per channel); without b, or with a b as long as a,
  // any width does.
  int64_t done = 0;
  const int64_t period = b != nullptr && nb != n ? nb : cuda::Pack<T>::kN;
  cuda::with_pack<T>(period, cuda::common_alignment(a, b, y), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    if constexpr (kN > 1) {
      const int64_t packs = n / kN;
      if (packs == 0) return;
      pack_kernel<T, kN, Op><<<grid_for(packs, kElementBlock, 32768), kElementBlock, 0, s>>>(a, b, y, packs, nb, op);
      CNN_CHECK_LAUNCH(what);
      done = packs * kN;
    }
  });
  if (done < n) {
    element_kernel<T, Op><<<grid_for(n - done, kElementBlock, 32768), kElementBlock, 0, s>>>(a, b, y, done, n, nb, op);
    CNN_CHECK_LAUNCH(what);
  }
}

}  // namespace cnn::kernels
