// Internal to kernels/dwconv/cuda: the launchers of the Flash-DWC CUDA kernels and their configurations, exposed so
// that select.cpp can plan and tests can run every kernel. Backward-data at stride 1 is a forward pass over dY with
// the filter rotated by 180 degrees, so forward-style kernels take one geometry: a source map (N, in_h, in_w, C)
// produces a destination map (N, out_h, out_w, C). FP16 kernels accumulate in FP32 unless they say otherwise.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "kernels/dwconv/cuda/bfc_small_plan.h"
#include "kernels/dwconv/cuda/bfc_tile_plan.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

struct ConvGeometry {
  int n = 1, in_h = 1, in_w = 1, c = 1;
  int out_h = 1, out_w = 1;
  int fh = 1, fw = 1;
  int stride_h = 1, stride_w = 1;
  int pad_t = 0, pad_l = 0;  // signed: a negative value crops (backward-data with padding > F-1)
  bool flip = false;         // read the filter rotated by 180 degrees
};

// g with rows and columns swapped: the geometry of the maps' transposed view (a FH x FW filter seen as FW x FH).
inline ConvGeometry transposed_geometry(const ConvGeometry& g) {
  ConvGeometry t = g;
  std::swap(t.in_h, t.in_w);
  std::swap(t.out_h, t.out_w);
  std::swap(t.fh, t.fw);
  std::swap(t.stride_h, t.stride_w);
  std::swap(t.pad_t, t.pad_l);
  return t;
}

// Forward geometry of p, and the stride-1 backward-data geometry (dY -> dX with the flipped filter).
ConvGeometry forward_geometry(const DwconvParams& p);
ConvGeometry backward_data_geometry_stride1(const DwconvParams& p);

// True for null (an absent optional tensor) or a 16-byte-aligned pointer: the vectorized kernels' requirement.
inline bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
// The alignment in bytes (1, 2, 4, 8 or 16) that every non-null pointer of `ptrs` has.
inline int alignment_of(std::initializer_list<const void*> ptrs) {
  std::uintptr_t bits = 16;
  for (const void* p : ptrs)
    if (p != nullptr) bits |= reinterpret_cast<std::uintptr_t>(p);
  return static_cast<int>(bits & (~bits + 1));  // the lowest set bit, at most 16
}

// The shape part of a kernel plan cache's key: the current device (element 0) and every field of p, so that a plan
// made for one device or shape is never reused for another.
using DeviceShapeKey = std::array<int, 13>;
DeviceShapeKey device_shape_key(const DwconvParams& p);

// ---- FP32 GEMV kernel (fwd_gemv.cu, flash-dwc.md section 3): stride 1, C % 4 == 0, 16-byte aligned pointers.
// `src_c`: the channels of src's, w's and bias's rows where they are channel-padded copies (>= g.c, % 4 == 0), 0
// where they have g.c; dst has g.c channels at any float alignment.
struct GemvConfig {
  int tm = 8;             // consecutive outputs per thread: 8 or 16
  bool prefetch = false;  // register ring of 2*TM inputs: each load is issued TM taps before its first use
  bool whole_filter = false;  // stage all FH filter rows in shared memory once (small filters) instead of two
};
void launch_dwconv_gemv(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                        const GemvConfig& cfg, cudaStream_t stream, int src_c = 0);
std::string dwconv_gemv_path_name(const ConvGeometry& g, const GemvConfig& cfg);
bool gemv_whole_filter_fits(int fh, int fw);  // all FH filter rows fit the kernel's shared-memory stage

// ---- FP32 row-sliding kernel (fwd_vslide.cu) for filters up to kVslideMaxF x kVslideMaxF at stride 1: each thread
// walks 16 output rows with the rows in flight in registers, 4 channels per thread (float4), so C % 4 == 0 and
// 16-byte aligned tensors (a null bias counts).
inline constexpr int kVslideMaxF = 3;
bool vslide_f32_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst);
void launch_dwconv_vslide_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              cudaStream_t stream);

