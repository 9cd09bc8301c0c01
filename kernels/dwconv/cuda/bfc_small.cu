// FP16 and FP32 depthwise backward-filter for small filters at stride 1 (Kernel::bfc_small): FH, FW <= 7, any channel
// count, alignment, N, H, W and padding, no padded copies. dW[i,j,c] = sum_{n,oh,ow} X[n, oh+i-pT, ow+j-pL, c] *
// dY[n,oh,ow,c]; X, dY (N,H,W,C), dW (FH,FW,C) FP32, FP32 accumulation. Reference: dwconv_backward_filter_reference.
//
// Design (docs/dwconv-bfc.md, bfc_small; the thread and block routines are in bfc_small.cuh):
// - Lane = P adjacent channels: P = 2 (one half2 / float2 load) where C is even and x, dy are aligned to 2 elements,
//   else 1; a warp's load covers 32 P consecutive channels of one pixel (64-256 contiguous bytes) at any C.
// - Thread = P channels x nr filter rows x FW' filter columns of FP32 sums (FW' the instantiated width >= FW, nr
//   from bfc_small_tile's cost model), task by task. A task is those filter rows against th consecutive dY rows of
//   one image, walked along the X columns: per column nr + th - 1 X values and th dY values are loaded and th * nr *
//   FW' * P FMAs done; each X value is used as loaded, the dY values wait in a ring of FW' columns. The loads of the
//   step after next are issued before a step's FMAs (two steps in flight per warp), and th is the most dY rows that
//   ptxas fits in 128 registers without spills, which amortizes each X row over several dY rows.
// - Padding without branches: image rows outside the map and lanes past C read a 16-byte zero buffer with a column
//   stride of 0; per step only dY's column bound is tested (X columns outside the map are never walked).
// - Block = 8 warps on one channel slice of 32 P channels, taking its chunk's tasks round-robin, so that at any time
//   its warps work on neighbouring dY rows and meet in L1 on the X rows they share. Each warp adds its sums into
//   shared memory (FH*FW*32P floats) when its filter row group changes and at the end; then one global atomicAdd per
//   (tap, channel) per block into dW, zeroed by the launcher, as the other backward-filter kernels do.
// - Grid = slices x chunks (chunk = a balanced range of tasks; block index = slice fastest, so that the blocks on the
//   same dY rows of all slices run together), with the chunk count from bfc_small_chunks over the resident blocks the
//   occupancy API reports (two blocks of 8 warps per SM at up to 128 registers).
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/bfc_small.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

using bfc_small::Args;
using bfc_small::kThreads;

__device__ __align__(16) float kZeros[4];  // what padding rows and lanes past C read

template <class T, int kP, int kNr, int kFw>
__global__ void __launch_bounds__(kThreads, 2) bfc_small_kernel(const Args a) {
  extern __shared__ float red[];  // (FH * FW, block_c) block sums
  const int n = a.fh * a.fw * a.block_c;
  for (int e = static_cast<int>(threadIdx.x); e < n; e += kThreads) red[e] = 0.f;
  __syncthreads();
  bfc_small::run_thread<T, kP, kNr, kFw>(a, reinterpret_cast<const char*>(kZeros), static_cast<int>(blockIdx.x),
                                         static_cast<int>(threadIdx.x), red);
  __syncthreads();
  bfc_small::flush_block(a, static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), kThreads, red);
}

using KernelFn = void (*)(Args);

template <class T>
KernelFn kernel_of(const BfcSmallTile& t) {
  KernelFn k = nullptr;
  bfc_small::with_tile<sizeof(T) == 2>(t, [&]<int kP, int kNr, int kFw>() { k = &bfc_small_kernel<T, kP, kNr, kFw>; });
  return k;
}
KernelFn kernel_for(const BfcSmallTile& t, bool f16) {
  const KernelFn k = f16 ? kernel_of<__half>(t) : kernel_of<float>(t);
  CNN_CHECK(k != nullptr, "dwconv bfc_small: no kernel for lanes of ", t.p, " x tile ", t.nr, "x", t.fw);
  return k;
}

struct SmallPlan {
  BfcSmallTile tile;
  Args args{};  // without pointers
  int smem = 0, blocks_per_sm = 1;
  int64_t blocks() const { return int64_t(args.slices) * args.z; }
};

