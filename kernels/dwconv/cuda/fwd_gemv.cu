// Flash-DWC FP32 CUDA-core GEMV kernel (flash-dwc.md section 3), stride 1. Forward, and backward-data as the same
// kernel over dY with the filter rotated by 180 degrees. NHWC maps, (FH, FW, C) filter, FP32 accumulation.
// Reference: dwconv_forward_reference / dwconv_backward_data_reference (ref/reference.cpp).
#include <utility>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/float4_fma.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kBN = 32;           // channels per block: one 128-byte segment, 8 lanes x float4
constexpr int kThreads = 128;     // 4 warps, one per SM sub-partition scheduler
constexpr int kWsPitch = kBN + 4;  // floats per filter tap in shared memory (+16 B against bank conflicts)
constexpr size_t kWholeFilterBytes = 48 * 1024;  // a whole filter is staged within the default dynamic limit

struct GemvArgs {
  const float* __restrict__ src;   // (N, in_h, in_w, C)
  const float* __restrict__ w;     // (FH, FW, C)
  const float* __restrict__ bias;  // (C) or null
  float* __restrict__ dst;         // (N, out_h, out_w, C)
  int n, in_h, in_w, c, out_h, out_w, fh, fw, pad_t, pad_l;
  int flip;
  int groups_per_row;  // TM-column groups of a warp along one output row: 4, 2 or 1
  int tile_h, tile_w, tiles_h, tiles_w;
};

using cnn::cuda::fma4;

// One float4 of the source row, zero outside [0, in_w) or when the row is masked (row == nullptr). The load is a
// volatile asm so the compiler keeps it where the sliding window asks for it instead of hoisting a whole block of
// future loads into registers (which spills at these register budgets).
__device__ __forceinline__ float4 load_src(const float* row, int col, int in_w, int c) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (row != nullptr && static_cast<unsigned>(col) < static_cast<unsigned>(in_w))
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(row + col * c));
  return v;
}

// Copies filter row i (FW taps x 32 channels; rotated when flipping) into shared memory with cp.async.cg.
// Channels past C are zero-filled.
__device__ __forceinline__ void stage_filter_row(float* ws, const GemvArgs& a, int fw, int i, int c0) {
  const int src_i = a.flip ? a.fh - 1 - i : i;
  for (int k = threadIdx.x; k < fw * 8; k += kThreads) {
    const int j = k >> 3, q = k & 7;
    const int src_j = a.flip ? fw - 1 - j : j;
    const int ch = c0 + 4 * q;
    const bool ok = ch < a.c;
    const float* src = ok ? a.w + (static_cast<long long>(src_i) * fw + src_j) * a.c + ch : a.w;
    cnn::cuda::cp_async_cg16(ws + j * kWsPitch + 4 * q, src, ok);
  }
}

// 1-D correlation of one source row with one filter row for TM outputs x 4 channels, width-first with a register
// sliding window (flash-dwc.md 3.4). The ring holds kRing >= TM consecutive inputs: at tap j it holds inputs
// j .. j+kRing-1 in slots (input % kRing); tap j uses the first TM of them, then its oldest slot is refilled with
// input j + kRing. kRing = TM is the paper's window (each load is consumed at the next tap); kRing = 2*TM issues
// each load TM taps ahead, hiding L2 latency. Taps are processed in blocks of kRing so every ring index is a
// compile-time constant even when FW is only known at run time.
// Calls f.operator()<k>() for k == steps (1 <= steps < kRing): the run-time remainder of a row becomes a block of
// exactly that many unrolled taps (a guarded block would issue the skipped taps' FMAs predicated off).
template <class F, int... kS>
__device__ __forceinline__ void with_step_count(std::integer_sequence<int, kS...>, int steps, F&& f) {
  ((steps == kS && kS > 0 ? (f.template operator()<kS>(), 0) : 0), ...);
}

