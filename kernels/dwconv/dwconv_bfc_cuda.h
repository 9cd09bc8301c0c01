// Internal: the backward-filter dispatcher's path description, used by dwconv_path_name (dwconv_cuda.h), and the
// overridable entry that tests and benchmarks use to run one specific BFC path (tile, Z split, generic kernel).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_bfc_plan.h"

namespace cnn::dwconv {
std::string bfc_path_name(const DwconvParams& p);
std::string bfc_path_name(const DwconvParams& p, const BfcForce& force);

// dwconv_backward_filter_cuda with the planner's choices overridden by `force` (same contract otherwise).
void dwconv_backward_filter_cuda_forced(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                        const BfcForce& force, cudaStream_t stream);

// The sliding-tile backward-filter kernel (dwconv_bfc_tiled.cu) for FP16 data (dwconv_f16_internal.h) and FP32 data
// (here): stride 1, C % 4 == 0; FP32 x and dy 16-byte aligned (null counts as aligned, for path names). Thread = 4
// channels x a tile of filter rows x <= 7 filter columns, sliding along dY rows; one global atomic per (tap,
// channel) per block. Plans are cached per (shape, mode, force, device).
struct BfcTiledForce {
  int z = 0;      // > 0: this many accumulation chunks of block steps (clamped to the number of steps)
  int strip = 0;  // > 0: dY column strips this wide (clamped to OW; ha: a multiple of kBfcHaRun unless >= OW)
};
bool bfc_tiled_f32_supports(const DwconvParams& p, const void* x, const void* dy);
void launch_dwconv_bfc_tiled_f32(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                 const BfcTiledForce& force, cudaStream_t stream);
std::string dwconv_bfc_tiled_f32_path_name(const DwconvParams& p, const BfcTiledForce& force);
}  // namespace cnn::dwconv
