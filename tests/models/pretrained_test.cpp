// Loading weights from elsewhere: reference-name mapping, the fine-tuning classifier swap, checkpoint-shaped model
// builds (classes, deploy form), and every error path of a bad file (missing, truncated, another model, a shape
// mismatch) as one message naming the file and the tensor with both shapes.
#include "models/pretrained.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

std::shared_ptr<Model> model_named(const std::string& name, uint64_t seed, int num_classes = 0) {
  ModelConfig config = load_model_config(resolve_model_config(name, test::models_dir()));
  if (num_classes) model_common(config).num_classes = num_classes;
  auto m = build_model(config);
  m->init_weights(seed);
  return m;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReferenceNames, WrapperPrefixDecomNamesAndBatchCounters) {
  const Tensor t = Tensor::zeros({2}, DType::f32);
  std::map<std::string, Tensor> in{{"module.stages.0.0.large_kernel.Decom1.conv.weight", t},
                                   {"module.stages.0.0.large_kernel.Decom2.bn.running_var", t},
                                   {"module.head.weight", t}};
  const auto out = map_reference_names(in);
  EXPECT_TRUE(out.count("stages.0.0.large_kernel.LoRA1.conv.weight"));
  EXPECT_TRUE(out.count("stages.0.0.large_kernel.LoRA2.bn.running_var"));
  EXPECT_TRUE(out.count("head.weight"));
  ASSERT_TRUE(out.count("stages.0.0.large_kernel.LoRA2.bn.num_batches_tracked"));
  EXPECT_EQ(out.at("stages.0.0.large_kernel.LoRA2.bn.num_batches_tracked").dtype(), DType::i64);
  EXPECT_EQ(out.size(), 4u);
  // A prefix only some keys carry is a name, not a wrapper.
  const auto kept = map_reference_names({{"module.a", t}, {"b", t}});
  EXPECT_TRUE(kept.count("module.a"));
}

TEST(Pretrained, SameClassesLoadsEveryTensor) {
  test::TempDir dir("pretrained_same");
  auto source = model_named("convnext_nano_fmnist", 1);
  save_checkpoint(dir.file("w.safetensors"), *source);
  auto target = model_named("convnext_nano_fmnist", 2);
  const PretrainedLoad r = load_pretrained(*target, dir.file("w.safetensors"));
  EXPECT_FALSE(r.head_replaced);
  EXPECT_EQ(r.checkpoint_classes, 10);
  const auto a = export_state_dict(*source), b = export_state_dict(*target);
  for (const auto& [name, t] : a) EXPECT_TRUE(test::bitwise_equal(t, b.at(name), name)) << name;
}

TEST(Pretrained, OtherClassCountKeepsTheInitialisedClassifier) {
  test::TempDir dir("pretrained_head");
  auto source = model_named("convmixer_128_6_k7_p2", 1);
  save_checkpoint(dir.file("w.safetensors"), *source);
  auto target = model_named("convmixer_128_6_k7_p2", 2, 7);
  const auto before = export_state_dict(*target);
  const PretrainedLoad r = load_pretrained(*target, dir.file("w.safetensors"));
  EXPECT_TRUE(r.head_replaced);
  EXPECT_EQ(r.checkpoint_classes, 10);
  const auto a = export_state_dict(*source), b = export_state_dict(*target);
  for (const auto& [name, t] : b) {
    const bool head = name == "head.weight" || name == "head.bias";
    EXPECT_TRUE(test::bitwise_equal(head ? before.at(name) : a.at(name), t, name)) << name;
  }
  EXPECT_EQ(b.at("head.weight").shape(), (Shape{7, 128}));
}

TEST(Pretrained, ShapeMismatchNamesTensorAndBothShapes) {
  test::TempDir dir("pretrained_shape");
  ModelConfig k9 = load_model_config(resolve_model_config("convnext_nano_fmnist", test::models_dir()));
  std::get<ConvNeXtConfig>(k9).stages[0].kernel_size = 9;
  auto source = build_model(k9);
  save_checkpoint(dir.file("k9.safetensors"), *source);
  auto target = model_named("convnext_nano_fmnist", 2);
  const std::string msg = message_of([&] { load_pretrained(*target, dir.file("k9.safetensors")); });
  EXPECT_NE(msg.find("k9.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stages.0.blocks.0.conv_dw.weight (expected f32 (32, 1, 7, 7), got f32 (32, 1, 9, 9))"),
            std::string::npos)
      << msg;
}

TEST(Pretrained, AnotherModelsCheckpointIsRefused) {
  test::TempDir dir("pretrained_model");
  save_checkpoint(dir.file("mixer.safetensors"), *model_named("convmixer_128_6_k7_p2", 1));
  auto target = model_named("convnext_nano_fmnist", 2);
  const std::string msg = message_of([&] { load_pretrained(*target, dir.file("mixer.safetensors")); });
  EXPECT_NE(msg.find("for convnext 'convnext_nano_fmnist'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected"), std::string::npos) << msg;
}

TEST(Pretrained, MissingAndTruncatedFilesAreRefused) {
  test::TempDir dir("pretrained_files");
  auto target = model_named("convmixer_128_6_k7_p2", 2);
  const std::string missing = dir.file("absent.safetensors");
  std::string msg = message_of([&] { load_pretrained(*target, missing); });
  EXPECT_NE(msg.find("'" + missing + "' does not exist"), std::string::npos) << msg;
  save_checkpoint(dir.file("full.safetensors"), *model_named("convmixer_128_6_k7_p2", 1));
  std::ifstream in(dir.file("full.safetensors"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir.write("cut.safetensors", bytes.substr(0, bytes.size() - 1000));
  msg = message_of([&] { load_pretrained(*target, cut); });
  EXPECT_NE(msg.find(cut), std::string::npos) << msg;
  EXPECT_EQ(msg.find("(no error)"), std::string::npos);
}

TEST(Pretrained, CheckpointShapedBuildTakesClassesAndDeployForm) {
  test::TempDir dir("pretrained_build");
  auto train_form = model_named("slak_tiny_test", 3, 4);
  train_form->eval();
  save_checkpoint(dir.file("train.safetensors"), *train_form);
  save_checkpoint(dir.file("deploy.safetensors"), *reparameterize(dynamic_cast<SLaK&>(*train_form)));
  const std::string cfg = resolve_model_config("slak_tiny_test", test::models_dir());
  auto a = load_model_checkpoint(cfg, dir.file("train.safetensors"));
  auto b = load_model_checkpoint(cfg, dir.file("deploy.safetensors"));
  EXPECT_EQ(a->common().num_classes, 4);
  EXPECT_FALSE(dynamic_cast<SLaK&>(*a).config().small_kernel_merged);
  EXPECT_TRUE(dynamic_cast<SLaK&>(*b).config().small_kernel_merged);
  const Tensor x = test::random_images(2, 64, 3, 9);
  // Same FP32 reordering bound as the re-parameterisation test.
  EXPECT_TRUE(test::all_close(a->forward(ForwardContext{}, x), b->forward(ForwardContext{}, x), 1e-4, 1e-4,
                              "deploy checkpoint logits"));
}

}  // namespace
}  // namespace cnn
