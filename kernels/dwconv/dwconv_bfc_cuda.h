// Internal: the backward-filter dispatcher's path description, used by dwconv_path_name (dwconv_cuda.h), and the
// overridable entry that tests and benchmarks use to run one specific BFC path (tile, Z split, generic kernel).
#pragma once

#include <cuda_fp16.h>
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

// The same tile kernel and planner on FP16 X and dY, FP32 dW, any stride and padding: accumulation fp32 (values
// widened as read from shared memory, FP32 FMAs) or ha (channel pairs, HFMA2 partials over runs of kBfcHaRun dY
// columns merged into FP32 sums, as dwconv_backward_filter_reference_f16 emulates; tiles of <= kBfcHaMaxTaps taps).
// Needs C % 8 == 0 and 16-byte aligned x and dy (bfc_tile_f16_supports; a null pointer counts as aligned). Zeroes dw
// first, like the FP32 entry. Without `force`: the planner's choices (CNN_DWCONV_BFC_TILE honoured, as in FP32).
bool bfc_tile_f16_supports(const DwconvParams& p, const void* x, const void* dy);
void dwconv_backward_filter_cuda_tile_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum, const BfcForce& force, cudaStream_t stream);
void dwconv_backward_filter_cuda_tile_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum, cudaStream_t stream);
std::string bfc_tile_f16_path_name(const DwconvParams& p, BfcAccum accum);
}  // namespace cnn::dwconv
