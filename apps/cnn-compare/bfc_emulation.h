// The FP16 backward-filter pass of Flash-DWC-T emulated on the CPU, for FP32 runs that study its accumulation modes
// (cnn-compare on a machine without a GPU). Arrays are FP32 holding FP16 values; layouts as kernels/dwconv/dwconv.h.
#pragma once

#include "core/tensor.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::compare {

// dW (FH, FW, C) of x (N, IH, IW, C) and dY (N, OH, OW, C) with hybrid accumulation: bit-identical to
// dwconv_backward_filter_reference_f16(..., BfcAccum::ha) (same per-(tap, channel) order and FP16 steps), with the
// channel loop innermost so it runs at training speed.
void bfc_ha_emulated(const float* x, const float* dy, float* dw, const dwconv::DwconvParams& p);

// A CPU f32 tensor rounded to the nearest FP16 values (ties to even; beyond 65504 to +-inf), kept in f32.
Tensor round_to_f16(const Tensor& t);

// The depthwise weight gradient the FP16 kernels would produce from FP16-rounded x and dY, FP32 result:
// accum fp32 -> the FP32 CPU backend on the rounded values, ha -> bfc_ha_emulated. x, dy: CPU f32.
Tensor bfc_f16_emulated(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum accum);

}  // namespace cnn::compare
