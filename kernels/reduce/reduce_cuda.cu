// CUDA sum reductions: kernels (block partials, ordered combine), launchers, entries.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/common/chunk_combine.cuh"
#include "kernels/reduce/reduce_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int kAllBlock = 256;
constexpr int64_t kAllMaxBlocks = 1024;
constexpr int kColTile = 32;             // packs of columns per block of sum_rows (one warp wide)
constexpr int kRowLanes = 8;             // row-parallel threads per column pack
constexpr int kRowLoads = 4;             // rows a thread loads before adding them: four loads in flight
constexpr int64_t kSplitRows = 256;      // rows per split at least (the partial per column is 1/256 of the data)
constexpr int64_t kRowsMaxSplits = 256;  // splits at most: one load round per warp of the combine (32 x 8)

int64_t all_blocks(int64_t n) {
  const int64_t b = (n + kAllBlock * 4 - 1) / (kAllBlock * 4);
  return b < 1 ? 1 : (b > kAllMaxBlocks ? kAllMaxBlocks : b);
}

// Row splits of sum_rows, from the rows alone (the workspace size must not depend on the pointers' alignment, which
// sets the pack width): SLaK-T's and ConvNeXt's bias gradients (4096 to 262144 rows of 124 to 3992 columns) get 16 to
// 256 splits, 256 to 1000 blocks of 256 threads with the column packs.
int64_t row_splits(int64_t rows) {
  return std::clamp<int64_t>((rows + kSplitRows - 1) / kSplitRows, 1, kRowsMaxSplits);
}

__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = threadIdx.x < warps ? warp_sums[threadIdx.x] : 0.f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;  // valid in thread 0
}

template <class T>
__global__ void sum_all_partial_kernel(const T* __restrict__ x, int64_t n, float* __restrict__ partial) {
  float s = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    s += widen(x[i]);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

template <class T>
__global__ void sum_all_combine_kernel(const float* __restrict__ partial, int64_t count, float alpha, T* y) {
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) y[0] = device_cast<T>(alpha * s);
}

// Block (kColTile, kRowLanes): thread x sums the kN columns of pack x of column tile blockIdx.x over the rows of split
// blockIdx.y, row lane y taking every kRowLanes-th row, kRowLoads rows loaded before they are added; the row lanes'
// sums are then added in lane order.
template <class T, int kN>
__global__ void sum_rows_partial_kernel(const T* __restrict__ x, int64_t rows, int64_t cols, int64_t rows_per_split,
                                        float* __restrict__ partial) {
  __shared__ float tile[kRowLanes][kColTile * kN + 1];
  const int64_t c0 = (blockIdx.x * int64_t(kColTile) + threadIdx.x) * kN;
  const int64_t r0 = blockIdx.y * rows_per_split;
  const int64_t r1 = min(rows, r0 + rows_per_split);
  float s[kN] = {};
  if (c0 < cols) {
    int64_t r = r0 + threadIdx.y;
    for (; r + (kRowLoads - 1) * kRowLanes < r1; r += kRowLoads * kRowLanes) {
      float v[kRowLoads][kN];
#pragma unroll
      for (int u = 0; u < kRowLoads; ++u) cuda::load_n<kN>(x + (r + u * kRowLanes) * cols + c0, v[u]);
#pragma unroll
      for (int u = 0; u < kRowLoads; ++u) {
#pragma unroll
        for (int k = 0; k < kN; ++k) s[k] += v[u][k];
      }
    }
    for (; r < r1; r += kRowLanes) {
      float v[kN];
      cuda::load_n<kN>(x + r * cols + c0, v);
#pragma unroll
      for (int k = 0; k < kN; ++k) s[k] += v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < kN; ++k) tile[threadIdx.y][threadIdx.x * kN + k] = s[k];
  __syncthreads();
  if (threadIdx.y == 0 && c0 < cols) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      float t = 0.f;
      for (int j = 0; j < kRowLanes; ++j) t += tile[j][threadIdx.x * kN + k];
      partial[blockIdx.y * cols + c0 + k] = t;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kCombineThreads)
    sum_rows_combine_kernel(const float* __restrict__ partial, int64_t splits, int64_t cols, float alpha,
                            T* __restrict__ y) {
  float s[1];
  combine_sums<1>({partial}, splits, cols, s);
  const int64_t c = combine_column();
  if (threadIdx.y == 0 && c < cols) y[c] = device_cast<T>(alpha * s[0]);
}

}  // namespace

size_t sum_all_workspace_bytes(int64_t n) { return size_t(all_blocks(n)) * sizeof(float); }

size_t sum_rows_workspace_bytes(int64_t rows, int64_t cols) { return size_t(row_splits(rows) * cols) * sizeof(float); }

template <class T>
void sum_all_cuda(const T* x, T* y, int64_t n, float alpha, float* workspace, cudaStream_t stream) {
  CNN_CHECK(n >= 0, "sum_all_cuda: negative element count ", n);
  const int64_t blocks = all_blocks(n);
  sum_all_partial_kernel<T><<<unsigned(blocks), kAllBlock, 0, stream>>>(x, n, workspace);
  CNN_CHECK_LAUNCH("sum_all_partial_kernel");
  sum_all_combine_kernel<T><<<1, 1024, 0, stream>>>(workspace, blocks, alpha, y);
  CNN_CHECK_LAUNCH("sum_all_combine_kernel");
}

template <class T>
void sum_rows_cuda(const T* x, T* y, int64_t rows, int64_t cols, float alpha, float* workspace, cudaStream_t stream) {
  CNN_CHECK(rows >= 0 && cols >= 1, "sum_rows_cuda: expected rows >= 0 and cols >= 1, got ", rows, " x ", cols);
  const int64_t splits = row_splits(rows);
  const int64_t rows_per_split = std::max<int64_t>(1, (rows + splits - 1) / splits);
  cuda::with_pack<T>(cols, cuda::common_alignment(x), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    const int64_t col_blocks = (cols / kN + kColTile - 1) / kColTile;
    CNN_CHECK(col_blocks < (int64_t(1) << 31), "sum_rows_cuda: too many columns ", cols);
    sum_rows_partial_kernel<T, kN>
        <<<dim3(unsigned(col_blocks), unsigned(splits)), dim3(kColTile, kRowLanes), 0, stream>>>(
            x, rows, cols, rows_per_split, workspace);
  });
  CNN_CHECK_LAUNCH("sum_rows_partial_kernel");
  sum_rows_combine_kernel<T><<<combine_grid(cols), kCombineBlock, 0, stream>>>(workspace, splits, cols, alpha, y);
  CNN_CHECK_LAUNCH("sum_rows_combine_kernel");
}

template void sum_all_cuda<float>(const float*, float*, int64_t, float, float*, cudaStream_t);
template void sum_all_cuda<__half>(const __half*, __half*, int64_t, float, float*, cudaStream_t);
template void sum_rows_cuda<float>(const float*, float*, int64_t, int64_t, float, float*, cudaStream_t);
template void sum_rows_cuda<__half>(const __half*, __half*, int64_t, int64_t, float, float*, cudaStream_t);

}  // namespace cnn::kernels