template <int kTM, int kRing, int kSteps>
__device__ __forceinline__ void gemv_block(float4 (&acc)[kTM], float4 (&ring)[kRing], const float* row, int col0,
                                           int in_w, int c, const float* ws_lane, int jb, int n_inputs) {
#pragma unroll
  for (int jj = 0; jj < kSteps; ++jj) {
    const int j = jb + jj;
    const float4 f = *reinterpret_cast<const float4*>(ws_lane + j * kWsPitch);
#pragma unroll
    for (int t = 0; t < kTM; ++t) fma4(acc[t], ring[(t + jj) % kRing], f);
    if (j + kRing < n_inputs) ring[jj] = load_src(row, col0 + kRing + j, in_w, c);
  }
}

// Full blocks of kRing taps in a loop (not unrolled: a full unroll lets the compiler hoist every future load and
// spill), then the remainder as a block of exactly FW % kRing unrolled taps.
template <int kFW, int kTM, int kRing>
__device__ __forceinline__ void gemv_row(float4 (&acc)[kTM], float4 (&ring)[kRing], const float* row, int col0,
                                         int in_w, int c, const float* ws_lane, int fw_runtime) {
  const int fw = kFW > 0 ? kFW : fw_runtime;
  const int n_inputs = kTM + fw - 1;
  const int full_end = fw - fw % kRing;
#pragma unroll 1
  for (int jb = 0; jb < full_end; jb += kRing)
    gemv_block<kTM, kRing, kRing>(acc, ring, row, col0, in_w, c, ws_lane, jb, n_inputs);
  if constexpr (kFW > 0) {
    if constexpr (kFW % kRing != 0)
      gemv_block<kTM, kRing, kFW % kRing>(acc, ring, row, col0, in_w, c, ws_lane, full_end, n_inputs);
  } else {
    with_step_count(std::make_integer_sequence<int, kRing>{}, fw - full_end, [&]<int kSteps>() {
      gemv_block<kTM, kRing, kSteps>(acc, ring, row, col0, in_w, c, ws_lane, full_end, n_inputs);
    });
  }
}

// Registers: acc (4*TM) + ring (4*kRing) + the loads of a block hoisted ahead by the compiler.
constexpr int min_blocks_per_sm(int tm, int ring) { return 4 * (tm + ring) <= 64 ? 4 : (4 * (tm + ring) <= 96 ? 3 : 2); }

