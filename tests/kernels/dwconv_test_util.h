// Shared helpers of the depthwise-conv tests (CPU and GPU): seeded uniform fills, precision conversion, an
// element-wise comparison that reports index / expected / got / max abs and rel error, and the awkward-shape list.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/dwconv/dwconv.h"

namespace cnn::test {

// Uniform values in [lo, hi) from std::mt19937_64 seeded with `seed`; the same seed gives the same vector.
template <class T>
std::vector<T> random_uniform(size_t count, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(count);
  for (auto& e : v) e = T(dist(rng));
  return v;
}

template <class To, class From>
std::vector<To> convert(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

template <class T>
std::vector<T> abs_values(const std::vector<T>& v) {
  std::vector<T> a(v.size());
  for (size_t k = 0; k < v.size(); ++k) a[k] = std::abs(v[k]);
  return a;
}

// Passes when |got[k] - expected[k]| <= tol(k) for every k (NaN fails). On failure reports `what` (put the seed
// and shape there), the failure count, the first failing index with expected/got/tolerance, and the max abs and
// max rel error over all elements.
template <class T>
::testing::AssertionResult all_close(const std::vector<T>& got, const std::vector<double>& expected,
                                     const std::function<double(size_t)>& tol, const std::string& what) {
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << what << ": size " << got.size() << " != expected " << expected.size();
  size_t fails = 0, first = 0;
  double max_abs = 0.0, max_rel = 0.0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double g = double(got[k]), e = expected[k], d = std::abs(g - e);
    const bool ok = d <= tol(k);  // false for NaN
    if (!ok && fails++ == 0) first = k;
    if (std::isnan(d) || d > max_abs) max_abs = std::isnan(d) ? INFINITY : d;
    if (e != 0.0) max_rel = std::max(max_rel, d / std::abs(e));
  }
  if (fails == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << fails << " of " << got.size() << " elements off; first at index " << first
     << ": expected " << expected[first] << ", got " << double(got[first]) << ", tolerance " << tol(first)
     << "; max abs err " << max_abs << ", max rel err " << max_rel;
  return ::testing::AssertionFailure() << os.str();
}

// Same with tolerance atol + rtol * |expected|.
template <class T>
::testing::AssertionResult all_close(const std::vector<T>& got, const std::vector<double>& expected, double atol,
                                     double rtol, const std::string& what) {
  return all_close<T>(got, expected, [&](size_t k) { return atol + rtol * std::abs(expected[k]); }, what);
}

inline dwconv::DwconvParams dwconv_shape(int n, int ih, int iw, int c, int fh, int fw, int sh, int sw, int pt,
                                         int pb, int pl, int pr) {
  dwconv::DwconvParams p;
  p.n = n, p.ih = ih, p.iw = iw, p.c = c, p.fh = fh, p.fw = fw, p.stride_h = sh, p.stride_w = sw;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  return p;
}

// Awkward depthwise-conv shapes every backend must pass: N in {1, 2}, C in {1, 3, 8, 72, 130} (tails of 8, 16 and
// 32), H x W 17 x 34 and tiny 1 x 1 / 2 x 2, filters 1x1 .. 51x51, strips 51x5 / 5x51, an even 4x4, strides 2 and
// 2x1, asymmetric padding including padding > filter - 1 (whole output rows/columns read only zeros).
inline std::vector<dwconv::DwconvParams> dwconv_awkward_shapes() {
  using dwconv::DwconvParams;
  std::vector<DwconvParams> s;
  auto add = [&](int n, int ih, int iw, int c, int fh, int fw, int sh, int sw, int pt, int pb, int pl, int pr) {
    s.push_back(dwconv_shape(n, ih, iw, c, fh, fw, sh, sw, pt, pb, pl, pr));
  };
  add(1, 17, 34, 72, 1, 1, 1, 1, 0, 0, 0, 0);
  add(2, 17, 34, 3, 3, 3, 1, 1, 1, 1, 1, 1);
  add(1, 17, 34, 130, 3, 3, 1, 1, 1, 1, 1, 1);
  add(2, 17, 34, 8, 3, 3, 2, 2, 1, 1, 1, 1);
  add(1, 17, 34, 72, 7, 7, 1, 1, 3, 3, 3, 3);
  add(2, 17, 34, 1, 7, 7, 2, 1, 3, 2, 0, 6);
  add(1, 17, 34, 130, 13, 13, 1, 1, 6, 6, 6, 6);
  add(1, 17, 34, 72, 13, 13, 2, 2, 6, 6, 6, 6);
  add(1, 17, 34, 72, 31, 31, 1, 1, 15, 15, 15, 15);
  add(2, 17, 34, 8, 51, 51, 1, 1, 25, 25, 25, 25);
  add(1, 17, 34, 72, 51, 5, 1, 1, 25, 25, 2, 2);
  add(1, 17, 34, 72, 5, 51, 1, 1, 2, 2, 25, 25);
  add(1, 17, 34, 130, 4, 4, 1, 1, 1, 2, 2, 1);
  add(2, 17, 34, 72, 4, 4, 2, 2, 2, 1, 1, 2);
  add(1, 17, 34, 72, 3, 3, 2, 1, 0, 1, 1, 0);
  add(1, 17, 34, 8, 5, 3, 1, 2, 6, 0, 4, 5);   // pad_top 6 > FH-1, pad_right 5 > FW-1
  add(2, 17, 34, 3, 3, 5, 2, 2, 0, 4, 7, 1);   // pad_bottom and pad_left > F-1 with stride 2
  add(1, 1, 1, 72, 1, 1, 1, 1, 0, 0, 0, 0);
  add(2, 1, 1, 130, 3, 3, 1, 1, 1, 1, 1, 1);
  add(1, 2, 2, 8, 3, 3, 2, 2, 1, 1, 1, 1);
  add(2, 2, 2, 3, 7, 7, 1, 1, 3, 3, 3, 3);
  add(1, 1, 34, 72, 3, 7, 1, 2, 1, 1, 3, 3);
  add(1, 17, 2, 130, 13, 3, 2, 1, 6, 6, 1, 2);
  return s;
}

// Stride-1 shapes of the small-filter backward-filter kernel (bfc_small), FP32 and FP16 GPU tests: C in {1, 3, 8, 9,
// 75, 124, 249, 499, 998}, maps 1x1 to 32x32 (and 1 x 34, 17 x 1), N 1-5, filters 1x1, 3x3, 3x5, 5x3, 5x5, 7x7 and the
// even 2x2, 4x6 (run on the next odd tile), padding 0, 1, 2, asymmetric and beyond the filter's reach.
inline std::vector<dwconv::DwconvParams> dwconv_bfc_small_shapes() {
  std::vector<dwconv::DwconvParams> s;
  auto add = [&](int n, int ih, int iw, int c, int fh, int fw, int pt, int pb, int pl, int pr) {
    s.push_back(dwconv_shape(n, ih, iw, c, fh, fw, 1, 1, pt, pb, pl, pr));
  };
  add(1, 1, 1, 1, 1, 1, 0, 0, 0, 0);      // one pixel, one channel
  add(2, 3, 5, 3, 3, 3, 1, 1, 1, 1);      // 3x5 map, C = 3
  add(3, 8, 8, 8, 5, 5, 2, 2, 2, 2);      // C = 8: a quarter of the lanes
  add(1, 13, 17, 75, 3, 5, 1, 1, 2, 2);   // odd C, 3x5
  add(2, 13, 17, 75, 5, 3, 2, 2, 1, 1);   // 5x3
  add(5, 8, 8, 124, 5, 5, 2, 2, 2, 2);    // N = 5, C % 8 == 4
  add(2, 32, 32, 249, 5, 5, 2, 2, 2, 2);  // SLaK's 32x32x249
  add(1, 16, 16, 499, 5, 5, 2, 2, 2, 2);  // 16x16x499
  add(2, 8, 8, 998, 5, 5, 2, 2, 2, 2);    // 8x8x998: lanes of two channels
  add(4, 3, 5, 998, 1, 1, 0, 0, 0, 0);    // 1x1
  add(1, 32, 32, 124, 3, 3, 1, 1, 1, 1);  // 3x3 on 32x32
  add(2, 13, 17, 249, 7, 7, 3, 3, 3, 3);  // 7x7: two filter row groups
  add(1, 8, 8, 998, 7, 7, 3, 3, 3, 3);    // 7x7 on pairs of channels
  add(2, 13, 17, 75, 5, 5, 0, 0, 0, 0);   // no padding: dY smaller than X
  add(1, 13, 17, 124, 5, 5, 2, 1, 0, 2);  // asymmetric padding
  add(3, 8, 8, 3, 5, 5, 5, 1, 0, 6);      // padding past the filter's reach: dW rows and columns of zeros
  add(1, 1, 1, 8, 5, 5, 2, 2, 2, 2);      // 1x1 map, 5x5 filter
  add(2, 13, 17, 9, 4, 6, 1, 2, 3, 2);    // even filter: a dropped row and column
  add(2, 8, 8, 75, 2, 2, 1, 0, 0, 1);     // 2x2 on the 3-column tile
  add(1, 5, 3, 75, 5, 3, 0, 0, 0, 0);     // filter = map: OH = OW = 1
  add(2, 1, 34, 124, 3, 5, 1, 1, 2, 2);   // H = 1
  add(1, 17, 1, 249, 5, 3, 2, 2, 1, 1);   // W = 1
  return s;
}

}  // namespace cnn::test
