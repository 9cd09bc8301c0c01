// The one place that decides which Flash-DWC CUDA kernel runs a depthwise op and with which configuration:
// select(op, dtype, shape, accumulation, alignment, overrides) -> Plan. Every threshold sits in select.cpp next to a
// one-line why and the results page that measured it; the dispatchers (dispatch_f32.cpp, dispatch_f16.cpp) switch
// on the plan's kernel, and dwconv_path_name prints the plan.
#pragma once

#include <optional>
#include <string>

#include "core/dtype.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::dwconv {

// Kernels by technique and op. Forward-style kernels also run stride-1 backward-data (a forward over dY with the
// filter rotated by 180 degrees).
enum class Kernel {
  direct,           // any stride, C, alignment; FP32 and FP16 (direct.cuh)
  direct_tile,      // stride 1, any C and alignment, filters up to 13 rows, widths 1-7, 9, 11, 13 (direct_tile.cu)
  fwd_vslide,       // FP32 row-sliding, filters up to 3x3 (fwd_vslide.cu)
  fwd_tma_cc,       // CUDA-core, input windows fed by the TMA, FW <= 5, sm_90; FP32 and FP16 (fwd_tma_cc.cu)
  fwd_gemv,         // FP32 Flash-DWC GEMV (fwd_gemv.cu)
  fwd_cc_f16,       // FP16 CUDA-core register kernel, FW <= 5 (fwd_cc_f16.cu)
  fwd_tc_ring,      // FP16 tensor-core ring kernel, FW <= 64 (fwd_tc_ring.cuh)
  fwd_tc,           // FP16 tensor-core Flash-DWC-T, any FW (fwd_tc.cu)
  bfc_tile,         // backward-filter register tiles, FP32 and FP16 inputs, fp32 or ha accumulation (bfc_tile.cu)
  bfc_strip_f16,    // FP16 backward-filter over dY column strips, stride 1 (bfc_strip_f16.cu)
  bfc_rowwarp_f16,  // FP16 backward-filter, one warp per dY row, any shape (bfc_rowwarp_f16.cu)
  bfc_small,        // backward-filter, stride 1, filters up to 7x7, any C and alignment; FP32 and FP16 (bfc_small.cu)
  bfc_span,         // backward-filter, stride 1, 3x3-9x9, 13x5, 5x13, rows of whole 16-byte chunks (bfc_span.cu)
  bfc_tc,           // FP16 backward-filter on tensor cores, stride 1, up to 8 x 64 or 64 x 8 (bfc_tc_f16.cu)
};
const char* kernel_name(Kernel k);  // "fwd_gemv", ...

// Overrides of select's choices for tests and benchmarks; unset fields leave the choice to select. One text form,
// "key=value,key=value,...", read from the environment variable CNN_DWCONV or from dwconv-bench --kernel:
//   fwd=direct|tile|vslide|tma|gemv|cc|ring|tc   the forward-style kernel (fwd and stride-1 bdc); FP32 takes
//                                           direct|tile|vslide|tma|gemv, FP16 direct|tile|tma|cc|ring|tc
//   bfc=tile|strip|rowwarp|small|span|tc    the backward-filter kernel (FP32 takes tile|small|span; small, span
//                                           and tc need fp32 accumulation, not ha; tc is FP16 only)
//   gemv=TM[+ring][+whole]                  the GEMV configuration (TM 8 or 16), e.g. gemv=16+ring
//   tma_lane=8|16 tma_rows=1|2 tma_cols=8|16 tma_stages=2|3|4
//   ring_mma=taps|pairs  ring_q=1|2|4  cc_groups=1|2|4  bfc_tile=RxTM (an entry of kBfcTiles)
//   tile_cols=8|16|32                       direct_tile's output columns per block
//   pad=on|off                              channel padding (Plan::padded_c) wherever it can run / never
//   verbose                                 log each new (op, shape) -> plan line on stderr
// A forced kernel that cannot run the shape is an error naming the override, never a silent fallback.
struct Overrides {
  std::optional<Kernel> fwd;
  std::optional<Kernel> bfc;
  std::optional<GemvConfig> gemv;
  int tma_lane = 0, tma_rows = 0, tma_cols = 0, tma_stages = 0;  // 0: select's choice
  std::optional<RingMma> ring_mma;
  int ring_q = 0;  // 0: select's choice
  int tile_cols = 0;  // 0: select's choice
  int cc_groups = 0;
  BfcTile bfc_tile{0, 0};  // r = 0: the planner's tile
  std::optional<bool> pad;
  bool verbose = false;
};
// Parses the text form; a bad key or value is a one-line error that starts with `what` (e.g. "CNN_DWCONV").
Overrides parse_overrides(const std::string& text, const char* what);
// The process-wide overrides: parsed from CNN_DWCONV on first use, replaced by set_overrides (dwconv-bench, tests).
// Not synchronized: set them before launching work from other threads.
const Overrides& overrides();
void set_overrides(const Overrides& o);