template <int kFW, int kTM, int kRing, bool kWholeFilter>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm(kTM, kRing)) dwconv_gemv_kernel(const GemvArgs a) {
  extern __shared__ float4 smem_f4[];
  float* ws = reinterpret_cast<float*>(smem_f4);  // [FH or 2][FW][kWsPitch]: whole filter, or two row buffers
  const int fw = kFW > 0 ? kFW : a.fw;
  const int buf_floats = fw * kWsPitch;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cq = lane & 7, sp = lane >> 3;  // channel quad, spatial slot
  const int rows_per_warp = 4 / a.groups_per_row;

  int bx = blockIdx.x;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * a.tile_h, ow0 = tw * a.tile_w;
  const int c0 = blockIdx.y * kBN;
  const int ch = c0 + 4 * cq;

  const int oh_t = oh0 + warp * rows_per_warp + sp / a.groups_per_row;
  const int ow_t = ow0 + kTM * (sp % a.groups_per_row);
  const bool active = oh_t < a.out_h && ow_t < a.out_w && ch < a.c;
  const int col0 = ow_t - a.pad_l;
  const int n_inputs = kTM + fw - 1;
  const float* src_n = a.src + static_cast<long long>(n) * a.in_h * a.in_w * a.c + ch;
  const float* ws_lane = ws + 4 * cq;

  // Height trimming: only filter rows that reach a source row for some output row of this tile.
  const int oh_last = min(oh0 + a.tile_h, a.out_h) - 1;
  const int i_lo = max(0, a.pad_t - oh_last);
  const int i_hi = min(a.fh, a.pad_t + a.in_h - oh0);

  float4 acc[kTM];
#pragma unroll
  for (int t = 0; t < kTM; ++t) acc[t] = make_float4(0.f, 0.f, 0.f, 0.f);

  auto row_ptr = [&](int i) -> const float* {
    const int r = oh_t + i - a.pad_t;
    return (active && static_cast<unsigned>(r) < static_cast<unsigned>(a.in_h))
               ? src_n + static_cast<long long>(r) * a.in_w * a.c
               : nullptr;
  };
  auto load_window = [&](float4 (&ring)[kRing], const float* row) {
#pragma unroll
    for (int s = 0; s < kRing; ++s)
      ring[s] = s < n_inputs ? load_src(row, col0 + s, a.in_w, a.c) : make_float4(0.f, 0.f, 0.f, 0.f);
  };

  if (i_lo < i_hi && kWholeFilter) {
    // Small filters: every needed row lands in shared memory once, behind a single barrier.
    for (int i = i_lo; i < i_hi; ++i) stage_filter_row(ws + (i - i_lo) * buf_floats, a, fw, i, c0);
    cnn::cuda::cp_async_commit();
    cnn::cuda::cp_async_wait<0>();
    __syncthreads();
    for (int i = i_lo; i < i_hi; ++i) {
      const float* row = row_ptr(i);
      float4 ring[kRing];
      load_window(ring, row);
      gemv_row<kFW, kTM, kRing>(acc, ring, row, col0, a.in_w, a.c, ws_lane + (i - i_lo) * buf_floats, fw);
    }
  } else if (i_lo < i_hi) {
    // Large filters: rows double-buffered, row i+1 in flight while row i is consumed (flash-dwc.md 3.5).
    stage_filter_row(ws, a, fw, i_lo, c0);
    cnn::cuda::cp_async_commit();
    for (int i = i_lo; i < i_hi; ++i) {
      const int buf = (i - i_lo) & 1;
      if (i + 1 < i_hi) stage_filter_row(ws + (buf ^ 1) * buf_floats, a, fw, i + 1, c0);
      cnn::cuda::cp_async_commit();  // possibly empty, so that wait<1> below always means "row i has landed"
      const float* row = row_ptr(i);
      float4 ring[kRing];  // initial window, loaded while the filter row is still in flight
      load_window(ring, row);
      cnn::cuda::cp_async_wait<1>();
      __syncthreads();
      gemv_row<kFW, kTM, kRing>(acc, ring, row, col0, a.in_w, a.c, ws_lane + buf * buf_floats, fw);
      __syncthreads();  // every warp is done with this buffer before it is refilled
    }
  }

  if (!active) return;
  const float4 b = a.bias ? __ldg(reinterpret_cast<const float4*>(a.bias + ch)) : make_float4(0.f, 0.f, 0.f, 0.f);
  float* out = a.dst + (static_cast<long long>(n) * a.out_h + oh_t) * a.out_w * a.c + static_cast<long long>(ow_t) * a.c + ch;
#pragma unroll
  for (int t = 0; t < kTM; ++t) {
    if (ow_t + t < a.out_w) {
      const float4 v = make_float4(acc[t].x + b.x, acc[t].y + b.y, acc[t].z + b.z, acc[t].w + b.w);
      __stcs(reinterpret_cast<float4*>(out + t * a.c), v);  // streaming: Y is not re-read by this kernel
    }
  }
}

// Filter widths with their own instantiation (FW known at compile time): the paper's sweep and the widths of the
// model families (RepLKNet 27/29/31, SLaK 47/49/51); any other width runs the kFW = 0 instantiation.
using StaticWidths = std::integer_sequence<int, 3, 5, 7, 9, 11, 13, 17, 27, 29, 31, 47, 49, 51>;

template <class F, int... kW>
bool with_static_fw(std::integer_sequence<int, kW...>, int fw, F&& f) {
  return ((fw == kW && (f.template operator()<kW>(), true)) || ...);
}

