// cnn-eval, cnn-export and cnn-predict on small checkpoints: logits on a tensor file equal the model's own, the
// --reparam deploy form evaluates like the training form, Fashion-MNIST evaluation and top-k printing work, and
// every bad input is one line naming the flag or file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/safetensors.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/support/numeric.h"
#include "tests/tools/tools_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

Tensor images(int64_t n, int64_t size, int64_t channels, uint64_t seed) {
  Tensor x = Tensor::empty({n, size, size, channels}, DType::f32);
  x.uniform_(seed, 0, -1.0, 1.0);
  return x;
}

// The JSON summary: the last line of stdout.
nlohmann::json summary_of(const RunResult& r) {
  std::istringstream in(r.output);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') last = line;
  return nlohmann::json::parse(last.empty() ? "{}" : last);
}

Tensor logits_of(const std::string& file) { return load_safetensors(file).tensors.at("logits"); }

TEST(EvalTool, TensorInputsGiveTheModelsLogits) {
  const std::string dir = tool_scratch_dir();
  auto model = save_test_model("slak_tiny_test", 5, dir + "/w.safetensors");
  const Tensor x = images(5, 64, 3, 6);
  const Tensor labels = Tensor::from_vector<int64_t>({0, 3, 9, 2, 2}, {5});
  save_safetensors(dir + "/in.safetensors", {{"images", x}, {"labels", labels}});
  const RunResult r = run_tool("cnn-eval", "--model " + model_config("slak_tiny_test") + " --checkpoint " + dir +
                                               "/w.safetensors --inputs " + dir + "/in.safetensors --save-logits " +
                                               dir + "/logits.safetensors --device cpu --batch-size 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const Tensor want = model->forward(ForwardContext{}, x);
  // Same CPU kernels on batches of 2 instead of 5: per-image results agree to FP32 rounding of the GEMM blocking.
  EXPECT_TRUE(all_close(want, logits_of(dir + "/logits.safetensors"), 1e-5, 1e-5, "cnn-eval logits"));
  const nlohmann::json s = summary_of(r);
  EXPECT_EQ(s.at("images"), 5);
  EXPECT_EQ(s.at("dataset"), "tensors");
  int64_t top1 = 0;
  const std::vector<float> l = want.to_vector<float>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  for (int64_t i = 0; i < 5; ++i) {
    int64_t best = 0;
    for (int64_t k = 1; k < 10; ++k) best = l[size_t(i * 10 + k)] > l[size_t(i * 10 + best)] ? k : best;
    top1 += best == y[size_t(i)];
  }
  EXPECT_DOUBLE_EQ(s.at("top1").get<double>(), double(top1) / 5);
}

TEST(ExportTool, ReparamDeployFormEvaluatesLikeTheTrainingForm) {
  for (const std::string name : {"replknet_tiny_test", "slak_tiny_test"}) {
    SCOPED_TRACE(name);
    const std::string dir = tool_scratch_dir();
    save_test_model(name, 8, dir + "/train.safetensors");
    save_safetensors(dir + "/in.safetensors", {{"images", images(3, 64, 3, 9)}});
    const std::string m = "--model " + model_config(name) + " ";
    RunResult r = run_tool("cnn-export", m + "--checkpoint " + dir + "/train.safetensors --reparam --out " + dir +
                                             "/deploy.safetensors");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("re-parameterised"), std::string::npos) << r.output;
    const auto deploy = load_safetensors(dir + "/deploy.safetensors");
    const std::string lk = name == "slak_tiny_test" ? "stages.0.0.large_kernel." : "stages.0.blocks.0.large_kernel.";
    EXPECT_TRUE(deploy.tensors.count(lk + "lkb_reparam.weight"));
    EXPECT_TRUE(deploy.tensors.count(lk + "lkb_reparam.bias"));
    EXPECT_FALSE(deploy.tensors.count(lk + "small_conv.conv.weight"));
    EXPECT_EQ(deploy.metadata.at("form"), "deploy");
    for (const std::string form : {"train", "deploy"}) {
      r = run_tool("cnn-eval", m + "--checkpoint " + dir + "/" + form + ".safetensors --inputs " + dir +
                                   "/in.safetensors --device cpu --save-logits " + dir + "/" + form + "_logits.safetensors");
      ASSERT_EQ(r.status, 0) << r.output;
    }
    // FP32: one merged kernel instead of two or three folded branches summed (models_test's bound).
    EXPECT_TRUE(all_close(logits_of(dir + "/train_logits.safetensors"), logits_of(dir + "/deploy_logits.safetensors"),
                          1e-4, 1e-4, "deploy vs training logits"));
    expect_one_line_error("cnn-export", m + "--checkpoint " + dir + "/deploy.safetensors --reparam --out " + dir +
                                            "/again.safetensors",
                          "--reparam: the checkpoint is already in deploy form");
  }
}

