// Internal: the generic FP32 backward-filter kernel (any stride, padding, C, alignment): one block per
// (tap, 32-channel slice, accumulation chunk). Used by dwconv_bfc.cu when forced; slow but simple and exact.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

// Resident blocks per SM of the generic kernel on the current device.
int bfc_generic_blocks_per_sm();

// Accumulates dW += sum over z chunks of N*OH*OW into dw (already zeroed) with FP32 atomics.
void launch_bfc_generic(const float* x, const float* dy, float* dw, const DwconvParams& p, int z, cudaStream_t stream);

}  // namespace cnn::dwconv
