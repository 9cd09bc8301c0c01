// Model forward + backward on the CPU (small variants of each family): output shape, finite loss, a finite
// gradient for every parameter; RepLKNet and SLaK re-parameterisation equals the original in eval mode.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "layers/functional.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

std::shared_ptr<Model> small_model(const std::string& name, uint64_t seed) {
  return build_model(resolve_model_config(name, test::models_dir()), seed);
}

class SmallModel : public ::testing::TestWithParam<const char*> {};

TEST_P(SmallModel, ForwardBackwardGivesFiniteGradients) {
  constexpr uint64_t kSeed = 1234;
  SCOPED_TRACE(::testing::Message() << GetParam() << " seed " << kSeed);
  auto model = small_model(GetParam(), kSeed);
  const ModelCommon& c = model->common();
  const Tensor x = test::random_images(2, c.input_size, c.in_channels, kSeed + 1);
  const Tensor labels = Tensor::from_vector<int64_t>({1, int64_t(c.num_classes) - 1}, {2});
  Tape tape;
  ForwardContext ctx{&tape, true, kSeed, 0};
  const Tensor logits = model->forward(ctx, x);
  ASSERT_EQ(logits.shape(), (Shape{2, c.num_classes}));
  const Tensor loss = ops::softmax_cross_entropy(&tape, logits, labels);
  ASSERT_TRUE(std::isfinite(loss.item())) << loss.item();
  tape.backward(loss);
  int64_t nonzero = 0;
  for (const NamedParameter& p : model->named_parameters()) {
    ASSERT_TRUE(p.tensor.grad().defined()) << p.name << " got no gradient";
    const std::vector<float> g = p.tensor.grad().to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) {
      ASSERT_TRUE(std::isfinite(g[i])) << p.name << "[" << i << "] = " << g[i];
      nonzero += g[i] != 0.0f;
    }
  }
  EXPECT_GT(nonzero, model->parameter_count() / 2) << "most gradients should be non-zero";
}

