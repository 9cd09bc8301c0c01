// Global gradient norm and clipping, gradient scaling for accumulation and zero_grad on the CPU.
#include "optim/grad_clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "tests/optim/optim_test_util.h"

namespace cnn::optim {
namespace {

using test::make_param;
using test::set_grad;
using test::values;

std::vector<ParamRef> three_params() {
  std::vector<ParamRef> p{make_param("a", {0, 0}, true), make_param("b", {0}, false), make_param("c", {0}, true)};
  set_grad(p[0], {3.0f, 4.0f});
  set_grad(p[1], {12.0f});  // norm of all: sqrt(9 + 16 + 144) = 13; "c" has no gradient
  p[2].param.reset_grad();
  return p;
}

TEST(GradClip, NormAndCoefficientWithoutModifyingGradients) {
  const std::vector<ParamRef> p = three_params();
  const GradNorm n = grad_norm(p, 6.5);
  EXPECT_EQ(n.norm.item(), 13.0);                 // exact: sqrt of an exactly summed 169
  EXPECT_NEAR(n.coef.item(), 0.499999962, 3e-8);  // 6.5 / (13 + 1e-6) in float: within one ulp (3e-8) at 0.5
  EXPECT_EQ(values(p[0].param.grad()), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(grad_norm(p, 100.0).coef.item(), 1.0);  // below max_norm: no clipping
}

TEST(GradClip, ClipScalesEveryGradient) {
  const std::vector<ParamRef> p = three_params();
  const GradNorm n = clip_grad_norm_(p, 6.5);
  const float c = float(n.coef.item());
  EXPECT_EQ(values(p[0].param.grad()), (std::vector<float>{3.0f * c, 4.0f * c}));
  EXPECT_EQ(values(p[1].param.grad()), (std::vector<float>{12.0f * c}));
  EXPECT_NEAR(grad_norm(p, 1.0).norm.item(), 6.5, 1e-5);  // clipped norm = max_norm up to the 1e-6 guard
}

TEST(GradClip, NonFiniteGradientGivesNonFiniteNorm) {
  std::vector<ParamRef> p = three_params();
  set_grad(p[1], {std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(std::isinf(grad_norm(p, 1.0).norm.item()));
  EXPECT_THROW(grad_norm(p, 0.0), Error);
}

TEST(GradAccumulation, ScaleGradsAndZeroGrad) {
  const std::vector<ParamRef> p = three_params();
  scale_grads(p, 0.25);
  EXPECT_EQ(values(p[0].param.grad()), (std::vector<float>{0.75f, 1.0f}));
  EXPECT_EQ(values(p[1].param.grad()), (std::vector<float>{3.0f}));
  zero_grad(p);
  EXPECT_EQ(values(p[0].param.grad()), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_FALSE(p[2].param.grad().defined());  // zero_grad keeps absent gradients absent
}

}  // namespace
}  // namespace cnn::optim
