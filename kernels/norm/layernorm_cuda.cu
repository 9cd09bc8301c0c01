// CUDA LayerNorm: kernels, launchers, the exported entries. FP32 arithmetic for f32 and f16 data. A group of 4 to 32
// lanes per row keeps the row in registers (C <= 1024, loaded in the widest packs C and the pointers allow), so the
// forward reads x once and the backward reads dy and x once; the backward also sums dgamma / dbeta per block over
// fixed row chunks, and an ordered pass combines the blocks' partials. Rows longer than 1024 take one warp per row
// with loops over the row (three reads of x forward, two of dy and x for dx, then a column pass for dgamma / dbeta).
#include "kernels/norm/norm_cuda_common.cuh"

namespace cnn::kernels {

namespace {

using namespace norm_detail;

// Sum over each aligned group of kG lanes (16 or 32) of the warp; every lane of the warp takes part.
template <int kG = 32>
__device__ __forceinline__ float group_sum(float v) {
  for (int o = kG / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kRowsPerBlock = 8;  // warps (rows) per block of the LayerNorm loop kernels (C > 1024)

// LayerNorm register kernels: a group of kG lanes (4 to 32) per row keeps the row in registers, at most
// kLnLaneValues values of each row tensor per lane, which covers C <= 1024 with 32 lanes. Groups are sized for about
// kLnFwdLaneValues / kLnBwdLaneValues values per lane, so that short rows still keep enough loads in flight (several
// rows per warp: C = 96 in f16 takes 8 lanes per row forward, 16 backward) and the backward, which holds four values
// per channel (dy, xhat and two sums), stays at about 64 registers up to C = 256.
constexpr int kLnLaneValues = 32;
constexpr int kLnFwdLaneValues = 16;
constexpr int kLnBwdLaneValues = 8;
constexpr int kLnFwdThreads = 256;  // forward block: 256 / kG rows
constexpr int kLnGroups = 8;        // backward block: kLnGroups groups sharing one partial row of dgamma / dbeta

// LayerNorm with the row in registers: lane threadIdx.x of group (row slot) threadIdx.y keeps packs lane, lane + kG,
// ... (kIters at most) of kN consecutive channels, packs = C / kN.

// y = (x - mean) * rstd * gamma + beta; mean, then the variance about it, from the registers.
template <class T, int kN, int kIters, int kG>
__global__ void __launch_bounds__(kLnFwdThreads)
    layernorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                             T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd, int64_t rows,
                             int64_t c, float eps) {
  const int lane = threadIdx.x, packs = int(c / kN);
  const int64_t row = blockIdx.x * int64_t(blockDim.y) + threadIdx.y;
  const bool live = row < rows;  // a group past the last row still joins its warp's shuffles
  const T* xr = x + (live ? row : 0) * c;
  float v[kIters][kN], s = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const int p = j * kG + lane;
    if (live && p < packs) {
      cuda::load_n<kN>(xr + p * kN, v[j]);
    } else {
#pragma unroll
      for (int k = 0; k < kN; ++k) v[j][k] = 0.f;
    }
#pragma unroll
    for (int k = 0; k < kN; ++k) s += v[j][k];
  }
  const float mu = group_sum<kG>(s) / float(c);
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    if (j * kG + lane >= packs) continue;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const float d = v[j][k] - mu;
      q += d * d;
    }
  }
  const float rs = 1.0f / sqrtf(group_sum<kG>(q) / float(c) + eps);
  if (!live) return;
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  T* yr = y + row * c;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const int p = j * kG + lane;
    if (p >= packs) continue;
    float g[kN], b[kN];
    cuda::load_n<kN>(gamma + p * kN, g);
    cuda::load_n<kN>(beta + p * kN, b);
#pragma unroll
    for (int k = 0; k < kN; ++k) v[j][k] = (v[j][k] - mu) * rs * g[k] + b[k];
    cuda::store_n<kN>(yr + p * kN, v[j]);
  }
}

