// Depthwise backward-filter (BFC) on CUDA cores, NHWC: dW (FH,FW,C) = sum over N*OH*OW of X windows * dY, FP32 dW,
// for FP32 inputs and (the same tile kernel on half data) FP16 inputs with FP32 or hybrid accumulation. Plans
// (register tile, block shape, accumulation split Z per stride phase), caches plans per shape and launches the tile
// kernel (bfc_tile.cuh). Oracle: dwconv_backward_filter_reference; design notes: docs/dwconv-bfc.md.
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/bfc_tile.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"
#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::dwconv {

namespace {

using bfc::TileArgs;
using TileKernel = void (*)(TileArgs);

// What the tile kernel reads and how it sums: FP32 inputs; FP16 inputs widened to FP32 FMAs; FP16 channel pairs
// with hybrid accumulation (HFMA2 runs merged into FP32).
enum class TileInput { f32, f16, f16_ha };
int elem_bytes(TileInput in) { return in == TileInput::f16 ? 2 : 4; }
// Channels are counted in pairs by the ha kernel (one __half2 per lane).
int channel_units(TileInput in, int c) { return in == TileInput::f16_ha ? c / 2 : c; }

constexpr double kReuseTarget = 32.0;  // FMAs per staged float that keep L2 -> SMEM traffic well below L2 bandwidth
constexpr int kWarpTarget = 12;        // resident warps per SM beyond which more occupancy is not scored
constexpr int kMaxSegs = 64;           // most dY column segments the planner considers

// The "static switch": every kBfcTiles entry instantiates bfc_tile_kernel<T, r, tm> for float, __half and (tiles of
// at most kBfcHaMaxTaps taps) __half2 inputs; pick one at run time.
template <class T, size_t I>
TileKernel tile_kernel_at() {
  constexpr BfcTile t = kBfcTiles[I];
  if constexpr (std::is_same_v<T, __half2> && t.r * t.tm > kBfcHaMaxTaps) {
    return nullptr;
  } else {
    return &bfc::bfc_tile_kernel<T, t.r, t.tm>;
  }
}
template <class T, size_t... I>
TileKernel tile_kernel_impl(BfcTile t, std::index_sequence<I...>) {
  TileKernel k = nullptr;
  ((kBfcTiles[I] == t ? (k = tile_kernel_at<T, I>()) : k), ...);
  return k;
}
TileKernel tile_kernel(BfcTile t, TileInput in) {
  constexpr auto all = std::make_index_sequence<std::size(kBfcTiles)>{};
  TileKernel k = in == TileInput::f32   ? tile_kernel_impl<float>(t, all)
                 : in == TileInput::f16 ? tile_kernel_impl<__half>(t, all)
                                        : tile_kernel_impl<__half2>(t, all);
  CNN_CHECK(k != nullptr, "dwconv_backward_filter_cuda: no kernel for tile ", t.r, "x", t.tm);
  return k;
}

struct DeviceInfo {
  int device = 0, sms = 1, max_smem = 48 * 1024;
};

// The current device's attributes the planner needs (only on a plan-cache miss: two attribute queries).
DeviceInfo device_info(int device) {
  DeviceInfo d;
  d.device = device;
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, d.device));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&d.max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, d.device));
  return d;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Launch shape of the tiled kernel for one stride phase.
struct PhasePlan {
  int pa = 0, pb = 0, sfh = 0, sfw = 0;
  BfcTile tile;
  int rg = 1, ct = 1, ws = 1, bsub = 1, bow = 1, xc = 1;
  int n_rtiles = 1, n_ctiles = 1, n_cslices = 1, n_segs = 1;
  int smem = 0, blocks_per_sm = 0;
  int64_t z = 1;
  int64_t blocks_per_chunk() const { return int64_t(n_rtiles) * n_ctiles * n_cslices * n_segs; }
};

struct BfcPlan {
  std::vector<PhasePlan> phases;  // one per stride phase (pa, pb) with a non-empty sub-filter
};

