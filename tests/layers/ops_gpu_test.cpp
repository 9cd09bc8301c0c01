// Every op on cuda:0 against the CPU backend, forward and all input gradients, in f32 and f16 (GPU machine).
// Tolerances: f32 elementwise ops agree to rounding (1e-6); reductions and GEMMs differ only by summation order
// in FP32 (K or rows <= 1000, |values| <= 1: well below 1e-4). f16 outputs carry one f16 rounding (2^-11 relative)
// per stored tensor, at most two on a gradient path, so 2e-3 relative plus an absolute term for values near zero.
#include <gtest/gtest.h>

#include <cmath>

#include "layers/functional.h"
#include "tests/support/gpu_compare.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using V = std::vector<Tensor>;

Tensor rand(const Shape& s, uint64_t seed, bool grad = true, double lo = -1, double hi = 1) {
  Tensor x = Tensor::empty(s, DType::f32);
  x.uniform_(seed, 0, lo, hi);
  if (grad) x.set_requires_grad(true);
  return x;
}

test::GpuCompareOptions opts(DType t, double f32_tol, double f16_atol, double f16_rtol = 2e-3) {
  return test::gpu_compare_options(t, f32_tol, f16_atol, f16_rtol);
}

class OpsGpu : public ::testing::TestWithParam<DType> {};

TEST_P(OpsGpu, AddMulScaleBroadcast) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  const auto o = opts(t, 1e-6, 2e-3);
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::add(tp, in[0], in[1]); },
                                    {rand({17, 34, 72}, 1), rand({72}, 2)}, opts(t, 1e-4, 2e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {rand({17, 72}, 3), rand({72}, 4)}, opts(t, 1e-5, 1e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {rand({5, 33}, 5), rand({5, 33}, 6)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {rand({5, 33}, 7), rand({}, 8)}, opts(t, 1e-4, 2e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::scale(tp, in[0], -0.75); },
                                    {rand({1001}, 9)}, o));
}

TEST_P(OpsGpu, Reductions) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // The full sum of 30k values of |x| <= 1: FP32 order differences ~1e-4 absolute; f16 output of a sum ~ +-100.
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::sum(tp, in[0]); },
                                    {rand({3, 97, 101}, 1)}, opts(t, 1e-4, 0.1)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mean(tp, in[0]); },
                                    {rand({1, 1, 7}, 2)}, opts(t, 1e-6, 2e-3)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::sum_except_last(tp, in[0]); },
                                    {rand({2, 17, 34, 72}, 3)}, opts(t, 1e-4, 5e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mean_except_last(tp, in[0]); },
                                    {rand({1000, 3}, 4)}, opts(t, 1e-5, 2e-3)));
}

TEST_P(OpsGpu, MatmulLinear) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // K <= 72, |x| <= 1: outputs up to ~5; f16 storage of outputs and grads: 2e-3 relative, 1e-2 absolute.
  const auto o = opts(t, 1e-4, 1e-2);
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::matmul(tp, in[0], in[1]); },
                                    {rand({37, 72}, 1), rand({72, 19}, 2)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::linear(tp, in[0], in[1], in[2]); },
                                    {rand({33, 64}, 3), rand({10, 64}, 4), rand({10}, 5)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::linear(tp, in[0], in[1], in[2]); },
                                    {rand({1, 5}, 6), rand({3, 5}, 7), Tensor()}, o));
}

TEST_P(OpsGpu, Relu) {
  CNN_REQUIRE_GPU();
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::relu(tp, in[0]); }, {rand({4099}, 1)},
                                    opts(GetParam(), 0.0, 0.0, 0.0)));  // a selection: exact
}

TEST_P(OpsGpu, SoftmaxCrossEntropy) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  const std::vector<int64_t> y = {3, 0, 9, 9, 1, 5, 2, 7, 8, 4, 6};
  const Tensor labels = Tensor::from_vector(y, {int64_t(y.size())});
  // FP32 math on both sides (expf vs std::exp: a few ulps); f16 gradients carry one f16 rounding.
  for (double eps : {0.0, 0.1}) {
    EXPECT_TRUE(test::compare_gpu_cpu(
        [eps](Tape* tp, const V& in) { return ops::softmax_cross_entropy(tp, in[0], in[1], eps); },
        {rand({11, 10}, 2, true, -4, 4), labels}, opts(t, 1e-5, 1e-4, 2e-3)))
        << "label smoothing " << eps;
  }
  // Many classes (one warp loops over 1000 columns).
  std::vector<int64_t> many(64);
  for (size_t i = 0; i < many.size(); ++i) many[i] = int64_t(i * 37 % 1000);
  EXPECT_TRUE(test::compare_gpu_cpu(
      [](Tape* tp, const V& in) { return ops::softmax_cross_entropy(tp, in[0], in[1], 0.1); },
      {rand({64, 1000}, 3, true, -5, 5), Tensor::from_vector(many, {64})}, opts(t, 1e-5, 1e-4, 2e-3)));
}

TEST_P(OpsGpu, MlpComposition) {
  CNN_REQUIRE_GPU();
  const Tensor labels = Tensor::from_vector<int64_t>({1, 0, 2, 1, 2, 0, 0}, {7});
  EXPECT_TRUE(test::compare_gpu_cpu(
      [labels](Tape* tp, const V& in) {
        const Tensor l = labels.to(in[0].device());
        const Tensor h = ops::relu(tp, ops::linear(tp, in[0], in[1], in[2]));
        return ops::softmax_cross_entropy(tp, ops::linear(tp, h, in[3], in[4]), l, 0.05);
      },
      {rand({7, 40}, 1), rand({24, 40}, 2), rand({24}, 3), rand({3, 24}, 4), rand({3}, 5)},
      opts(GetParam(), 1e-4, 5e-3, 1e-2)));  // f16: several stored roundings along the chain
}

TEST(OpsGpuErrors, OutOfRangeLabelGivesNanLossOnGpu) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Tensor logits = Tensor::zeros({2, 3}, DType::f32, gpu);
  Tensor labels = Tensor::from_vector<int64_t>({0, 7}, {2}, gpu);
  EXPECT_TRUE(std::isnan(ops::softmax_cross_entropy(nullptr, logits, labels).item()));
  EXPECT_THROW(ops::relu(nullptr, Tensor::zeros({3}, DType::f64, gpu)), Error);  // f64 is a CPU-only dtype
  EXPECT_THROW(ops::add(nullptr, logits, Tensor::zeros({2, 3}, DType::f32)), Error);  // device mismatch
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OpsGpu, ::testing::Values(DType::f32, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace cnn