// What runs one op: the kernel and its configuration (only the kernel's own fields are meaningful).
struct Plan {
  Kernel kernel = Kernel::direct;
  // > 0: the kernel runs on copies of the tensors padded with zero channels to this many (a multiple of the vector
  // width), and the output's first C channels are copied back, or written by the kernel itself (writes_unpadded);
  // every other field describes the padded problem.
  int padded_c = 0;
  bool writes_unpadded = false;  // padded forward-style plans: the kernel stores the C-channel output directly
  ConvGeometry g;      // forward-style kernels: source -> destination geometry (flipped for backward-data)
  bool vec = false;    // direct kernels: the vector path (C % 4 FP32 / C % 8 FP16 and 16-byte aligned tensors)
  GemvConfig gemv;     // fwd_gemv
  TmaCcConfig tma;     // fwd_tma_cc
  int cc_groups = 1;   // fwd_cc_f16: groups of 8 outputs per row of a block tile (1, 2 or 4)
  int ring_q = 1;      // fwd_tc_ring: output blocks of 8 columns per warp (1, 2 or 4) of the view it runs on
  RingMma ring_mma = RingMma::taps;
  bool ring_transposed = false;  // fwd_tc_ring on the maps' transposed view (tall strips)
  int tc_theta = 1;    // fwd_tc: 4, 2 or 1 (block tile (16/theta) x (8*theta))
  BfcForce bfc;        // bfc_tile: a forced register tile (zero: the planner's)
  int tile_lane_channels = 1;  // direct_tile: channels per lane, 1 or 2 (direct_tile_lane_channels)
  int tile_w = 8;              // direct_tile: output columns per block (direct_tile_width)
  int small_lane_channels = 1;  // bfc_small: the most channels per lane the tensors allow (bfc_small_lane_channels)
};

// The plan for op on p. `align`: the alignment in bytes that every tensor pointer of the op has (alignment_of; 16
// for the caching allocator's tensors). For FP16 backward-filter `accum` picks the accumulation; FP32 ignores it.
Plan select(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, int align, const Overrides& o);
// "fwd gemv FW=7 TM=16 ...": the plan's kernel and configuration, for logs and benchmark tables.
std::string plan_name(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, const Plan& plan);
// With the verbose override, prints "dwconv: <op> <shape> -> <plan>" on stderr once per distinct line.
void log_plan(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, const Plan& plan);

// ---- Backward-filter register tiles (bfc_tile_plan.cpp reads these; docs/dwconv-bfc.md explains the planner).
// The planner prices each instantiated tile with a cost model (FFMA and shared-memory issue per step); where the
// measured fastest tile differs from the model's pick, these tables name it (results: the backward-filter rows of
// docs/perf/dwconv-fp32-h200.md and docs/perf/dwconv-fp16-h200.md).

// Never picked by the model (forcing still reaches them): 193 and 203 registers leave 9-12 warps per SM, too few to
// hide each dY row's barrier and shared-memory latency (3x13 beats 3x17 at 51x51 although the model prefers 3x17).
inline constexpr BfcTile kBfcTilesForcedOnly[] = {{3, 17}, {4, 13}};

// FP32 accumulation: the model's candidates lie within a few percent of each other here, and it does not price what
// a tile does once per dY row nor occupancy; these tiles measured fastest on all three sweep maps.
inline constexpr BfcMeasuredTile kBfcMeasuredTiles[] = {{13, 13, {2, 13}}, {31, 31, {2, 16}}, {51, 51, {3, 13}}};

// Hybrid accumulation (tiles of <= kBfcHaMaxTaps taps, 4 registers per tap): its own fastest tiles, where they
// differ from the FP32 table or the model (7x7 2x8 over the model's 1x7, 9x9 3x9, 13x13 1x13 on 64-column
// segments, 31x31 1x31, 51x51 2x13 where 3x13 is over the tap limit).
inline constexpr BfcMeasuredTile kBfcHaMeasuredTiles[] = {
    {7, 7, {2, 8}}, {9, 9, {3, 9}}, {13, 13, {1, 13}}, {31, 31, {1, 31}}, {51, 51, {2, 13}}};

// Hybrid accumulation on short dY segments: a 1 x TM thread loads TM - 1 window values before the first step of
// every segment, so below these segment widths a taller tile wins (17x17: 2x9 over 1x17 below 48 columns; 13x13:
// 2x13 over 1x13 below 48 columns).
inline constexpr BfcNarrowTile kBfcHaNarrowTiles[] = {{13, 13, {1, 13}, {2, 13}, 48}, {17, 17, {1, 17}, {2, 9}, 48}};

}  // namespace cnn::dwconv
