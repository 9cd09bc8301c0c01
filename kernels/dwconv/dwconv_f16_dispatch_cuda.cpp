// CUDA entry points of the FP16 depthwise ops: validate, pick the kernel path for the shape, launch. Paths:
// tensor-core Flash-DWC-T (stride 1, C % 8 == 0, 16-byte aligned, FW > 3: the register-reuse kernel up to FW 64,
// T<theta> beyond), CUDA-core FP16 kernels for FW <= 5 (the TMA-fed one at 3x3 and 5x5), generic direct kernels
// otherwise; backward-filter on CUDA cores (choose_bfc: the register-tile kernel shared with FP32 above 3x3 and at
// stride > 1, the FP16 tiled kernel at stride-1 3x3 and below, the row-warp kernel for what neither takes; both
// accumulation modes on each). CNN_DWCONV_VERBOSE=1 logs each new choice.
#include <cstdint>

#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_bfc_cuda.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {

namespace {

enum class F16Path { tensor_core, tc_ring, cuda_core, tma_cc, direct };

// CNN_DWCONV_F16_PATH = auto | ring | t | cc | tma forces the stride-1 forward-style kernel (benchmarks,
// comparisons); a forced kernel that cannot run the shape is an error, never a silent fallback.
const std::string& forced_path() {
  static const std::string value = env_choice("CNN_DWCONV_F16_PATH", {"auto", "ring", "t", "cc", "tma"});
  return value;
}

enum class BfcPath { tiled, row_warp, tile };

// Stride-1 filters of at most this many taps keep the FP16 tiled kernel: measured on the H200 (docs/perf/
// dwconv-fp16-h200.md, seventh session) it beat the register-tile kernel at 3x3 (1.01-1.12x in fp32 accumulation,
// 0.99-1.09x in ha) and lost from 5x5 up (the tile kernel 1.05-1.41x at 5x5, 1.1-2.1x at 7x7-51x51).
constexpr int kBfcTiledMaxTaps = 9;

// CNN_DWCONV_F16_BFC_PATH = auto | tile | tiled | rowwarp forces the backward-filter kernel (benchmarks, A/B of the
// kernels on one shape); a forced kernel that cannot run the shape is an error, never a silent fallback. auto: the
// register-tile kernel shared with FP32 (both accumulations) for stride-1 filters of more than kBfcTiledMaxTaps taps
// with C % 8 == 0 and 16-byte aligned tensors, and for every strided shape it takes (measured on the H200 at stride 2,
// 3x3-13x13: 1.6-10.9x faster than the row-warp kernel in fp32 accumulation, 2.0-13.4x in ha; docs/perf/
// dwconv-fp16-h200.md, eighth session); the FP16 tiled kernel for the other stride-1 shapes it takes; the row-warp
// kernel for the rest.
BfcPath choose_bfc(const DwconvParams& p, const void* x, const void* dy) {
  static const std::string forced = env_choice("CNN_DWCONV_F16_BFC_PATH", {"auto", "tiled", "rowwarp", "tile"});
  if (forced == "rowwarp") return BfcPath::row_warp;
  const bool tile_ok = bfc_tile_f16_supports(p, x, dy);
  if (forced == "tile") {
    CNN_CHECK(tile_ok, "CNN_DWCONV_F16_BFC_PATH=tile: needs C % 8 == 0 and 16-byte aligned tensors, got ", p.str());
    return BfcPath::tile;
  }
  const bool tiled_ok = bfc_f16_tiled_supports(p, x, dy);
  CNN_CHECK(tiled_ok || forced != "tiled",
            "CNN_DWCONV_F16_BFC_PATH=tiled: needs stride 1, C % 4 == 0 and 8-byte aligned tensors, got ", p.str());
  const bool strided = p.stride_h != 1 || p.stride_w != 1;
  if (forced == "auto" && tile_ok && (strided || p.fh * p.fw > kBfcTiledMaxTaps)) return BfcPath::tile;
  return tiled_ok ? BfcPath::tiled : BfcPath::row_warp;
}

std::string bfc_path_name(BfcPath path, const DwconvParams& p, BfcAccum accum) {
  if (path == BfcPath::tile) return bfc_tile_f16_path_name(p, accum);
  if (path == BfcPath::tiled) return dwconv_bfc_f16_tiled_path_name(p, accum, BfcF16TiledForce{});
  return dwconv_bfc_f16_path_name(p, accum, BfcF16Force{});
}

// Tensor cores pay off once a filter row has more than 3 taps (the source measured CUDA cores competitive only at
// 3x3, where both are memory-bound); narrower rows run a CUDA-core FP16 kernel: the TMA-fed one on the shapes where
// it was measured faster (3x3, 5x5: tma_cc_default_for), the register kernel on the others. Up to kTcRingMaxFw taps the
// register-reuse kernel runs (fewer shared-memory bytes per MMA than the T kernels); wider rows take T<theta>.
F16Path choose(const ConvGeometry& g, bool aligned) {
  if (g.stride_h != 1 || g.stride_w != 1 || g.c % 8 != 0 || !aligned) return F16Path::direct;
  const std::string& forced = forced_path();
  if (forced == "ring") {
    CNN_CHECK(g.fw <= kTcRingMaxFw, "CNN_DWCONV_F16_PATH=ring: FW must be <= ", kTcRingMaxFw, ", got ", g.fw);
    return F16Path::tc_ring;
  }
  if (forced == "t") return F16Path::tensor_core;
  if (forced == "tma") {
    tma_cc_check_forced(g, true);
    return F16Path::tma_cc;
  }
  if (forced == "cc") {
    CNN_CHECK(g.fw <= kCcMaxFw, "CNN_DWCONV_F16_PATH=cc: FW must be <= ", kCcMaxFw, ", got ", g.fw);
    return F16Path::cuda_core;
  }
  if (forced == "auto" && tma_cc_default_for(g, true)) return F16Path::tma_cc;
  if (g.fw <= kCcMaxFw) return F16Path::cuda_core;
  return g.fw <= kTcRingMaxFw ? F16Path::tc_ring : F16Path::tensor_core;
}

// CNN_DWCONV_F16_RING_ORDER = auto | channels | columns: the ring kernel's block order (auto: channels first).
bool ring_channels_first() {
  static const bool value = env_choice("CNN_DWCONV_F16_RING_ORDER", {"auto", "channels", "columns"}) != "columns";
  return value;
}

// CNN_DWCONV_F16_RING_MMA = auto | taps | pairs: the ring kernel's MMA formulation (taps: 8-tap filter fragments,
// dwconv_f16_tc_ring.cu; pairs: channel pairs over 4-position blocks, dwconv_f16_tc_ring_pairs.cu). auto: pairs from
// FW = 9 (measured 1.04-1.21x over taps at 9x9-51x51), taps below (pairs 0.93x at 7x7; thirteenth session). The
// column-first block order exists for taps only.
bool ring_pairs(const ConvGeometry& g) {
  static const std::string value = env_choice("CNN_DWCONV_F16_RING_MMA", {"auto", "taps", "pairs"});
  if (value == "taps" || !ring_channels_first()) return false;
  return value == "pairs" || g.fw >= 9;
}

std::string describe(const char* op, const ConvGeometry& g, F16Path path, bool aligned) {
  switch (path) {
    case F16Path::tensor_core: {
      const int theta = tc_theta_for(g.out_w);
      return str_cat(op, " f16 tc T", theta, " tile=", 16 / theta, "x", 8 * theta, " BN=64 frags/row=",
                     (g.fw + 8) / 9);
    }
    case F16Path::tc_ring: {
      const int q = tc_ring_q_for(g.out_w);
      if (ring_pairs(g))
        return str_cat(op, " f16 tc-ring mma=pairs tile=16x", 8 * q, " BN=16 offsets/group=", tc_ring_pairs_nd(g.fw));
      return str_cat(op, " f16 tc-ring tile=16x", 8 * q, " BN=16 frags/row=", (g.fw + 7) / 8,
                     ring_channels_first() ? "" : " order=columns");
    }
    case F16Path::cuda_core: {
      const int groups = cc_groups_per_row(g.out_w);
      return str_cat(op, " f16 cuda-core FW=", g.fw, " TM=8 BN=64 tile=", 16 / groups, "x", 8 * groups);
    }
    case F16Path::tma_cc:
      return tma_cc_f16_describe(g, tma_cc_config(g, true));
    case F16Path::direct:
      break;
  }
  const char* why = g.stride_h != 1 || g.stride_w != 1 ? "stride > 1" : (g.c % 8 ? "C % 8 != 0" : "unaligned pointers");
  return str_cat(op, " f16 direct vec=", g.c % 8 == 0 && aligned ? 8 : 1, " (", why, ")");
}

void run_forward_style(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                       bool aligned, cudaStream_t stream) {
  switch (choose(g, aligned)) {
    case F16Path::tensor_core:
      launch_dwconv_tc_f16(src, w, bias, dst, g, tc_theta_for(g.out_w), stream);
      return;
    case F16Path::tc_ring:
      if (ring_pairs(g))
        launch_dwconv_tc_ring_pairs_f16(src, w, bias, dst, g, tc_ring_q_for(g.out_w), stream);
      else
        launch_dwconv_tc_ring_f16(src, w, bias, dst, g, tc_ring_q_for(g.out_w), ring_channels_first(), stream);
      return;
    case F16Path::cuda_core:
      launch_dwconv_cc_f16(src, w, bias, dst, g, stream);
      return;
    case F16Path::tma_cc:
      launch_dwconv_tma_cc_f16(src, w, bias, dst, g, tma_cc_config(g, true), stream);
      return;
    case F16Path::direct:
      launch_dwconv_direct_f16_forward(src, w, bias, dst, g, g.c % 8 == 0 && aligned, stream);
      return;
  }
}

std::string forward_path_f16(const DwconvParams& p, bool aligned) {
  const ConvGeometry g = forward_geometry(p);
  return describe("fwd", g, choose(g, aligned), aligned);
}

std::string backward_data_path_f16(const DwconvParams& p, bool aligned) {
  if (p.stride_h == 1 && p.stride_w == 1) {
    const ConvGeometry g = backward_data_geometry_stride1(p);
    return describe("bdc", g, choose(g, aligned), aligned);
  }
  return str_cat("bdc f16 direct strided gather vec=", p.c % 8 == 0 && aligned ? 8 : 1);
}

}  // namespace