template <int... kW>
bool has_static_fw(std::integer_sequence<int, kW...>, int fw) {
  return ((fw == kW) || ...);
}

// TM-column groups per warp row: the widest tile whose rows the output still fills.
int groups_per_row_for(int out_w, int tm) { return out_w >= 4 * tm ? 4 : (out_w >= 2 * tm ? 2 : 1); }

}  // namespace

bool gemv_whole_filter_fits(int fh, int fw) {
  return static_cast<size_t>(fh) * fw * kWsPitch * sizeof(float) <= kWholeFilterBytes;
}

std::string dwconv_gemv_path_name(const ConvGeometry& g, const GemvConfig& cfg) {
  const int gpr = groups_per_row_for(g.out_w, cfg.tm);
  return str_cat(g.flip ? "bdc" : "fwd", " gemv FW=", g.fw, has_static_fw(StaticWidths{}, g.fw) ? "" : "(runtime)",
                 " TM=", cfg.tm, cfg.prefetch ? " ring=2TM" : "", cfg.whole_filter ? " whole-filter" : "", " BN=", kBN, " tile=", 16 / gpr, "x", cfg.tm * gpr);
}

void launch_dwconv_gemv(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                        const GemvConfig& cfg, cudaStream_t stream) {
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && g.c % 4 == 0, "dwconv gemv: needs stride 1 and C % 4 == 0, got C=",
            g.c, " stride ", g.stride_h, "x", g.stride_w);
  CNN_CHECK(cfg.tm == 8 || cfg.tm == 16, "dwconv gemv: TM must be 8 or 16, got ", cfg.tm);
  GemvArgs a{src, w, bias, dst, g.n, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.fh, g.fw, g.pad_t, g.pad_l,
             g.flip ? 1 : 0, 0, 0, 0, 0, 0};
  a.groups_per_row = groups_per_row_for(g.out_w, cfg.tm);
  a.tile_h = 16 / a.groups_per_row;
  a.tile_w = cfg.tm * a.groups_per_row;
  a.tiles_h = (g.out_h + a.tile_h - 1) / a.tile_h;
  a.tiles_w = (g.out_w + a.tile_w - 1) / a.tile_w;
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (g.c + kBN - 1) / kBN;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv gemv: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  const size_t smem = static_cast<size_t>(cfg.whole_filter ? g.fh : 2) * g.fw * kWsPitch * sizeof(float);
  const dim3 grid(static_cast<unsigned>(blocks), channel_blocks);

  auto launch_tm = [&]<int kFW, int kTM, int kRing>() {
    auto kernel = cfg.whole_filter ? dwconv_gemv_kernel<kFW, kTM, kRing, true> : dwconv_gemv_kernel<kFW, kTM, kRing, false>;
    if (smem > 48 * 1024) {
      int max_optin = 0, dev = 0;
      CNN_CUDA_CHECK(cudaGetDevice(&dev));
      CNN_CUDA_CHECK(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
      CNN_CHECK(smem <= static_cast<size_t>(max_optin), "dwconv gemv: filter width ", g.fw, " needs ", smem,
                " bytes of shared memory, the device allows ", max_optin);
      CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    }
    kernel<<<grid, kThreads, smem, stream>>>(a);
  };
  auto launch = [&]<int kFW>() {
    if (cfg.tm == 8 && !cfg.prefetch) launch_tm.template operator()<kFW, 8, 8>();
    if (cfg.tm == 8 && cfg.prefetch) launch_tm.template operator()<kFW, 8, 16>();
    if (cfg.tm == 16 && !cfg.prefetch) launch_tm.template operator()<kFW, 16, 16>();
    if (cfg.tm == 16 && cfg.prefetch) launch_tm.template operator()<kFW, 16, 32>();
  };
  if (!with_static_fw(StaticWidths{}, g.fw, launch)) launch.template operator()<0>();
  CNN_CHECK_LAUNCH("dwconv_gemv_kernel");
}

}  // namespace cnn::dwconv
