// A comparison folder: compare.json (the arms, the shared recipe, where it runs), one cnn-train run folder per arm
// (DIR/<arm>/: config.yaml, metrics.jsonl, checkpoints/), and the outputs of report.h. Arms run one after the
// other from the same seed (same initial weights, data order, augmentation and stochastic-depth masks); a killed
// comparison continues with --resume, each arm from its last checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/cnn-compare/arms.h"
#include "apps/cnn-train/train_config.h"

namespace cnn::compare {

struct ComparisonSpec {
  train::TrainConfig recipe;  // shared by every arm (amp / bfc_accum are the arms'); device resolved
  std::vector<Arm> arms;
  bool emulated = false;       // on the CPU: AMP arms emulate the FP16 backward-filter pass (grad_probe.h)
  int64_t probe_interval = 1;  // optimizer steps between gradient probes (0: none)
};

// Resolves the device, checks every arm's recipe (one make_plan each, so bad input fails before any training)
// and returns the spec. Errors name the flag.
ComparisonSpec make_spec(const train::TrainConfig& recipe, const std::vector<Arm>& arms, int64_t probe_interval);

void save_spec(const std::string& dir, const ComparisonSpec& spec);
// Reads DIR/compare.json; a missing or malformed file is a one-line error naming it.
ComparisonSpec load_spec(const std::string& dir);

// Runs, or continues, every arm that has not finished; with stop_after > 0 each arm stops after that step.
void run_arms(const std::string& dir, const ComparisonSpec& spec, int64_t stop_after);

// DIR/<arm>: the arm's cnn-train run folder.
std::string arm_dir(const std::string& dir, const Arm& arm);

}  // namespace cnn::compare
