// cnn-train command-line and recipe errors: each bad input is refused before any work with exactly one line of
// output naming the flag / file:line:col and key, and a non-zero exit status.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/device.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

struct ErrorCase {
  std::string args;
  std::string expected;  // substring of the one output line
};

void expect_one_line_error(const ErrorCase& c) {
  const RunResult r = run_train(c.args);
  EXPECT_NE(r.status, 0) << "cnn-train " << c.args << " succeeded:\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
      << "cnn-train " << c.args << ": expected one line, got:\n"
      << r.output;
  EXPECT_NE(r.output.find(c.expected), std::string::npos)
      << "cnn-train " << c.args << ": expected '" << c.expected << "' in:\n"
      << r.output;
  EXPECT_EQ(r.output.find("run folder:"), std::string::npos) << "training started for: " << c.args;
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// The binaries the tests run are taken from beside the test executable (a device bundle's folder, or the build's),
// and from CMake's path where that folder has no such file.
TEST(TrainCli, BinariesComeFromBesideTheTestExecutable) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(binary_path("/elsewhere/bin/" + self.filename().string()), self.string());
  EXPECT_EQ(binary_path("/build/bin/no-such-tool"), "/build/bin/no-such-tool");
}

TEST(TrainCli, FlagErrors) {
  const std::string dir = scratch_dir();
  const std::string m = "--model " + write_tiny_convmixer(dir) + " --output " + dir + "/runs ";
  const std::vector<ErrorCase> cases = {
      {m + "--bogus 3", "--bogus"},
      {m + "--batch-size x", "--batch-size: expected an integer in [1, 1048576], got 'x'"},
      {m + "--batch-size 0", "--batch-size: expected an integer in [1, 1048576], got '0'"},
      {m + "--lr=-1", "--lr: expected a number > 0, got '-1'"},
      {m + "--epochs 1.5", "--epochs: expected an integer"},
      {m + "--dataset cifar", "--dataset: expected one of imagenet, fashion-mnist, synthetic, got 'cifar'"},
      {m + "--sched step", "--sched: expected one of cosine, constant"},
      {m + "--opt sgd", "--opt: expected one of adamw"},
      {m + "--label-smoothing 1", "--label-smoothing: expected a number in [0, 1)"},
      {m + "--device tpu", "--device: expected cpu, cuda, cuda:N or auto, got 'tpu'"},
      {m + "--amp --device cpu", "--amp: mixed precision needs a CUDA device"},
      {m + "--bfc-accum ha", "--bfc-accum: 'ha' selects the FP16 backward-filter accumulation and needs --amp"},
      {m + "--drop-path 0.1", "has no stochastic depth"},
      {m + "--min-lr 0.1 --lr 0.01", "--min-lr: expected <= --lr"},
      {m + "--warmup-epochs 3 --epochs 2", "--warmup-epochs: expected fewer than --epochs (2), got 3"},
      {m + "--warmup-epochs 1e300", "--warmup-epochs: expected fewer than --epochs (10), got 1e+300"},
      {m + "--warmup-epochs 1.5 --epochs 2 --train-samples 64 --batch-size 64",
       "--warmup-epochs: expected fewer warmup steps than the run's 2 steps"},
      {m + "--steps 5", "--steps: only with --synthetic"},
      {m + "--synthetic --stop-after 3", "--stop-after: not with --synthetic"},
      {m + "--bench-seconds 2", "--bench-seconds: only with --bench-data"},
      {m + "--bench-data --synthetic", "--bench-data: not with --synthetic"},
      {m + "--bench-data --bench-seconds 0", "--bench-seconds: expected a number in [0.5, 3600]"},
      {m + "--data-dir " + dir + "/missing", "--data-dir: '" + dir + "/missing' is not a folder"},
      {m + "--dataset imagenet", "--data-dir: required for --dataset imagenet"},
      {m + "--train-samples 70000", "--train-samples: expected at most the 60000 samples the split has"},
      {m + "--train-samples 32 --batch-size 64", "--batch-size: 64 exceeds the 32 training samples"},
      {m + "--num-classes 5", "--num-classes: the model has 5 outputs, --dataset fashion-mnist has 10 classes"},
      {"--model no_such_model", "unknown model 'no_such_model'"},
      {"--epochs 2", "--model: no model given"},
      {"--model replknet_tiny_test", "takes 3-channel images, --dataset fashion-mnist has 1"},
      {m + "--resume " + dir + "/nowhere", "--resume: '" + dir + "/nowhere' is not a folder"},
      {m + "--resume " + dir, "holds neither state.safetensors nor checkpoints/last/state.safetensors"},
      {m + "--config " + dir + "/none.yaml", "--config: '" + dir + "/none.yaml' does not exist"},
      // A trace is replayed without stochastic depth (bench/e2e_loss_check.py): the model's own rate (0.1) and an
      // explicit one are both refused before the trace folder is made.
      {"--model replknet_tiny_test --synthetic --bench-warmup 0 --device cpu --trace-dir " + dir + "/trace",
       "--trace-dir: needs --drop-path 0 (a replay cannot draw stochastic depth's random masks), got 0.1, the rate of "
       "replknet_tiny_test"},
      {"--model replknet_tiny_test --synthetic --bench-warmup 0 --device cpu --drop-path 0.2 --trace-dir " + dir +
           "/trace",
       "--trace-dir: needs --drop-path 0 (a replay cannot draw stochastic depth's random masks), got 0.2"},
  };
  for (const ErrorCase& c : cases) expect_one_line_error(c);
  EXPECT_FALSE(fs::exists(dir + "/trace")) << "a refused --trace-dir run made its folder";
}

