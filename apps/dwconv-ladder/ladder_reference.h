// The FP64 oracle of dwconv-ladder: dwconv_forward_reference on image 0 of a problem (the full batch in FP64 would
// take minutes on the host; every rung computes every image the same way), with per-element tolerances for FP32
// and FP16 outputs (ladder_report.h, forward_tolerance).
#pragma once

#include <vector>

#include "kernels/dwconv/dwconv.h"

namespace cnn::ladder {

struct ImageZeroReference {
  std::vector<double> y;        // (1, OH, OW, C)
  std::vector<double> tol_f32;  // FP32 output
  std::vector<double> tol_f16;  // FP16 output (adds half an FP16 ulp)
};

// x: at least image 0 of X (IH * IW * C values); w: (FH, FW, C). Both as the rung sees them (FP16-rounded for FP16).
ImageZeroReference image_zero_reference(const std::vector<float>& x, const std::vector<float>& w,
                                        const dwconv::DwconvParams& p);

}  // namespace cnn::ladder