// Picks the row groups per block (rg), warps along dY columns (ws) and the segment width (bow) with the best
// score = occupancy x L2 reuse x prologue overhead x busy row-group fraction; ties keep the earlier (fewer
// segments, fewer warps) candidate.
// ha: every warp's dY segment starts at a multiple of kBfcHaRun (bsub a multiple of it, or one warp over the row).
void choose_block_shape(PhasePlan& pp, int ow, const DeviceInfo& dev, TileKernel kernel, int elem, bool ha) {
  const BfcTile t = pp.tile;
  const int nrg = int(ceil_div(pp.sfh, t.r)), bj = pp.ct * t.tm;
  std::map<std::pair<int, int>, int> occupancy;  // (threads, smem) -> resident blocks per SM
  const auto blocks_per_sm = [&](int threads, int smem) {
    auto it = occupancy.find({threads, smem});
    if (it != occupancy.end()) return it->second;
    int blocks = 0;
    CNN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
    return occupancy[{threads, smem}] = blocks;
  };
  double best = -1;
  for (int n_rtiles = int(ceil_div(nrg, bfc::kMaxWarps / pp.ct)); n_rtiles <= nrg; ++n_rtiles) {
    const int rg = int(ceil_div(nrg, n_rtiles));
    if (int(ceil_div(nrg, rg)) != n_rtiles) continue;  // same rg as a smaller tile count
    const int base = rg * pp.ct, bi = rg * t.r;
    const double busy = double(nrg) / double(n_rtiles * rg);
    for (int ws = 1; base * ws <= bfc::kMaxWarps; ws *= 2) {
      for (int nseg = 1; nseg <= std::min(ow, kMaxSegs); ++nseg) {
        const int bsub = int(ceil_div(ceil_div(ow, nseg), ws)), bow = bsub * ws;
        if (ha && bsub % kBfcHaRun != 0 && !(ws == 1 && nseg == 1)) continue;
        const int xc = bow + bj - 1, smem = bfc::tile_smem_bytes(bi, xc, bow, elem);
        if (smem > dev.max_smem) continue;
        const int blocks = blocks_per_sm(base * ws * bfc::kLanes, smem);
        if (blocks == 0) continue;
        const double occ = std::min(blocks * base * ws, kWarpTarget) / double(kWarpTarget);
        const double reuse = double(bi) * bj * bow / double(xc + bow);
        // Per dY row each warp preloads r*(tm-1) X values before bsub steps of r*tm FFMA + r+1 LDS.
        const double prologue = 1.0 / (1.0 + double(t.r) * (t.tm - 1) / (double(bsub) * (t.r * t.tm + t.r + 1)));
        const double score = occ * std::min(1.0, reuse / kReuseTarget) * prologue * busy;
        if (score > best * (1 + 1e-9)) {
          best = score;
          pp.rg = rg;
          pp.n_rtiles = n_rtiles;
          pp.ws = ws;
          pp.bsub = bsub;
          pp.bow = bow;
          pp.xc = xc;
          pp.n_segs = int(ceil_div(ow, bow));
          pp.smem = smem;
          pp.blocks_per_sm = blocks;
        }
      }
    }
  }
  CNN_CHECK(best >= 0, "dwconv_backward_filter_cuda: no block shape fits in ", dev.max_smem,
            " bytes of shared memory for tile ", t.r, "x", t.tm, " (filter ", pp.sfh, "x", pp.sfw, ")");
}

// The column grouping, kernel and block shape of pp.tile.
void shape_phase(PhasePlan& pp, int ow, const DeviceInfo& dev, TileInput in) {
  const int nct = int(ceil_div(pp.sfw, pp.tile.tm));
  pp.ct = bfc_group_size(nct, bfc::kMaxWarps);
  pp.n_ctiles = int(ceil_div(nct, pp.ct));
  const TileKernel kernel = tile_kernel(pp.tile, in);
  CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.max_smem));
  choose_block_shape(pp, ow, dev, kernel, elem_bytes(in), in == TileInput::f16_ha);
}

