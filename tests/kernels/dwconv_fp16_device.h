// Device-side helpers of the FP16 depthwise GPU tests (dwconv_fp16_cuda_test.cpp, dwconv_fp16_bfc_cuda_test.cpp): the
// device buffer (tests/support/device_array.h), FP16 results widened for the comparisons, 'same'-padded cases and the
// MARE bound the kernels are held to.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "tests/kernels/dwconv_fp16_test_util.h"
#include "tests/support/device_array.h"

namespace cnn::dwconv::f16test {

// MARE bound on the awkward shapes: FP16 outputs carry a rounding error of at most 2^-11 relative (mean ~2^-13),
// FP32 accumulation adds far less; 2e-3 leaves room while a dropped or doubled tap (error ~1/sqrt(K) relative, >= 1e-2
// for K <= 2601 taps) fails.
constexpr double kMareBound = 2e-3;

using test::DeviceArray;

inline std::vector<double> widen(const std::vector<Half>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = double(float(v[i]));
  return out;
}

// Stride 1, 'same' padding (the extra row / column of an even filter at the bottom / right).
inline Case same(int n, int h, int w, int c, int fh, int fw) {
  return {n, h, w, c, fh, fw, 1, 1, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2};
}

}  // namespace cnn::dwconv::f16test