void dwconv_forward_cuda(const __half* x, const __half* w, const __half* bias, __half* y, const DwconvParams& p,
                         cudaStream_t stream) {
  p.validate("dwconv_forward_cuda(f16)");
  check_pointers("dwconv_forward_cuda(f16)", x, "x", w, "w", y, "y");
  const bool aligned = aligned16(x) && aligned16(w) && aligned16(bias) && aligned16(y);
  log_path_once("fwd", p, [&] { return forward_path_f16(p, aligned); });
  run_forward_style(x, w, bias, y, forward_geometry(p), aligned, stream);
}

void dwconv_backward_data_cuda(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                               cudaStream_t stream) {
  p.validate("dwconv_backward_data_cuda(f16)");
  check_pointers("dwconv_backward_data_cuda(f16)", dy, "dy", w, "w", dx, "dx");
  const bool aligned = aligned16(dy) && aligned16(w) && aligned16(dx);
  log_path_once("bdc", p, [&] { return backward_data_path_f16(p, aligned); });
  if (p.stride_h == 1 && p.stride_w == 1)
    run_forward_style(dy, w, nullptr, dx, backward_data_geometry_stride1(p), aligned, stream);
  else
    launch_dwconv_direct_f16_backward_data(dy, w, dx, p, p.c % 8 == 0 && aligned, stream);
}

