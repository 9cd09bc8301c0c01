// LayerNorm, BatchNorm, GELU, LayerScale, DropPath and global average pooling on the CPU: forward values against
// direct formulas, running statistics and eval behaviour, gradient checks in double, error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "layers/functional.h"
#include "layers/layers.h"
#include "tests/support/gradcheck.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using V = std::vector<Tensor>;

Tensor rand(const Shape& s, uint64_t seed, DType t = DType::f64, bool grad = true, double lo = -1, double hi = 1) {
  Tensor x = Tensor::empty(s, t);
  x.uniform_(seed, 0, lo, hi);
  if (grad) x.set_requires_grad(true);
  return x;
}

using test::error_of;

TEST(LayerNorm, ForwardMatchesFormula) {
  const int64_t rows = 6, c = 5;
  const Tensor x = rand({2, 3, c}, 1, DType::f64, false, -3, 3), g = rand({c}, 2, DType::f64, false),
               b = rand({c}, 3, DType::f64, false);
  const auto xv = x.to_vector<double>(), gv = g.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> want(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < c; ++i) m += xv[size_t(r * c + i)] / double(c);
    for (int64_t i = 0; i < c; ++i) v += std::pow(xv[size_t(r * c + i)] - m, 2) / double(c);
    for (int64_t i = 0; i < c; ++i)
      want[size_t(r * c + i)] = (xv[size_t(r * c + i)] - m) / std::sqrt(v + 1e-6) * gv[size_t(i)] + bv[size_t(i)];
  }
  const Tensor want_t = Tensor::from_vector(want, x.shape());
  EXPECT_TRUE(test::all_close(want_t, ops::layer_norm(nullptr, x, g, b, 1e-6), 1e-12, 1e-12, "layer_norm f64"));
  // f32 data, FP64 statistics inside, one rounding of each output: 1e-6 for |y| <~ 3.
  EXPECT_TRUE(test::all_close(want_t, ops::layer_norm(nullptr, x.to(DType::f32), g.to(DType::f32), b.to(DType::f32),
                                                      1e-6),
                              1e-6, 1e-6, "layer_norm f32"));
}

TEST(LayerNormGrad, AllInputs) {
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::layer_norm(t, in[0], in[1], in[2], 1e-6); },
                              {rand({2, 3, 2, 7}, 1, DType::f64, true, -2, 2), rand({7}, 2), rand({7}, 3)}));
  // Only x requires grad (frozen affine), and eps large enough to matter.
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::layer_norm(t, in[0], in[1], in[2], 0.5); },
                              {rand({4, 3}, 4), rand({3}, 5, DType::f64, false), rand({3}, 6, DType::f64, false)}));
}

TEST(BatchNorm, TrainingStatisticsAndRunningUpdate) {
  const int64_t c = 3;
  const Tensor x = rand({2, 3, 2, c}, 1, DType::f64, false, -2, 2);
  Tensor rm = Tensor::full({c}, 0.5, DType::f64), rv = Tensor::full({c}, 2.0, DType::f64);
  const Tensor g = rand({c}, 2, DType::f64, false), b = rand({c}, 3, DType::f64, false);
  const Tensor y = ops::batch_norm(nullptr, x, g, b, rm, rv, true, 0.1, 1e-5);
  const auto xv = x.to_vector<double>(), yv = y.to_vector<double>(), gv = g.to_vector<double>(),
             bv = b.to_vector<double>();
  const int64_t rows = 12;
  for (int64_t ch = 0; ch < c; ++ch) {
    double m = 0, v = 0;
    for (int64_t r = 0; r < rows; ++r) m += xv[size_t(r * c + ch)] / rows;
    for (int64_t r = 0; r < rows; ++r) v += std::pow(xv[size_t(r * c + ch)] - m, 2);
    const double biased = v / rows, unbiased = v / (rows - 1);
    for (int64_t r = 0; r < rows; ++r) {
      const double want = (xv[size_t(r * c + ch)] - m) / std::sqrt(biased + 1e-5) * gv[size_t(ch)] + bv[size_t(ch)];
      EXPECT_NEAR(yv[size_t(r * c + ch)], want, 1e-12) << "row " << r << " channel " << ch;
    }
    // PyTorch: running = 0.9 running + 0.1 batch, running_var from the unbiased variance.
    EXPECT_NEAR(rm.to_vector<double>()[size_t(ch)], 0.9 * 0.5 + 0.1 * m, 1e-14) << "channel " << ch;
    EXPECT_NEAR(rv.to_vector<double>()[size_t(ch)], 0.9 * 2.0 + 0.1 * unbiased, 1e-14) << "channel " << ch;
  }
}

