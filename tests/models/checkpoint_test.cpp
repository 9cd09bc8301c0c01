// Checkpoint interop: reference names and PyTorch shapes, layout conversion, bit-exact export -> import round
// trip through safetensors, and strict-load errors listing missing / unexpected / wrong-shaped keys.
#include "models/checkpoint.h"

#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "models/registry.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

std::shared_ptr<Model> load(const std::string& name, uint64_t seed) {
  return build_model(resolve_model_config(name, test::models_dir()), seed);
}

std::map<std::string, CheckpointEntry> signature_of(const std::string& name) {
  return checkpoint_signature(*build_model(load_model_config(resolve_model_config(name, test::models_dir()))));
}

void expect_entry(const std::map<std::string, CheckpointEntry>& sig, const std::string& name, const Shape& shape,
                  DType dtype = DType::f32) {
  auto it = sig.find(name);
  ASSERT_NE(it, sig.end()) << "missing reference key " << name;
  EXPECT_EQ(shape_str(it->second.shape), shape_str(shape)) << name;
  EXPECT_EQ(it->second.dtype, dtype) << name;
}

TEST(CheckpointNames, ConvNeXtTinyMatchesTimm) {
  const auto sig = signature_of("convnext_tiny");
  // timm state_dict: stem 4, 18 blocks x 9, 3 downsamples x 4, head norm + fc 4.
  EXPECT_EQ(sig.size(), 182u);
  expect_entry(sig, "stem.0.weight", {96, 3, 4, 4});
  expect_entry(sig, "stem.1.weight", {96});
  expect_entry(sig, "stages.0.blocks.0.conv_dw.weight", {96, 1, 7, 7});
  expect_entry(sig, "stages.0.blocks.0.conv_dw.bias", {96});
  expect_entry(sig, "stages.0.blocks.2.gamma", {96});
  expect_entry(sig, "stages.1.downsample.0.weight", {96});
  expect_entry(sig, "stages.1.downsample.1.weight", {192, 96, 2, 2});
  expect_entry(sig, "stages.2.blocks.8.mlp.fc1.weight", {1536, 384});
  expect_entry(sig, "stages.3.blocks.2.mlp.fc2.bias", {768});
  expect_entry(sig, "head.norm.weight", {768});
  expect_entry(sig, "head.fc.weight", {1000, 768});
  EXPECT_FALSE(sig.count("stages.0.downsample.0.weight"));
}

TEST(CheckpointNames, ConvMixerMatchesTimm) {
  const auto sig = signature_of("convmixer_768_32");
  // stem conv 2 + BN 5, 32 blocks x (dw 2 + BN 5 + pw 2 + BN 5), head 2.
  EXPECT_EQ(sig.size(), 457u);
  expect_entry(sig, "stem.0.weight", {768, 3, 7, 7});
  expect_entry(sig, "stem.2.running_var", {768});
  expect_entry(sig, "stem.2.num_batches_tracked", {}, DType::i64);
  expect_entry(sig, "blocks.31.0.fn.0.weight", {768, 1, 7, 7});
  expect_entry(sig, "blocks.31.0.fn.2.running_mean", {768});
  expect_entry(sig, "blocks.0.1.weight", {768, 768, 1, 1});
  expect_entry(sig, "blocks.0.1.bias", {768});
  expect_entry(sig, "blocks.0.3.weight", {768});
  expect_entry(sig, "head.weight", {1000, 768});
}