TEST(ExportTool, PlainExportAndErrors) {
  const std::string dir = tool_scratch_dir();
  save_test_model("convnext_nano_fmnist", 3, dir + "/w.safetensors");
  const std::string m = "--model " + model_config("convnext_nano_fmnist") + " --checkpoint " + dir + "/w.safetensors";
  const RunResult r = run_tool("cnn-export", m + " --out " + dir + "/copy.safetensors");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto a = load_safetensors(dir + "/w.safetensors").tensors, b = load_safetensors(dir + "/copy.safetensors").tensors;
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(bitwise_equal(t, b.at(name), name));
  expect_one_line_error("cnn-export", m + " --reparam --out " + dir + "/x.safetensors",
                        "--reparam: convnext 'convnext_nano_fmnist' has no parallel kernel branches to merge");
  expect_one_line_error("cnn-export", m + " --out " + dir + "/w.safetensors", "--out: must differ from --checkpoint");
  expect_one_line_error("cnn-export", "--model " + model_config("convnext_nano_fmnist") + " --out x", "--checkpoint is required", 2);
}

TEST(EvalTool, FashionMnistSummary) {
  const std::string dir = tool_scratch_dir();
  save_test_model("convnext_nano_fmnist", 4, dir + "/w.safetensors");
  const RunResult r = run_tool("cnn-eval", "--model convnext_nano_fmnist --checkpoint " + dir +
                                               "/w.safetensors --dataset fashion-mnist --samples 96 --batch-size 32 "
                                               "--device cpu");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json s = summary_of(r);
  EXPECT_EQ(s.at("images"), 96);
  EXPECT_EQ(s.at("dataset"), "fashion-mnist");
  EXPECT_GE(s.at("top5").get<double>(), s.at("top1").get<double>());
  EXPECT_GT(s.at("loss").get<double>(), 0.0);
  EXPECT_NE(r.output.find("eval: 3/3 batches"), std::string::npos) << r.output;
}

TEST(EvalTool, BadInputsAreOneLineErrors) {
  const std::string dir = tool_scratch_dir();
  save_test_model("convmixer_128_6_k7_p2", 4, dir + "/mixer.safetensors");
  const std::string mixer = "--model convmixer_128_6_k7_p2 --checkpoint " + dir + "/mixer.safetensors --device cpu ";
  expect_one_line_error("cnn-eval", "--model convmixer_128_6_k7_p2 --checkpoint " + dir + "/absent.safetensors",
                        "safetensors: '" + dir + "/absent.safetensors' does not exist");
  // Inputs are read by type (a FIFO would block the read), and a checkpoint with a NaN is refused before scoring
  // (a NaN row of logits would rank every label first).
  ASSERT_EQ(::mkfifo((dir + "/fifo.safetensors").c_str(), 0600), 0);
  expect_one_line_error("cnn-eval", "--model convmixer_128_6_k7_p2 --checkpoint " + dir + "/fifo.safetensors",
                        "safetensors: '" + dir + "/fifo.safetensors' is a FIFO, not a regular file");
  expect_one_line_error("cnn-eval", "--model convmixer_128_6_k7_p2 --checkpoint " + dir,
                        "safetensors: '" + dir + "' is a folder, not a regular file");
  expect_one_line_error("cnn-eval", "--model " + dir + " --checkpoint " + dir + "/mixer.safetensors",
                        "--model: '" + dir + "' is a folder, not a regular file");
  SafetensorsData nan_file = load_safetensors(dir + "/mixer.safetensors");
  nan_file.tensors.at("head.bias").data<float>()[1] = std::nanf("");
  save_safetensors(dir + "/nan.safetensors", nan_file.tensors, nan_file.metadata);
  expect_one_line_error("cnn-eval", "--model convmixer_128_6_k7_p2 --checkpoint " + dir + "/nan.safetensors " +
                                        "--inputs " + dir + "/mixer.safetensors",
                        "'" + dir + "/nan.safetensors': 'head.bias': element 1 is not finite (nan)");
  expect_one_line_error("cnn-eval", "--model convnext_nano_fmnist --checkpoint " + dir + "/mixer.safetensors",
                        "does not match the model: missing");
  expect_one_line_error("cnn-eval", "--model no_such_model --checkpoint " + dir + "/mixer.safetensors",
                        "unknown model 'no_such_model'");
  expect_one_line_error("cnn-eval", mixer + "--dataset cifar", "--dataset: expected imagenet or fashion-mnist, got 'cifar'");
  expect_one_line_error("cnn-eval", mixer + "--dataset imagenet", "--data-dir: required for --dataset imagenet");
  expect_one_line_error("cnn-eval", mixer + "--dataset fashion-mnist --samples 20000",
                        "--samples: expected at most the 10000 samples of the split, got 20000");
  expect_one_line_error("cnn-eval", mixer + "--dataset fashion-mnist --batch-size 0", "--batch-size: expected an integer >= 1");
  expect_one_line_error("cnn-eval", mixer + "--dataset fashion-mnist --split validation",
                        "--split: expected test or train for fashion-mnist, got 'validation'");
  expect_one_line_error("cnn-eval", mixer + "--amp", "--amp: FP16 compute needs a CUDA device");
  save_safetensors(dir + "/noimg.safetensors", {{"pixels", images(1, 28, 1, 1)}});
  expect_one_line_error("cnn-eval", mixer + "--inputs " + dir + "/noimg.safetensors", "has no tensor 'images'");
  save_safetensors(dir + "/rgb.safetensors", {{"images", images(1, 28, 3, 1)}});
  expect_one_line_error("cnn-eval", mixer + "--inputs " + dir + "/rgb.safetensors",
                        "expected 'images' F32 (N, H, W, 1), got f32 (1, 28, 28, 3)");
  expect_one_line_error("cnn-eval", "--checkpoint x", "--model is required", 2);
}