// dx = rstd (g - mean_C(g) - xhat mean_C(g xhat)) with g = dy gamma, xhat = (x - mean) rstd, from one read of dy and
// x; dx may be null. Block b takes rows [b per_chunk, (b + 1) per_chunk), group i its rows i, i + kLnGroups, ..., and
// each lane sums dy xhat and dy over them for its channels; the groups then add their sums in group order into
// part0 / part1 row b (skipped where part0 is null). That order does not depend on the pack width or group size, so
// with the ordered combine dgamma and dbeta depend only on the shape.
template <class T, int kN, int kIters, int kG>
__global__ void __launch_bounds__(32 * kLnGroups)
    layernorm_backward_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ gamma,
                              const float* __restrict__ mean, const float* __restrict__ rstd, T* __restrict__ dx,
                              int64_t rows, int64_t c, int64_t per_chunk, float* __restrict__ part0,
                              float* __restrict__ part1) {
  __shared__ float block_sum[2][kIters * kN * kG];  // indexed by channel: covers C
  const int lane = threadIdx.x, group = threadIdx.y, packs = int(c / kN);
  const int64_t r0 = blockIdx.x * per_chunk, r1 = min(rows, r0 + per_chunk);
  const float inv_c = 1.0f / float(c);
  float sum_dyx[kIters][kN] = {}, sum_dy[kIters][kN] = {};
  // Every group runs the same number of steps (two groups can share a warp); a group past r1 loads zeros.
  for (int64_t base = r0; base < r1; base += kLnGroups) {
    const int64_t row = base + group;
    const bool live = row < r1;
    const float mu = live ? mean[row] : 0.f, rs = live ? rstd[row] : 0.f;
    const int64_t off = live ? row * c : 0;
    float d[kIters][kN], xh[kIters][kN], sg = 0.f, sgx = 0.f;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int p = j * kG + lane;
      float g[kN];
      if (live && p < packs) {
        cuda::load_n<kN>(dy + off + p * kN, d[j]);
        cuda::load_n<kN>(x + off + p * kN, xh[j]);
        cuda::load_n<kN>(gamma + p * kN, g);
      } else {
#pragma unroll
        for (int k = 0; k < kN; ++k) d[j][k] = xh[j][k] = g[k] = 0.f;
      }
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        xh[j][k] = (xh[j][k] - mu) * rs;
        sum_dyx[j][k] += d[j][k] * xh[j][k];
        sum_dy[j][k] += d[j][k];
        d[j][k] *= g[k];  // from here on d holds g = dy gamma
        sg += d[j][k];
        sgx += d[j][k] * xh[j][k];
      }
    }
    sg = group_sum<kG>(sg) * inv_c;
    sgx = group_sum<kG>(sgx) * inv_c;
    if (!live || dx == nullptr) continue;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int p = j * kG + lane;
      if (p >= packs) continue;
#pragma unroll
      for (int k = 0; k < kN; ++k) d[j][k] = rs * (d[j][k] - sg - xh[j][k] * sgx);
      cuda::store_n<kN>(dx + off + p * kN, d[j]);
    }
  }
  if (part0 == nullptr) return;
  for (int i = 0; i < kLnGroups; ++i) {
    if (group == i) {
#pragma unroll
      for (int j = 0; j < kIters; ++j) {
        const int p = j * kG + lane;
        if (p >= packs) continue;
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          const int ch = p * kN + k;
          block_sum[0][ch] = i == 0 ? sum_dyx[j][k] : block_sum[0][ch] + sum_dyx[j][k];
          block_sum[1][ch] = i == 0 ? sum_dy[j][k] : block_sum[1][ch] + sum_dy[j][k];
        }
      }
    }
    __syncthreads();
  }
  for (int ch = group * kG + lane; ch < c; ch += kG * kLnGroups) {
    part0[blockIdx.x * c + ch] = block_sum[0][ch];
    part1[blockIdx.x * c + ch] = block_sum[1][ch];
  }
}

