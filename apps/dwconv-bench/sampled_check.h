// Accuracy of one benchmark point: a random sample of output elements recomputed on the host in FP64 straight from
// the dwconv.h formulas, max relative error |got - ref| / max(|ref|, 1e-3 * mean|ref| over the sample).
// Forward and backward-data sample 2048 positions (a quarter of them in the padded border band); backward-filter
// samples 64 dW elements, each a full N*OH*OW reduction. Layouts as in dwconv.h: X, dX (N,IH,IW,C),
// Y, dY (N,OH,OW,C), W, dW (FH,FW,C).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::bench {

struct CheckResult {
  double max_rel = 0;
  double max_abs = 0;
  double mare = 0;  // mean relative error over the samples, same floored denominator
  int samples = 0;
  std::string worst;  // "index (n,h,w,c) expected .. got .." of the largest relative error
};

// Largest max_rel a correct FP32 kernel may show (see sampled_check.cpp for the estimate).
double check_tolerance();
// Same for a data type / op / FP16 backward-filter accumulation and filter of `taps` = FH*FW taps (FP32:
// check_tolerance(); FP16 forward/backward-data add a tensor-core accumulation term per tap).
double check_tolerance(DType dtype, dwconv::DwconvOp op, dwconv::BfcAccum accum, int taps);

CheckResult check_forward(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& y,
                          const dwconv::DwconvParams& p, uint64_t seed);
CheckResult check_backward_data(const std::vector<float>& dy, const std::vector<float>& w, const std::vector<float>& dx,
                                const dwconv::DwconvParams& p, uint64_t seed);
CheckResult check_backward_filter(const std::vector<float>& x, const std::vector<float>& dy,
                                  const std::vector<float>& dw, const dwconv::DwconvParams& p, uint64_t seed);

}  // namespace cnn::bench
