// Internal to kernels/dwconv: the geometry shared by the forward-style CUDA kernels and their launchers.
// Backward-data at stride 1 is a forward pass over dY with the filter rotated by 180 degrees, so both directions
// are described by one struct: a source map (N, in_h, in_w, C) produces a destination map (N, out_h, out_w, C).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>

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

// True for null (an absent optional tensor) or a 16-byte-aligned pointer: the vectorized kernels' requirement.
inline bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

bool dwconv_verbose();  // CNN_DWCONV_VERBOSE=1
// The value of environment variable `var` (a forced kernel choice for benchmarks), "auto" when unset; any value not
// in `allowed` (which lists "auto" too) is a one-line error naming the variable and the allowed values.
std::string env_choice(const char* var, std::initializer_list<const char*> allowed);
// parse(text, var) of environment variable `var`, or nullopt when it is unset or empty: a benchmark override of a
// planner's choice (the parser's one-line error names the variable). Callers keep the result in a static.
template <class Parse>
auto env_override(const char* var, Parse&& parse) -> std::optional<decltype(parse(std::string(), var))> {
  const char* v = std::getenv(var);
  if (v == nullptr || v[0] == '\0') return std::nullopt;
  return parse(std::string(v), var);
}
// Prints "dwconv: <op> <shape> -> <path>" on stderr once per distinct line.
void log_path_line(const char* op, const DwconvParams& p, const std::string& path);
// With CNN_DWCONV_VERBOSE=1, log_path_line of path() (a callable returning the kernel path's name); `path` runs only
// then, so the entry points do not format path names on every call.
template <class PathFn>
void log_path_once(const char* op, const DwconvParams& p, PathFn&& path) {
  if (dwconv_verbose()) log_path_line(op, p, path());
}

// The shape part of a kernel plan cache's key: the current device (element 0) and every field of p, so that a plan
// made for one device or shape is never reused for another.
using DeviceShapeKey = std::array<int, 13>;
DeviceShapeKey device_shape_key(const DwconvParams& p);

// Forward geometry of p, and the stride-1 backward-data geometry (dY -> dX with the flipped filter).
ConvGeometry forward_geometry(const DwconvParams& p);
ConvGeometry backward_data_geometry_stride1(const DwconvParams& p);

// GEMV kernel (flash-dwc.md section 3): stride 1, C % 4 == 0, 16-byte aligned pointers.
struct GemvConfig {
  int tm = 8;             // consecutive outputs per thread: 8 or 16
  bool prefetch = false;  // register ring of 2*TM inputs: each load is issued TM taps before its first use
  bool whole_filter = false;  // stage all FH filter rows in shared memory once (small filters) instead of two
};
GemvConfig gemv_config_for(const ConvGeometry& g);  // the dispatcher's choice for the shape
// "TM[,ring][,whole]" (TM 8 or 16; ring = prefetch, whole = whole_filter), e.g. "16,ring,whole"; anything else is a
// one-line error that starts with `what` (the variable it came from).
GemvConfig parse_gemv_config(const std::string& text, const char* what);
void launch_dwconv_gemv(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                        const GemvConfig& cfg, cudaStream_t stream);
std::string dwconv_gemv_path_name(const ConvGeometry& g, const GemvConfig& cfg);

// FP32 row-sliding kernel (dwconv_vslide.cu) for filters up to kVslideMaxF x kVslideMaxF at stride 1: each thread
// walks 16 output rows with the rows in flight in registers, 4 channels per thread (float4), so C % 4 == 0 and
// 16-byte aligned tensors (a null bias counts). Measured faster than the GEMV kernel at 3x3 only.
inline constexpr int kVslideMaxF = 3;
bool vslide_f32_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst);
void launch_dwconv_vslide_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              cudaStream_t stream);