void dwconv_backward_filter_cuda(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 cudaStream_t stream) {
  p.validate("dwconv_backward_filter_cuda(f16)");
  check_pointers("dwconv_backward_filter_cuda(f16)", x, "x", dy, "dy", dw, "dw");
  CNN_CHECK(accum == BfcAccum::fp32 || accum == BfcAccum::ha,
            "dwconv_backward_filter_cuda(f16): expected accumulation fp32 or ha, got ", static_cast<int>(accum));
  const BfcPath path = choose_bfc(p, x, dy);
  log_path_once("bfc", p, [&] { return bfc_path_name(path, p, accum); });
  if (path == BfcPath::tile)
    dwconv_backward_filter_cuda_tile_f16(x, dy, dw, p, accum, stream);
  else if (path == BfcPath::tiled)
    launch_dwconv_bfc_f16_tiled(x, dy, dw, p, accum, BfcF16TiledForce{}, stream);
  else
    launch_dwconv_bfc_f16(x, dy, dw, p, accum, BfcF16Force{}, stream);
}

std::string dwconv_path_name(DwconvOp op, const DwconvParams& p, DType dtype, BfcAccum accum) {
  CNN_CHECK(dtype == DType::f32 || dtype == DType::f16, "dwconv_path_name: expected dtype f32 or f16, got ",
            dtype_name(dtype));
  if (dtype == DType::f32) return dwconv_path_name(op, p);
  p.validate("dwconv_path_name");
  switch (op) {
    case DwconvOp::forward: return forward_path_f16(p, true);
    case DwconvOp::backward_data: return backward_data_path_f16(p, true);
    case DwconvOp::backward_filter: return bfc_path_name(choose_bfc(p, nullptr, nullptr), p, accum);
  }
  return "unknown";
}

}  // namespace cnn::dwconv
