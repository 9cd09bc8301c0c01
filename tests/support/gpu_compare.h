// GPU-vs-CPU check for any op: runs it on the CPU (f32) and on cuda:0 (f32 or f16) with the same inputs and the same
// backward seed, then compares the output and every input gradient. For f16 the CPU inputs are first rounded
// through f16, so both sides see identical values and only the arithmetic differs.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "core/tensor.h"
#include "tests/support/gradcheck.h"

namespace cnn::test {

struct GpuCompareOptions {
  DType gpu_dtype = DType::f32;  // f32 or f16 for floating inputs (integer inputs keep their dtype)
  double atol = 1e-5;
  double rtol = 1e-5;
  bool check_grads = true;
  uint64_t seed = 777;  // for the backward seed R
};

// cpu_inputs: f32 (floating) or integer CPU tensors; floating ones with requires_grad() get gradients compared.
// Call CNN_REQUIRE_GPU() first in the test body.
::testing::AssertionResult compare_gpu_cpu(const OpFn& op, const std::vector<Tensor>& cpu_inputs,
                                           const GpuCompareOptions& options);

// An f32 CPU input with U(lo, hi) elements from the Philox stream `seed`, requiring grad unless told otherwise.
Tensor random_input(const Shape& shape, uint64_t seed, bool requires_grad = true, double lo = -1, double hi = 1);

// Options for an op tested in f32 and f16: f32 with one tolerance, f16 with its own absolute/relative pair.
GpuCompareOptions gpu_compare_options(DType gpu_dtype, double f32_tol, double f16_atol, double f16_rtol = 2e-3);

}  // namespace cnn::test