// Rows longer than the register kernels hold (C > 1024): one warp per row, loops over the row.
template <class T>
__global__ void layernorm_forward_loop_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                              const T* __restrict__ beta, T* __restrict__ y, float* __restrict__ mean,
                                              float* __restrict__ rstd, int64_t rows, int64_t c, float eps) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;  // one warp per row
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const T* xr = x + row * c;
  float s = 0.f;
  for (int64_t i = lane; i < c; i += 32) s += widen(xr[i]);
  const float mu = group_sum(s) / float(c);
  float v = 0.f;
  for (int64_t i = lane; i < c; i += 32) {
    const float d = widen(xr[i]) - mu;
    v += d * d;
  }
  const float rs = 1.0f / sqrtf(group_sum(v) / float(c) + eps);
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  T* yr = y + row * c;
  for (int64_t i = lane; i < c; i += 32)
    yr[i] = device_cast<T>((widen(xr[i]) - mu) * rs * widen(gamma[i]) + widen(beta[i]));
}

template <class T>
__global__ void layernorm_backward_dx_loop_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                                  const T* __restrict__ gamma, const float* __restrict__ mean,
                                                  const float* __restrict__ rstd, T* __restrict__ dx, int64_t rows,
                                                  int64_t c) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const T *xr = x + row * c, *dyr = dy + row * c;
  const float mu = mean[row], rs = rstd[row];
  float sg = 0.f, sgx = 0.f;
  for (int64_t i = lane; i < c; i += 32) {
    const float g = widen(dyr[i]) * widen(gamma[i]);
    sg += g;
    sgx += g * (widen(xr[i]) - mu) * rs;
  }
  sg = group_sum(sg) / float(c);
  sgx = group_sum(sgx) / float(c);
  T* dxr = dx + row * c;
  for (int64_t i = lane; i < c; i += 32) {
    const float g = widen(dyr[i]) * widen(gamma[i]);
    dxr[i] = device_cast<T>(rs * (g - sg - (widen(xr[i]) - mu) * rs * sgx));
  }
}

// Runs f(k) for the least power of two k >= iters from kIters on with k * kN <= kLnLaneValues; false if none.
template <int kN, int kIters, class F>
bool with_lane_iters(int64_t iters, F&& f) {
  if constexpr (kIters * kN > kLnLaneValues) {
    return false;
  } else {
    if (iters <= kIters) {
      f(std::integral_constant<int, kIters>{});
      return true;
    }
    return with_lane_iters<kN, kIters * 2>(iters, f);
  }
}

// A LayerNorm register kernel's shape: kN-element packs, kG lanes per row, kIters packs per lane at most.
template <int N, int Iters, int G>
struct LnShape {
  static constexpr int kN = N, kIters = Iters, kG = G;
};

// Runs f(LnShape) for C: the widest pack that C and `align` allow, kLaneValues / kN packs per lane on the fewest
// lanes (4, 8, 16) that hold the row, else 32 lanes with as many packs per lane as the row needs. Returns false
// where a row does not fit in the registers (C > 1024).
template <class T, int kLaneValues, class F>
bool with_ln_shape(int64_t c, int align, F&& f) {
  bool fits = true;
  cuda::with_pack<T>(c, align, [&](auto pack) {
    constexpr int kN = decltype(pack)::value, kIt = kLaneValues > kN ? kLaneValues / kN : 1;
    const int64_t packs = c / kN, lanes = (packs + kIt - 1) / kIt;
    if (lanes <= 4) return f(LnShape<kN, kIt, 4>{});
    if (lanes <= 8) return f(LnShape<kN, kIt, 8>{});
    if (lanes <= 16) return f(LnShape<kN, kIt, 16>{});
    fits =
        with_lane_iters<kN, kIt>((packs + 31) / 32, [&](auto iters) { f(LnShape<kN, decltype(iters)::value, 32>{}); });
  });
  return fits;
}

}  // namespace

