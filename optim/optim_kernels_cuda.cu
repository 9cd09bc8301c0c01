// CUDA multi-tensor optimizer kernels: a batch of up to kMax tensors travels in the kernel arguments
// (__grid_constant__, under the 4 KiB classic limit); each tensor is cut into kChunk-element chunks and blocks
// grid-stride over the batch's chunks (block-uniform binary search for the owning tensor). Kernels, launchers, entries.
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "core/cuda_dtype.cuh"
#include "optim/optim_kernels.h"
#include "optim/optim_math.h"

namespace cnn::optim {

namespace {

constexpr int kBlock = 256;
constexpr int64_t kChunk = 16384;     // elements per work unit (64 per thread)
constexpr int64_t kMaxBlocks = 1056;  // 8 resident 256-thread blocks on each of 132 H200 SMs
constexpr int kAdamWMax = 56;         // tensors per AdamW launch
constexpr int kGradMax = 120;         // tensors per launch of the gradient kernels
constexpr int kCombineBlock = 1024;

template <class Slot, int kMax>
struct Batch {
  Slot slot[kMax];
  int64_t chunk_start[kMax + 1];  // slot k owns chunks [chunk_start[k], chunk_start[k + 1])
  int count;
};
using AdamWBatch = Batch<AdamWTensor, kAdamWMax>;
using GradBatch = Batch<GradTensor, kGradMax>;
static_assert(sizeof(AdamWBatch) <= 3800 && sizeof(GradBatch) <= 3800, "batch must fit the 4 KiB kernel arguments");

template <class B>
__device__ __forceinline__ int64_t total_chunks(const B& b) {
  return b.chunk_start[b.count];
}

// Slot owning chunk c (block-uniform, so the argument reads broadcast).
template <class B>
__device__ __forceinline__ int find_slot(const B& b, int64_t c) {
  int lo = 0, hi = b.count;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (b.chunk_start[mid] <= c) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// First element of chunk c within slot k, and one past its last.
template <class B>
__device__ __forceinline__ void chunk_range(const B& b, int k, int64_t c, int64_t& begin, int64_t& end) {
  begin = (c - b.chunk_start[k]) * kChunk;
  end = min(b.slot[k].n, begin + kChunk);
}

// Calls f(slot, i) for every element of the chunks this block owns: chunks strided over the blocks, elements over
// the threads.
template <class B, class F>
__device__ __forceinline__ void for_each_element(const B& b, F&& f) {
  for (int64_t ch = blockIdx.x; ch < total_chunks(b); ch += gridDim.x) {
    const int k = find_slot(b, ch);
    int64_t begin, end;
    chunk_range(b, k, ch, begin, end);
    for (int64_t i = begin + threadIdx.x; i < end; i += kBlock) f(b.slot[k], i);
  }
}

__global__ void adamw_advance_kernel(int64_t* step, const float* found_inf, double lr, double beta1, double beta2,
                                     float* scalars) {
  adamw_advance(step, found_inf, lr, beta1, beta2, scalars);
}

__global__ void __launch_bounds__(kBlock)
    adamw_kernel(const __grid_constant__ AdamWBatch b, const float* __restrict__ scalars, AdamWElementConsts c,
                 const float* __restrict__ grad_scale) {
  if (scalars[0] != 0.0f) return;  // skipped step (overflow)
  c.step_size = scalars[1];
  c.bc2_sqrt = scalars[2];
  const float gs = grad_scale != nullptr ? *grad_scale : 1.0f;
  for_each_element(b, [&](const AdamWTensor& t, int64_t i) {
    float p = t.p[i], m = t.m[i], v = t.v[i];
    adamw_element(p, m, v, rn_mul(t.g[i], gs), t.decay, c);
    t.p[i] = p;
    t.m[i] = m;
    t.v[i] = v;
    if (t.p16 != nullptr) t.p16[i] = __half_as_ushort(__float2half_rn(p));
  });
}

__global__ void __launch_bounds__(kBlock)
    unscale_check_kernel(const __grid_constant__ GradBatch b, const float* __restrict__ scale, float* found_inf) {
  const float inv = rn_div(1.0f, *scale);
  int bad = 0;
  for_each_element(b, [&](const GradTensor& t, int64_t i) {
    const float v = rn_mul(t.g[i], inv);
    bad |= !isfinite(v);
    t.g[i] = v;
  });
  if (__syncthreads_or(bad) && threadIdx.x == 0) *found_inf = 1.0f;  // benign race: every writer stores 1
}

__global__ void __launch_bounds__(kBlock)
    scale_grads_kernel(const __grid_constant__ GradBatch b, const float* __restrict__ factor) {
  const float f = *factor;
  for_each_element(b, [&](const GradTensor& t, int64_t i) { t.g[i] = rn_mul(t.g[i], f); });
}

__global__ void __launch_bounds__(kBlock) zero_grads_kernel(const __grid_constant__ GradBatch b) {
  for_each_element(b, [](const GradTensor& t, int64_t i) { t.g[i] = 0.0f; });
}

// Sum of a float over the block (valid in thread 0); ends with a barrier so the scratch can be reused.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kBlock / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kBlock / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  __syncthreads();
  return v;
}

// partial[ch] = sum of g^2 over chunk ch of the batch (partial already offset to the batch's first chunk).
__global__ void __launch_bounds__(kBlock)
    sum_squares_kernel(const __grid_constant__ GradBatch b, float* __restrict__ partial) {
  for (int64_t ch = blockIdx.x; ch < total_chunks(b); ch += gridDim.x) {
    const int k = find_slot(b, ch);
    const float* g = b.slot[k].g;
    int64_t begin, end;
    chunk_range(b, k, ch, begin, end);
    float s = 0.0f;
    for (int64_t i = begin + threadIdx.x; i < end; i += kBlock) s = fmaf(g[i], g[i], s);
    s = block_sum(s);
    if (threadIdx.x == 0) partial[ch] = s;
  }
}

// Ordered double combine of the chunk partials (fixed thread -> partial map and fixed tree: deterministic).
__global__ void __launch_bounds__(kCombineBlock)
    norm_combine_kernel(const float* __restrict__ partial, int64_t count, float max_norm, float* __restrict__ out) {
  __shared__ double sums[kCombineBlock];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kCombineBlock) s += double(partial[i]);
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int half = kCombineBlock / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float norm = float(sqrt(sums[0]));
    out[0] = norm;
    out[1] = clip_coefficient(norm, max_norm);
  }
}

