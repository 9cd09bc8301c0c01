// Ordered combines of per-chunk partial sums, shared by the norm and reduce kernels: a partial kernel writes one
// value per (chunk, column) in chunk-major (chunks, C) float arrays; a combine block of 32 columns x kCombineSplit
// warps folds them. Warp j takes the j-th contiguous range of chunks and folds it in chunk order, then warp 0 folds
// the kCombineSplit results in order: the order depends only on the shape, so the sums are reproducible.
// A combine moves little data (a few KB per column at most) and is bound by the latency of its loads, so the chunks
// are spread over 32 warps and each warp issues kCombineLoads chunks' loads before folding them (one warp per column
// walking 1024 chunks one load at a time waits on 1024 round trips).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cnn::kernels {

constexpr int kCombineSplit = 32;
constexpr int kCombineLoads = 8;
constexpr int kCombineThreads = 32 * kCombineSplit;  // the combine kernels' __launch_bounds__: <= 64 registers
inline dim3 combine_grid(int64_t c) { return dim3(unsigned((c + 31) / 32)); }
inline const dim3 kCombineBlock(32, kCombineSplit);

// Column of this thread in a combine block.
__device__ __forceinline__ int64_t combine_column() { return blockIdx.x * int64_t(32) + threadIdx.x; }

// Folds this warp's range of chunks for column ch in chunk order: fold(k, v) gets chunk k's value of each part
// (v[q] = part[q][k * c + ch]).
template <int kParts, class Fold>
__device__ __forceinline__ void fold_chunk_range(const float* const (&part)[kParts], int64_t chunks, int64_t c,
                                                 int64_t ch, Fold&& fold) {
  const int64_t per = (chunks + kCombineSplit - 1) / kCombineSplit;
  const int64_t k0 = min(chunks, threadIdx.y * per), k1 = min(chunks, k0 + per);
  for (int64_t k = k0; k < k1; k += kCombineLoads) {
    float v[kCombineLoads][kParts];
#pragma unroll
    for (int u = 0; u < kCombineLoads; ++u) {
#pragma unroll
      for (int q = 0; q < kParts; ++q) v[u][q] = k + u < k1 ? part[q][(k + u) * c + ch] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kCombineLoads; ++u)
      if (k + u < k1) fold(k + u, v[u]);
  }
}

// Ordered sums of kParts partial arrays for this thread's column: the block's warps fold their ranges, then warp 0
// folds the warps' results; s (of warp 0's threads) holds the column's sums. Every thread of the block must call it.
template <int kParts>
__device__ __forceinline__ void combine_sums(const float* const (&part)[kParts], int64_t chunks, int64_t c,
                                             float (&s)[kParts]) {
  __shared__ float partial[kParts][kCombineSplit][32];
  const int64_t ch = combine_column();
#pragma unroll
  for (int q = 0; q < kParts; ++q) s[q] = 0.f;
  if (ch < c) {
    fold_chunk_range(part, chunks, c, ch, [&](int64_t, const float(&v)[kParts]) {
#pragma unroll
      for (int q = 0; q < kParts; ++q) s[q] += v[q];
    });
  }
#pragma unroll
  for (int q = 0; q < kParts; ++q) partial[q][threadIdx.y][threadIdx.x] = s[q];
  __syncthreads();
  if (threadIdx.y != 0) return;
  for (int j = 1; j < kCombineSplit; ++j) {
#pragma unroll
    for (int q = 0; q < kParts; ++q) s[q] += partial[q][j][threadIdx.x];
  }
}

}  // namespace cnn::kernels
