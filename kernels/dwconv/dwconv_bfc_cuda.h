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
}  // namespace cnn::dwconv
