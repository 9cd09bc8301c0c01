// cnn-train on a CUDA device (label gpu; skipped without one): FP32 and --amp runs on a Fashion-MNIST subset
// learn, log the loss scaler, write FP32 master checkpoints, and continue after --stop-after / --resume.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/safetensors.h"
#include "tests/support/numeric.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

std::string gpu_flags(const std::string& model, const std::string& output) {
  return "--model " + model +
         " --device cuda --train-samples 1024 --val-samples 256 --batch-size 64 --workers 2 "
         "--log-interval 1 --epochs 3 --lr 0.005 --output " +
         output;
}

// Mean of the first and the last `n` per-step losses.
std::pair<double, double> first_last_means(const std::vector<std::pair<int64_t, double>>& losses, size_t n) {
  double first = 0, last = 0;
  for (size_t i = 0; i < n; ++i)
    first += losses[i].second / double(n), last += losses[losses.size() - n + i].second / double(n);
  return {first, last};
}

TEST(TrainGpu, Fp32AndAmpRunsLearn) {
  CNN_REQUIRE_GPU();
  const std::string dir = scratch_dir(), model = write_tiny_convnext(dir);
  for (const char* precision : {"--no-amp", "--amp", "--amp --bfc-accum ha"}) {
    SCOPED_TRACE(precision);
    const std::string out = dir + "/runs_" + std::to_string(std::hash<std::string>{}(precision));
    const RunResult r = run_train(gpu_flags(model, out) + " " + precision);
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string run = only_run_dir(out);
    const auto records = read_metrics(run + "/metrics.jsonl");
    const auto losses = train_losses(records);
    ASSERT_EQ(losses.size(), 48u);  // 16 steps per epoch, 3 epochs
    for (const auto& [step, loss] : losses) ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    const auto [first, last] = first_last_means(losses, 16);
    // Chance level is ln(10) = 2.30; FP16 compute must learn as FP32 does.
    EXPECT_LT(last, 0.75 * first) << "first epoch " << first << ", last epoch " << last;
    const bool amp = std::string(precision) != "--no-amp";
    for (const auto& rec : records)
      if (rec.at("type") == "train") {
        EXPECT_EQ(rec.contains("loss_scale"), amp) << rec.dump();
      }
    // Checkpoints hold the FP32 masters and, with --amp, the scaler state.
    const SafetensorsData model_sd = load_safetensors(run + "/checkpoints/last/model.safetensors");
    for (const auto& [name, t] : model_sd.tensors)
      if (dtype_is_floating(t.dtype())) {
        EXPECT_EQ(t.dtype(), DType::f32) << name;
      }
    const SafetensorsData state = load_safetensors(run + "/checkpoints/last/state.safetensors");
    EXPECT_EQ(state.tensors.count("loss_scaler.scale"), amp ? 1u : 0u);
  }
}

TEST(TrainGpu, AmpStopAndResume) {
  CNN_REQUIRE_GPU();
  const std::string dir = scratch_dir(), model = write_tiny_convmixer(dir);
  const RunResult first = run_train(gpu_flags(model, dir + "/runs") + " --amp --stop-after 5");
  ASSERT_EQ(first.status, 0) << first.output;
  const std::string run = only_run_dir(dir + "/runs");
  const RunResult second = run_train("--resume " + run);
  ASSERT_EQ(second.status, 0) << second.output;
  const auto losses = train_losses(read_metrics(run + "/metrics.jsonl"));
  ASSERT_EQ(losses.size(), 48u);
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_EQ(losses[i].first, int64_t(i + 1)) << "record " << i;
}

}  // namespace
}  // namespace cnn::test
