// What --resume verifies before it continues a run: the resolved config stored in the checkpoint against the run
// folder's config.yaml and this invocation's --config and flags (one rule per key), and the checkpoint's tensors
// (finite, optimizer invariants, no unknown tensors) and counters (against the run's length). Every refusal is one
// line naming the key or tensor, both values and the files. The rules: docs/train.md, "Resume".
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "apps/cnn-train/train_config.h"
#include "core/finite_check.h"
#include "core/safetensors.h"
#include "core/tensor.h"

namespace cnn::train {

// Persisted keys (written to config.yaml and to the checkpoint's metadata):
// locked: the run's trajectory depends on it; config.yaml, --config and flags must all keep the checkpoint's value.
// changeable: config.yaml must hold the checkpoint's value (an edit is refused); --config or a flag may change it.
// free: run control (device, workers, intervals, output); any source may change it.
// Flag-only keys (never persisted; a recipe refuses them):
// invocation: controls this invocation only (--stop-after, --max-nonfinite-steps); allowed with --resume.
// refused: not with --resume (another start: --initial-checkpoint, the benchmark modes and their keys).
enum class ResumeRule { locked, changeable, free, invocation, refused };

struct ResumeKeyRule {
  const char* key;
  ResumeRule rule;
  const char* why = nullptr;  // refused: the reason, for the error line
};
// One entry per key of the recipe (train_fields()), in that order.
const std::vector<ResumeKeyRule>& resume_rules();

// The flags of this invocation against the flag-only rules: `<flag>: not with --resume (<why>)`.
void verify_resume_flags(const std::set<std::string>& explicit_keys);

struct ResumeSources {
  std::string checkpoint;  // folder of the checkpoint resumed from
  std::string run_yaml;    // the run folder's config.yaml (or the file that records the run's recipe)
  bool flags_change = true;  // whether --config and flags may change a changeable key (cnn-compare: no)
};

// The resolved config a checkpoint was written with (metadata "config" of its state.safetensors).
TrainConfig stored_config(const std::string& state_file);

// stored: the checkpoint's config; run_yaml: the run folder's config.yaml; requested: config.yaml < --config < flags,
// with the model's auto values resolved; explicit_keys: keys --config or a flag set in this invocation.
void verify_resume_config(const TrainConfig& stored, const TrainConfig& run_yaml, const TrainConfig& requested,
                          const std::set<std::string>& explicit_keys, const ResumeSources& sources);

// The tensors of a state.safetensors: only optim.*, loss_scaler.* (with amp) and the known train.* keys; every
// floating tensor finite; optim.step >= 0 and every exp_avg_sq >= 0 (a second moment is a mean of squares).
void check_state_tensors(const SafetensorsData& state, const std::string& file, bool amp,
                         const std::vector<std::string>& train_keys);

// The training counters of a checkpoint against the run they continue.
struct StateCounters {
  int64_t epoch = 0, next_batch = 0, step = 0, optimizer_steps = 0;
  int64_t best_step = -1;
  double best_top1 = -1;
  int64_t log_loss_count = 0, epoch_loss_count = 0;
  double log_loss_sum = 0, epoch_loss_sum = 0;
  int64_t nonfinite_skipped = 0, nonfinite_streak = 0;
};
struct RunShape {
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, accum_steps = 1, epochs = 0;
};
void check_counters(const StateCounters& c, const RunShape& run, const std::string& file);

}  // namespace cnn::train
