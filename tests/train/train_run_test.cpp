// Short CPU training runs of cnn-train on a Fashion-MNIST subset: the loss falls, the metrics file is well-formed,
// checkpoints are present, loadable and pruned, and benchmark mode prints its timing without writing files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

TEST(TrainRun, LossFallsAndFilesAreWellFormed) {
  const std::string dir = scratch_dir(), model = write_tiny_convmixer(dir);
  // 512 samples / 64 = 8 steps per epoch, 4 epochs; eval every 4 steps; keep one periodic checkpoint.
  const RunResult r = run_train(small_run_flags(model, dir + "/runs") +
                                " --epochs 4 --lr 0.005 --eval-interval 4 --keep 1 --clip-grad 1 --accum-steps 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("img/s"), std::string::npos) << r.output;  // plain log lines when not on a terminal
  EXPECT_NE(r.output.find("ETA"), std::string::npos) << r.output;
  const std::string run = only_run_dir(dir + "/runs");
  ASSERT_TRUE(fs::is_regular_file(run + "/config.yaml"));

  const std::vector<nlohmann::json> records = read_metrics(run + "/metrics.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front().at("type"), "start");
  EXPECT_EQ(records.back().at("type"), "end");
  int64_t prev_step = 0;
  for (const nlohmann::json& rec : records) {
    ASSERT_TRUE(rec.contains("type") && rec.contains("step")) << rec.dump();
    const int64_t step = rec.at("step").get<int64_t>();
    EXPECT_GE(step, prev_step) << "steps must not go back: " << rec.dump();
    prev_step = step;
    if (rec.at("type") == "train") {
      EXPECT_TRUE(std::isfinite(rec.at("loss").get<double>()) && rec.at("lr").get<double>() > 0) << rec.dump();
      EXPECT_TRUE(rec.contains("grad_norm") && rec.contains("img_per_s")) << rec.dump();
    }
  }
  const auto losses = train_losses(records);
  ASSERT_EQ(losses.size(), 32u);  // log_interval 1: one record per step
  double first = 0, last = 0;     // mean loss of the first and the last epoch
  for (int i = 0; i < 8; ++i) first += losses[size_t(i)].second / 8, last += losses[size_t(24 + i)].second / 8;
  // Chance level is ln(10) = 2.30; a network that learns nothing stays there.
  EXPECT_LT(last, 0.75 * first) << "first epoch mean loss " << first << ", last epoch " << last;
  const auto evals = eval_results(records);
  ASSERT_EQ(evals.size(), 8u);  // every 4 steps
  EXPECT_GT(evals.back()[1], 0.4) << "top-1 after 4 epochs (chance 0.1)";
  EXPECT_GE(evals.back()[2], evals.back()[1]) << "top-5 >= top-1";

  // Checkpoints: last -> the final step, best -> the best eval; periodic ones pruned to --keep 1.
  const fs::path ckpts = fs::path(run) / "checkpoints";
  ASSERT_TRUE(fs::is_symlink(ckpts / "last") && fs::is_symlink(ckpts / "best"));
  EXPECT_EQ(fs::read_symlink(ckpts / "last").string(), "step_00000032");
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(ckpts)) dirs += e.is_directory() && !e.is_symlink() ? 1 : 0;
  EXPECT_LE(dirs, 3) << "keep 1 + last + best";
  for (const char* f : {"model.safetensors", "state.safetensors"}) {
    EXPECT_TRUE(fs::is_regular_file(ckpts / "last" / f)) << f;
    EXPECT_TRUE(fs::is_regular_file(ckpts / "best" / f)) << f;
  }
  // The weights load strictly into the same architecture; the state holds the optimizer and the position.
  auto net = build_model(load_model_config(model));
  EXPECT_NO_THROW(load_checkpoint((ckpts / "last" / "model.safetensors").string(), *net));
  const SafetensorsData state = load_safetensors((ckpts / "last" / "state.safetensors").string());
  EXPECT_EQ(state.tensors.at("optim.step").to_vector<int64_t>()[0], 32);
  EXPECT_EQ(state.tensors.at("train.step").to_vector<int64_t>()[0], 32);
  EXPECT_EQ(state.tensors.at("train.epoch").to_vector<int64_t>()[0], 4);
  EXPECT_EQ(state.tensors.at("train.next_batch").to_vector<int64_t>()[0], 0);
  EXPECT_EQ(state.metadata.at("format"), "cnn-train-state-2");
  for (const auto& e : fs::recursive_directory_iterator(run))  // no temporary files left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(TrainRun, AccumulationSyntheticDataAndDropPath) {
  const std::string dir = scratch_dir();
  // ConvNeXt with LayerScale and stochastic depth, 2 micro-batches per step, label smoothing, synthetic data.
  const RunResult r = run_train("--model " + write_tiny_convnext(dir) +
                                " --device cpu --dataset synthetic "
                                "--synthetic-size 256 --batch-size 32 --accum-steps 2 --epochs 2 --drop-path 0.2 "
                                "--label-smoothing 0.1 --warmup-epochs 0.5 --log-interval 2 --output " +
                                dir + "/runs");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto records = read_metrics(only_run_dir(dir + "/runs") + "/metrics.jsonl");
  const auto losses = train_losses(records);
  ASSERT_EQ(losses.size(), 4u);  // 8 micro-batches = 4 steps per epoch, 2 epochs, a record every 2 steps
  for (const auto& [step, loss] : losses) EXPECT_TRUE(std::isfinite(loss)) << "step " << step;
}

TEST(TrainRun, BenchmarkModePrintsTimingAndWritesNothing) {
  const std::string dir = scratch_dir();
  const RunResult r = run_train("--model " + write_tiny_convmixer(dir) +
                                " --device cpu --synthetic --steps 3 "
                                "--bench-warmup 1 --batch-size 16 --output " +
                                dir + "/runs");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ms/step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("img/s"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/runs")) << "benchmark mode must not create a run folder";
}

}  // namespace
}  // namespace cnn::test
