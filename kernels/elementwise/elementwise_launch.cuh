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

// Accesses a thread issues before it computes any: about 16 bytes of each operand in flight per thread, so narrow
// packs and single elements (a broadcast row of odd length, e.g. SLaK's 249 channels) keep as many bytes in flight
// as 16-byte packs; the grid is sized for that many per thread.
template <class T, int kN>
constexpr int kAccessesInFlight = 16 / (kN * int(sizeof(T))) > 1 ? 16 / (kN * int(sizeof(T))) : 1;

// y[i] = op(a[i], b[i % nb]) for i in [start, n); b may be null (unary ops). b's index is stepped with the loop (one
// 64-bit modulo per thread, not per element). A thread loads its kU elements i, i + step, ... before it stores any:
// each element is still read and written by one thread, so y may alias a or b.
template <class T, class Op>
__global__ void element_kernel(const T* a, const T* b, T* y, int64_t start, int64_t n, int64_t nb, Op op) {
  constexpr int kU = kAccessesInFlight<T, 1>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x, step_b = step % nb;
  int64_t i = start + blockIdx.x * int64_t(blockDim.x) + threadIdx.x, ib = i % nb;
  for (; i < n; i += kU * step) {
    float av[kU], bv[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const bool in = i + u * step < n;
      av[u] = in ? widen(a[i + u * step]) : 0.f;
      bv[u] = in && b != nullptr ? widen(b[ib]) : 0.f;
      ib += step_b;
      if (ib >= nb) ib -= nb;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (i + u * step < n) y[i + u * step] = device_cast<T>(op(av[u], bv[u]));
  }
}

// The same over whole packs of kN: pack p covers elements [p kN, (p + 1) kN); nb % kN == 0 or nb == n, so b's pack
// is contiguous.
template <class T, int kN, class Op>
__global__ void pack_kernel(const T* a, const T* b, T* y, int64_t packs, int64_t nb, Op op) {
  constexpr int kU = kAccessesInFlight<T, kN>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs; p += kU * step) {
    float av[kU][kN], bv[kU][kN] = {};
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t q = p + u * step;
      if (q >= packs) break;
      cuda::load_n<kN>(a + q * kN, av[u]);
      if (b != nullptr) cuda::load_n<kN>(b + (q * kN) % nb, bv[u]);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t q = p + u * step;
      if (q >= packs) break;
#pragma unroll
      for (int k = 0; k < kN; ++k) av[u][k] = op(av[u][k], bv[u][k]);
      cuda::store_n<kN>(y + q * kN, av[u]);
    }
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
      const int64_t threads = (packs + kAccessesInFlight<T, kN> - 1) / kAccessesInFlight<T, kN>;
      pack_kernel<T, kN, Op><<<grid_for(threads, kElementBlock, 32768), kElementBlock, 0, s>>>(a, b, y, packs, nb, op);
      CNN_CHECK_LAUNCH(what);
      done = packs * kN;
    }
  });
  if (done < n) {
    const int64_t threads = (n - done + kAccessesInFlight<T, 1> - 1) / kAccessesInFlight<T, 1>;
    element_kernel<T, Op><<<grid_for(threads, kElementBlock, 32768), kElementBlock, 0, s>>>(a, b, y, done, n, nb, op);
    CNN_CHECK_LAUNCH(what);
  }
}

}  // namespace cnn::kernels