SmallPlan make_plan(const DwconvParams& p, bool f16, int p_max, const BfcSmallForce& force) {
  SmallPlan s;
  s.tile = bfc_small_tile(f16, p.fh, p.fw, p.oh(), p.c, p_max, force.lanes, force.nr);
  s.args = bfc_small::make_args(p, s.tile, 1);
  const int64_t tasks = bfc_small::tasks_per_slice(s.args);
  CNN_CHECK(tasks < (int64_t(1) << 31), "dwconv bfc_small: too many tasks (", tasks, ") for ", p.str());
  s.smem = p.fh * p.fw * s.args.block_c * static_cast<int>(sizeof(float));
  s.blocks_per_sm = resident_blocks_per_sm(kernel_for(s.tile, f16), kThreads, s.smem);
  s.args.z = force.z > 0 ? static_cast<int>(std::min<int64_t>(force.z, tasks))
                         : bfc_small_chunks(tasks, s.args.slices, int64_t(current_device_sms()) * s.blocks_per_sm);
  CNN_CHECK(s.blocks() < (int64_t(1) << 31), "dwconv bfc_small: grid too large (", s.blocks(), " blocks) for ",
            p.str());
  return s;
}

// Plans once per (device, shape, dtype, lane limit, forces): planning queries the device.
const SmallPlan& cached_plan(const DwconvParams& p, bool f16, int p_max, const BfcSmallForce& force) {
  using Key = std::pair<DeviceShapeKey, std::array<int, 5>>;
  const Key key{device_shape_key(p), {f16 ? 1 : 0, p_max, force.lanes, force.nr, force.z}};
  static PlanCache<Key, SmallPlan> cache;
  return cache.get(key, [&] { return make_plan(p, f16, p_max, force); });
}

void check_force(const DwconvParams& p, int p_max, const BfcSmallForce& force) {
  CNN_CHECK(force.lanes >= 0 && force.lanes <= 2 && force.nr >= 0 && force.z >= 0,
            "dwconv bfc_small: expected forced lanes 0..2, rows and chunks >= 0, got lanes=", force.lanes,
            " rows=", force.nr, " Z=", force.z);
  CNN_CHECK(force.lanes <= p_max, "dwconv bfc_small: 2 channels per lane need an even C and x, dy aligned to 2 ",
            "elements, got ", p.str(), " with lanes of at most ", p_max);
}

template <class T>
void launch(const T* x, const T* dy, float* dw, const DwconvParams& p, const BfcSmallForce& force,
            cudaStream_t stream) {
  constexpr bool kF16 = sizeof(T) == 2;
  p.validate("launch_dwconv_bfc_small");
  check_pointers("launch_dwconv_bfc_small", x, "x", dy, "dy", dw, "dw");
  CNN_CHECK(bfc_small_supports(p, kF16), "dwconv bfc_small: expected stride 1, a filter of at most ", kBfcSmallMaxF,
            "x", kBfcSmallMaxF, " and C * element size < 2^31, got ", p.str());
  const int p_max = bfc_small_lane_channels(p.c, kF16, alignment_of({x, dy}));
  check_force(p, p_max, force);
  const SmallPlan& s = cached_plan(p, kF16, p_max, force);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  Args a = s.args;
  a.x = x, a.dy = dy, a.dw = dw;
  kernel_for(s.tile, kF16)<<<static_cast<unsigned>(s.blocks()), kThreads, s.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_small_kernel");
}

}  // namespace

bool bfc_small_supports(const DwconvParams& p, bool f16) {
  return p.stride_h == 1 && p.stride_w == 1 && p.fh <= kBfcSmallMaxF && p.fw <= kBfcSmallMaxF &&
         int64_t(p.c) * (f16 ? 2 : 4) < (int64_t(1) << 31);
}

int bfc_small_lane_channels(int c, bool f16, int align) { return c % 2 == 0 && align >= (f16 ? 4 : 8) ? 2 : 1; }

std::string dwconv_bfc_small_path_name(const DwconvParams& p, bool f16, int max_lanes, const BfcSmallForce& force) {
  CNN_CHECK(max_lanes == 1 || max_lanes == 2, "dwconv bfc_small: expected lanes of at most 1 or 2 channels, got ",
            max_lanes);
  check_force(p, max_lanes, force);
  const SmallPlan& s = cached_plan(p, f16, max_lanes, force);
  const BfcSmallTile& t = s.tile;
  return str_cat("bfc", f16 ? " f16 small (fp32 accumulation)" : " small", " lanes=32x", t.p, " tile=", t.nr, "x", t.fw,
                 " dy_rows=", t.th, " row_groups=", s.args.ng, " slices=", s.args.slices, "x", s.args.block_c,
                 "ch Z=", s.args.z, " blocks=", s.blocks(), "x", kThreads / 32, "w (", s.blocks_per_sm, "/SM)");
}

void launch_dwconv_bfc_small(const float* x, const float* dy, float* dw, const DwconvParams& p,
                             const BfcSmallForce& force, cudaStream_t stream) {
  launch(x, dy, dw, p, force, stream);
}

void launch_dwconv_bfc_small_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                 const BfcSmallForce& force, cudaStream_t stream) {
  launch(x, dy, dw, p, force, stream);
}

}  // namespace cnn::dwconv