__global__ void scaler_update_kernel(float* state, ScalerConfig c) { scaler_update(state, c); }

// ---- launchers --------------------------------------------------------------------------------------------------

// Packs the non-empty tensors into batches of at most kMax.
template <class Slot, int kMax>
std::vector<Batch<Slot, kMax>> make_batches(const std::vector<Slot>& slots, const char* op) {
  std::vector<Batch<Slot, kMax>> out;
  for (const Slot& s : slots) {
    CNN_CHECK(s.n >= 0, op, ": negative element count ", s.n);
    if (s.n == 0) continue;
    if (out.empty() || out.back().count == kMax) {
      out.emplace_back();
      out.back().count = 0;
      out.back().chunk_start[0] = 0;
    }
    Batch<Slot, kMax>& b = out.back();
    b.slot[b.count] = s;
    b.chunk_start[b.count + 1] = b.chunk_start[b.count] + (s.n + kChunk - 1) / kChunk;
    ++b.count;
  }
  return out;
}

template <class B>
unsigned grid_of(const B& b) {
  const int64_t chunks = b.chunk_start[b.count];
  return unsigned(chunks < kMaxBlocks ? chunks : kMaxBlocks);
}

void check_grads(const std::vector<GradTensor>& grads, const char* op) {
  for (const GradTensor& t : grads) {
    CNN_CHECK(t.n == 0 || t.g != nullptr, op, ": null gradient buffer of ", t.n, " elements");
  }
}

}  // namespace

// ---- entries ----------------------------------------------------------------------------------------------------

