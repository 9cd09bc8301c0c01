// The training loop of cnn-train: model (FP32, plus an FP16 compute copy under --amp), AdamW with the Module's
// no-decay flags, warmup + cosine schedule, clipping, accumulation, loss scaling, evaluation, metrics and
// checkpoints. Every random choice is a function of (seed, epoch, index, step), so a resumed run replays the
// uninterrupted one exactly. The step order and the resume rule: docs/train.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/cnn-train/plan.h"
#include "apps/cnn-train/progress.h"
#include "apps/cnn-train/run_files.h"
#include "apps/cnn-train/trace.h"
#include "core/tensor.h"
#include "data/loader.h"
#include "layers/profiler.h"
#include "models/model.h"
#include "optim/adamw.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/param.h"

namespace cnn::train {

// Where the run stands; saved in every checkpoint.
struct Position {
  int64_t epoch = 0;       // current epoch (0-based)
  int64_t next_batch = 0;  // next micro-batch of that epoch
  int64_t step = 0;        // optimizer steps done
};

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;  // mean loss, accuracies in [0, 1]
  int64_t images = 0;
  double seconds = 0;
};

// Extension points for tools that run this loop with extra measurements (cnn-compare); the defaults do nothing.
class TrainHooks {
 public:
  virtual ~TrainHooks() = default;
  // Once, when the models exist (before a checkpoint is loaded): `compute` is the model the steps run.
  virtual void on_model(Model& compute) { (void)compute; }
  // Before each optimizer step; `step` counts the steps done before it.
  virtual void before_step(int64_t step) { (void)step; }
  // After each training micro-batch's backward: its logits (B, classes) and labels (B), on the device.
  virtual void on_batch(const Tensor& logits, const Tensor& labels) { (void)logits, (void)labels; }
  // Adds fields to each "train" metrics record.
  virtual void add_train_fields(nlohmann::json& record) { (void)record; }
};

struct TrainerOptions {
  TrainHooks* hooks = nullptr;  // not owned; outlives the Trainer
  bool loss_scaling = false;    // dynamic loss scaling without --amp (FP32 runs that emulate FP16 kernels)
};

class Trainer {
 public:
  explicit Trainer(Plan plan, TrainerOptions options = {});
  ~Trainer();

  // Training run in a new run folder, or continuing the run of `resume_checkpoint` (a checkpoint folder inside
  // `run_dir`). Returns after the last epoch or after --stop-after steps.
  void train(const std::string& run_dir, const std::string& resume_checkpoint);
  // Benchmark mode: bench_warmup untimed steps, then `steps` timed ones (each waited for); prints the mean and
  // median ms/step, img/s and the peak device memory. With trace_dir, also writes the trace (trace.h).
  void benchmark();
  // Profile mode: bench_warmup untimed steps, then `profile` steps timed by op kind and layer; prints the tables.
  void profile();

 private:
  // Setup.
  void build_model();
  void build_optimizer();
  // One optimizer step over `micro` micro-batches of the current epoch.
  void optimizer_step(int64_t micro);
  void forward_backward(const data::Batch& batch);
  EvalResult evaluate();
  // Loop pieces.
  void run_epochs();
  void after_step(double step_seconds);
  void end_epoch();
  void run_eval();
  void log_interval_record(double seconds);
  ProgressInfo progress_info() const;
  bool stop_requested();          // --stop-after reached: saves a checkpoint and returns true
  double epoch_progress() const;  // epochs done, fractional
  // Non-finite guard of FP32 steps (trainer_guard.cpp).
  void remember_loss_sums();
  bool finite_or_skip(const Tensor& grad_norm);  // false: the step was skipped (and counted)
  // Checkpoints (trainer_state.cpp).
  void save_checkpoint(bool best);
  void load_checkpoint(const std::string& dir);
  void sync_buffers_to_master();
  void copy_master_to_compute();

  Plan plan_;
  const TrainConfig& cfg_;
  TrainerOptions options_;
  std::shared_ptr<Model> master_;   // FP32 weights: the checkpoint and the optimizer's masters
  std::shared_ptr<Model> compute_;  // the forward's model: master_ itself, or its FP16 copy under --amp
  std::vector<optim::ParamRef> params_;
  std::unique_ptr<optim::AdamW> opt_;
  std::unique_ptr<optim::DynamicLossScaler> scaler_;
  optim::LrSchedule schedule_;
  std::unique_ptr<data::DataLoader> train_loader_, val_loader_;
  std::unique_ptr<StepProfiler> profiler_;  // profile mode: observes every step's tape and marks the rest
  std::unique_ptr<StepTrace> trace_;        // --trace-dir: records each step's batch and loss

  Position pos_;
  double lr_ = 0;
  double last_logged_loss_ = std::nan("");  // shown on the progress bar between log intervals
  Tensor log_loss_sum_, epoch_loss_sum_;    // f32 (1) on the device: sums of micro-batch losses
  int64_t log_loss_count_ = 0, epoch_loss_count_ = 0;
  Tensor last_grad_norm_;  // f32 (1), when clipping
  Tensor log_loss_before_, epoch_loss_before_;  // the sums before the current FP32 step (restored when it is skipped)
  int64_t log_count_before_ = 0, epoch_count_before_ = 0;
  int64_t nonfinite_skipped_ = 0;  // FP32 steps skipped for a non-finite loss or gradient norm
  int64_t nonfinite_streak_ = 0;   // of them, in a row up to now
  double best_top1_ = -1;
  int64_t best_step_ = -1;
  int64_t saved_step_ = -1;  // step of the newest checkpoint folder

  // Run files and console.
  std::string run_dir_;
  std::unique_ptr<CheckpointDir> checkpoints_;
  MetricsLog metrics_;
  std::unique_ptr<Progress> progress_;
  double start_wall_ = 0, start_cpu_ = 0;
  double train_seconds_ = 0;     // wall time inside training steps (no evaluation, no saving)
  double interval_seconds_ = 0;  // training time since the last log record
  int64_t interval_images_ = 0;
  int64_t steps_this_process_ = 0;
  bool stopped_ = false;
};

// Adds the top-1 / top-5 hits of one batch of logits (B, classes) and labels (B) to the counts: a sample counts when
// fewer than k logits are strictly greater than its label's. Reads the logits on the host. Returns the number of rows
// holding a non-finite logit, which are never hits (a NaN compares false against everything, so such a row would
// otherwise score top-1); evaluation refuses to score them.
int64_t count_topk(const Tensor& logits, const Tensor& labels, int64_t& top1, int64_t& top5);

// Wall-clock seconds (steady clock).
double wall_seconds();

}  // namespace cnn::train