TEST_P(SmallModel, EvalForwardIsDeterministic) {
  auto model = small_model(GetParam(), 7);
  model->eval();
  const ModelCommon& c = model->common();
  const Tensor x = test::random_images(2, c.input_size, c.in_channels, 8);
  const Tensor a = model->forward(ForwardContext{}, x);
  const Tensor b = model->forward(ForwardContext{}, x);
  EXPECT_TRUE(test::bitwise_equal(a, b, GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Families, SmallModel,
                         ::testing::Values("convmixer_128_6_k7_p2", "convnext_nano_fmnist", "replknet_tiny_test",
                                           "slak_tiny_test"));

TEST(DropPath, TrainingDropsSamplesReproducibly) {
  // With rate 0.9 most residual branches of a sample are dropped; equal (seed, step) give equal outputs.
  ModelConfig config = load_model_config(resolve_model_config("convnext_nano_fmnist", test::models_dir()));
  model_common(config).drop_path_rate = 0.9;
  auto model = build_model(config);
  model->init_weights(3);
  const Tensor x = test::random_images(4, 28, 1, 4);
  const Tensor a = model->forward(ForwardContext{nullptr, true, 11, 5}, x);
  const Tensor b = model->forward(ForwardContext{nullptr, true, 11, 5}, x);
  const Tensor d = model->forward(ForwardContext{nullptr, true, 11, 6}, x);
  EXPECT_TRUE(test::bitwise_equal(a, b, "same seed and step"));
  EXPECT_FALSE(test::bitwise_equal(a, d, "different step"));
}

// Non-trivial BN state: random affine parameters, then running statistics from a few training batches.
void randomize_batch_norms(Model& model, uint64_t seed) {
  NoGradGuard no_grad;
  uint64_t offset = 0;
  for (NamedParameter& p : model.named_parameters()) {
    const bool bn_weight = p.name.find("bn.weight") != std::string::npos;
    const bool bn_bias = p.name.find("bn.bias") != std::string::npos;
    if (bn_weight) p.tensor.uniform_(seed, offset, 0.5, 1.5);
    if (bn_bias) p.tensor.uniform_(seed, offset, -0.5, 0.5);
    offset += uint64_t(p.tensor.numel());
  }
  for (uint64_t step = 0; step < 3; ++step)
    model.forward(ForwardContext{nullptr, true, seed, step},
                  test::random_images(4, model.common().input_size, model.common().in_channels, seed + 10 + step));
}

// Gives `model` a random BN state, re-parameterises it and expects equal eval logits on 64x64 images. FP32: one
// merged kernel instead of two or three folded branch convolutions summed; the reordered sums differ by a few ulps
// per layer, which the residual layers and the head amplify to ~1e-5 of |logits| ~ 1.
template <class Net>
std::shared_ptr<Net> reparameterize_and_compare(Net& model, uint64_t seed) {
  randomize_batch_norms(model, seed);
  model.eval();
  const Tensor x = test::random_images(3, 64, 3, seed + 1);
  const Tensor expected = model.forward(ForwardContext{}, x);
  auto merged = reparameterize(model);
  EXPECT_TRUE(test::all_close(expected, merged->forward(ForwardContext{}, x), 1e-4, 1e-4,
                              "reparameterised logits (seed " + std::to_string(seed) + ")"));
  return merged;
}

TEST(RepLKNetReparam, MergedModelMatchesOriginalInEval) {
  constexpr uint64_t kSeed = 99;
  auto base = small_model("replknet_tiny_test", kSeed);
  auto& model = dynamic_cast<RepLKNet&>(*base);
  auto merged = reparameterize_and_compare(model, kSeed);
  const auto sig = checkpoint_signature(*merged);
  EXPECT_TRUE(sig.count("stages.0.blocks.0.large_kernel.lkb_reparam.weight"));
  EXPECT_TRUE(sig.count("stages.0.blocks.0.large_kernel.lkb_reparam.bias"));
  EXPECT_FALSE(sig.count("stages.0.blocks.0.large_kernel.lkb_origin.conv.weight"));
  EXPECT_EQ(sig.at("stages.1.blocks.0.large_kernel.lkb_reparam.weight").shape, (Shape{32, 1, 11, 11}));
  EXPECT_THROW(reparameterize(*merged), Error);
}

TEST(RepLKNetReparam, MergedKernelIsFoldedSumOfBranches) {
  // One element by hand: centre tap of channel 0 = w_l * s_l + w_s * s_s with s = gamma / sqrt(var + eps).
  auto base = small_model("replknet_tiny_test", 5);
  auto& model = dynamic_cast<RepLKNet&>(*base);
  randomize_batch_norms(model, 5);
  model.eval();
  const auto sd = export_state_dict(model);
  const std::string p = "stages.0.blocks.0.large_kernel.";
  auto at = [&](const std::string& name, int64_t i) { return double(sd.at(p + name).to_vector<float>()[size_t(i)]); };
  auto scale = [&](const std::string& bn) {
    return at(bn + ".weight", 0) / std::sqrt(at(bn + ".running_var", 0) + 1e-5);
  };
  const double wl = at("lkb_origin.conv.weight", 6 * 13 + 6), ws = at("small_conv.conv.weight", 1 * 3 + 1);
  const double expected_w = wl * scale("lkb_origin.bn") + ws * scale("small_conv.bn");
  const double expected_b = at("lkb_origin.bn.bias", 0) - at("lkb_origin.bn.running_mean", 0) * scale("lkb_origin.bn") +
                            at("small_conv.bn.bias", 0) - at("small_conv.bn.running_mean", 0) * scale("small_conv.bn");
  const auto merged = export_state_dict(*reparameterize(model));
  // FP32 rounding of the folded terms (FP64 math, one f32 rounding per stored value).
  EXPECT_NEAR(merged.at(p + "lkb_reparam.weight").to_vector<float>()[6 * 13 + 6], expected_w,
              1e-6 + 1e-6 * std::fabs(expected_w));
  EXPECT_NEAR(merged.at(p + "lkb_reparam.bias").to_vector<float>()[0], expected_b, 1e-6 + 1e-6 * std::fabs(expected_b));
}

class SLaKReparam : public ::testing::TestWithParam<bool> {};

TEST_P(SLaKReparam, MergedModelMatchesOriginalInEval) {
  const bool decomposed = GetParam();
  const uint64_t seed = decomposed ? 31 : 32;
  SCOPED_TRACE(::testing::Message() << (decomposed ? "decomposed" : "dense") << " seed " << seed);
  ModelConfig config = load_model_config(resolve_model_config("slak_tiny_test", test::models_dir()));
  std::get<SLaKConfig>(config).decomposed = decomposed;
  std::get<SLaKConfig>(config).ls_init_value = 0.5;  // LayerScale at 1e-6 would hide the large-kernel branches
  auto base = build_model(config);
  base->init_weights(seed);
  auto& model = dynamic_cast<SLaK&>(*base);
  auto merged = reparameterize_and_compare(model, seed);
  const auto sig = checkpoint_signature(*merged);
  EXPECT_EQ(sig.at("stages.0.0.large_kernel.lkb_reparam.weight").shape, (Shape{20, 1, 13, 13}));
  EXPECT_TRUE(sig.count("stages.2.0.large_kernel.lkb_reparam.bias"));
  EXPECT_FALSE(sig.count("stages.0.0.large_kernel.small_conv.conv.weight"));
  EXPECT_FALSE(sig.count("stages.0.0.large_kernel.LoRA1.conv.weight"));
  EXPECT_THROW(reparameterize(*merged), Error);
}

INSTANTIATE_TEST_SUITE_P(Forms, SLaKReparam, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Decomposed" : "Dense"; });

}  // namespace
}  // namespace cnn