void adamw_step_cuda(int device, const std::vector<AdamWTensor>& tensors, const AdamWArgs& args) {
  CNN_CHECK(args.step != nullptr, "adamw_step_cuda: the step counter pointer is null");
  for (const AdamWTensor& t : tensors) {
    CNN_CHECK(t.n == 0 || (t.p && t.g && t.m && t.v), "adamw_step_cuda: null buffer in a tensor of ", t.n, " elements");
  }
  CudaDeviceGuard guard(device);
  CudaContext& ctx = cuda_context(Device::cuda(device));
  cudaStream_t stream = ctx.compute_stream();
  float* scalars = static_cast<float*>(ctx.workspace(4 * sizeof(float)));
  adamw_advance_kernel<<<1, 1, 0, stream>>>(args.step, args.found_inf, args.lr, args.beta1, args.beta2, scalars);
  CNN_CHECK_LAUNCH("adamw_advance_kernel");
  const AdamWElementConsts c = adamw_element_consts(args);
  for (const AdamWBatch& b : make_batches<AdamWTensor, kAdamWMax>(tensors, "adamw_step_cuda")) {
    adamw_kernel<<<grid_of(b), kBlock, 0, stream>>>(b, scalars, c, args.grad_scale);
    CNN_CHECK_LAUNCH("adamw_kernel");
  }
}

void unscale_check_cuda(int device, const std::vector<GradTensor>& grads, const float* scale, float* found_inf) {
  check_grads(grads, "unscale_check_cuda");
  CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_context(Device::cuda(device)).compute_stream();
  CNN_CUDA_CHECK(cudaMemsetAsync(found_inf, 0, sizeof(float), stream));  // 0.0f
  for (const GradBatch& b : make_batches<GradTensor, kGradMax>(grads, "unscale_check_cuda")) {
    unscale_check_kernel<<<grid_of(b), kBlock, 0, stream>>>(b, scale, found_inf);
    CNN_CHECK_LAUNCH("unscale_check_kernel");
  }
}

void grad_norm_cuda(int device, const std::vector<GradTensor>& grads, float max_norm, float* out) {
  check_grads(grads, "grad_norm_cuda");
  CudaDeviceGuard guard(device);
  CudaContext& ctx = cuda_context(Device::cuda(device));
  cudaStream_t stream = ctx.compute_stream();
  const std::vector<GradBatch> batches = make_batches<GradTensor, kGradMax>(grads, "grad_norm_cuda");
  int64_t chunks = 0;
  for (const GradBatch& b : batches) chunks += b.chunk_start[b.count];
  float* partial = static_cast<float*>(ctx.workspace(size_t(chunks + 1) * sizeof(float)));
  int64_t base = 0;
  for (const GradBatch& b : batches) {
    sum_squares_kernel<<<grid_of(b), kBlock, 0, stream>>>(b, partial + base);
    CNN_CHECK_LAUNCH("sum_squares_kernel");
    base += b.chunk_start[b.count];
  }
  norm_combine_kernel<<<1, kCombineBlock, 0, stream>>>(partial, chunks, max_norm, out);
  CNN_CHECK_LAUNCH("norm_combine_kernel");
}

void scale_grads_cuda(int device, const std::vector<GradTensor>& grads, const float* factor) {
  check_grads(grads, "scale_grads_cuda");
  CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_context(Device::cuda(device)).compute_stream();
  for (const GradBatch& b : make_batches<GradTensor, kGradMax>(grads, "scale_grads_cuda")) {
    scale_grads_kernel<<<grid_of(b), kBlock, 0, stream>>>(b, factor);
    CNN_CHECK_LAUNCH("scale_grads_kernel");
  }
}

void zero_grads_cuda(int device, const std::vector<GradTensor>& grads) {
  check_grads(grads, "zero_grads_cuda");
  CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_context(Device::cuda(device)).compute_stream();
  for (const GradBatch& b : make_batches<GradTensor, kGradMax>(grads, "zero_grads_cuda")) {
    zero_grads_kernel<<<grid_of(b), kBlock, 0, stream>>>(b);
    CNN_CHECK_LAUNCH("zero_grads_kernel");
  }
}

void scaler_update_cuda(int device, float* state, const ScalerConfig& c) {
  CudaDeviceGuard guard(device);
  cudaStream_t stream = cuda_context(Device::cuda(device)).compute_stream();
  scaler_update_kernel<<<1, 1, 0, stream>>>(state, c);
  CNN_CHECK_LAUNCH("scaler_update_kernel");
}

}  // namespace cnn::optim
