// cnn-train against bad inputs the reliability issue listed: non-finite training (skipped, counted, stopped with an
// error; never scored, never saved), a tampered run folder or checkpoint (config.yaml edits, counters past the run,
// non-finite or negative optimizer state, unknown tensors), stale temporaries of a killed save, and the command-line
// cases that used to crash or mislead (FIFO / folder as --model, in_channels, huge models, --seed INT64_MAX).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "core/safetensors.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

void expect_refused(const RunResult& r, const std::string& expected, const std::string& what) {
  EXPECT_EQ(r.status, 1) << what << ":\n" << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << what << ": expected '" << expected << "' in:\n" << r.output;
  EXPECT_EQ(r.output.find(" at /"), std::string::npos) << what << ": a source place reached the user:\n" << r.output;
}

// Rewrites one tensor of a safetensors file (keeping its metadata), or adds one.
void edit_tensor(const std::string& path, const std::string& name, const std::function<void(Tensor&)>& edit) {
  SafetensorsData d = load_safetensors(path);
  Tensor& t = d.tensors[name];
  edit(t);
  save_safetensors(path, d.tensors, d.metadata);
}

// A stopped run of the tiny ConvMixer (512 samples / 64 = 8 steps per epoch), stopped after `stop` steps; returns
// the run folder.
std::string stopped_run(const std::string& dir, int64_t stop, const std::string& extra = "") {
  const std::string model = write_tiny_convmixer(dir);
  const RunResult r =
      run_train(small_run_flags(model, dir + "/runs") + " --epochs 2 --stop-after " + std::to_string(stop) + extra);
  EXPECT_EQ(r.status, 0) << r.output;
  return only_run_dir(dir + "/runs");
}

TEST(TrainReliability, NonFiniteStepsAreSkippedThenStopTheRun) {
  const std::string dir = scratch_dir(), run = stopped_run(dir, 3);
  // A huge but finite classifier weight: the forward overflows, every loss is non-finite.
  edit_tensor(run + "/checkpoints/last/model.safetensors", "head.weight",
              [](Tensor& t) { t.fill_(3e38); });
  const RunResult r = run_train("--resume " + run + " --max-nonfinite-steps 3");
  expect_refused(r, "step 6: 3 consecutive steps with a non-finite loss or gradient norm", "non-finite run");
  EXPECT_NE(r.output.find("checkpoints/last stays at step 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 4: non-finite loss"), std::string::npos) << r.output;
  // No metrics record holds a null loss, and `last` still points at the finite checkpoint of step 3.
  EXPECT_EQ(read_text(run + "/metrics.jsonl").find("null"), std::string::npos);
  EXPECT_EQ(fs::read_symlink(run + "/checkpoints/last").filename().string(), "step_00000003");
}

TEST(TrainReliability, EvaluationRefusesNonFiniteLogits) {
  // Stopped at the end of epoch 1; the resumed epoch's steps are all skipped, then its evaluation meets inf logits.
  const std::string dir = scratch_dir(), run = stopped_run(dir, 8);
  edit_tensor(run + "/checkpoints/last/model.safetensors", "head.weight", [](Tensor& t) { t.fill_(3e38); });
  const RunResult r = run_train("--resume " + run + " --max-nonfinite-steps 100");
  expect_refused(r, "evaluation at step 16: the model's logits are not finite", "eval of inf logits");
  // No best checkpoint was made of it.
  EXPECT_NE(fs::read_symlink(run + "/checkpoints/best").filename().string(), "step_00000016");
}