PhasePlan plan_phase(const DwconvParams& p, int pa, int pb, const BfcForce& force, const DeviceInfo& dev,
                     TileInput in) {
  const bool ha = in == TileInput::f16_ha;
  PhasePlan pp;
  pp.pa = pa;
  pp.pb = pb;
  pp.sfh = int(ceil_div(p.fh - pa, p.stride_h));
  pp.sfw = int(ceil_div(p.fw - pb, p.stride_w));
  pp.tile = force.tile_r > 0 ? BfcTile{force.tile_r, force.tile_tm}
                             : (ha ? bfc_choose_tile_ha(pp.sfh, pp.sfw) : bfc_choose_tile(pp.sfh, pp.sfw));
  CNN_CHECK(!ha || pp.tile.r * pp.tile.tm <= kBfcHaMaxTaps, "dwconv_backward_filter_cuda (ha): tile ", pp.tile.r, "x",
            pp.tile.tm, " has more than ", kBfcHaMaxTaps, " taps");
  pp.n_cslices = int(ceil_div(channel_units(in, p.c), bfc::kLanes));
  shape_phase(pp, p.ow(), dev, in);
  if (ha && force.tile_r == 0) {
    const BfcTile narrow = bfc_narrow_tile_ha(pp.tile, pp.sfh, pp.sfw, pp.bow);
    if (narrow != pp.tile) {
      pp.tile = narrow;
      shape_phase(pp, p.ow(), dev, in);
    }
  }
  const int64_t rows = int64_t(p.n) * p.oh();
  const int64_t z_cap = std::max<int64_t>(1, std::min<int64_t>(rows, INT32_MAX / pp.blocks_per_chunk()));
  if (force.z > 0) {
    pp.z = std::min<int64_t>(force.z, z_cap);
  } else {
    const int64_t slots = int64_t(dev.sms) * pp.blocks_per_sm;
    pp.z = bfc_choose_z(pp.blocks_per_chunk(), slots, rows, 2 * int64_t(pp.rg) * pp.tile.r, z_cap);
  }
  return pp;
}

BfcPlan make_plan(const DwconvParams& p, const BfcForce& force, const DeviceInfo& dev, TileInput in) {
  BfcPlan plan;
  for (int pa = 0; pa < std::min(p.stride_h, p.fh); ++pa)
    for (int pb = 0; pb < std::min(p.stride_w, p.fw); ++pb) plan.phases.push_back(plan_phase(p, pa, pb, force, dev, in));
  return plan;
}

TileArgs tile_args(const void* x, const void* dy, float* dw, const DwconvParams& p, const PhasePlan& pp,
                   int copy_bytes, TileInput in) {
  TileArgs a{};
  a.x = x;
  a.dy = dy;
  a.dw = dw;
  a.ih = p.ih;
  a.iw = p.iw;
  a.c = channel_units(in, p.c);
  a.oh = p.oh();
  a.ow = p.ow();
  a.fw = p.fw;
  a.sh = p.stride_h;
  a.sw = p.stride_w;
  a.pt = p.pad_top;
  a.pl = p.pad_left;
  a.pa = pp.pa;
  a.pb = pp.pb;
  a.sfh = pp.sfh;
  a.sfw = pp.sfw;
  a.rg = pp.rg;
  a.ct = pp.ct;
  a.ws = pp.ws;
  a.bsub = pp.bsub;
  a.bow = pp.bow;
  a.xc = pp.xc;
  a.n_rtiles = pp.n_rtiles;
  a.n_ctiles = pp.n_ctiles;
  a.n_cslices = pp.n_cslices;
  a.n_segs = pp.n_segs;
  a.rows = p.n * p.oh();
  a.z = int(pp.z);
  a.copy_bytes = copy_bytes;
  return a;
}

void launch_phase(const void* x, const void* dy, float* dw, const DwconvParams& p, const PhasePlan& pp,
                  int copy_bytes, TileInput in, cudaStream_t stream) {
  const TileArgs a = tile_args(x, dy, dw, p, pp, copy_bytes, in);
  const int threads = pp.rg * pp.ct * pp.ws * bfc::kLanes;
  const int64_t blocks = pp.blocks_per_chunk() * pp.z;
  tile_kernel(pp.tile, in)<<<unsigned(blocks), threads, pp.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_tile_kernel");
}

// (device and shape, overrides, alignment and input kind)
using PlanKey = std::pair<DeviceShapeKey, std::array<int, 5>>;

// Plans once per (device, shape, overrides, copy width, input kind).
const BfcPlan& cached_plan(const DwconvParams& p, const BfcForce& force, int copy_bytes, TileInput in) {
  static PlanCache<PlanKey, BfcPlan> cache;
  const PlanKey key{device_shape_key(p), {force.tile_r, force.tile_tm, force.z, copy_bytes, int(in)}};
  return cache.get(key, [&] { return make_plan(p, force, device_info(key.first[0]), in); });
}

