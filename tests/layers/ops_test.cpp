// Differentiable ops on the CPU: forward values against direct loops, gradient checks in double, and error paths.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "layers/functional.h"
#include "tests/support/gradcheck.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

Tensor rand(const Shape& s, uint64_t seed, DType t = DType::f64, bool grad = true, double lo = -1, double hi = 1) {
  Tensor x = Tensor::empty(s, t);
  x.uniform_(seed, 0, lo, hi);
  if (grad) x.set_requires_grad(true);
  return x;
}

// |x| >= 0.1 so a +-1e-6 step never crosses the ReLU kink.
Tensor away_from_zero(const Shape& s, uint64_t seed) {
  Tensor x = rand(s, seed, DType::f64, false, 0.1, 1.0);
  Tensor sign = rand(s, seed + 1, DType::f64, false, -1, 1);
  std::vector<double> v = x.to_vector<double>(), g = sign.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = g[i] < 0 ? -v[i] : v[i];
  Tensor out = Tensor::from_vector(v, s);
  out.set_requires_grad(true);
  return out;
}

using test::error_of;

TEST(Ops, BroadcastAddMulForward) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor c = Tensor::from_vector<float>({10, 20, 30}, {3});
  EXPECT_EQ(ops::add(nullptr, a, c).to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(ops::mul(nullptr, a, c).to_vector<float>(), (std::vector<float>{10, 40, 90, 40, 100, 180}));
  EXPECT_EQ(ops::mul(nullptr, a, Tensor::full({}, 2, DType::f32)).to_vector<float>()[5], 12.f);
  EXPECT_EQ(ops::add(nullptr, a, a).to_vector<float>()[5], 12.f);
  EXPECT_EQ(ops::scale(nullptr, a, -0.5).to_vector<float>()[1], -1.f);
}

TEST(Ops, ReductionsForward) {
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ops::sum(nullptr, a).item(), 21.0);
  EXPECT_EQ(ops::mean(nullptr, a).item(), 3.5);
  EXPECT_EQ(ops::sum_except_last(nullptr, a).to_vector<double>(), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(ops::mean_except_last(nullptr, a).to_vector<double>(), (std::vector<double>{2.5, 3.5, 4.5}));
  // Long reductions cross chunk boundaries: 100000 ones.
  EXPECT_EQ(ops::sum(nullptr, Tensor::full({100000}, 1, DType::f32)).item(), 100000.0);
  Tensor rows = Tensor::full({1000, 3, 7}, 0.5, DType::f32);
  EXPECT_EQ(ops::sum_except_last(nullptr, rows).to_vector<float>(), std::vector<float>(7, 1500.f));
}

TEST(Ops, LinearMatchesDirectLoops) {
  const int64_t m = 5, k = 7, n = 3;
  Tensor x = rand({m, k}, 1, DType::f32, false), w = rand({n, k}, 2, DType::f32, false),
         b = rand({n}, 3, DType::f32, false);
  const Tensor y = ops::linear(nullptr, x, w, b);
  const auto xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = b.to_vector<float>();
  std::vector<double> want(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bv[size_t(j)];
      for (int64_t q = 0; q < k; ++q) s += double(xv[size_t(i * k + q)]) * wv[size_t(j * k + q)];
      want[size_t(i * n + j)] = s;
    }
  // FP32 dot products of length 7 with |terms| <= 1: error below 1e-6.
  EXPECT_TRUE(test::all_close(Tensor::from_vector(want, {m, n}), y, 1e-6, 1e-6, "linear"));
  const Tensor mm = ops::matmul(nullptr, x, w.permute({1, 0}));  // non-contiguous b is made contiguous
  EXPECT_TRUE(test::all_close(ops::linear(nullptr, x, w, Tensor()), mm, 1e-6, 1e-6, "matmul vs linear"));
}

TEST(Ops, ReluForward) {
  Tensor x = Tensor::from_vector<float>({-1, 0, 2.5}, {3});
  EXPECT_EQ(ops::relu(nullptr, x).to_vector<float>(), (std::vector<float>{0, 0, 2.5}));
}

TEST(Ops, SoftmaxCrossEntropyForward) {
  // Two rows; loss by direct formula with label smoothing 0.1.
  const std::vector<double> z = {1.0, 2.0, 0.5, -1.0, 0.0, 3.0};
  Tensor logits = Tensor::from_vector(z, {2, 3});
  Tensor labels = Tensor::from_vector<int64_t>({1, 0}, {2});
  const double eps = 0.1;
  double want = 0;
  for (int b = 0; b < 2; ++b) {
    double se = 0;
    for (int k = 0; k < 3; ++k) se += std::exp(z[size_t(b * 3 + k)]);
    for (int k = 0; k < 3; ++k) {
      const double q = eps / 3 + (k == (b == 0 ? 1 : 0) ? 1 - eps : 0);
      want -= q * (z[size_t(b * 3 + k)] - std::log(se));
    }
  }
  want /= 2;
  EXPECT_NEAR(ops::softmax_cross_entropy(nullptr, logits, labels, eps).item(), want, 1e-12);  // f64 math
  // f32 logits give an f32 loss close to the f64 one (FP32 softmax of 3 values: ~1e-7 relative).
  EXPECT_NEAR(ops::softmax_cross_entropy(nullptr, logits.to(DType::f32), labels, eps).item(), want, 1e-6);
  // Large logits do not overflow (max subtraction).
  Tensor big = Tensor::from_vector<float>({1000, 0}, {1, 2});
  EXPECT_NEAR(ops::softmax_cross_entropy(nullptr, big, Tensor::from_vector<int64_t>({0}, {1})).item(), 0.0, 1e-6);
}

