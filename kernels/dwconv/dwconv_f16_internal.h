// Internal to kernels/dwconv: launchers of the FP16 depthwise kernels (FP16 data, FP32 accumulation) and the
// dispatcher's per-shape choices, exposed so tests can run every path. Geometry as in dwconv_cuda_internal.h.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_cuda_internal.h"

namespace cnn::dwconv {

// ---- Tensor-core Flash-DWC-T (dwconv_f16_tc.cu): stride 1, C % 8 == 0, 16-byte aligned pointers, any FH x FW.
// theta = 4, 2 or 1 (kernels T4, T2, T1; block tile (16/theta) x (8*theta) outputs x 64 channels).
int tc_theta_for(int out_w);  // largest theta with OW >= 8*theta (1 for OW < 8)
void launch_dwconv_tc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int theta, cudaStream_t stream);

// ---- Tensor-core kernel with register reuse of input blocks across filter fragments (dwconv_f16_tc_ring.cu):
// stride 1, C % 8 == 0, 16-byte aligned pointers, FW <= kTcRingMaxFw. Block tile 16 x 8q outputs x 16 channels.
inline constexpr int kTcRingMaxFw = 64;
int tc_ring_q_for(int out_w);  // output blocks of 8 columns per warp: 4, 2 or 1
// channels_first: the blocks of one tile position (its 16-channel blocks) are consecutive in the grid (the default);
// false puts column tiles fastest (the order before the eleventh session, kept for A/B runs).
void launch_dwconv_tc_ring_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                               const ConvGeometry& g, int q, bool channels_first, cudaStream_t stream);
// The same block and ring with channel pairs in the MMA's k dimension (dwconv_f16_tc_ring_pairs.cu): no byte
// permutes or band masks; nd = (FW + 2) / 4 + 1 block offsets per output group of 4 columns. Channel blocks first.
int tc_ring_pairs_nd(int fw);
void launch_dwconv_tc_ring_pairs_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                     const ConvGeometry& g, int q, cudaStream_t stream);

// ---- CUDA-core FP16 kernels (dwconv_f16_direct.cu).
// Register-tiled kernel for narrow filters (FW <= kCcMaxFw): stride 1, C % 8 == 0, 16-byte aligned; 8 outputs x
// 8 channels per thread, half8 loads, FP32 FMAs.
inline constexpr int kCcMaxFw = 5;
// Groups of 8 outputs per output row in one block: 4 (4x32-output tiles) where the output row holds 32, else 2
// (8x16) or 1 (16x8). CNN_DWCONV_F16_CC_GROUPS = auto | 1 | 2 | 4 forces one for A/B runs (any width stays correct:
// outputs past the row are skipped).
int cc_groups_per_row(int out_w);
void launch_dwconv_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          cudaStream_t stream);
// Generic direct kernels: any stride, C, alignment (vec8: C % 8 == 0 and 16-byte aligned pointers).
void launch_dwconv_direct_f16_forward(const __half* src, const __half* w, const __half* bias, __half* dst,
                                      const ConvGeometry& g, bool vec8, cudaStream_t stream);
void launch_dwconv_direct_f16_backward_data(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                                            bool vec8, cudaStream_t stream);

// ---- Backward-filter (dwconv_f16_bfc.cu), the row-warp kernel: any stride, C, alignment; 2 channels per lane
// (half2), FP32 or hybrid accumulation. The dispatcher runs it where the tiled kernel below cannot (stride > 1,
// C % 4 != 0, unaligned pointers).
struct BfcF16Force {
  int tm = 0;  // > 0: every column tile this wide (1..9) instead of the planner's 9s plus one remainder tile
  int z = 0;   // > 0: this many accumulation chunks (clamped to N*OH)
};
void launch_dwconv_bfc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                           const BfcF16Force& force, cudaStream_t stream);
std::string dwconv_bfc_f16_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16Force& force);

// ---- Backward-filter at stride 1, any filter (dwconv_f16_bfc_tiled.cu), FP32 or hybrid accumulation: C % 4 == 0,
// x and dy 8-byte aligned (null counts as aligned, for path names). Thread = 4 channels x a tile of filter rows x
// <= 7 filter columns, sliding along dY rows; one global atomic per (tap, channel) per block. ha follows the
// emulation's runs exactly (strips start at multiples of kBfcHaRun).
struct BfcF16TiledForce {
  int z = 0;      // > 0: this many accumulation chunks of block steps (clamped to the number of steps)
  int strip = 0;  // > 0: dY column strips this wide (clamped to OW; ha: a multiple of kBfcHaRun unless >= OW)
};
bool bfc_f16_tiled_supports(const DwconvParams& p, const void* x, const void* dy);
void launch_dwconv_bfc_f16_tiled(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 const BfcF16TiledForce& force, cudaStream_t stream);
std::string dwconv_bfc_f16_tiled_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16TiledForce& force);

}  // namespace cnn::dwconv
