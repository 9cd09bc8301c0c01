// Shared helpers of the FP16 depthwise tests: FP16-rounded U(-1,1) data, FP64 references (and the host emulation of
// hybrid accumulation), per-element error bounds with MARE, and cuDNN's FP16 depthwise conv as a baseline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv::f16test {

struct Case {
  int n, h, w, c, fh, fw, sh, sw, pt, pb, pl, pr;
  DwconvParams params() const;
};

// Inputs rounded to FP16 (the references see exactly these values).
struct HalfData {
  std::vector<Half> x, w, bias, dy;
};
HalfData make_data(const DwconvParams& p, uint64_t seed);

// FP64 results on the FP16 values, the same sums over |terms| (magnitudes for the error bounds), and the host
// emulation of hybrid-accumulation backward-filter.
struct References {
  std::vector<double> y, y_mag, dx, dx_mag, dw, dw_mag, dw_ha_emulated;
  std::vector<double> y_no_bias;  // forward without bias (the cuDNN comparison)
};
References references(const DwconvParams& p, const HalfData& d);

// Allowed |got - ref| per element: rel * |ref| + mag_factor * mag + abs.
struct Bound {
  double rel = 0, mag_factor = 0, abs = 0;
};
// FP16 output of an FP32 sum of k exact FP16 products: rounding of the output (2^-11 relative, 2^-25 absolute in
// the subnormal range) on top of the FP32 sum's error, taken as 4k ulps of the magnitude (2x Higham's bound, since
// tensor cores may truncate instead of rounding when they add).
Bound fp16_output_bound(double k_terms);
// FP32 output of k FP32 additions: 2k ulps (truncation-safe form of Higham's bound).
Bound fp32_output_bound(double k_terms);
// Hybrid accumulation vs FP64: each FP16 step errs by at most 2^-11 of its partial, which is at most the magnitude
// of the run; runs have <= kBfcHaRun steps; subnormal partials err by at most 2^-25 per step.
Bound ha_bound(double l_terms);

struct ErrorStats {
  size_t bad = 0, first_bad = 0, count = 0;
  double expected = 0, got = 0;  // at first_bad
  double max_abs = 0, max_rel = 0;
  double mare = 0;  // mean(|got - ref| / max(|ref|, eps)), eps = 1e-3 * mean |ref| (docs/dwconv-fp16.md)
};
double mare_of(const std::vector<double>& got, const std::vector<double>& ref);
ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                   const Bound& b);
void expect_ok(const ErrorStats& s, const std::string& what);

// cuDNN's FP16 depthwise conv on the same inputs: the best MARE over FP32 and FP16 compute types, -1 where no
// cuDNN algorithm runs (or padding is asymmetric, which cuDNN's descriptor cannot express).
struct CudnnMare {
  double fwd = -1, bdc = -1, bfc = -1;
};
CudnnMare cudnn_mare(const DwconvParams& p, const HalfData& d, const References& ref);

}  // namespace cnn::dwconv::f16test