TEST(TrainCli, TraceWithoutStochasticDepth) {
  // --drop-path 0 makes a model with stochastic depth traceable: the run writes the weights, the batch and the loss.
  const std::string dir = scratch_dir();
  const RunResult r = run_train(
      "--model replknet_tiny_test --synthetic --steps 1 --bench-warmup 0 --batch-size 2 --device cpu --workers 1 "
      "--sched constant --drop-path 0 --trace-dir " +
      dir + "/trace");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* f : {"init.safetensors", "batch_0.safetensors", "losses.json"})
    EXPECT_TRUE(fs::exists(dir + "/trace/" + f)) << f << " missing; output:\n" << r.output;
}

TEST(TrainCli, NoCudaDeviceIsAnError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: --device cuda is valid here";
  const std::string dir = scratch_dir();
  expect_one_line_error({"--model " + write_tiny_convmixer(dir) + " --device cuda", "--device"});
}

TEST(TrainCli, RecipeErrors) {
  const std::string dir = scratch_dir();
  const std::string m = "--model " + write_tiny_convmixer(dir) + " --output " + dir + "/runs --config ";
  const std::vector<ErrorCase> cases = {
      {m + write(dir + "/unknown.yaml", "epochs: 2\ncolour: blue\n"), "unknown.yaml:2:1: colour: unknown key"},
      {m + write(dir + "/value.yaml", "epochs: two\n"),
       "value.yaml:1:9: epochs: expected an integer in [1, 100000], "
       "got 'two'"},
      {m + write(dir + "/quoted.yaml", "lr: \"0.1\"\n"), "quoted.yaml:1:5: lr: expected a number > 0, got the string"},
      {m + write(dir + "/dup.yaml", "epochs: 2\nepochs: 3\n"),
       "dup.yaml:2:1: epochs: duplicate key (first at line 1:1)"},
      {m + write(dir + "/control.yaml", "stop_after: 3\n"), "control.yaml:1:1: stop_after: unknown key"},
      {m + write(dir + "/syntax.yaml", "epochs: [2\n"), "syntax.yaml:"},
      {m + write(dir + "/list.yaml", "- epochs\n"), "expected a YAML map at the top level"},
  };
  for (const ErrorCase& c : cases) expect_one_line_error(c);
}

TEST(TrainCli, FlagsOverrideTheRecipe) {
  const std::string dir = scratch_dir();
  const std::string recipe = write(dir + "/r.yaml",
                                   "epochs: 1\nbatch_size: 64\nlr: 0.002\ntrain_samples: 128\n"
                                   "val_samples: 64\nlog_interval: 1\n");
  const RunResult r = run_train("--model " + write_tiny_convmixer(dir) + " --device cpu --output " + dir +
                                "/runs --config " + recipe + " --lr 0.004 --epochs 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string run = only_run_dir(dir + "/runs");
  std::ifstream in(run + "/config.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("lr: 0.004\n"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("epochs: 2\n"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("batch_size: 64\n"), std::string::npos) << ss.str();
  // The resolved config reloads as a recipe (it holds every persisted key, resolved).
  const RunResult again = run_train("--model " + write_tiny_convmixer(dir) + " --output " + dir + "/runs2 --config " +
                                    run + "/config.yaml --epochs 1");
  EXPECT_EQ(again.status, 0) << again.output;
}

TEST(TrainCli, EveryRecipeInConfigsTrainLoads) {
  const char* src = std::getenv("CNN_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "CNN_SOURCE_DIR must point at the source tree (set by ctest)";
  const fs::path recipes = fs::path(src) / "configs" / "train";
  int n = 0;
  for (const auto& e : fs::directory_iterator(recipes)) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    // One benchmark step with the recipe proves every key binds and the model builds (no data, no files).
    // GPU recipes turn on --amp / --bfc-accum ha, which the CPU refuses, and subset sizes exceed the synthetic
    // set: switch them off here.
    const RunResult r = run_train("--config " + e.path().string() +
                                  " --synthetic --steps 1 --bench-warmup 0 --batch-size 2 --device cpu --workers 1 "
                                  "--no-amp --bfc-accum fp32 --train-samples 0 --val-samples 0");
    EXPECT_EQ(r.status, 0) << e.path() << ":\n" << r.output;
    EXPECT_NE(r.output.find("img/s"), std::string::npos) << r.output;
  }
  EXPECT_GE(n, 1) << "no recipes in " << recipes;
}

}  // namespace
}  // namespace cnn::test
