// Flash-DWC FP32 CUDA-core GEMV kernel (flash-dwc.md section 3), stride 1. Forward, and backward-data as the same
// kernel over dY with the filter rotated by 180 degrees. NHWC maps, (FH, FW, C) filter, FP32 accumulation.
// Reference: dwconv_forward_reference / dwconv_backward_data_reference (ref/reference.cpp). On channel-padded
// inputs it writes the output at C channels itself (kNarrowOut), so a padded plan copies no output.
#include <utility>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/float4_fma.cuh"
#include "kernels/common/grid_dependency.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kBN = 32;           // channels per block: one 128-byte segment, 8 lanes x float4
constexpr int kThreads = 128;     // 4 warps, one per SM sub-partition scheduler
constexpr int kWsPitch = kBN + 4;  // floats per filter tap in shared memory (+16 B against bank conflicts)
constexpr size_t kWholeFilterBytes = 48 * 1024;  // a whole filter is staged within the default dynamic limit

struct GemvArgs {
  const float* __restrict__ src;   // (N, in_h, in_w, src_c)
  const float* __restrict__ w;     // (FH, FW, src_c)
  const float* __restrict__ bias;  // (src_c) or null
  float* __restrict__ dst;         // (N, out_h, out_w, C)
  int n, in_h, in_w, c, out_h, out_w, fh, fw, pad_t, pad_l;
  int flip;
  int groups_per_row;  // TM-column groups of a warp along one output row: 4, 2 or 1
  int tile_h, tile_w, tiles_h, tiles_w;
  int src_c;           // channels of src's, w's and bias's rows: C, or a channel-padded copy's (kNarrowOut)
  int channel_blocks;  // blocks of kBN channels (kNarrowOut: the fastest digit of the 1-D grid)
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

// Channels of the input rows: C, or the padded copies' count in the kNarrowOut instantiations, which alone carry
// the C-channel stores (one kernel with a run-time store choice cost the aligned maps 3-6% at 15x15).
template <bool kNarrowOut>
__device__ __forceinline__ int src_channels(const GemvArgs& a) {
  return kNarrowOut ? a.src_c : a.c;
}

// Copies filter row i (FW taps x 32 channels; rotated when flipping) into shared memory with cp.async.cg.
// Channels past the filter rows' own are zero-filled.
template <bool kNarrowOut>
__device__ __forceinline__ void stage_filter_row(float* ws, const GemvArgs& a, int fw, int i, int c0) {
  const int src_i = a.flip ? a.fh - 1 - i : i;
  for (int k = threadIdx.x; k < fw * 8; k += kThreads) {
    const int j = k >> 3, q = k & 7;
    const int src_j = a.flip ? fw - 1 - j : j;
    const int ch = c0 + 4 * q;
    const bool ok = ch < src_channels<kNarrowOut>(a);
    const float* src = ok ? a.w + (static_cast<long long>(src_i) * fw + src_j) * src_channels<kNarrowOut>(a) + ch : a.w;
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

// The unpadded output of a C % 4 != 0 map: rows are not 16-byte aligned, so one float per store. A warp's lanes
// hold 4 position slots x 8 channel quads; each store instruction writes one slot's 32 channels from all 32 lanes
// (lane l: channel l, element l % 4 of quad l / 4, fetched by four shuffles), one contiguous 128-byte run instead of
// four runs of 4-byte pieces 16 bytes apart. Slot s is the position the kernel gives the lanes of spatial slot s: row
// oh_w + s / groups_per_row, columns from ow0 + TM (s % groups_per_row). `out_v` holds the outputs, bias added.
template <int kTM>
__device__ __forceinline__ void store_narrow(const GemvArgs& a, const float4 (&out_v)[kTM], int n, int oh_w, int ow0,
                                             int c0) {
  const int lane = threadIdx.x & 31, from = lane >> 2, e = lane & 3;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int oh = oh_w + s / a.groups_per_row, ow = ow0 + kTM * (s % a.groups_per_row);
    const bool slot_ok = oh < a.out_h && c0 + lane < a.c;
    float* out = a.dst + (static_cast<long long>(n) * a.out_h + oh) * a.out_w * a.c + static_cast<long long>(ow) * a.c +
                 c0 + lane;
#pragma unroll
    for (int t = 0; t < kTM; ++t) {
      const float4 v = out_v[t];
      const float x = __shfl_sync(0xffffffffu, v.x, 8 * s + from), y = __shfl_sync(0xffffffffu, v.y, 8 * s + from),
                  z = __shfl_sync(0xffffffffu, v.z, 8 * s + from), w = __shfl_sync(0xffffffffu, v.w, 8 * s + from);
      if (slot_ok && ow + t < a.out_w) __stcs(out + t * a.c, e == 0 ? x : e == 1 ? y : e == 2 ? z : w);
    }
  }
}

// Registers: acc (4*TM) + ring (4*kRing) + the loads of a block hoisted ahead by the compiler.
constexpr int min_blocks_per_sm(int tm, int ring) { return 4 * (tm + ring) <= 64 ? 4 : (4 * (tm + ring) <= 96 ? 3 : 2); }

// kNarrowOut: src, w and bias have src_c channels, dst C at any float alignment (store_narrow); the grid is 1-D with
// the channel block fastest, so the blocks that write one position's channels run together and its sectors that two
// channel blocks share are completed in L2 rather than written to memory in parts.
template <int kFW, int kTM, int kRing, bool kWholeFilter, bool kNarrowOut>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm(kTM, kRing)) dwconv_gemv_kernel(const GemvArgs a) {
  extern __shared__ float4 smem_f4[];
  float* ws = reinterpret_cast<float*>(smem_f4);  // [FH or 2][FW][kWsPitch]: whole filter, or two row buffers
  const int fw = kFW > 0 ? kFW : a.fw;
  const int buf_floats = fw * kWsPitch;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cq = lane & 7, sp = lane >> 3;  // channel quad, spatial slot
  const int rows_per_warp = 4 / a.groups_per_row;

  int bx = kNarrowOut ? blockIdx.x / a.channel_blocks : blockIdx.x;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * a.tile_h, ow0 = tw * a.tile_w;
  const int c0 = (kNarrowOut ? blockIdx.x % a.channel_blocks : blockIdx.y) * kBN;
  const int ch = c0 + 4 * cq;

  const int oh_t = oh0 + warp * rows_per_warp + sp / a.groups_per_row;
  const int ow_t = ow0 + kTM * (sp % a.groups_per_row);
  const bool active = oh_t < a.out_h && ow_t < a.out_w && ch < a.c;
  const int col0 = ow_t - a.pad_l;
  const int n_inputs = kTM + fw - 1;
  const float* src_n = a.src + static_cast<long long>(n) * a.in_h * a.in_w * src_channels<kNarrowOut>(a) + ch;
  const float* ws_lane = ws + 4 * cq;

  // Height trimming: only filter rows that reach a source row for some output row of this tile.
  const int oh_last = min(oh0 + a.tile_h, a.out_h) - 1;
  const int i_lo = max(0, a.pad_t - oh_last);
  const int i_hi = min(a.fh, a.pad_t + a.in_h - oh0);

  float4 acc[kTM];
#pragma unroll
  for (int t = 0; t < kTM; ++t) acc[t] = make_float4(0.f, 0.f, 0.f, 0.f);
  // The padded copies' kernel is launched behind their padding (launch_dwconv_gemv): they are complete from here on.
  if constexpr (kNarrowOut) cnn::cuda::wait_for_prior_grids();

  auto row_ptr = [&](int i) -> const float* {
    const int r = oh_t + i - a.pad_t;
    return (active && static_cast<unsigned>(r) < static_cast<unsigned>(a.in_h))
               ? src_n + static_cast<long long>(r) * a.in_w * src_channels<kNarrowOut>(a)
               : nullptr;
  };
  auto load_window = [&](float4 (&ring)[kRing], const float* row) {
#pragma unroll
    for (int s = 0; s < kRing; ++s)
      ring[s] =
          s < n_inputs ? load_src(row, col0 + s, a.in_w, src_channels<kNarrowOut>(a)) : make_float4(0.f, 0.f, 0.f, 0.f);
  };

  if (i_lo < i_hi && kWholeFilter) {
    // Small filters: every needed row lands in shared memory once, behind a single barrier.
    for (int i = i_lo; i < i_hi; ++i) stage_filter_row<kNarrowOut>(ws + (i - i_lo) * buf_floats, a, fw, i, c0);
    cnn::cuda::cp_async_commit();
    cnn::cuda::cp_async_wait<0>();
    __syncthreads();
    for (int i = i_lo; i < i_hi; ++i) {
      const float* row = row_ptr(i);
      float4 ring[kRing];
      load_window(ring, row);
      gemv_row<kFW, kTM, kRing>(acc, ring, row, col0, a.in_w, src_channels<kNarrowOut>(a),
                                ws_lane + (i - i_lo) * buf_floats, fw);
    }
  } else if (i_lo < i_hi) {
    // Large filters: rows double-buffered, row i+1 in flight while row i is consumed (flash-dwc.md 3.5).
    stage_filter_row<kNarrowOut>(ws, a, fw, i_lo, c0);
    cnn::cuda::cp_async_commit();
    for (int i = i_lo; i < i_hi; ++i) {
      const int buf = (i - i_lo) & 1;
      if (i + 1 < i_hi) stage_filter_row<kNarrowOut>(ws + (buf ^ 1) * buf_floats, a, fw, i + 1, c0);
      cnn::cuda::cp_async_commit();  // possibly empty, so that wait<1> below always means "row i has landed"
      const float* row = row_ptr(i);
      float4 ring[kRing];  // initial window, loaded while the filter row is still in flight
      load_window(ring, row);
      cnn::cuda::cp_async_wait<1>();
      __syncthreads();
      gemv_row<kFW, kTM, kRing>(acc, ring, row, col0, a.in_w, src_channels<kNarrowOut>(a), ws_lane + buf * buf_floats,
                                fw);
      __syncthreads();  // every warp is done with this buffer before it is refilled
    }
  }

  if constexpr (kNarrowOut) {
    const float4 b =
        a.bias && ch < a.c ? __ldg(reinterpret_cast<const float4*>(a.bias + ch)) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int t = 0; t < kTM; ++t) acc[t] = make_float4(acc[t].x + b.x, acc[t].y + b.y, acc[t].z + b.z, acc[t].w + b.w);
    return store_narrow<kTM>(a, acc, n, oh0 + warp * rows_per_warp, ow0, c0);
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
                        const GemvConfig& cfg, cudaStream_t stream, int src_c) {
  const bool narrow = src_c != 0 && src_c != g.c;
  if (!narrow) src_c = g.c;
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && src_c % 4 == 0 && src_c >= g.c,
            "dwconv gemv: needs stride 1 and input rows of C % 4 == 0 channels, >= C; got ", src_c, " for C=", g.c,
            ", stride ", g.stride_h, "x", g.stride_w);
  CNN_CHECK(cfg.tm == 8 || cfg.tm == 16, "dwconv gemv: TM must be 8 or 16, got ", cfg.tm);
  GemvArgs a{src,     w,       bias,           dst, g.n, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.fh, g.fw,
             g.pad_t, g.pad_l, g.flip ? 1 : 0, 0,   0,   0,      0,      0,   src_c,   0};
  a.groups_per_row = groups_per_row_for(g.out_w, cfg.tm);
  a.tile_h = 16 / a.groups_per_row;
  a.tile_w = cfg.tm * a.groups_per_row;
  a.tiles_h = (g.out_h + a.tile_h - 1) / a.tile_h;
  a.tiles_w = (g.out_w + a.tile_w - 1) / a.tile_w;
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (g.c + kBN - 1) / kBN;
  a.channel_blocks = channel_blocks;
  CNN_CHECK(blocks * (narrow ? channel_blocks : 1) < (1LL << 31) && channel_blocks <= 65535,
            "dwconv gemv: grid too large for ", blocks, " x ", channel_blocks, " blocks");
  const size_t smem = static_cast<size_t>(cfg.whole_filter ? g.fh : 2) * g.fw * kWsPitch * sizeof(float);
  const dim3 grid = narrow ? dim3(static_cast<unsigned>(blocks * channel_blocks))
                           : dim3(static_cast<unsigned>(blocks), channel_blocks);

  auto launch_tm = [&]<int kFW, int kTM, int kRing>() {
    auto kernel = narrow ? (cfg.whole_filter ? dwconv_gemv_kernel<kFW, kTM, kRing, true, true>
                                             : dwconv_gemv_kernel<kFW, kTM, kRing, false, true>)
                         : (cfg.whole_filter ? dwconv_gemv_kernel<kFW, kTM, kRing, true, false>
                                             : dwconv_gemv_kernel<kFW, kTM, kRing, false, false>);
    if (smem > 48 * 1024) {
      int max_optin = 0, dev = 0;
      CNN_CUDA_CHECK(cudaGetDevice(&dev));
      CNN_CUDA_CHECK(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
      CNN_CHECK(smem <= static_cast<size_t>(max_optin), "dwconv gemv: filter width ", g.fw, " needs ", smem,
                " bytes of shared memory, the device allows ", max_optin);
      CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    }
    cnn::cuda::launch_kernel(kernel, grid, dim3(kThreads), smem, stream, narrow, a);
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