void check_inputs(const void* x, const void* dy, const float* dw, const DwconvParams& p, const BfcForce& force) {
  p.validate("dwconv_backward_filter_cuda");
  check_pointers("dwconv_backward_filter_cuda", x, "x", dy, "dy", dw, "dw");
  CNN_CHECK((force.tile_r == 0 && force.tile_tm == 0) || bfc_is_tile(force.tile_r, force.tile_tm),
            "dwconv_backward_filter_cuda: forced tile ", force.tile_r, "x", force.tile_tm,
            " is not one of the instantiated tiles (kBfcTiles)");
  CNN_CHECK(force.z >= 0, "dwconv_backward_filter_cuda: expected forced Z >= 0, got ", force.z);
}

int copy_bytes_of(const void* x, const void* dy, int c, TileInput in) {
  return bfc_tile_copy_bytes(c, in != TileInput::f32, alignment_of({x, dy}));
}

std::string describe(const BfcPlan& plan, const DwconvParams& p, int copy_bytes, TileInput in) {
  const PhasePlan& pp = plan.phases.front();
  const char* what = in == TileInput::f32   ? "bfc tile R="
                     : in == TileInput::f16 ? "bfc f16 tile (fp32 accumulation) R="
                                            : "bfc f16 tile (ha accumulation) R=";
  std::string s = str_cat(what, pp.tile.r, " TM=", pp.tile.tm, " warps=", pp.rg, "x", pp.ct, "x", pp.ws,
                          " bow=", pp.bow, " segs=", pp.n_segs, " Z=", pp.z,
                          copy_bytes == 16 ? " vec" : copy_bytes == 8 ? " copy=8B" : " scalar");
  if (plan.phases.size() > 1) s += str_cat(" phases=", p.stride_h, "x", p.stride_w);
  return s;
}

void run_bfc(const void* x, const void* dy, float* dw, const DwconvParams& p, const BfcForce& force, TileInput in,
             cudaStream_t stream) {
  check_inputs(x, dy, dw, p, force);
  const int copy_bytes = copy_bytes_of(x, dy, p.c, in);
  CNN_CHECK(copy_bytes != 0,
            "dwconv_backward_filter_cuda_tile_f16: expected an even C and 4-byte aligned x and dy, got ", p.str());
  const BfcPlan& plan = cached_plan(p, force, copy_bytes, in);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, size_t(p.w_elems()) * sizeof(float), stream));
  for (const PhasePlan& pp : plan.phases) launch_phase(x, dy, dw, p, pp, copy_bytes, in, stream);
}

TileInput f16_input(BfcAccum accum) {
  CNN_CHECK(accum == BfcAccum::fp32 || accum == BfcAccum::ha,
            "dwconv_backward_filter_cuda_tile_f16: expected accumulation fp32 or ha, got ", static_cast<int>(accum));
  return accum == BfcAccum::ha ? TileInput::f16_ha : TileInput::f16;
}

}  // namespace

void dwconv_backward_filter_cuda_tile(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                      const BfcForce& force, cudaStream_t stream) {
  run_bfc(x, dy, dw, p, force, TileInput::f32, stream);
}

int bfc_tile_copy_bytes(int c, bool f16, int align) {
  const int elem = f16 ? 2 : 4;
  if (f16 && c % 2 != 0) return 0;  // FP16 copies at least a channel pair (cp.async has no 2-byte form)
  for (int bytes : {16, 8, 4})
    if (bytes >= elem && (int64_t(c) * elem) % bytes == 0 && align % bytes == 0) return bytes;
  return 0;
}

bool bfc_tile_f16_supports(const DwconvParams& p, const void* x, const void* dy) {
  return copy_bytes_of(x, dy, p.c, TileInput::f16) != 0;
}

void dwconv_backward_filter_cuda_tile_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum, const BfcForce& force, cudaStream_t stream) {
  run_bfc(x, dy, dw, p, force, f16_input(accum), stream);
}

std::string bfc_tile_path_name(const DwconvParams& p, const BfcForce& force) {
  const int bytes = bfc_tile_copy_bytes(p.c, false, 16);  // assumes 16-byte aligned tensors, as allocators return
  return describe(cached_plan(p, force, bytes, TileInput::f32), p, bytes, TileInput::f32);
}

std::string bfc_tile_f16_path_name(const DwconvParams& p, BfcAccum accum, const BfcForce& force) {
  const TileInput in = f16_input(accum);
  const int bytes = bfc_tile_copy_bytes(p.c, true, 16);
  return describe(cached_plan(p, force, bytes, in), p, bytes, in);
}

}  // namespace cnn::dwconv
