// Resume equivalence on the CPU: a run interrupted by --stop-after (mid-epoch, then at an epoch boundary) and
// continued with --resume logs exactly the per-step losses and evaluations of the uninterrupted run and ends with
// bit-identical weights and optimizer state. Also the resume error paths.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/safetensors.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

// Every tensor of two safetensors files equal byte for byte.
void expect_same_tensors(const std::string& a_path, const std::string& b_path) {
  const SafetensorsData a = load_safetensors(a_path), b = load_safetensors(b_path);
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << a_path << " vs " << b_path;
  for (const auto& [name, ta] : a.tensors) {
    ASSERT_TRUE(b.tensors.count(name)) << name << " missing in " << b_path;
    const Tensor& tb = b.tensors.at(name);
    ASSERT_EQ(ta.shape(), tb.shape()) << name;
    ASSERT_EQ(ta.dtype(), tb.dtype()) << name;
    EXPECT_EQ(std::memcmp(ta.data_ptr(), tb.data_ptr(), size_t(ta.nbytes())), 0) << name << " differs";
  }
}

void expect_same_run(const std::string& a, const std::string& b) {
  const auto ra = read_metrics(a + "/metrics.jsonl"), rb = read_metrics(b + "/metrics.jsonl");
  const auto la = train_losses(ra), lb = train_losses(rb);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(la[i].first, lb[i].first) << "record " << i;
    // Exact: the same arithmetic in the same order on the same data (no tolerance).
    EXPECT_EQ(la[i].second, lb[i].second)
        << "step " << la[i].first << ": uninterrupted " << la[i].second << ", resumed " << lb[i].second;
  }
  EXPECT_EQ(eval_results(ra), eval_results(rb));
  for (const char* f : {"model.safetensors", "state.safetensors"})
    expect_same_tensors(a + "/checkpoints/last/" + f, b + "/checkpoints/last/" + f);
}

struct ResumeCase {
  const char* name;
  std::string flags;
};

TEST(TrainResume, InterruptedRunsReplayTheUninterruptedOne) {
  const std::string dir = scratch_dir();
  const std::string mixer = write_tiny_convmixer(dir), next = write_tiny_convnext(dir);
  // 512 samples / 64 = 8 micro-batches per epoch. Case 2 adds accumulation (4 steps per epoch), clipping, label
  // smoothing, warmup and stochastic depth, whose masks follow the step.
  const std::vector<ResumeCase> cases = {
      {"convmixer", small_run_flags(mixer, "") + " --epochs 2 --lr 0.004 --seed 3"},
      {"convnext", small_run_flags(next, "") + " --epochs 3 --lr 0.002 --accum-steps 2 --clip-grad 0.5 "
                                               "--label-smoothing 0.1 --warmup-epochs 1 --drop-path 0.2 --seed 5"},
  };
  for (const ResumeCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string a = dir + "/" + c.name + "_a", b = dir + "/" + c.name + "_b";
    ASSERT_EQ(run_train(c.flags + " --output " + a).status, 0);
    const RunResult first = run_train(c.flags + " --output " + b + " --stop-after 3");
    ASSERT_EQ(first.status, 0) << first.output;
    ASSERT_NE(first.output.find("stopped after step 3"), std::string::npos) << first.output;
    const std::string run_b = only_run_dir(b);
    // Second leg stops at the end of the first epoch (step 8 or 4), the third finishes.
    const std::string boundary = std::string(c.name) == "convmixer" ? "8" : "4";
    const RunResult second = run_train("--resume " + run_b + " --stop-after " + boundary);
    ASSERT_EQ(second.status, 0) << second.output;
    ASSERT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
    const RunResult third = run_train("--resume " + run_b + "/checkpoints/last");
    ASSERT_EQ(third.status, 0) << third.output;
    expect_same_run(only_run_dir(a), run_b);
  }
}

TEST(TrainResume, ResumeErrors) {
  const std::string dir = scratch_dir(), model = write_tiny_convmixer(dir);
  const std::string flags = small_run_flags(model, dir + "/runs") + " --epochs 1";
  ASSERT_EQ(run_train(flags + " --stop-after 2").status, 0);
  const std::string run = only_run_dir(dir + "/runs");
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases = {
      {"--resume " + run + " --model convmixer_128_6_k7_p2",
       "--resume: --model is tiny_convmixer in the checkpoint " + run + "/checkpoints/last, got convmixer_128_6_k7_p2"},
      {"--resume " + run + " --batch-size 32",
       "--resume: --batch-size is 64 in the checkpoint " + run + "/checkpoints/last, got 32"},
      {"--resume " + run + " --seed 9", "--resume: --seed is 0 in the checkpoint " + run + "/checkpoints/last, got 9"},
      {"--resume " + run + " --synthetic", "--synthetic: not with --resume (benchmark mode)"},
      {"--resume " + run + " --bench-data", "--bench-data: not with --resume (benchmark mode)"},
  };
  for (const Case& c : cases) {
    const RunResult r = run_train(c.args);
    EXPECT_NE(r.status, 0) << c.args << ":\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << c.args << ":\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << ": expected '" << c.expected << "' in:\n"
                                                            << r.output;
  }
  // Finishing the run, then resuming it again without more epochs, is refused; more epochs continue it.
  ASSERT_EQ(run_train("--resume " + run).status, 0);
  const RunResult done = run_train("--resume " + run);
  EXPECT_NE(done.status, 0);
  EXPECT_NE(done.output.find("the run already completed 1 epoch(s); pass --epochs N > 1"), std::string::npos)
      << done.output;
  const RunResult more = run_train("--resume " + run + " --epochs 2");
  EXPECT_EQ(more.status, 0) << more.output;
  // A torn state file (as if written by another program) is reported, not trusted.
  const std::string state = run + "/checkpoints/last/state.safetensors";
  fs::resize_file(state, fs::file_size(state) / 2);
  const RunResult torn = run_train("--resume " + run + " --epochs 3");
  EXPECT_NE(torn.status, 0);
  EXPECT_NE(torn.output.find("safetensors"), std::string::npos) << torn.output;
}

}  // namespace
}  // namespace cnn::test
