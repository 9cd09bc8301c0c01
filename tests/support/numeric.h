// Tensor comparison with diagnostics for tests: |got - expected| <= atol + rtol * |expected| element-wise; on
// failure the message names the first bad index, expected, got, and the max abs and rel errors.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/tensor.h"

namespace cnn::test {

// Compares any dtypes/devices (both converted to f64 on the host). `what` prefixes the message.
::testing::AssertionResult all_close(const Tensor& expected, const Tensor& got, double atol, double rtol,
                                     const std::string& what = "");

// Bitwise equality of two tensors of one dtype (any devices); reports the first differing index.
::testing::AssertionResult bitwise_equal(const Tensor& expected, const Tensor& got, const std::string& what = "");

// True when a CUDA device can be used by this binary.
bool has_cuda_device();

// The message of the cnn::Error that f throws, or "<no error>" when it throws none.
std::string error_of(const std::function<void()>& f);

}  // namespace cnn::test

// GTEST_SKIP with a message when no CUDA device is present (GPU suites; the lead runs them on the GPU machine).
#define CNN_REQUIRE_GPU()                                                                             \
  do {                                                                                                \
    if (!::cnn::test::has_cuda_device())                                                              \
      GTEST_SKIP() << "no CUDA device available (built with CUDA: " << ::cnn::cuda_built() << ")"; \
  } while (0)