TEST(Ops, ErrorPaths) {
  Tensor a = Tensor::zeros({2, 3}, DType::f32);
  EXPECT_NE(error_of([&] { ops::add(nullptr, a, Tensor::zeros({2}, DType::f32)); }).find("cannot broadcast"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::add(nullptr, a, Tensor::zeros({2, 3}, DType::f64)); }).find("share a dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::mul(nullptr, Tensor::zeros({3}, DType::i32), Tensor::zeros({3}, DType::i32)); })
                .find("floating"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::relu(nullptr, a.to(DType::f16)); }).find("not supported on cpu"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::matmul(nullptr, a, a); }).find("expected a (M, K) and b (K, N)"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::linear(nullptr, a, Tensor::zeros({4, 2}, DType::f32), Tensor()); })
                .find("w (N, K)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::linear(nullptr, a, a, Tensor::zeros({3}, DType::f32)); }).find("expected bias (2)"),
            std::string::npos);
  Tensor labels = Tensor::from_vector<int64_t>({0, 3}, {2});
  EXPECT_NE(error_of([&] { ops::softmax_cross_entropy(nullptr, a, labels); }).find("label 3 at batch index 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::softmax_cross_entropy(nullptr, a, labels.to(DType::i32)); }).find("i64 labels"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::softmax_cross_entropy(nullptr, a, Tensor::zeros({3}, DType::i64)); })
                .find("expected labels (2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::softmax_cross_entropy(nullptr, a, Tensor::zeros({2}, DType::i64), 1.0); })
                .find("label smoothing"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::mean(nullptr, Tensor::zeros({0}, DType::f32)); }).find("empty"), std::string::npos);
}

// ---- gradient checks (double, central differences; bounds in GradCheckOptions) ------------------------------

using V = std::vector<Tensor>;

TEST(OpsGrad, AddMulBroadcast) {
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::add(t, in[0], in[1]); },
                              {rand({4, 5}, 1), rand({5}, 2)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mul(t, in[0], in[1]); },
                              {rand({3, 2, 5}, 3), rand({5}, 4)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mul(t, in[0], in[1]); },
                              {rand({3, 4}, 5), rand({3, 4}, 6)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mul(t, in[0], in[1]); },
                              {rand({3, 4}, 7), rand({1}, 8)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::scale(t, ops::mul(t, in[0], in[0]), -1.5); },
                              {rand({6}, 9)}));
}

TEST(OpsGrad, Reductions) {
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::sum(t, in[0]); }, {rand({3, 4}, 1)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mean(t, in[0]); }, {rand({3, 4}, 2)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::sum_except_last(t, in[0]); },
                              {rand({2, 3, 5}, 3)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mean_except_last(t, in[0]); },
                              {rand({7, 3}, 4)}));
}

TEST(OpsGrad, MatmulLinearRelu) {
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::matmul(t, in[0], in[1]); },
                              {rand({3, 4}, 1), rand({4, 5}, 2)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::linear(t, in[0], in[1], in[2]); },
                              {rand({5, 7}, 3), rand({3, 7}, 4), rand({3}, 5)}));
  // Only the weight requires grad: x is captured, w is not needed.
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::linear(t, in[0], in[1], in[2]); },
                              {rand({4, 6}, 6, DType::f64, false), rand({2, 6}, 7), Tensor()}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::relu(t, in[0]); }, {away_from_zero({40}, 8)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::reshape(t, in[0], {2, -1}); },
                              {rand({3, 4}, 9)}));
}

TEST(OpsGrad, SoftmaxCrossEntropy) {
  const Tensor labels = Tensor::from_vector<int64_t>({2, 0, 4, 4, 1, 3}, {6});
  for (double eps : {0.0, 0.1}) {
    EXPECT_TRUE(test::gradcheck(
        [eps](Tape* t, const V& in) { return ops::softmax_cross_entropy(t, in[0], in[1], eps); },
        {rand({6, 5}, 1, DType::f64, true, -3, 3), labels}))
        << "label smoothing " << eps;
  }
}

TEST(OpsGrad, TwoLayerComposition) {
  const Tensor labels = Tensor::from_vector<int64_t>({1, 0, 2, 1}, {4});
  EXPECT_TRUE(test::gradcheck(
      [labels](Tape* t, const V& in) {
        const Tensor h = ops::relu(t, ops::linear(t, in[0], in[1], in[2]));
        return ops::softmax_cross_entropy(t, ops::linear(t, h, in[3], in[4]), labels, 0.05);
      },
      {rand({4, 6}, 1), rand({8, 6}, 2), rand({8}, 3), rand({3, 8}, 4), rand({3}, 5)}));
}

TEST(OpsGrad, CheckerCatchesAWrongGradient) {
  // A deliberately wrong backward (2x) must fail: the checker itself is tested.
  auto wrong = [](Tape* t, const V& in) {
    Tensor y = in[0].clone();
    if (Tape::should_record(t, {&in[0]})) {
      t->record("wrong", {&in[0]}, {&y}, [](const std::vector<Tensor>& g) -> std::vector<Tensor> {
        Tensor d = g[0].clone();
        d.add_(g[0]);
        return {d};
      });
    }
    return y;
  };
  EXPECT_FALSE(test::gradcheck(wrong, {rand({3}, 1)}));
}

}  // namespace
}  // namespace cnn