TEST(CheckpointNames, RepLKNet31BMatchesReference) {
  const auto sig = signature_of("replknet_31b");
  expect_entry(sig, "stem.0.conv.weight", {128, 3, 3, 3});
  expect_entry(sig, "stem.1.conv.weight", {128, 1, 3, 3});
  expect_entry(sig, "stem.2.conv.weight", {128, 128, 1, 1});
  expect_entry(sig, "stem.3.bn.num_batches_tracked", {}, DType::i64);
  expect_entry(sig, "stages.0.blocks.0.prelkb_bn.weight", {128});
  expect_entry(sig, "stages.0.blocks.0.pw1.conv.weight", {128, 128, 1, 1});
  expect_entry(sig, "stages.0.blocks.0.large_kernel.lkb_origin.conv.weight", {128, 1, 31, 31});
  expect_entry(sig, "stages.0.blocks.0.large_kernel.small_conv.conv.weight", {128, 1, 5, 5});
  expect_entry(sig, "stages.2.blocks.35.pw2.bn.running_var", {512});
  expect_entry(sig, "stages.2.blocks.35.preffn_bn.weight", {512});
  expect_entry(sig, "stages.2.blocks.35.pw1.conv.weight", {2048, 512, 1, 1});
  expect_entry(sig, "stages.3.blocks.0.large_kernel.lkb_origin.conv.weight", {1024, 1, 13, 13});
  expect_entry(sig, "transitions.2.0.conv.weight", {1024, 512, 1, 1});
  expect_entry(sig, "transitions.2.1.conv.weight", {1024, 1, 3, 3});
  expect_entry(sig, "norm.running_mean", {1024});
  expect_entry(sig, "head.weight", {1000, 1024});
  EXPECT_FALSE(sig.count("stages.0.blocks.4.pw1.conv.weight"));  // 2 pairs in stage 0: blocks 0..3
}

TEST(CheckpointNames, SLaKTinyMatchesReference) {
  const auto sig = signature_of("slak_tiny");
  expect_entry(sig, "downsample_layers.0.0.weight", {124, 3, 4, 4});
  expect_entry(sig, "downsample_layers.0.1.weight", {124});
  expect_entry(sig, "downsample_layers.3.1.weight", {998, 499, 2, 2});
  expect_entry(sig, "stages.0.0.large_kernel.LoRA1.conv.weight", {124, 1, 51, 5});
  expect_entry(sig, "stages.0.0.large_kernel.LoRA2.conv.weight", {124, 1, 5, 51});
  expect_entry(sig, "stages.0.0.large_kernel.small_conv.conv.weight", {124, 1, 5, 5});
  expect_entry(sig, "stages.2.8.large_kernel.LoRA1.bn.num_batches_tracked", {}, DType::i64);
  expect_entry(sig, "stages.3.2.pwconv1.weight", {3992, 998});
  expect_entry(sig, "stages.3.2.gamma", {998});
  expect_entry(sig, "norm.weight", {998});
  expect_entry(sig, "head.weight", {1000, 998});
  const auto dense = signature_of("slak_tiny_dense");
  expect_entry(dense, "stages.1.0.large_kernel.lkb_origin.conv.weight", {249, 1, 49, 49});
  EXPECT_FALSE(dense.count("stages.1.0.large_kernel.LoRA1.conv.weight"));
}

TEST(CheckpointLayout, ConvWeightsArePermutedToPyTorchOrder) {
  auto model = load("convmixer_128_6_k7_p2", 3);
  const auto sd = export_state_dict(*model);
  std::map<std::string, Tensor> ours;
  for (const NamedParameter& p : model->named_parameters()) ours[p.name] = p.tensor;
  // Dense stem (K, R, S, C) = (128, 2, 2, 1) -> (K, C, R, S).
  const auto w = ours.at("stem.0.weight").to_vector<float>(), e = sd.at("stem.0.weight").to_vector<float>();
  for (int64_t k : {0, 77, 127})
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t s = 0; s < 2; ++s) EXPECT_EQ(e[size_t(k * 4 + r * 2 + s)], w[size_t((k * 2 + r) * 2 + s)]);
  // Depthwise (FH, FW, C) = (7, 7, 128) -> (C, 1, FH, FW).
  const auto dw = ours.at("blocks.2.0.fn.0.weight").to_vector<float>();
  const auto edw = sd.at("blocks.2.0.fn.0.weight").to_vector<float>();
  for (int64_t c : {0, 5, 127})
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(edw[size_t((c * 7 + i) * 7 + j)], dw[size_t((i * 7 + j) * 128 + c)]);
  // Pointwise (K, C) -> (K, C, 1, 1): same order.
  EXPECT_TRUE(test::bitwise_equal(ours.at("blocks.0.1.weight").reshape({128, 128, 1, 1}), sd.at("blocks.0.1.weight")));
}

class CheckpointRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(CheckpointRoundTrip, ExportImportIsBitExact) {
  SCOPED_TRACE(GetParam());
  auto a = load(GetParam(), 21);
  const ModelCommon& c = a->common();
  // Training-mode forwards give non-default running statistics and num_batches_tracked.
  a->forward(ForwardContext{nullptr, true, 1, 0}, test::random_images(2, c.input_size, c.in_channels, 5));
  test::TempDir dir("cnn_ckpt");
  const std::string file = dir.file("model.safetensors");
  save_checkpoint(file, *a, {{"model", GetParam()}});
  EXPECT_EQ(load_safetensors(file).metadata.at("model"), GetParam());
  auto b = load(GetParam(), 22);
  load_checkpoint(file, *b);
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(test::bitwise_equal(pa[i].tensor, pb[i].tensor, pa[i].name));
  const auto ba = a->named_buffers(), bb = b->named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (size_t i = 0; i < ba.size(); ++i) EXPECT_TRUE(test::bitwise_equal(ba[i].second, bb[i].second, ba[i].first));
  a->eval();
  b->eval();
  const Tensor x = test::random_images(2, c.input_size, c.in_channels, 6);
  EXPECT_TRUE(test::bitwise_equal(a->forward(ForwardContext{}, x), b->forward(ForwardContext{}, x), "logits"));
}

INSTANTIATE_TEST_SUITE_P(Families, CheckpointRoundTrip,
                         ::testing::Values("convmixer_128_6_k7_p2", "convnext_nano_fmnist", "replknet_tiny_test",
                                           "slak_tiny_test"));

TEST(CheckpointImport, MismatchListsEveryOffendingKey) {
  auto model = load("convnext_nano_fmnist", 1);
  auto sd = export_state_dict(*model);
  sd.erase("head.fc.bias");
  sd.erase("stem.1.weight");
  sd["stages.0.blocks.0.ls.gamma"] = Tensor::zeros({32}, DType::f32);
  sd["stem.0.weight"] = Tensor::zeros({32, 1, 3, 3}, DType::f32);
  sd["stem.0.bias"] = Tensor::zeros({32}, DType::i64);
  try {
    import_state_dict(*model, sd, "'x.safetensors'");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "import_state_dict: 'x.safetensors' does not match the model: missing 2 key(s): stem.1.weight, "
                 "head.fc.bias; unexpected 1 key(s): stages.0.blocks.0.ls.gamma; wrong shape/dtype for 2 key(s): "
                 "stem.0.weight (expected f32 (32, 1, 2, 2), got f32 (32, 1, 3, 3)), stem.0.bias (expected f32 "
                 "(32), got i64 (32))");
  }
}

TEST(CheckpointImport, FailedImportLeavesModelUnchanged) {
  auto model = load("convmixer_128_6_k7_p2", 1);
  const Tensor before = model->named_parameters()[0].tensor.clone();
  auto sd = export_state_dict(*load("convmixer_128_6_k7_p2", 2));
  sd.erase("head.bias");
  EXPECT_THROW(import_state_dict(*model, sd), Error);
  EXPECT_TRUE(test::bitwise_equal(before, model->named_parameters()[0].tensor, "untouched"));
}

TEST(CheckpointImport, AcceptsOtherFloatingDtypes) {
  auto model = load("convmixer_128_6_k7_p2", 1);
  auto sd = export_state_dict(*load("convmixer_128_6_k7_p2", 2));
  for (auto& [name, t] : sd)
    if (t.dtype() == DType::f32) t = t.to(DType::f64);
  import_state_dict(*model, sd);
  EXPECT_TRUE(test::bitwise_equal(sd.at("head.weight").to(DType::f32), export_state_dict(*model).at("head.weight")));
}

}  // namespace
}  // namespace cnn