TEST(PredictTool, TopFiveWithClassNames) {
  const std::string dir = tool_scratch_dir();
  save_test_model("convnext_nano_fmnist", 4, dir + "/fmnist.safetensors");
  cv::Mat gray(40, 32, CV_8UC1);
  cv::randu(gray, 0, 255);
  const std::vector<uint8_t> jpeg = data::encode_jpeg(gray, data::JpegPixels::gray, 95);
  std::ofstream(dir + "/img.jpg", std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()), long(jpeg.size()));
  RunResult r = run_tool("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors " +
                                            dir + "/img.jpg");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 6) << r.output;
  double total = 0;
  int named = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.find('%') == std::string::npos) continue;
    total += std::stod(line);
    for (const char* name : data::kFashionMnistClasses) named += line.ends_with(std::string("  ") + name) ? 1 : 0;
  }
  EXPECT_EQ(named, 5) << "each line names a Fashion-MNIST class:\n" << r.output;
  EXPECT_GT(total, 0.0);
  EXPECT_LE(total, 100.0 + 1e-6);

  // A 1000-class model prints ImageNet names.
  ModelConfig config = load_model_config(model_config("replknet_tiny_test"));
  model_common(config).num_classes = 1000;
  auto big = build_model(config);
  big->init_weights(1);
  save_checkpoint(dir + "/in1k.safetensors", *big);
  cv::Mat rgb(70, 90, CV_8UC3);
  cv::randu(rgb, 0, 255);
  const std::vector<uint8_t> color = data::encode_jpeg(rgb, data::JpegPixels::rgb, 95);
  std::ofstream(dir + "/rgb.jpg", std::ios::binary).write(reinterpret_cast<const char*>(color.data()), long(color.size()));
  r = run_tool("cnn-predict", "--model replknet_tiny_test --checkpoint " + dir + "/in1k.safetensors --top 3 " + dir +
                                  "/rgb.jpg");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 4) << r.output;
  EXPECT_NE(r.output.find("(n0"), std::string::npos) << r.output;

  expect_one_line_error("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors " +
                                           dir + "/absent.jpg",
                        "image: '" + dir + "/absent.jpg' does not exist");
  expect_one_line_error("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors " + dir,
                        "image: '" + dir + "' is a folder, not a regular file");
  expect_one_line_error("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors " +
                                           "--class-names " + dir + " " + dir + "/img.jpg",
                        "--class-names: '" + dir + "' is a folder, not a regular file");
  expect_one_line_error("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors --top 0 " +
                                           dir + "/img.jpg",
                        "--top: expected an integer >= 1, got 0");
  expect_one_line_error("cnn-predict", "--model convnext_nano_fmnist --checkpoint " + dir + "/fmnist.safetensors " +
                                           "--class-names " + dir + "/img.jpg " + dir + "/img.jpg",
                        "--class-names: '" + dir + "/img.jpg' has");
}

}  // namespace
}  // namespace cnn::test
