// Fine-tuning from a checkpoint: a model trained by cnn-train, evaluated by cnn-eval (same accuracy as the run's
// own evaluation), re-loaded with --initial-checkpoint (all tensors, or a new classifier for another class count)
// trains on; and the --initial-checkpoint errors (missing file, a FIFO, a NaN weight, another model, a shape
// mismatch, with --resume).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/safetensors.h"
#include "tests/tools/tools_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

std::string write_convmixer(const std::string& path, int kernel) {
  std::ofstream(path) << "family: convmixer\nin_channels: 1\nnum_classes: 10\ninput_size: 28\n"
                         "dim: 16\ndepth: 2\nkernel_size: "
                      << kernel << "\npatch_size: 4\nactivation: gelu\n";
  return path;
}

std::vector<nlohmann::json> records(const std::string& run_dir, const std::string& type) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("type") == type) out.push_back(j);
  }
  return out;
}

std::string only_subdir(const std::string& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir)) found.push_back(e.path());
  EXPECT_EQ(found.size(), 1u) << dir;
  return found.empty() ? "" : found[0].string();
}

const char* kRun = " --device cpu --train-samples 512 --val-samples 256 --batch-size 64 --workers 2 --log-interval 1 ";

TEST(FineTune, EvalReproducesTheRunAndTrainingGoesOn) {
  const std::string dir = tool_scratch_dir();
  const std::string model = write_convmixer(dir + "/mixer.yaml", 7);
  RunResult r = run_tool("cnn-train", "--model " + model + kRun + "--epochs 2 --lr 3e-3 --output " + dir + "/first");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string run = only_subdir(dir + "/first");
  const nlohmann::json last_eval = records(run, "eval").back();
  const std::string ckpt = run + "/checkpoints/last/model.safetensors";

  // cnn-eval of the saved weights on the same 256 test images: the run's own evaluation.
  r = run_tool("cnn-eval", "--model " + model + " --checkpoint " + ckpt +
                               " --dataset fashion-mnist --samples 256 --batch-size 64 --device cpu");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json s = nlohmann::json::parse(r.output.substr(r.output.rfind("{\"")));
  EXPECT_DOUBLE_EQ(s.at("top1").get<double>(), last_eval.at("top1").get<double>());
  EXPECT_DOUBLE_EQ(s.at("top5").get<double>(), last_eval.at("top5").get<double>());
  // Same images, same CPU forward; the loss is averaged in double here and in FP32 per batch there.
  EXPECT_NEAR(s.at("loss").get<double>(), last_eval.at("loss").get<double>(), 1e-5);

  // Same classes: every tensor loads; the first training loss starts near the trained model's, not at ~ln 10.
  r = run_tool("cnn-train", "--model " + model + kRun + "--epochs 1 --lr 1e-4 --initial-checkpoint " + ckpt +
                                " --output " + dir + "/same");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("initial checkpoint: " + ckpt + " (all tensors loaded)"), std::string::npos) << r.output;
  const std::string same = only_subdir(dir + "/same");
  const double first_loss = records(same, "train").front().at("loss").get<double>();
  EXPECT_LT(first_loss, 0.5 * (last_eval.at("loss").get<double>() + std::log(10.0))) << "weights were not loaded";
  EXPECT_EQ(records(same, "start").front().at("initial_checkpoint"), ckpt);

  // Another class count: the classifier is re-initialised and training runs.
  r = run_tool("cnn-train", "--model " + model + kRun + "--epochs 1 --num-classes 12 --initial-checkpoint " + ckpt +
                                " --output " + dir + "/new_head");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("classifier dropped: it has 10 classes, the run 12; re-initialised"), std::string::npos)
      << r.output;
  const std::vector<nlohmann::json> evals = records(only_subdir(dir + "/new_head"), "eval");
  ASSERT_FALSE(evals.empty());
  EXPECT_TRUE(std::isfinite(evals.back().at("loss").get<double>()));

  // Errors, each one line before any training.
  const std::string flags = kRun + std::string("--epochs 1 --output ") + dir + "/err ";
  expect_one_line_error("cnn-train", "--model " + model + flags + "--initial-checkpoint " + dir + "/absent.safetensors",
                        "--initial-checkpoint: safetensors: '" + dir + "/absent.safetensors' does not exist");
  // Read by type (a FIFO would block the read), and every tensor finite (a NaN weight would train on as NaN).
  ASSERT_EQ(::mkfifo((dir + "/fifo.safetensors").c_str(), 0600), 0);
  expect_one_line_error("cnn-train", "--model " + model + flags + "--initial-checkpoint " + dir + "/fifo.safetensors",
                        "--initial-checkpoint: safetensors: '" + dir + "/fifo.safetensors' is a FIFO, not a regular file");
  SafetensorsData nan_file = load_safetensors(ckpt);
  nan_file.tensors.at("head.weight").data<float>()[3] = std::nanf("");
  save_safetensors(dir + "/nan.safetensors", nan_file.tensors, nan_file.metadata);
  expect_one_line_error("cnn-train", "--model " + model + flags + "--initial-checkpoint " + dir + "/nan.safetensors",
                        "--initial-checkpoint: '" + dir + "/nan.safetensors': 'head.weight': element 3 is not finite");
  const std::string k5 = write_convmixer(dir + "/mixer_k5.yaml", 5);
  expect_one_line_error("cnn-train", "--model " + k5 + flags + "--initial-checkpoint " + ckpt,
                        "blocks.0.0.fn.0.weight (expected f32 (16, 1, 5, 5), got f32 (16, 1, 7, 7))");
  expect_one_line_error("cnn-train", "--model convnext_nano_fmnist" + flags + "--initial-checkpoint " + ckpt,
                        "--initial-checkpoint: import_state_dict: '" + ckpt +
                            "' (for convnext 'convnext_nano_fmnist') does not match the model: missing");
  EXPECT_FALSE(fs::exists(dir + "/err")) << "a failed start must not leave a run folder";
}

TEST(FineTune, NotWithResume) {
  const std::string dir = tool_scratch_dir();
  const std::string model = write_convmixer(dir + "/mixer.yaml", 7);
  RunResult r = run_tool("cnn-train", "--model " + model + kRun + "--epochs 2 --stop-after 2 --output " + dir + "/r");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string run = only_subdir(dir + "/r");
  r = run_tool("cnn-train", "--resume " + run + " --initial-checkpoint " + run + "/checkpoints/last/model.safetensors");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--initial-checkpoint: not with --resume"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cnn::test