// CUDA-core kernel fed by the Tensor Memory Accelerator (dwconv_tma_cc.cu), FP16 and FP32 data, FP32 accumulation:
// persistent blocks, 16x8- or 16x16-output tiles of one 128-byte channel slice whose input windows the TMA loads
// stages - 1 tiles ahead. sm_90, stride 1, FW <= kTmaCcMaxFw, C % 8 (FP16) or C % 4 (FP32) == 0, 16-byte aligned
// tensors (callers check alignment), a window ring within the shared memory of a block.
inline constexpr int kTmaCcMaxFw = 5;
// Which tiles a persistent block takes. sliced: one group of blocks per 128-byte channel slice, each group striding
// through its slice (neighbouring tiles run at once, one filter load per block; contiguous when there are fewer
// blocks than slices); contiguous: one range per block; strided: every gridDim.x-th tile of the whole tensor;
// interleaved: the slices of one position are consecutive tiles and blocks take every gridDim.x-th, with every
// slice's filter in shared memory (balanced to one tile per block whatever the slice count; sliced groups are
// uneven when the blocks are not a multiple of the slices), measured 0.94-0.99x of sliced at FP16 3x3 (twelfth
// session): an A/B override only.
enum class TmaTileOrder { sliced, contiguous, strided, interleaved };
const char* tma_tile_order_name(TmaTileOrder order);
struct TmaCcConfig {
  int lane_bytes = 16;  // channel bytes per thread: 16 (128-thread blocks) or 8 (256 threads, half the registers)
  TmaTileOrder order = TmaTileOrder::sliced;
  int rows_per_thread = 1;  // output rows per thread: 1, or 2 with 8-byte lanes (128 threads, FH + 1 input rows)
  int tile_cols = 8;        // output columns per tile: 8, or 16 (twice the threads; one 18x18 window at 3x3)
  int stages = 3;           // window buffers per block: the tile computed and stages - 1 prefetched (2-4)
};
// The shapes where the dispatchers default to it, as measured on the H200 (docs/perf/dwconv-fp16-h200.md, eighth
// session): FP16 3x3 and 5x5, FP32 5x5 (FP32 3x3 keeps the row-sliding kernel, which was faster).
bool tma_cc_default_for(const ConvGeometry& g, bool f16);
// Measured lanes (FP16: 8 bytes, one row per thread up to FW 3 and two above; FP32: 8 bytes from FW 5, 16 below,
// one row), 16-column tiles at FP16 FW 3 (8 elsewhere), two stages with two rows per thread (three elsewhere) and
// the sliced tile order.
// CNN_DWCONV_TMA_LANE = auto | 16 | 8, CNN_DWCONV_TMA_TILES = auto | sliced | contiguous | strided | interleaved,
// CNN_DWCONV_TMA_ROWS = auto | 1 | 2, CNN_DWCONV_TMA_COLS = auto | 8 | 16 and CNN_DWCONV_TMA_STAGES = auto | 2 | 3 | 4
// override them for A/B runs (two rows with 16-byte lanes, or a window ring over the shared memory, is refused at
// launch).
TmaCcConfig tma_cc_config(const ConvGeometry& g, bool f16);
// Whether cfg's window ring fits a block's shared memory for g (the supports() checks hold for 16x8 tiles in three
// stages).
bool tma_cc_config_fits(const ConvGeometry& g, const TmaCcConfig& cfg, bool f16);
bool tma_cc_f16_supports(const ConvGeometry& g);
bool tma_cc_f32_supports(const ConvGeometry& g);
// The dispatchers' check of a forced CNN_DWCONV_F16_PATH / CNN_DWCONV_F32_PATH = tma: a one-line error naming the
// variable where the kernel cannot run the shape.
void tma_cc_check_forced(const ConvGeometry& g, bool f16);
std::string tma_cc_f16_describe(const ConvGeometry& g, const TmaCcConfig& cfg);
std::string tma_cc_f32_describe(const ConvGeometry& g, const TmaCcConfig& cfg);
void launch_dwconv_tma_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, const TmaCcConfig& cfg, cudaStream_t stream);
void launch_dwconv_tma_cc_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              const TmaCcConfig& cfg, cudaStream_t stream);

// Direct kernels (FP32 and FP16) launch one thread per destination element group, up to this many blocks; a
// grid-stride loop covers the rest.
constexpr int64_t kDirectMaxBlocks = int64_t(1) << 20;

// Direct kernels: any stride, any C, any alignment. Forward (also stride-1 backward-data via flip) and the
// strided backward-data gather.
void launch_dwconv_direct_forward(const float* src, const float* w, const float* bias, float* dst,
                                  const ConvGeometry& g, bool vec4, cudaStream_t stream);
void launch_dwconv_direct_backward_data(const float* dy, const float* w, float* dx, const DwconvParams& p, bool vec4,
                                        cudaStream_t stream);

}  // namespace cnn::dwconv