// ---- CUDA-core kernel fed by the Tensor Memory Accelerator (fwd_tma_cc.cu), FP16 and FP32 data: persistent blocks
// take 16x8- or 16x16-output tiles of one 128-byte channel slice (one group of blocks per slice, striding through
// it), whose input windows the TMA loads stages - 1 tiles ahead. sm_90, stride 1, FW <= kTmaCcMaxFw, C % 8 (FP16) or
// C % 4 (FP32) == 0, 16-byte aligned tensors (callers check alignment), a window ring within a block's shared memory.
inline constexpr int kTmaCcMaxFw = 5;
struct TmaCcConfig {
  int lane_bytes = 16;  // channel bytes per thread: 16 (128-thread blocks) or 8 (256 threads, half the registers)
  int rows_per_thread = 1;  // output rows per thread: 1, or 2 with 8-byte lanes (128 threads, FH + 1 input rows)
  int tile_cols = 8;        // output columns per tile: 8, or 16 (twice the threads; one 18x18 window at 3x3)
  int stages = 3;           // window buffers per block: the tile computed and stages - 1 prefetched (2-4)
};
// Whether cfg's window ring fits a block's shared memory for g (the supports() checks hold for 16x8 tiles in three
// stages).
bool tma_cc_config_fits(const ConvGeometry& g, const TmaCcConfig& cfg, bool f16);
bool tma_cc_f16_supports(const ConvGeometry& g);
bool tma_cc_f32_supports(const ConvGeometry& g);
std::string tma_cc_f16_describe(const ConvGeometry& g, const TmaCcConfig& cfg);
std::string tma_cc_f32_describe(const ConvGeometry& g, const TmaCcConfig& cfg);
void launch_dwconv_tma_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, const TmaCcConfig& cfg, cudaStream_t stream);
void launch_dwconv_tma_cc_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              const TmaCcConfig& cfg, cudaStream_t stream);

// ---- Direct kernels (direct.cu, FP32; fwd_cc_f16.cu, FP16): any stride, C and alignment; one thread per
// destination element group (vec: 4 FP32 / 8 FP16 channels, C a multiple and 16-byte aligned pointers), up to
// kDirectMaxBlocks blocks, a grid-stride loop covering the rest. Forward (also stride-1 backward-data via flip) and
// the strided backward-data gather.
constexpr int64_t kDirectMaxBlocks = int64_t(1) << 20;
void launch_dwconv_direct_forward(const float* src, const float* w, const float* bias, float* dst,
                                  const ConvGeometry& g, bool vec4, cudaStream_t stream);
void launch_dwconv_direct_backward_data(const float* dy, const float* w, float* dx, const DwconvParams& p, bool vec4,
                                        cudaStream_t stream);
void launch_dwconv_direct_f16_forward(const __half* src, const __half* w, const __half* bias, __half* dst,
                                      const ConvGeometry& g, bool vec8, cudaStream_t stream);
void launch_dwconv_direct_f16_backward_data(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                                            bool vec8, cudaStream_t stream);

// ---- Tiled direct kernel (direct_tile.cu): stride-1 forward-style ops at any C and alignment, filters of up to
// kDirectTileMaxF rows and widths 1-7, 9, 11 or 13; the block's input tile in shared memory, FP32 and FP16.
// `lane_channels`: 1, or 2 adjacent channels per lane (__half2 / float2 loads and stores) where
// direct_tile_lane_channels allows it.
constexpr int kDirectTileMaxF = 13;
// Stride 1, FH <= kDirectTileMaxF, a width above, < 2^31 elements per image.
bool direct_tile_supports(const ConvGeometry& g);
// Output columns per block: 8, 16 or 32, the narrowest covering out_w (up to 32), halved while the tile's shared
// memory would exceed what a block may have.
int direct_tile_width(const ConvGeometry& g, bool f16);
// Whether a tile `w` columns wide (8, 16 or 32) fits a block's shared memory on g, at any lane width and staging.
bool direct_tile_width_fits(const ConvGeometry& g, bool f16, int w);
// Output rows per block: 8 (one per warp) for FP32 and for maps of at most 8 rows, else 16 for FP16 (two per warp).
int direct_tile_height(bool f16, int out_h);
// 2 where C is even and every tensor is aligned to 2 elements (`align`: alignment_of), else 1.
int direct_tile_lane_channels(int c, bool f16, int align);
// `tile_w`: output columns per block, 8, 16 or 32 where direct_tile_width_fits (direct_tile_width by default).
void launch_dwconv_direct_tile(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                               int lane_channels, int tile_w, cudaStream_t stream);
void launch_dwconv_direct_tile_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                   const ConvGeometry& g, int lane_channels, int tile_w, cudaStream_t stream);

// ---- FP16 CUDA-core register kernel for narrow filters (fwd_cc_f16.cu): FW <= kCcMaxFw, stride 1, C % 4 == 0;
// 8 outputs x cc_f16_lane_halves(C) channels per thread (8 at C % 8 == 0 with 16-byte aligned tensors, else 4 with
// 8-byte aligned ones), FP32 FMAs; `groups` groups of 8 outputs per block row (1, 2 or up to cc_f16_max_groups(C);
// outputs past the row are skipped).
inline constexpr int kCcMaxFw = 5;
int cc_f16_lane_halves(int c);  // 8, 4, or 0 where C % 4 != 0
int cc_f16_max_groups(int c);   // 4 for 8-half lanes, 2 for 4-half lanes
void launch_dwconv_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int groups, cudaStream_t stream);