TEST(TrainReliability, ATamperedCheckpointIsRefused) {
  const std::string dir = scratch_dir(), run = stopped_run(dir, 3);
  const std::string ckpt = run + "/checkpoints/last", state = ckpt + "/state.safetensors";
  const std::string model = ckpt + "/model.safetensors";
  const std::string state_copy = dir + "/state.bak", model_copy = dir + "/model.bak";
  fs::copy_file(state, state_copy);
  fs::copy_file(model, model_copy);
  struct Case {
    const char* what;
    std::string file;
    std::string tensor;
    std::function<void(Tensor&)> edit;
    std::string expected;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> cases = {
      {"NaN weight", model, "blocks.0.0.fn.0.weight", [&](Tensor& t) { t.data<float>()[5] = nan; }, "is not finite"},
      {"NaN exp_avg", state, "optim.head.weight.exp_avg", [&](Tensor& t) { t.data<float>()[0] = nan; },
       "'optim.head.weight.exp_avg': element 0 is not finite"},
      {"negative exp_avg_sq", state, "optim.head.weight.exp_avg_sq", [](Tensor& t) { t.data<float>()[2] = -1; },
       "element 2 is -1 (a second moment is never negative)"},
      {"step far past the run", state, "train.step",
       [](Tensor& t) { t.data<int64_t>()[0] = int64_t(1) << 62; }, "train.step 4611686018427387904 does not match"},
      {"negative loss counter", state, "train.log_loss_count", [](Tensor& t) { t.data<int64_t>()[0] = -4; },
       "train.log_loss_count -4 outside"},
      {"extra tensor", state, "train.extra", [](Tensor& t) { t = Tensor::from_vector<float>({1}, {1}); },
       "unexpected tensor 'train.extra'"},
  };
  for (const Case& c : cases) {
    edit_tensor(c.file, c.tensor, c.edit);
    expect_refused(run_train("--resume " + run), c.expected, c.what);
    fs::copy_file(state_copy, state, fs::copy_options::overwrite_existing);
    fs::copy_file(model_copy, model, fs::copy_options::overwrite_existing);
  }
  // Restored, it resumes.
  EXPECT_EQ(run_train("--resume " + run + " --stop-after 4").status, 0);
}

TEST(TrainReliability, AnEditedConfigYamlIsRefusedAndFlagsFollowTheRuleTable) {
  const std::string dir = scratch_dir(), run = stopped_run(dir, 3);
  const std::string yaml = run + "/config.yaml", original = read_text(yaml);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = original;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"batch_size: 64\n", "batch_size: 32\n", "config.yaml: batch_size is 32, but the checkpoint"},
      {"train_samples: 512\n", "train_samples: 128\n", "config.yaml: train_samples is 128, but the checkpoint"},
      {"accum_steps: 1\n", "accum_steps: 2\n", "config.yaml: accum_steps is 2"},
      {"dataset: \"fashion-mnist\"\n", "dataset: \"synthetic\"\n", "config.yaml: dataset is \"synthetic\""},
      {"lr: 0.001\n", "lr: 0.01\n", "to change lr pass --lr"},
  };
  for (const Case& c : cases) {
    write_text(yaml, edited(c.from, c.to));
    expect_refused(run_train("--resume " + run), c.expected, c.from);
  }
  // A changeable key given as a flag wins over the edit; a free key may be edited at will.
  write_text(yaml, edited("lr: 0.001\n", "lr: 0.01\n"));
  EXPECT_EQ(run_train("--resume " + run + " --lr 0.01 --stop-after 4").status, 0);
  write_text(run + "/config.yaml", edited("log_interval: 1\n", "log_interval: 2\n"));
  const RunResult free_edit = run_train("--resume " + run + " --lr 0.01 --stop-after 5");
  EXPECT_EQ(free_edit.status, 0) << free_edit.output;
}

TEST(TrainReliability, StaleTemporariesAreRemovedAndAnEmptyRunGetsAHint) {
  const std::string dir = scratch_dir(), run = stopped_run(dir, 3);
  // What a save killed mid-way leaves: a temporary checkpoint folder and file of a process that is gone.
  const std::string tmp_dir = run + "/checkpoints/step_00000004.tmp.999999999";
  fs::create_directories(tmp_dir);
  write_text(tmp_dir + "/model.safetensors", "partial");
  write_text(run + "/config.yaml.tmp.999999998", "partial");
  const RunResult r = run_train("--resume " + run + " --stop-after 4");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("removed 2 stale temporary file(s)"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(tmp_dir));
  EXPECT_FALSE(fs::exists(run + "/config.yaml.tmp.999999998"));
  // A run killed before its first checkpoint: the error says how to start anew.
  fs::remove_all(run + "/checkpoints");
  expect_refused(run_train("--resume " + run), "has no checkpoint yet", "no checkpoint");
  EXPECT_NE(run_train("--resume " + run).output.find("--config " + run + "/config.yaml"), std::string::npos);
}

TEST(TrainReliability, InputsThatCrashedOrMisledAreOneLineErrors) {
  const std::string dir = scratch_dir(), model = write_tiny_convmixer(dir);
  const std::string out = " --device cpu --output " + dir + "/runs";
  const std::string fifo = dir + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_text(dir + "/seven.yaml",
             "family: convmixer\nin_channels: 7\nnum_classes: 10\ninput_size: 28\ndim: 16\ndepth: 2\n"
             "kernel_size: 7\npatch_size: 4\nactivation: gelu\n");
  write_text(dir + "/huge.yaml",
             "family: convmixer\nin_channels: 1\nnum_classes: 10\ninput_size: 28\ndim: 1000000\ndepth: 4000\n"
             "kernel_size: 7\npatch_size: 4\nactivation: gelu\n");
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases = {
      {"--model " + fifo + out, "--model: '" + fifo + "' is a FIFO, not a regular file"},
      {"--model " + dir + "/" + out, "--model: '" + dir + "/' is a folder, not a regular file"},
      {"--config " + dir + out, "--config: '" + dir + "' is a folder, not a regular file"},
      {"--model " + dir + "/seven.yaml" + out, "seven.yaml: in_channels: expected 1 or 3"},
      {"--model " + dir + "/huge.yaml" + out, "huge.yaml: depth: the model needs an estimated"},
      {"--model " + model + " --image-size 2" + out, "--image-size: expected >= 4"},
  };
  for (const Case& c : cases) {
    const RunResult r = run_train(c.args);
    expect_refused(r, c.expected, c.args);
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  // --seed INT64_MAX: the validation seed wraps instead of overflowing (UBSan build: no report).
  const RunResult seed = run_train("--model " + model +
                                   " --synthetic --steps 1 --bench-warmup 0 --batch-size 2 --device cpu "
                                   "--seed 9223372036854775807");
  EXPECT_EQ(seed.status, 0) << seed.output;
  const RunResult dataset_seed = run_train("--model " + model + out +
                                           " --dataset synthetic --synthetic-size 8 --batch-size 4 --epochs 1 "
                                           "--seed 9223372036854775807");
  EXPECT_EQ(dataset_seed.status, 0) << dataset_seed.output;
}

}  // namespace
}  // namespace cnn::test