TEST(BatchNorm, ModuleEvalUsesRunningStatistics) {
  BatchNorm2d bn(2);
  bn.to(DType::f64);
  bn.running_mean.copy_(Tensor::from_vector<double>({1.0, -2.0}, {2}));
  bn.running_var.copy_(Tensor::from_vector<double>({4.0, 0.25}, {2}));
  bn.weight.copy_(Tensor::from_vector<double>({2.0, 1.0}, {2}));
  bn.bias.copy_(Tensor::from_vector<double>({0.5, 0.0}, {2}));
  const Tensor x = Tensor::from_vector<double>({3.0, -1.0, 1.0, -2.0}, {2, 1, 1, 2});
  bn.eval();
  const auto y = bn.forward(ForwardContext{nullptr, true, 0, 0}, x).to_vector<double>();
  const double eps = 1e-5;
  EXPECT_NEAR(y[0], (3.0 - 1.0) / std::sqrt(4.0 + eps) * 2.0 + 0.5, 1e-12);
  EXPECT_NEAR(y[1], (-1.0 + 2.0) / std::sqrt(0.25 + eps), 1e-12);
  EXPECT_NEAR(y[2], 0.5, 1e-12);
  EXPECT_EQ(bn.num_batches_tracked.item(), 0.0);
  EXPECT_EQ(bn.running_mean.to_vector<double>(), (std::vector<double>{1.0, -2.0}));  // untouched in eval
  // Training mode changes running statistics and counts batches.
  bn.train();
  bn.forward(ForwardContext{nullptr, true, 0, 0}, x);
  EXPECT_EQ(bn.num_batches_tracked.item(), 1.0);
  EXPECT_NEAR(bn.running_mean.to_vector<double>()[0], 0.9 * 1.0 + 0.1 * 2.0, 1e-14);
  // A training forward with ForwardContext::training == false behaves as eval.
  bn.forward(ForwardContext{}, x);
  EXPECT_EQ(bn.num_batches_tracked.item(), 1.0);
}

TEST(BatchNormGrad, TrainingAndEval) {
  for (bool training : {true, false}) {
    Tensor rm = rand({4}, 7, DType::f64, false), rv = rand({4}, 8, DType::f64, false, 0.5, 2.0);
    EXPECT_TRUE(test::gradcheck(
        [&](Tape* t, const V& in) { return ops::batch_norm(t, in[0], in[1], in[2], rm, rv, training, 0.1, 1e-5); },
        {rand({2, 3, 2, 4}, 1, DType::f64, true, -2, 2), rand({4}, 2), rand({4}, 3)}))
        << (training ? "training" : "eval");
  }
}

TEST(Gelu, ForwardAndGrad) {
  const Tensor x = Tensor::from_vector<double>({-3.0, -0.5, 0.0, 0.7, 2.0}, {5});
  const auto y = ops::gelu(nullptr, x).to_vector<double>();
  const auto xv = x.to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], 0.5 * xv[i] * (1 + std::erf(xv[i] / std::sqrt(2.0))), 1e-15) << "x = " << xv[i];
  EXPECT_NEAR(y[4], 1.9544997361036416, 1e-12);  // 2 * Phi(2), exact erf form (the tanh form gives 1.9545977)
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::gelu(t, in[0]); },
                              {rand({3, 11}, 1, DType::f64, true, -4, 4)}));
}

TEST(LayerScale, ForwardAndGrad) {
  LayerScale ls(3, 0.25);
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3});
  EXPECT_EQ(ls.forward(ForwardContext{}, x).to_vector<float>(),
            (std::vector<float>{0.25f, 0.5f, 0.75f, 1.f, 1.25f, 1.5f}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::mul(t, in[0], in[1]); },
                              {rand({2, 2, 3, 5}, 1), rand({5}, 2)}));
}