// ---- FP16 tensor-core Flash-DWC-T (fwd_tc.cu): stride 1, C % 8 == 0, 16-byte aligned pointers, any FH x FW.
// theta = 4, 2 or 1 (kernels T4, T2, T1; block tile (16/theta) x (8*theta) outputs x 64 channels).
void launch_dwconv_tc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int theta, cudaStream_t stream);

// ---- FP16 tensor-core ring kernel (fwd_tc_ring.cuh): input blocks held in a register ring and reused across filter
// fragments; stride 1, C % 4 == 0 and 8-byte aligned pointers (pairs: also C % 4 == 2 with 4-byte aligned ones),
// FW <= kTcRingMaxFw. Block tile 16 x 8q outputs x 16 channels, the 16-channel blocks of one tile position
// consecutive in the grid. MMA policy (m16n8k8):
//   taps:  k = 8 filter taps of one channel, n = 8 output columns (fwd_tc_ring_taps.cu)
//   pairs: k = 4 input positions x 2 channels, n = 4 output columns x the same 2 channels (fwd_tc_ring_pairs.cu):
//          no byte permutes or band masks, taps rounded to multiples of 4 instead of 8.
inline constexpr int kTcRingMaxFw = 64;
enum class RingMma { taps, pairs };
// `transposed`: run on the maps' transposed view (rows and columns swapped, the FH x FW filter seen as FW x FH; g
// stays the maps' geometry), so that a tall strip takes the wide-filter path. `src_c`: the channels of src's, w's and
// bias's rows where they are channel-padded copies (>= g.c, 16-byte aligned), 0 where they have g.c; dst has g.c
// channels at any alignment.
void launch_dwconv_tc_ring_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                               const ConvGeometry& g, int q, RingMma mma, bool transposed, cudaStream_t stream,
                               int src_c = 0);
int tc_ring_pairs_nd(int fw);  // block offsets per output group of 4 columns: (FW + 2) / 4 + 1

// ---- FP32 and FP16 backward-filter on register tiles (bfc_tile.cu); plans in bfc_tile_plan.h. Zeroes dw, then
// accumulation chunks merge into it with FP32 atomics. FP16: accumulation fp32 (values widened as read from shared
// memory) or ha (channel pairs, HFMA2 partials over runs of kBfcHaRun dY columns merged into FP32 sums, as
// dwconv_backward_filter_reference_f16 emulates; tiles of <= kBfcHaMaxTaps taps). Rows are staged with cp.async jobs
// of bfc_tile_copy_bytes: 16 bytes where a position's channels are a multiple of 16 bytes and the tensors 16-byte
// aligned, else 8 or 4; FP16 needs an even C and 4-byte aligned x and dy (bfc_tile_f16_supports; a null pointer
// counts as aligned). `force` overrides the planner.
void dwconv_backward_filter_cuda_tile(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                      const BfcForce& force, cudaStream_t stream);
int bfc_tile_copy_bytes(int c, bool f16, int align);  // 16, 8, 4, or 0 where the kernel cannot stage C (odd FP16)
bool bfc_tile_f16_supports(const DwconvParams& p, const void* x, const void* dy);
void dwconv_backward_filter_cuda_tile_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum, const BfcForce& force, cudaStream_t stream);
std::string bfc_tile_path_name(const DwconvParams& p, const BfcForce& force);
std::string bfc_tile_f16_path_name(const DwconvParams& p, BfcAccum accum, const BfcForce& force);

// ---- FP16 backward-filter, one warp per dY row (bfc_rowwarp_f16.cu): any stride, C, alignment; 2 channels per lane
// (half2), FP32 or hybrid accumulation.
struct BfcF16Force {
  int tm = 0;  // > 0: every column tile this wide (1..9) instead of the planner's 9s plus one remainder tile
  int z = 0;   // > 0: this many accumulation chunks (clamped to N*OH)
};
void launch_dwconv_bfc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                           const BfcF16Force& force, cudaStream_t stream);
std::string dwconv_bfc_f16_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16Force& force);