template <class T>
void layernorm_forward_cuda(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                            const NormParams& p, cudaStream_t s) {
  check("layernorm_forward_cuda", p, x);
  const int align = cuda::common_alignment(x, gamma, beta, y);
  const bool fits = with_ln_shape<T, kLnFwdLaneValues>(p.c, align, [&](auto shape) {
    using S = decltype(shape);
    constexpr int kRows = kLnFwdThreads / S::kG;
    layernorm_forward_kernel<T, S::kN, S::kIters, S::kG>
        <<<unsigned((p.rows + kRows - 1) / kRows), dim3(S::kG, kRows), 0, s>>>(x, gamma, beta, y, mean, rstd, p.rows,
                                                                               p.c, float(p.eps));
  });
  if (!fits) {
    layernorm_forward_loop_kernel<T>
        <<<unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock), dim3(32, kRowsPerBlock), 0, s>>>(
            x, gamma, beta, y, mean, rstd, p.rows, p.c, float(p.eps));
  }
  CNN_CHECK_LAUNCH("layernorm_forward");
}

template <class T>
void layernorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, float* workspace, cudaStream_t s) {
  check("layernorm_backward_cuda", p, workspace);
  const bool params = dgamma != nullptr || dbeta != nullptr;
  if (dx == nullptr && !params) return;
  const int64_t chunks = chunk_count(p.rows, kLnMinChunkRows);
  const Ws w = split(workspace, chunks, p.c);
  const int align = cuda::common_alignment(dy, x, gamma, dx);
  const bool fits = with_ln_shape<T, kLnBwdLaneValues>(p.c, align, [&](auto shape) {
    using S = decltype(shape);
    layernorm_backward_kernel<T, S::kN, S::kIters, S::kG><<<unsigned(chunks), dim3(S::kG, kLnGroups), 0, s>>>(
        dy, x, gamma, mean, rstd, dx, p.rows, p.c, rows_per_chunk(p.rows, kLnMinChunkRows), params ? w.part0 : nullptr,
        w.part1);
  });
  if (fits) {
    CNN_CHECK_LAUNCH("layernorm_backward");
    if (!params) return;
    grad_combine_kernel<T>
        <<<combine_grid(p.c), kCombineBlock, 0, s>>>(w.part0, w.part1, chunks, p.c, w.sum0, w.sum1, dgamma, dbeta);
    CNN_CHECK_LAUNCH("layernorm_backward dgamma/dbeta");
    return;
  }
  // C > 1024: dx from the loop kernel, dgamma / dbeta from the column pass over dy and x.
  if (dx != nullptr) {
    layernorm_backward_dx_loop_kernel<T>
        <<<unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock), dim3(32, kRowsPerBlock), 0, s>>>(
            dy, x, gamma, mean, rstd, dx, p.rows, p.c);
    CNN_CHECK_LAUNCH("layernorm_backward dx");
  }
  if (!params) return;
  const Ws wc = split(workspace, p);
  launch_column_partial<T, ColMode::grad_row_stats>(dy, x, mean, rstd, p, wc.part0, wc.part1, s);
  grad_combine_kernel<T><<<combine_grid(p.c), kCombineBlock, 0, s>>>(wc.part0, wc.part1, chunk_count(p.rows), p.c,
                                                                     wc.sum0, wc.sum1, dgamma, dbeta);
  CNN_CHECK_LAUNCH("layernorm_backward dgamma/dbeta");
}

#define CNN_LAYERNORM_CUDA(T)                                                                                    \
  template void layernorm_forward_cuda<T>(const T*, const T*, const T*, T*, float*, float*, const NormParams&,   \
                                          cudaStream_t);                                                         \
  template void layernorm_backward_cuda<T>(const T*, const T*, const T*, const float*, const float*, T*, T*, T*, \
                                           const NormParams&, float*, cudaStream_t);
CNN_LAYERNORM_CUDA(float)
CNN_LAYERNORM_CUDA(__half)
#undef CNN_LAYERNORM_CUDA

}  // namespace cnn::kernels
