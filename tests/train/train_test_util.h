// Helpers for the cnn-train tests: run the built binary (path from CMake: CNN_TRAIN_BIN) as a subprocess, a
// scratch folder per test, tiny model YAMLs, and metrics JSONL reading.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/subprocess.h"

namespace cnn::test {

// Runs `cnn-train <args>` with stdout and stderr captured.
RunResult run_train(const std::string& args);
// Runs `binary <args>` likewise (cnn-compare, cnn-plot; resolved by binary_path, tests/support/subprocess.h).
RunResult run_binary(const std::string& binary, const std::string& args);

// A fresh empty folder under the test temp dir, named after the running test.
std::string scratch_dir();

// Writes tiny model configs into `dir` and returns their paths: a ConvMixer (dim 16, depth 2, 7x7, patch 4) and a
// ConvNeXt (two stages of 16 / 32 channels, 7x7, drop_path_rate 0.1), both 28x28x1 with 10 classes.
std::string write_tiny_convmixer(const std::string& dir);
std::string write_tiny_convnext(const std::string& dir);

// The only run folder under `output` (fails the test when there is not exactly one).
std::string only_run_dir(const std::string& output);

// Every line of a metrics file parsed (a line that is not a JSON object fails the test).
std::vector<nlohmann::json> read_metrics(const std::string& path);
// (step, loss) of the "train" records / (step, top1, top5, loss) of the "eval" records, in file order.
std::vector<std::pair<int64_t, double>> train_losses(const std::vector<nlohmann::json>& records);
std::vector<std::vector<double>> eval_results(const std::vector<nlohmann::json>& records);

// Common flags of the small Fashion-MNIST runs: CPU, 512 / 256 sample subsets, batch 64, a metrics record per
// step, into `output` (no --output when empty).
std::string small_run_flags(const std::string& model, const std::string& output);

}  // namespace cnn::test
