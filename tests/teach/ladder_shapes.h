// Awkward shapes every teaching rung is checked on (CPU and GPU suites), and the FP64-reference tolerance they use.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kernels/dwconv/dwconv.h"
#include "tests/kernels/dwconv_test_util.h"

namespace cnn::test {

// Stride 1, C % 8 == 0: every rung runs these. Odd and mixed extents, N = 1..3, asymmetric and over-wide padding,
// filters 1x1, 3x3, 7x7, 13x13, 31x31, 51x5 and 5x51; C = 8..72 (a block's channel tail partly empty).
inline std::vector<dwconv::DwconvParams> ladder_stride1_shapes() {
  return {
      dwconv_shape(1, 17, 34, 72, 3, 3, 1, 1, 1, 1, 1, 1),  dwconv_shape(2, 17, 17, 40, 7, 7, 1, 1, 3, 2, 1, 4),
      dwconv_shape(1, 34, 17, 8, 13, 13, 1, 1, 6, 6, 6, 6), dwconv_shape(1, 40, 37, 16, 31, 31, 1, 1, 15, 15, 15, 15),
      dwconv_shape(1, 60, 9, 8, 51, 5, 1, 1, 25, 25, 2, 2), dwconv_shape(1, 9, 60, 24, 5, 51, 1, 1, 2, 2, 25, 25),
      dwconv_shape(3, 5, 7, 16, 1, 1, 1, 1, 0, 0, 0, 0),    dwconv_shape(1, 6, 6, 8, 3, 3, 1, 1, 4, 0, 0, 5),
  };
}

// Strided or with C % 4 != 0: only the rungs without those restrictions (1, 2 and the CPU rungs) run them.
inline std::vector<dwconv::DwconvParams> ladder_general_shapes() {
  return {dwconv_shape(2, 17, 17, 12, 3, 3, 2, 2, 1, 1, 1, 1), dwconv_shape(1, 9, 11, 3, 5, 5, 2, 1, 2, 1, 0, 2),
          dwconv_shape(1, 8, 8, 36, 7, 7, 2, 2, 3, 3, 3, 3)};
}

// |got - ref| <= 2 * taps * 2^-24 * sum|x w| (recursive FP32 summation bound, factor 2 margin) plus, for an FP16
// output, half an FP16 ulp (2^-11 |ref|), plus 1e-30 so exact zeros compare.
inline std::vector<double> ladder_tolerance(const std::vector<double>& abs_ref, const std::vector<double>& ref,
                                            int taps, bool f16_output) {
  std::vector<double> tol(ref.size());
  for (size_t k = 0; k < ref.size(); ++k)
    tol[k] = 2.0 * taps * std::ldexp(abs_ref[k], -24) + (f16_output ? std::ldexp(std::abs(ref[k]), -11) : 0.0) + 1e-30;
  return tol;
}

// FP64 forward of (x, w) and of (|x|, |w|).
inline void ladder_reference(const std::vector<float>& x, const std::vector<float>& w, const dwconv::DwconvParams& p,
                             std::vector<double>& ref, std::vector<double>& abs_ref) {
  std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end());
  ref.assign(size_t(p.y_elems()), 0.0);
  abs_ref.assign(size_t(p.y_elems()), 0.0);
  dwconv::dwconv_forward_reference(xd.data(), wd.data(), nullptr, ref.data(), p);
  for (double& v : xd) v = std::abs(v);
  for (double& v : wd) v = std::abs(v);
  dwconv::dwconv_forward_reference(xd.data(), wd.data(), nullptr, abs_ref.data(), p);
}

}  // namespace cnn::test
