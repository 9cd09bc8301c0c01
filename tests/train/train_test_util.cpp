// Subprocess runner, scratch folders, tiny models and metrics parsing for the cnn-train tests.
#include "tests/train/train_test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/scratch_dir.h"

namespace cnn::test {

namespace fs = std::filesystem;

RunResult run_train(const std::string& args) { return run_binary(CNN_TRAIN_BIN, args); }

RunResult run_binary(const std::string& binary, const std::string& args) {
  return run_command(binary_path(binary) + " " + args);
}

std::string scratch_dir() { return test_scratch_dir("cnn_train_"); }

namespace {

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace

std::string write_tiny_convmixer(const std::string& dir) {
  return write_text(dir + "/tiny_convmixer.yaml",
                    "family: convmixer\nin_channels: 1\nnum_classes: 10\ninput_size: 28\n"
                    "dim: 16\ndepth: 2\nkernel_size: 7\npatch_size: 4\nactivation: gelu\n");
}

std::string write_tiny_convnext(const std::string& dir) {
  return write_text(dir + "/tiny_convnext.yaml",
                    "family: convnext\nin_channels: 1\nnum_classes: 10\ninput_size: 28\npatch_size: 4\n"
                    "drop_path_rate: 0.1\nstages:\n  - {depth: 1, dim: 16, kernel_size: 7}\n"
                    "  - {depth: 1, dim: 32, kernel_size: 7}\n");
}

std::string only_run_dir(const std::string& output) {
  std::vector<std::string> dirs;
  if (fs::is_directory(output))
    for (const auto& e : fs::directory_iterator(output))
      if (e.is_directory()) dirs.push_back(e.path().string());
  EXPECT_EQ(dirs.size(), 1u) << "run folders under " << output;
  return dirs.empty() ? std::string() : dirs.front();
}

std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<nlohmann::json> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(!j.is_discarded() && j.is_object()) << path << ":" << n << ": not a JSON object: " << line;
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::pair<int64_t, double>> train_losses(const std::vector<nlohmann::json>& records) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& r : records)
    if (r.at("type") == "train") out.emplace_back(r.at("step").get<int64_t>(), r.at("loss").get<double>());
  return out;
}

std::vector<std::vector<double>> eval_results(const std::vector<nlohmann::json>& records) {
  std::vector<std::vector<double>> out;
  for (const auto& r : records)
    if (r.at("type") == "eval")
      out.push_back({r.at("step").get<double>(), r.at("top1").get<double>(), r.at("top5").get<double>(),
                     r.at("loss").get<double>()});
  return out;
}

std::string small_run_flags(const std::string& model, const std::string& output) {
  const std::string flags = "--model " + model +
                            " --device cpu --train-samples 512 --val-samples 256 "
                            "--batch-size 64 --workers 2 --log-interval 1";
  return output.empty() ? flags : flags + " --output " + output;
}

}  // namespace cnn::test
