// cnn-train checkpoints: model.safetensors (reference names, models/checkpoint.h) and state.safetensors (AdamW,
// loss scaler, position, seed, best metric, loss accumulators), written into a temporary folder and renamed.
#include <filesystem>

#include "apps/cnn-train/resume_check.h"
#include "apps/cnn-train/trainer.h"
#include "core/autograd.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"

namespace cnn::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStateFormat = "cnn-train-state-2";

// The train.* tensors of a state file, each one element (check_state_tensors refuses any other key).
const std::vector<std::string>& train_state_keys() {
  static const std::vector<std::string> keys = {
      "train.epoch",          "train.next_batch",       "train.step",           "train.seed",
      "train.best_top1",      "train.best_step",        "train.log_loss_sum",   "train.log_loss_count",
      "train.epoch_loss_sum", "train.epoch_loss_count", "train.nonfinite_skipped", "train.nonfinite_streak"};
  return keys;
}

Tensor i64_scalar(int64_t v) { return Tensor::from_vector<int64_t>({v}, {1}); }
Tensor f64_scalar(double v) { return Tensor::from_vector<double>({v}, {1}); }

const Tensor& state_tensor(const SafetensorsData& s, const std::string& key, DType dtype, const std::string& file) {
  auto it = s.tensors.find(key);
  if (it == s.tensors.end()) throw Error(str_cat("--resume: ", file, " has no '", key, "'"));
  if (it->second.dtype() != dtype || it->second.shape() != Shape{1})
    throw Error(
        str_cat("--resume: ", file, ": '", key, "' must be ", dtype_name(dtype), " (1), got ", it->second.str()));
  return it->second;
}

int64_t state_i64(const SafetensorsData& s, const std::string& key, const std::string& file) {
  return state_tensor(s, key, DType::i64, file).to_vector<int64_t>()[0];
}

// Copies every parameter and buffer of `from` into `to` (same architecture, any dtype / device).
void copy_tensors(const Module& from, const Module& to) {
  NoGradGuard no_grad;
  const std::vector<NamedParameter> src = from.named_parameters(), dst = to.named_parameters();
  for (size_t i = 0; i < src.size(); ++i) {
    Tensor d = dst[i].tensor;
    d.copy_(src[i].tensor);
  }
  const auto src_b = from.named_buffers(), dst_b = to.named_buffers();
  for (size_t i = 0; i < src_b.size(); ++i) {
    Tensor d = dst_b[i].second;
    d.copy_(src_b[i].second);
  }
}

}  // namespace

void Trainer::copy_master_to_compute() { copy_tensors(*master_, *compute_); }

void Trainer::sync_buffers_to_master() {
  if (compute_ == master_) return;
  // BatchNorm statistics are updated by the compute model's forward; the masters hold the weights.
  const auto src = compute_->named_buffers(), dst = master_->named_buffers();
  for (size_t i = 0; i < src.size(); ++i) {
    Tensor d = dst[i].second;
    d.copy_(src[i].second);
  }
}

void Trainer::save_checkpoint(bool best) {
  if (saved_step_ != pos_.step) {
    sync_buffers_to_master();
    // A checkpoint (and so `last` or `best`) never holds a non-finite weight.
    for (const NamedParameter& p : master_->named_parameters())
      require_finite(p.tensor, str_cat("checkpoint at step ", pos_.step, ": parameter '", p.name, "'"));
    const std::string tmp = checkpoints_->begin(pos_.step);
    const std::map<std::string, std::string> meta = {
        {"model", plan_.model_name}, {"step", std::to_string(pos_.step)}, {"epoch", std::to_string(pos_.epoch)}};
    cnn::save_checkpoint((fs::path(tmp) / "model.safetensors").string(), *master_, meta);
    std::map<std::string, Tensor> state = opt_->state_dict();
    if (scaler_) state.merge(scaler_->state_dict());
    state["train.epoch"] = i64_scalar(pos_.epoch);
    state["train.next_batch"] = i64_scalar(pos_.next_batch);
    state["train.step"] = i64_scalar(pos_.step);
    state["train.seed"] = i64_scalar(cfg_.seed);
    state["train.best_top1"] = f64_scalar(best_top1_);
    state["train.best_step"] = i64_scalar(best_step_);
    state["train.log_loss_sum"] = log_loss_sum_;
    state["train.log_loss_count"] = i64_scalar(log_loss_count_);
    state["train.epoch_loss_sum"] = epoch_loss_sum_;
    state["train.epoch_loss_count"] = i64_scalar(epoch_loss_count_);
    state["train.nonfinite_skipped"] = i64_scalar(nonfinite_skipped_);
    state["train.nonfinite_streak"] = i64_scalar(nonfinite_streak_);
    save_safetensors((fs::path(tmp) / "state.safetensors").string(), state,
                     {{"format", kStateFormat}, {"model", plan_.model_name}, {"config", train_config_yaml(cfg_)}});
    checkpoints_->commit(pos_.step);
    saved_step_ = pos_.step;
  }
  checkpoints_->link("last", pos_.step);
  if (best) checkpoints_->link("best", pos_.step);
  checkpoints_->prune(cfg_.keep);
}

void Trainer::load_checkpoint(const std::string& dir) {
  const std::string model_file = (fs::path(dir) / "model.safetensors").string();
  const std::string state_file = (fs::path(dir) / "state.safetensors").string();
  const SafetensorsData state = load_safetensors(state_file);
  auto format = state.metadata.find("format");
  if (format == state.metadata.end() || format->second != kStateFormat)
    throw Error(str_cat("--resume: ", state_file, " is not a cnn-train state file (metadata format '",
                        format == state.metadata.end() ? "" : format->second, "', expected '", kStateFormat, "')"));
  auto model = state.metadata.find("model");
  if (model == state.metadata.end() || model->second != plan_.model_name)
    throw Error(str_cat("--resume: ", state_file, " belongs to model '",
                        model == state.metadata.end() ? "?" : model->second, "', the run is configured for '",
                        plan_.model_name, "'"));
  if (state_i64(state, "train.seed", state_file) != cfg_.seed)
    throw Error(str_cat("--resume: ", state_file, " was trained with seed ", state_i64(state, "train.seed", state_file),
                        ", got --seed ", cfg_.seed));
  check_state_tensors(state, state_file, scaler_ != nullptr, train_state_keys());
  cnn::load_checkpoint(model_file, *master_);
  for (const NamedParameter& p : master_->named_parameters())
    require_finite(p.tensor, str_cat("--resume: ", model_file, ": '", p.name, "'"));
  for (const auto& [name, buffer] : master_->named_buffers())
    require_finite(buffer, str_cat("--resume: ", model_file, ": '", name, "'"));
  if (compute_ != master_) copy_master_to_compute();
  opt_->load_state_dict(state.tensors);
  if (scaler_) scaler_->load_state_dict(state.tensors);
  StateCounters c;
  c.epoch = state_i64(state, "train.epoch", state_file);
  c.next_batch = state_i64(state, "train.next_batch", state_file);
  c.step = state_i64(state, "train.step", state_file);
  c.optimizer_steps = opt_->step_count();
  c.best_top1 = state_tensor(state, "train.best_top1", DType::f64, state_file).to_vector<double>()[0];
  c.best_step = state_i64(state, "train.best_step", state_file);
  c.log_loss_sum = state_tensor(state, "train.log_loss_sum", DType::f32, state_file).item();
  c.log_loss_count = state_i64(state, "train.log_loss_count", state_file);
  c.epoch_loss_sum = state_tensor(state, "train.epoch_loss_sum", DType::f32, state_file).item();
  c.epoch_loss_count = state_i64(state, "train.epoch_loss_count", state_file);
  c.nonfinite_skipped = state_i64(state, "train.nonfinite_skipped", state_file);
  c.nonfinite_streak = state_i64(state, "train.nonfinite_streak", state_file);
  check_counters(c, RunShape{plan_.batches_per_epoch, plan_.steps_per_epoch, cfg_.accum_steps, cfg_.epochs},
                 state_file);
  pos_ = Position{c.epoch, c.next_batch, c.step};
  best_top1_ = c.best_top1;
  best_step_ = c.best_step;
  log_loss_sum_.copy_(state_tensor(state, "train.log_loss_sum", DType::f32, state_file));
  log_loss_count_ = c.log_loss_count;
  epoch_loss_sum_.copy_(state_tensor(state, "train.epoch_loss_sum", DType::f32, state_file));
  epoch_loss_count_ = c.epoch_loss_count;
  nonfinite_skipped_ = c.nonfinite_skipped;
  nonfinite_streak_ = c.nonfinite_streak;
  saved_step_ = pos_.step;
  // Checkpoints written after this step by the interrupted process belong to a future this run replaces.
  for (int64_t s : checkpoints_->steps())
    if (s > pos_.step) fs::remove_all(checkpoints_->step_dir(s));
  if (checkpoints_->linked_step("last") != pos_.step) checkpoints_->link("last", pos_.step);
  if (checkpoints_->linked_step("best") > pos_.step) {
    // best moved past this step after the checkpoint: point it back at the checkpoint's best, if still on disk.
    std::error_code ec;
    if (best_step_ >= 0 && fs::is_directory(checkpoints_->step_dir(best_step_)))
      checkpoints_->link("best", best_step_);
    else
      fs::remove(fs::path(checkpoints_->step_dir(0)).parent_path() / "best", ec);
  }
}

}  // namespace cnn::train