// ---- FP16 backward-filter over dY column strips at stride 1, any filter (bfc_strip_f16.cu), FP32 or hybrid
// accumulation: C % 4 == 0, x and dy 8-byte aligned (null counts as aligned, for path names). Thread = 4 channels x
// a tile of filter rows x <= 7 filter columns, sliding along dY rows; one global atomic per (tap, channel) per
// block. ha follows the emulation's runs exactly (strips start at multiples of kBfcHaRun).
struct BfcF16TiledForce {
  int z = 0;      // > 0: this many accumulation chunks of block steps (clamped to the number of steps)
  int strip = 0;  // > 0: dY column strips this wide (clamped to OW; ha: a multiple of kBfcHaRun unless >= OW)
};
bool bfc_f16_tiled_supports(const DwconvParams& p, const void* x, const void* dy);
void launch_dwconv_bfc_f16_tiled(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 const BfcF16TiledForce& force, cudaStream_t stream);
std::string dwconv_bfc_f16_tiled_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16TiledForce& force);

// ---- Backward-filter for small filters at stride 1 (bfc_small.cu; tiles and task split in bfc_small_plan.h): FH,
// FW <= kBfcSmallMaxF, any C, alignment, N, H, W and padding, FP32 and FP16 inputs with FP32 accumulation, no padded
// copies. Zeroes dw, then one FP32 atomic add per (tap, channel) per block. Lanes of 2 adjacent channels (half2 /
// float2 loads) where C is even and x, dy are aligned to 2 elements (bfc_small_lane_channels), else 1.
struct BfcSmallForce {
  int lanes = 0;  // > 0: channels per lane, 1 or 2 (2 only where bfc_small_lane_channels allows it); 0: the planner's
  int nr = 0;     // > 0: filter rows per thread, an entry of kBfcSmallRowTiles with a kernel for the lane width
  int z = 0;      // > 0: this many chunks of tasks per channel slice (clamped to the tasks)
};
bool bfc_small_supports(const DwconvParams& p, bool f16);  // stride 1, FH, FW <= 7, C * element bytes < 2^31
int bfc_small_lane_channels(int c, bool f16, int align);   // 2 at an even C with x, dy aligned to 2 elements, else 1
void launch_dwconv_bfc_small(const float* x, const float* dy, float* dw, const DwconvParams& p,
                             const BfcSmallForce& force, cudaStream_t stream);
void launch_dwconv_bfc_small_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                 const BfcSmallForce& force, cudaStream_t stream);
// The plan where lanes take at most max_lanes channels (bfc_small_lane_channels of the tensors), e.g. "bfc f16 small
// (fp32 accumulation) lanes=32x1 tile=5x5 dy_rows=2 ...".
std::string dwconv_bfc_small_path_name(const DwconvParams& p, bool f16, int max_lanes, const BfcSmallForce& force);

// ---- Backward-filter on span-staged tiles (bfc_span.cu), FP16 or FP32 data: stride 1, 3x3, 5x5, 7x7, 9x9, 13x5
// or 5x13 filters, FP32 accumulation, any C whose map rows are whole 16-byte chunks (W * C % 8 == 0 in FP16, % 4 in
// FP32, for X and dY; elem_bytes: 2 or 4) with 16-byte aligned x and dy (align: the smaller of their alignments).
// Zeroes dw, then one FP32 atomic add per (tap, channel) per block.
bool bfc_span_supports(const DwconvParams& p, int align, int elem_bytes);
void launch_dwconv_bfc_span(const float* x, const float* dy, float* dw, const DwconvParams& p, cudaStream_t stream);
void launch_dwconv_bfc_span_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                cudaStream_t stream);
// e.g. "bfc f16 span (fp32 accumulation) F=5x5 ..."
std::string dwconv_bfc_span_path_name(const DwconvParams& p, bool f16);

// ---- FP16 backward-filter on tensor cores (bfc_tc_f16.cu): stride 1, FP32 accumulation (m16n8k16 MMAs with FP32
// accumulators), filters of at most kBfcTcMaxRows x kBfcTcMaxCols or the transpose (run on the maps' transposed
// view), C % 4 == 0 with 8-byte aligned x and dy, and maps whose rows fit a block's shared memory. Zeroes dw, then
// FP32 atomic adds of each block's dW tiles.
inline constexpr int kBfcTcMaxRows = 8, kBfcTcMaxCols = 64;
inline constexpr int kBfcTcMaxSmemBytes = 227 * 1024;
bool bfc_tc_f16_supports(const DwconvParams& p, int align);
void launch_dwconv_bfc_tc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p, cudaStream_t stream);
// e.g. "bfc f16 tc (fp32 accumulation) F=51x5 transposed tiles=4x16 ..."
std::string dwconv_bfc_tc_f16_path_name(const DwconvParams& p);

}  // namespace cnn::dwconv
