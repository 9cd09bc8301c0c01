// Gradient checker for any differentiable op: runs it in double on the CPU, seeds backward with a fixed random R
// (so L = sum(y * R)), and compares every input gradient with central differences
// dL/dx_j ~ (L(x + h e_j) - L(x - h e_j)) / (2h), accepting |analytic - numeric| <= atol + rtol * |numeric|.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace cnn::test {

// Builds the op's output from its inputs, recording on `tape` (which may be null).
using OpFn = std::function<Tensor(Tape* tape, const std::vector<Tensor>& inputs)>;

struct GradCheckOptions {
  double step = 1e-6;  // h: truncation error O(h^2 f''') ~ 1e-12, rounding ~ 1e-16 |L| / h ~ 1e-10 |L|
  double atol = 1e-7;  // covers both error terms for |L| up to ~100
  double rtol = 1e-6;
  uint64_t seed = 20240601;  // for R
};

// inputs: f64 CPU tensors; each with requires_grad() is checked (others, e.g. i64 labels, pass through).
::testing::AssertionResult gradcheck(const OpFn& op, const std::vector<Tensor>& inputs,
                                     const GradCheckOptions& options = {});

}  // namespace cnn::test