TEST(DropPath, MaskStatisticsReproducibilityAndEval) {
  const double p = 0.25;
  const Tensor s = ops::drop_path_scales(4096, p, 42, 3, 5, DType::f32, Device::cpu());
  const auto sv = s.to_vector<float>();
  int64_t kept = 0;
  for (float v : sv) {
    ASSERT_TRUE(v == 0.f || v == float(1.0f / 0.75f)) << v;
    kept += v != 0.f;
  }
  // Binomial(4096, 0.75): std 27.7; 5 sigma = 139.
  EXPECT_NEAR(double(kept), 0.75 * 4096, 139);
  EXPECT_EQ(ops::drop_path_scales(4096, p, 42, 3, 5, DType::f32, Device::cpu()).to_vector<float>(), sv);
  EXPECT_NE(ops::drop_path_scales(4096, p, 42, 3, 6, DType::f32, Device::cpu()).to_vector<float>(), sv);
  EXPECT_NE(ops::drop_path_scales(4096, p, 42, 4, 5, DType::f32, Device::cpu()).to_vector<float>(), sv);
  EXPECT_NE(ops::drop_path_scales(4096, p, 43, 3, 5, DType::f32, Device::cpu()).to_vector<float>(), sv);

  // Whole samples are dropped or kept: y[n] is 0 or x[n] / keep.
  DropPath dp(p, 5);
  const Tensor x = rand({64, 2, 2, 3}, 1, DType::f32, false, 0.5, 1.0);
  const auto y = dp.forward(ForwardContext{nullptr, true, 42, 3}, x).to_vector<float>();
  const auto xv = x.to_vector<float>();
  const auto s64 = ops::drop_path_scales(64, p, 42, 3, 5, DType::f32, Device::cpu()).to_vector<float>();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], xv[i] * s64[i / 12]) << "element " << i;
  // Eval (either switch) is the identity.
  EXPECT_EQ(dp.forward(ForwardContext{nullptr, false, 42, 3}, x).data_ptr(), x.data_ptr());
  dp.eval();
  EXPECT_EQ(dp.forward(ForwardContext{nullptr, true, 42, 3}, x).data_ptr(), x.data_ptr());
}

TEST(DropPathGrad, FixedMask) {
  const Tensor mask = Tensor::from_vector<double>({0.0, 1.0 / 0.6, 1.0 / 0.6}, {3});
  EXPECT_TRUE(test::gradcheck([mask](Tape* t, const V& in) { return ops::sample_scale(t, in[0], mask); },
                              {rand({3, 2, 2, 4}, 1)}));
  // The seeded op records the same way (its mask is a constant of the graph).
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::drop_path(t, in[0], 0.5, 9, 1, 2); },
                              {rand({6, 2, 3}, 2)}));
}

TEST(GlobalAvgPool, ForwardAndGrad) {
  const Tensor x = Tensor::from_vector<double>({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2});
  EXPECT_EQ(ops::global_avg_pool(nullptr, x).to_vector<double>(), (std::vector<double>{2.5, 25}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::global_avg_pool(t, in[0]); },
                              {rand({2, 3, 5, 4}, 1)}));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::cast(t, ops::cast(t, in[0], DType::f32),
                                                                          DType::f64); },
                              {rand({3}, 2)}, {1e-3, 1e-3, 1e-3}));  // f32 rounding (6e-8) / step 1e-3: ~2e-4
}

TEST(NormActOps, ErrorPaths) {
  const Tensor x = Tensor::zeros({2, 2, 2, 3}, DType::f32);
  const Tensor c3 = Tensor::zeros({3}, DType::f32);
  EXPECT_NE(error_of([&] { ops::layer_norm(nullptr, x, Tensor::zeros({4}, DType::f32), c3, 1e-6); })
                .find("layer_norm: expected weight (3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::layer_norm(nullptr, x, c3, c3.to(DType::f64), 1e-6); }).find("must have x's dtype"),
            std::string::npos);
  Tensor rm = Tensor::zeros({3}, DType::f32), rv = Tensor::full({3}, 1, DType::f32);
  Tensor rm64 = rm.to(DType::f64);
  EXPECT_NE(error_of([&] { ops::batch_norm(nullptr, x, c3, c3, rm64, rv, true, 0.1, 1e-5); })
                .find("batch_norm: expected running_mean (3) f32"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ops::batch_norm(nullptr, Tensor::zeros({1, 1, 1, 3}, DType::f32), c3, c3, rm, rv, true, 0.1, 1e-5);
            }).find("more than one value per channel"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::global_avg_pool(nullptr, Tensor::zeros({2, 3}, DType::f32)); })
                .find("global_avg_pool: expected x with 4 axes"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::drop_path(nullptr, x, 1.0, 0, 0, 0); }).find("drop probability in [0, 1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::drop_path(nullptr, x, 0.1, 0, 0, 5000); }).find("layer id < 4096"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::gelu(nullptr, x.to(DType::f16)); }).find("not supported on cpu"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::sample_scale(nullptr, x, Tensor::zeros({3}, DType::f32)); })
                .find("sample_scale: expected scale (2)"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn
