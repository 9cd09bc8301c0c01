// Resume verification: the per-key rule table, the config comparison, and the checks of a checkpoint's tensors and
// counters.
#include "apps/cnn-train/resume_check.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "core/error.h"

namespace cnn::train {

namespace fs = std::filesystem;

const std::vector<ResumeKeyRule>& resume_rules() {
  using R = ResumeRule;
  static const char* const kBench = "benchmark mode";
  static const std::vector<ResumeKeyRule> table = {
      {"model", R::locked},          {"dataset", R::locked},          {"data_dir", R::locked},
      {"train_samples", R::locked},  {"val_samples", R::changeable},  {"synthetic_size", R::locked},
      {"augment", R::locked},        {"image_size", R::locked},       {"num_classes", R::locked},
      {"drop_path", R::locked},      {"bfc_accum", R::locked},        {"epochs", R::changeable},
      {"batch_size", R::locked},     {"accum_steps", R::locked},      {"opt", R::locked},
      {"lr", R::changeable},         {"min_lr", R::changeable},       {"weight_decay", R::changeable},
      {"beta1", R::changeable},      {"beta2", R::changeable},        {"opt_eps", R::changeable},
      {"sched", R::changeable},      {"warmup_epochs", R::changeable}, {"warmup_lr_init", R::changeable},
      {"label_smoothing", R::changeable}, {"clip_grad", R::changeable}, {"amp", R::locked},
      {"seed", R::locked},           {"device", R::free},             {"workers", R::free},
      {"log_interval", R::free},     {"eval_interval", R::free},      {"checkpoint_interval", R::free},
      {"keep", R::free},             {"output", R::free},
      {"stop_after", R::invocation}, {"max_nonfinite_steps", R::invocation},
      {"initial_checkpoint", R::refused, "the run's checkpoint holds its weights"},
      {"synthetic", R::refused, kBench}, {"steps", R::refused, kBench}, {"bench_warmup", R::refused, kBench},
      {"profile", R::refused, kBench},   {"trace_dir", R::refused, kBench},
      {"bench_data", R::refused, kBench}, {"bench_seconds", R::refused, kBench},
  };
  return table;
}

void verify_resume_flags(const std::set<std::string>& explicit_keys) {
  for (const ResumeKeyRule& r : resume_rules())
    if (r.rule == ResumeRule::refused && explicit_keys.count(r.key))
      throw Error(str_cat(flag_name(r.key), ": not with --resume (", r.why, ")"));
}

TrainConfig stored_config(const std::string& state_file) {
  const std::map<std::string, std::string> meta = load_safetensors_metadata(state_file);
  auto it = meta.find("config");
  if (it == meta.end())
    throw Error(str_cat("--resume: ", state_file, " has no 'config' metadata (not written by this cnn-train)"));
  TrainConfig c;
  parse_train_config(it->second, state_file + " (metadata 'config')", c);
  return c;
}

namespace {

// The model's config name: the comparison ignores how the path was spelled (relative, absolute, name).
std::string value_for_compare(const TrainConfig& c, const std::string& key) {
  if (key == "model") return fs::path(c.model).stem().string();
  return field_text(c, key);
}

}  // namespace

void verify_resume_config(const TrainConfig& stored, const TrainConfig& run_yaml, const TrainConfig& requested,
                          const std::set<std::string>& explicit_keys, const ResumeSources& sources) {
  for (const ResumeKeyRule& r : resume_rules()) {
    if (r.rule != ResumeRule::locked && r.rule != ResumeRule::changeable) continue;
    const std::string key = r.key, want = value_for_compare(stored, key);
    const std::string in_yaml = value_for_compare(run_yaml, key), now = value_for_compare(requested, key);
    if (in_yaml != want && !(r.rule == ResumeRule::changeable && explicit_keys.count(key)))
      throw Error(str_cat("--resume: ", sources.run_yaml, ": ", key, " is ", in_yaml, ", but the checkpoint ",
                          sources.checkpoint, " was trained with ", want,
                          r.rule == ResumeRule::locked
                              ? " (a resumed run keeps its model, data, batch geometry, seed and precision)"
                          : sources.flags_change
                              ? str_cat(" (config.yaml is written by the run; to change ", key, " pass ",
                                        flag_name(key), ")")
                              : std::string(" (a resumed run keeps the recipe it recorded)")));
    if (r.rule == ResumeRule::locked && now != want)
      throw Error(str_cat("--resume: ", flag_name(key), " is ", want, " in the checkpoint ", sources.checkpoint,
                          ", got ", now, " (a resumed run keeps its model, data, batch geometry, seed and precision)"));
  }
}

void check_state_tensors(const SafetensorsData& state, const std::string& file, bool amp,
                         const std::vector<std::string>& train_keys) {
  for (const auto& [key, t] : state.tensors) {
    const bool known = key.rfind("optim.", 0) == 0 || (amp && key.rfind("loss_scaler.", 0) == 0) ||
                       std::find(train_keys.begin(), train_keys.end(), key) != train_keys.end();
    if (!known) throw Error(str_cat("--resume: ", file, ": unexpected tensor '", key, "' (not a training state key)"));
    require_finite(t, str_cat("--resume: ", file, ": '", key, "'"));
    if (key == "optim.step" && t.dtype() == DType::i64 && t.numel() == 1 && t.to_vector<int64_t>()[0] < 0)
      throw Error(str_cat("--resume: ", file, ": 'optim.step' is negative (", t.to_vector<int64_t>()[0], ")"));
    const std::string suffix = ".exp_avg_sq";
    if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        dtype_is_floating(t.dtype())) {
      const Tensor host = t.to(DType::f64).contiguous();
      const double* v = host.data<double>();
      for (int64_t i = 0; i < host.numel(); ++i)
        if (v[i] < 0)
          throw Error(str_cat("--resume: ", file, ": '", key, "': element ", i, " is ", v[i],
                              " (a second moment is never negative)"));
    }
  }
}

void check_counters(const StateCounters& c, const RunShape& run, const std::string& file) {
  auto fail = [&](const std::string& what) { throw Error(str_cat("--resume: ", file, ": ", what)); };
  if (c.epoch < 0 || c.epoch > 100000) fail(str_cat("train.epoch ", c.epoch, " outside [0, 100000]"));
  if (c.next_batch < 0 || c.next_batch >= run.batches_per_epoch)
    fail(str_cat("train.next_batch ", c.next_batch, " outside the run's [0, ", run.batches_per_epoch,
                 ") micro-batches per epoch"));
  if (c.next_batch % run.accum_steps != 0)
    fail(str_cat("train.next_batch ", c.next_batch, " is not at an optimizer step (accum_steps ", run.accum_steps, ")"));
  const int64_t expected_step = c.epoch * run.steps_per_epoch + c.next_batch / run.accum_steps;
  if (c.step != expected_step)
    fail(str_cat("train.step ", c.step, " does not match epoch ", c.epoch, ", batch ", c.next_batch, " of a run with ",
                 run.steps_per_epoch, " steps per epoch (expected ", expected_step, ")"));
  if (c.optimizer_steps < 0 || c.optimizer_steps > c.step)
    fail(str_cat("optim.step ", c.optimizer_steps, " outside [0, train.step = ", c.step, "]"));
  if (c.best_step < -1 || c.best_step > c.step) fail(str_cat("train.best_step ", c.best_step, " outside [-1, ", c.step, "]"));
  const bool best_ok = c.best_step == -1 ? c.best_top1 == -1 : (c.best_top1 >= 0 && c.best_top1 <= 1);
  if (!best_ok) fail(str_cat("train.best_top1 ", c.best_top1, " does not fit train.best_step ", c.best_step));
  if (c.epoch_loss_count < 0 || c.epoch_loss_count > c.next_batch)
    fail(str_cat("train.epoch_loss_count ", c.epoch_loss_count, " outside [0, train.next_batch = ", c.next_batch, "]"));
  if (c.log_loss_count < 0 || c.log_loss_count > c.step * run.accum_steps)
    fail(str_cat("train.log_loss_count ", c.log_loss_count, " outside [0, ", c.step * run.accum_steps, "]"));
  for (const auto& [name, sum, count] : {std::tuple{"train.log_loss_sum", c.log_loss_sum, c.log_loss_count},
                                         std::tuple{"train.epoch_loss_sum", c.epoch_loss_sum, c.epoch_loss_count}})
    if (!(sum >= 0) || (count == 0 && sum != 0))
      fail(str_cat(name, " ", sum, " is not a sum of ", count, " cross-entropy losses (each >= 0)"));
  if (c.nonfinite_skipped < 0 || c.nonfinite_skipped > c.step - c.optimizer_steps)
    fail(str_cat("train.nonfinite_skipped ", c.nonfinite_skipped, " outside [0, train.step - optim.step = ",
                 c.step - c.optimizer_steps, "]"));
  if (c.nonfinite_streak < 0 || c.nonfinite_streak > c.nonfinite_skipped)
    fail(str_cat("train.nonfinite_streak ", c.nonfinite_streak, " outside [0, train.nonfinite_skipped = ",
                 c.nonfinite_skipped, "]"));
}

}  // namespace cnn::train
