// CUDA sum reductions: kernels (block partials, ordered combine), launchers, entries.
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/reduce/reduce_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int kAllBlock = 256;
constexpr int64_t kAllMaxBlocks = 1024;
constexpr int kColTile = 32;   // columns per block of sum_rows (one warp wide)
constexpr int kRowLanes = 8;   // row-parallel threads per column
constexpr int64_t kRowsMaxSplits = 1024;
constexpr int64_t kTargetBlocks = 264;  // about two blocks per SM of an H200

int64_t all_blocks(int64_t n) {
  const int64_t b = (n + kAllBlock * 4 - 1) / (kAllBlock * 4);
  return b < 1 ? 1 : (b > kAllMaxBlocks ? kAllMaxBlocks : b);
}

int64_t row_splits(int64_t rows, int64_t cols) {
  const int64_t col_blocks = (cols + kColTile - 1) / kColTile;
  int64_t s = (kTargetBlocks + col_blocks - 1) / col_blocks;
  const int64_t max_useful = (rows + kRowLanes - 1) / kRowLanes;
  if (s > max_useful) s = max_useful;
  if (s > kRowsMaxSplits) s = kRowsMaxSplits;
  return s < 1 ? 1 : s;
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

// Block (kColTile, kRowLanes) sums column tile blockIdx.x over row split blockIdx.y.
template <class T>
__global__ void sum_rows_partial_kernel(const T* __restrict__ x, int64_t rows, int64_t cols, int64_t rows_per_split,
                                        float* __restrict__ partial) {
  __shared__ float tile[kRowLanes][kColTile + 1];
  const int64_t c = blockIdx.x * int64_t(kColTile) + threadIdx.x;
  const int64_t r0 = blockIdx.y * rows_per_split;
  const int64_t r1 = min(rows, r0 + rows_per_split);
  float s = 0.f;
  if (c < cols) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) s += widen(x[r * cols + c]);
  }
  tile[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0.f;
    for (int k = 0; k < kRowLanes; ++k) t += tile[k][threadIdx.x];
    partial[blockIdx.y * cols + c] = t;
  }
}

template <class T>
__global__ void sum_rows_combine_kernel(const float* __restrict__ partial, int64_t splits, int64_t cols, float alpha,
                                        T* __restrict__ y) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float s = 0.f;
    for (int64_t k = 0; k < splits; ++k) s += partial[k * cols + c];
    y[c] = device_cast<T>(alpha * s);
  }
}

}  // namespace

size_t sum_all_workspace_bytes(int64_t n) { return size_t(all_blocks(n)) * sizeof(float); }

size_t sum_rows_workspace_bytes(int64_t rows, int64_t cols) {
  return size_t(row_splits(rows, cols) * cols) * sizeof(float);
}

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
  const int64_t splits = row_splits(rows, cols);
  const int64_t rows_per_split = (rows + splits - 1) / splits;
  const int64_t col_blocks = (cols + kColTile - 1) / kColTile;
  CNN_CHECK(col_blocks < (int64_t(1) << 31), "sum_rows_cuda: too many columns ", cols);
  const dim3 grid{unsigned(col_blocks), unsigned(splits), 1u};
  sum_rows_partial_kernel<T><<<grid, dim3(kColTile, kRowLanes), 0, stream>>>(x, rows, cols,
                                                                            rows_per_split < 1 ? 1 : rows_per_split,
                                                                            workspace);
  CNN_CHECK_LAUNCH("sum_rows_partial_kernel");
  sum_rows_combine_kernel<T><<<grid_for(cols, 256), 256, 0, stream>>>(workspace, splits, cols, alpha, y);
  CNN_CHECK_LAUNCH("sum_rows_combine_kernel");
}

template void sum_all_cuda<float>(const float*, float*, int64_t, float, float*, cudaStream_t);
template void sum_all_cuda<__half>(const __half*, __half*, int64_t, float, float*, cudaStream_t);
template void sum_rows_cuda<float>(const float*, float*, int64_t, int64_t, float, float*, cudaStream_t);
template void sum_rows_cuda<__half>(const __half*, __half*, int64_t, int64_t, float, float*, cudaStream_t);

}  // namespace cnn::kernels
