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

class OpsGpu : public ::testing::TestWithParam<DType> {};

TEST_P(OpsGpu, AddMulScaleBroadcast) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  const auto o = test::gpu_compare_options(t, 1e-6, 2e-3);
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::add(tp, in[0], in[1]); },
                                    {test::random_input({17, 34, 72}, 1), test::random_input({72}, 2)},
                                    test::gpu_compare_options(t, 1e-4, 2e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {test::random_input({17, 72}, 3), test::random_input({72}, 4)},
                                    test::gpu_compare_options(t, 1e-5, 1e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {test::random_input({5, 33}, 5), test::random_input({5, 33}, 6)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                    {test::random_input({5, 33}, 7), test::random_input({}, 8)},
                                    test::gpu_compare_options(t, 1e-4, 2e-2)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::scale(tp, in[0], -0.75); },
                                    {test::random_input({1001}, 9)}, o));
}

TEST_P(OpsGpu, Reductions) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // The full sum of 30k values of |x| <= 1: FP32 order differences ~1e-4 absolute; f16 output of a sum ~ +-100.
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::sum(tp, in[0]); },
                                    {test::random_input({3, 97, 101}, 1)}, test::gpu_compare_options(t, 1e-4, 0.1)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mean(tp, in[0]); },
                                    {test::random_input({1, 1, 7}, 2)}, test::gpu_compare_options(t, 1e-6, 2e-3)));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::sum_except_last(tp, in[0]); },
                                    {test::random_input({2, 17, 34, 72}, 3)},
                                    test::gpu_compare_options(t, 1e-4, 5e-2)));
  // Each pack width of the column sums (f16: 8 halves at 72, 4 at 124, 2 at 998, 1 at 75; f32: 4, 4, 2, 1) and many
  // row splits with a partial last group (20011 rows: 79 splits of 254 rows): sums of up to 20011 values |x| <= 1 in
  // FP32 blocks of <= 32 rows per thread against the CPU's double sums, ~1e-6 relative apart; f16 rounds each sum once.
  for (const Shape& s : {Shape{3001, 124}, Shape{3, 401, 998}, Shape{20011, 75}})
    EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::sum_except_last(tp, in[0]); },
                                      {test::random_input(s, 5)}, test::gpu_compare_options(t, 1e-4, 5e-2)))
        << shape_str(s);
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mean_except_last(tp, in[0]); },
                                    {test::random_input({1000, 3}, 4)}, test::gpu_compare_options(t, 1e-5, 2e-3)));
}

TEST_P(OpsGpu, MatmulLinear) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // K <= 72, |x| <= 1: outputs up to ~5; f16 storage of outputs and grads: 2e-3 relative, 1e-2 absolute.
  const auto o = test::gpu_compare_options(t, 1e-4, 1e-2);
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::matmul(tp, in[0], in[1]); },
                                    {test::random_input({37, 72}, 1), test::random_input({72, 19}, 2)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu(
      [](Tape* tp, const V& in) { return ops::linear(tp, in[0], in[1], in[2]); },
      {test::random_input({33, 64}, 3), test::random_input({10, 64}, 4), test::random_input({10}, 5)}, o));
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::linear(tp, in[0], in[1], in[2]); },
                                    {test::random_input({1, 5}, 6), test::random_input({3, 5}, 7), Tensor()}, o));
  // K = 75 inputs and N = 1001 outputs (rows not 16-byte aligned in f16) on a GEMM large enough for padded copies: the
  // forward runs on a padded x that the backward keeps for dW, the backward runs both GEMMs on one padded dY and W
  // with zero rows; then x without a gradient (dW alone from the padded x). Sums of up to 4100 products |x dy| <= 1 in
  // FP32, outputs up to ~60 rounded once to f16 (2^-11 relative).
  for (bool x_grad : {true, false})
    EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::linear(tp, in[0], in[1], in[2]); },
                                      {test::random_input({4100, 75}, 8, x_grad), test::random_input({1001, 75}, 9),
                                       test::random_input({1001}, 10)},
                                      o))
        << "x requires grad: " << x_grad;
}

TEST_P(OpsGpu, Relu) {
  CNN_REQUIRE_GPU();
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::relu(tp, in[0]); },
                                    {test::random_input({4099}, 1)},
                                    test::gpu_compare_options(GetParam(), 0.0, 0.0, 0.0)));  // a selection: exact
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
        {test::random_input({11, 10}, 2, true, -4, 4), labels}, test::gpu_compare_options(t, 1e-5, 1e-4, 2e-3)))
        << "label smoothing " << eps;
  }
  // Many classes (one warp loops over 1000 columns).
  std::vector<int64_t> many(64);
  for (size_t i = 0; i < many.size(); ++i) many[i] = int64_t(i * 37 % 1000);
  EXPECT_TRUE(
      test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::softmax_cross_entropy(tp, in[0], in[1], 0.1); },
                            {test::random_input({64, 1000}, 3, true, -5, 5), Tensor::from_vector(many, {64})},
                            test::gpu_compare_options(t, 1e-5, 1e-4, 2e-3)));
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
      {test::random_input({7, 40}, 1), test::random_input({24, 40}, 2), test::random_input({24}, 3),
       test::random_input({3, 24}, 4), test::random_input({3}, 5)},
      test::gpu_compare_options(GetParam(), 1e-4, 5e-3, 1e-2)));  // f16: several stored roundings along the chain
}

TEST(OpsGpuErrors, OutOfRangeLabelGivesNanLossOnGpu) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Tensor logits = Tensor::zeros({2, 3}, DType::f32, gpu);
  Tensor labels = Tensor::from_vector<int64_t>({0, 7}, {2}, gpu);
  EXPECT_TRUE(std::isnan(ops::softmax_cross_entropy(nullptr, logits, labels).item()));
  EXPECT_THROW(ops::relu(nullptr, Tensor::zeros({3}, DType::f64, gpu)), Error);       // f64 is a CPU-only dtype
  EXPECT_THROW(ops::add(nullptr, logits, Tensor::zeros({2, 3}, DType::f32)), Error);  // device mismatch
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OpsGpu, ::testing::Values(DType::f32, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace cnn
