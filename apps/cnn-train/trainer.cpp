// cnn-train's loop: setup, the optimizer step (accumulation, loss scaling, clipping, AdamW), evaluation, logging.
#include "apps/cnn-train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "apps/cnn-train/initial_checkpoint.h"
#include "core/allocator.h"
#include "core/autograd.h"
#include "core/context.h"
#include "core/error.h"
#include "layers/functional.h"
#include "optim/grad_clip.h"

namespace cnn::train {

namespace fs = std::filesystem;

double wall_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

int64_t count_topk(const Tensor& logits, const Tensor& labels, int64_t& top1, int64_t& top5) {
  const Tensor host = logits.to(Device::cpu()).to(DType::f32).contiguous();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  const int64_t rows = host.size(0), classes = host.size(1);
  const float* l = host.data<float>();
  int64_t nonfinite_rows = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = l + r * classes;
    if (!std::all_of(row, row + classes, [](float v) { return std::isfinite(v); })) {
      ++nonfinite_rows;
      continue;
    }
    const float target = row[y[size_t(r)]];
    int64_t above = 0;
    for (int64_t k = 0; k < classes; ++k) above += row[k] > target ? 1 : 0;
    top1 += above == 0 ? 1 : 0;
    top5 += above < 5 ? 1 : 0;
  }
  return nonfinite_rows;
}

Trainer::Trainer(Plan plan, TrainerOptions options)
    : plan_(std::move(plan)), cfg_(plan_.config), options_(options) {
  build_model();
  if (options_.hooks) options_.hooks->on_model(*compute_);
  build_optimizer();
  train_loader_ = std::make_unique<data::DataLoader>(plan_.train_set, plan_.train_loader);
  if (!cfg_.synthetic) val_loader_ = std::make_unique<data::DataLoader>(plan_.val_set, plan_.val_loader);
  log_loss_sum_ = Tensor::zeros({1}, DType::f32, plan_.device, "train.log_loss_sum");
  epoch_loss_sum_ = Tensor::zeros({1}, DType::f32, plan_.device, "train.epoch_loss_sum");
}

Trainer::~Trainer() = default;

void Trainer::build_model() {
  master_ = cnn::build_model(plan_.model_config, plan_.build_options);
  master_->init_weights(uint64_t(cfg_.seed));
  if (!cfg_.initial_checkpoint.empty()) load_initial_checkpoint(*master_, cfg_.initial_checkpoint);
  master_->to(plan_.device);
  if (!cfg_.amp) {
    compute_ = master_;
    return;
  }
  // The FP16 compute model starts as the rounded masters; AdamW refreshes it after every step that runs.
  compute_ = cnn::build_model(plan_.model_config, plan_.build_options);
  compute_->to(plan_.device);
  copy_master_to_compute();
  compute_->to(DType::f16);
}

void Trainer::build_optimizer() {
  const std::vector<NamedParameter> masters = master_->named_parameters();
  const std::vector<NamedParameter> halves = compute_->named_parameters();
  std::vector<std::pair<Tensor, Tensor>> half_copies;
  for (size_t i = 0; i < masters.size(); ++i) {
    optim::ParamRef r{masters[i].name, masters[i].tensor, masters[i].decay};
    if (cfg_.amp) {
      // The tape accumulates the FP16 parameter's gradient in FP32 into its autograd state; sharing that state
      // makes it the master's .grad(), so the optimizer reads it with no copy.
      r.param.set_autograd_meta(halves[i].tensor.autograd_meta());
      half_copies.emplace_back(r.param, halves[i].tensor);
    }
    params_.push_back(std::move(r));
  }
  optim::AdamWOptions o;
  o.beta1 = cfg_.beta1;
  o.beta2 = cfg_.beta2;
  o.eps = cfg_.opt_eps;
  o.weight_decay = cfg_.weight_decay;
  opt_ = std::make_unique<optim::AdamW>(params_, o);
  if (cfg_.amp) opt_->set_half_copies(half_copies);
  if (cfg_.amp || options_.loss_scaling) scaler_ = std::make_unique<optim::DynamicLossScaler>(plan_.device);
  schedule_.kind = optim::lr_schedule_kind_from_name(cfg_.sched);
  schedule_.base_lr = cfg_.lr;
  schedule_.min_lr = cfg_.min_lr;
  schedule_.warmup_lr_init = cfg_.warmup_lr_init;
  schedule_.warmup_steps = plan_.warmup_steps;
  schedule_.validate();
}

// ---- one step ----------------------------------------------------------------------------------------------------

void Trainer::forward_backward(const data::Batch& batch) {
  Tape tape;
  if (profiler_) tape.set_observer(profiler_.get());
  // DropPath masks depend on (seed, global micro-batch index): the same after a resume.
  const uint64_t micro_index = uint64_t(pos_.epoch * plan_.batches_per_epoch + pos_.next_batch);
  const ForwardContext ctx{&tape, true, uint64_t(cfg_.seed), micro_index};
  const Tensor logits = compute_->call(ctx, batch.images);
  const Tensor loss = ops::softmax_cross_entropy(&tape, logits, batch.labels, cfg_.label_smoothing);
  if (scaler_)
    tape.backward(loss, scaler_->scale());  // gradients of loss * scale
  else
    tape.backward(loss);
  if (trace_) trace_->record(batch, loss);
  if (options_.hooks) options_.hooks->on_batch(logits, batch.labels);
  const Tensor l = loss.reshape({1});
  log_loss_sum_.add_(l);
  epoch_loss_sum_.add_(l);
  ++log_loss_count_;
  ++epoch_loss_count_;
}

void Trainer::optimizer_step(int64_t micro) {
  if (options_.hooks) options_.hooks->before_step(pos_.step);
  if (!scaler_) remember_loss_sums();
  for (int64_t m = 0; m < micro; ++m) {
    std::optional<data::Batch> batch = train_loader_->next();
    CNN_CHECK(batch.has_value(), "cnn-train: the training loader ended at batch ", pos_.next_batch, " of ",
              plan_.batches_per_epoch);
    if (profiler_) profiler_->mark("data loader");
    forward_backward(*batch);
    ++pos_.next_batch;
  }
  // Mean over the micro-batches of this step (a short last group at the epoch's end divides by its own size).
  if (micro > 1) optim::scale_grads(params_, 1.0 / double(micro));
  if (profiler_) profiler_->mark("loss bookkeeping, accumulation mean");
  optim::StepControl control;
  if (scaler_) {
    scaler_->unscale_and_check(params_);
    control.found_inf = scaler_->found_inf();
    if (profiler_) profiler_->mark("loss scaler unscale + check");
  }
  std::optional<optim::GradNorm> n;
  // FP32 has no loss scaler to catch a non-finite step: the gradient norm is computed for the guard too.
  if (cfg_.clip_grad > 0 || !scaler_) n = optim::grad_norm(params_, cfg_.clip_grad > 0 ? cfg_.clip_grad : 1.0);
  if (cfg_.clip_grad > 0) {
    control.grad_scale = n->coef;
    last_grad_norm_ = n->norm;
  }
  if (profiler_ && n) profiler_->mark(cfg_.clip_grad > 0 ? "gradient clipping" : "gradient norm (non-finite guard)");
  if (!scaler_ && !finite_or_skip(n->norm)) return;
  lr_ = schedule_.lr_at(pos_.step, plan_.total_steps);
  opt_->step(lr_, control);
  if (profiler_) profiler_->mark("AdamW step");
  if (scaler_) scaler_->update();
  opt_->zero_grad();
  ++pos_.step;
}

// ---- evaluation --------------------------------------------------------------------------------------------------

EvalResult Trainer::evaluate() {
  const double t0 = wall_seconds();
  NoGradGuard no_grad;
  EvalResult r;
  int64_t top1 = 0, top5 = 0, nonfinite_rows = 0;
  double loss_sum = 0;
  val_loader_->start_epoch(0);
  const ForwardContext ctx{nullptr, false, uint64_t(cfg_.seed), 0};
  while (std::optional<data::Batch> b = val_loader_->next()) {
    const Tensor logits = compute_->forward(ctx, b->images);
    const int64_t rows = b->labels.numel();
    loss_sum += ops::softmax_cross_entropy(nullptr, logits, b->labels).item() * double(rows);
    nonfinite_rows += count_topk(logits, b->labels, top1, top5);
    r.images += rows;
  }
  if (nonfinite_rows > 0)
    throw Error(str_cat("evaluation at step ", pos_.step, ": the model's logits are not finite (", nonfinite_rows,
                        " of ", r.images, " images); a diverged model is neither scored nor saved as best"));
  if (r.images == 0) throw Error(str_cat("evaluation at step ", pos_.step, ": the validation loader gave no images"));
  r.loss = loss_sum / double(r.images);
  r.top1 = double(top1) / double(r.images);
  r.top5 = double(top5) / double(r.images);
  r.seconds = wall_seconds() - t0;
  return r;
}

void Trainer::run_eval() {
  const EvalResult e = evaluate();
  const bool improved = e.top1 > best_top1_;
  if (improved) {
    best_top1_ = e.top1;
    best_step_ = pos_.step;
  }
  metrics_.write({{"type", "eval"},
                  {"step", pos_.step},
                  {"epoch", epoch_progress()},
                  {"loss", e.loss},
                  {"top1", e.top1},
                  {"top5", e.top5},
                  {"images", e.images},
                  {"time_s", e.seconds}});
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "eval at epoch %.2f, step %lld: loss %.4f, top-1 %.2f%%, top-5 %.2f%% (%lld images, %.1f s)%s",
                epoch_progress(), (long long)pos_.step, e.loss, 100 * e.top1, 100 * e.top5, (long long)e.images,
                e.seconds, improved ? ", best so far" : "");
  progress_->line(buf);
  if (improved) save_checkpoint(true);
}

// ---- loop --------------------------------------------------------------------------------------------------------

ProgressInfo Trainer::progress_info() const {
  ProgressInfo i;
  i.epoch = pos_.epoch;
  i.epochs = cfg_.epochs;
  i.epoch_step = (pos_.next_batch + cfg_.accum_steps - 1) / cfg_.accum_steps;
  i.epoch_steps = plan_.steps_per_epoch;
  i.step = pos_.step;
  i.total_steps = plan_.total_steps;
  i.lr = lr_;
  i.loss = last_logged_loss_;
  const double per_step = steps_this_process_ > 0 ? train_seconds_ / double(steps_this_process_) : 0;
  i.eta_s = per_step * double(plan_.total_steps - pos_.step);
  return i;
}

void Trainer::log_interval_record(double seconds) {
  ProgressInfo info = progress_info();
  info.loss = log_loss_count_ > 0 ? log_loss_sum_.item() / double(log_loss_count_) : 0;
  last_logged_loss_ = info.loss;
  info.images_per_s = seconds > 0 ? double(interval_images_) / seconds : 0;
  nlohmann::json rec = {{"type", "train"},   {"step", pos_.step}, {"epoch", epoch_progress()},
                        {"loss", info.loss}, {"lr", lr_},         {"img_per_s", info.images_per_s}};
  if (last_grad_norm_.defined()) rec["grad_norm"] = last_grad_norm_.item();
  if (!scaler_) rec["nonfinite_skipped"] = nonfinite_skipped_;
  if (scaler_) {
    const optim::LossScalerState s = scaler_->read_state();
    rec["loss_scale"] = s.scale;
    rec["skipped_steps"] = s.skipped_steps;
  }
  if (options_.hooks) options_.hooks->add_train_fields(rec);
  metrics_.write(rec);
  progress_->log(info);
  progress_->step(info);
  log_loss_sum_.fill_(0);
  log_loss_count_ = 0;
  interval_images_ = 0;
  interval_seconds_ = 0;
}

void Trainer::after_step(double step_seconds) {
  train_seconds_ += step_seconds;
  interval_seconds_ += step_seconds;
  ++steps_this_process_;
  if (pos_.step % cfg_.log_interval == 0) {
    log_interval_record(interval_seconds_);
  } else if (progress_->tty()) {
    ProgressInfo info = progress_info();
    info.images_per_s = interval_seconds_ > 0 ? double(interval_images_) / interval_seconds_ : 0;
    progress_->step(info);
  }
  // A step that ends the epoch leaves evaluation and saving to end_epoch, so every checkpoint is either inside
  // an epoch or at the start of the next one (never between the last step and the epoch's bookkeeping).
  if (pos_.next_batch == plan_.batches_per_epoch) return;
  if (cfg_.eval_interval > 0 && pos_.step % cfg_.eval_interval == 0) run_eval();
  if (cfg_.checkpoint_interval > 0 && pos_.step % cfg_.checkpoint_interval == 0) save_checkpoint(false);
}

void Trainer::end_epoch() {
  const double mean = epoch_loss_count_ > 0 ? epoch_loss_sum_.item() / double(epoch_loss_count_) : 0;
  metrics_.write({{"type", "epoch"},
                  {"step", pos_.step},
                  {"epoch", pos_.epoch + 1},
                  {"train_loss", mean},
                  {"train_time_s", train_seconds_}});
  char buf[160];
  std::snprintf(buf, sizeof buf, "epoch %lld/%lld done: train loss %.4f, %lld steps, %s of training so far",
                (long long)(pos_.epoch + 1), (long long)cfg_.epochs, mean, (long long)pos_.step,
                format_duration(train_seconds_).c_str());
  progress_->line(buf);
  epoch_loss_sum_.fill_(0);
  epoch_loss_count_ = 0;
  ++pos_.epoch;  // the epoch-end position is (next epoch, batch 0)
  pos_.next_batch = 0;
  if (cfg_.eval_interval == 0 || pos_.step % cfg_.eval_interval == 0) run_eval();
  if (cfg_.checkpoint_interval == 0 || pos_.step % cfg_.checkpoint_interval == 0) save_checkpoint(false);
}

void Trainer::run_epochs() {
  for (; pos_.epoch < cfg_.epochs;) {
    train_loader_->start_epoch(pos_.epoch, pos_.next_batch);
    while (pos_.next_batch < plan_.batches_per_epoch) {
      const int64_t micro = std::min(cfg_.accum_steps, plan_.batches_per_epoch - pos_.next_batch);
      const double t0 = wall_seconds();
      optimizer_step(micro);
      interval_images_ += micro * cfg_.batch_size;
      after_step(wall_seconds() - t0);
      if (pos_.next_batch < plan_.batches_per_epoch && stop_requested()) return;
    }
    end_epoch();
    if (pos_.epoch < cfg_.epochs && stop_requested()) return;
  }
  save_checkpoint(false);  // the final state (already saved when checkpoints follow epochs)
}

bool Trainer::stop_requested() {
  if (cfg_.stop_after == 0 || pos_.step < cfg_.stop_after) return false;
  save_checkpoint(false);
  stopped_ = true;
  progress_->line(
      str_cat("stopped after step ", pos_.step, " (--stop-after); continue with: cnn-train --resume ", run_dir_));
  return true;
}

double Trainer::epoch_progress() const {
  return double(pos_.epoch) + double(pos_.next_batch) / double(plan_.batches_per_epoch);
}

void Trainer::train(const std::string& run_dir, const std::string& resume_checkpoint) {
  run_dir_ = run_dir;
  checkpoints_ = std::make_unique<CheckpointDir>(run_dir_);
  progress_ = std::make_unique<Progress>(::isatty(STDOUT_FILENO) != 0);
  if (!resume_checkpoint.empty() && !cfg_.initial_checkpoint.empty())
    throw Error("--initial-checkpoint: not with --resume (the run's checkpoint holds its weights)");
  if (const int64_t stale = remove_stale_temporaries(run_dir_); stale > 0)
    progress_->line(str_cat("removed ", stale, " stale temporary file(s) of an interrupted process in ", run_dir_));
  if (!resume_checkpoint.empty()) load_checkpoint(resume_checkpoint);
  if (pos_.epoch >= cfg_.epochs)
    throw Error(str_cat("--resume: the run already completed ", pos_.epoch, " epoch(s); pass --epochs N > ", pos_.epoch,
                        " to train further"));
  write_file_atomic((fs::path(run_dir_) / "config.yaml").string(), train_config_yaml(cfg_));
  metrics_.open((fs::path(run_dir_) / "metrics.jsonl").string(), resume_checkpoint.empty() ? -1 : pos_.step);
  metrics_.write({{"type", "start"},
                  {"step", pos_.step},
                  {"epoch", pos_.epoch},
                  {"model", plan_.model_name},
                  {"device", plan_.device.str()},
                  {"parameters", master_->parameter_count()},
                  {"steps_per_epoch", plan_.steps_per_epoch},
                  {"total_steps", plan_.total_steps},
                  {"resumed_from", resume_checkpoint},
                  {"initial_checkpoint", cfg_.initial_checkpoint}});
  std::printf(
      "cnn-train: %s (%lld parameters) on %s, %s: %lld train / %lld val images, batch %lld x %lld, "
      "%lld steps/epoch, %lld epochs%s\nrun folder: %s\n",
      plan_.model_name.c_str(), (long long)master_->parameter_count(), plan_.device.str().c_str(), cfg_.dataset.c_str(),
      (long long)plan_.train_set->size(), (long long)plan_.val_set->size(), (long long)cfg_.batch_size,
      (long long)cfg_.accum_steps, (long long)plan_.steps_per_epoch, (long long)cfg_.epochs, cfg_.amp ? ", amp" : "",
      run_dir_.c_str());
  if (!resume_checkpoint.empty())
    std::printf("resumed from %s at epoch %lld, batch %lld, step %lld\n", resume_checkpoint.c_str(),
                (long long)(pos_.epoch + 1), (long long)pos_.next_batch, (long long)pos_.step);
  std::fflush(stdout);
  start_wall_ = wall_seconds();
  start_cpu_ = process_cpu_seconds();
  run_epochs();
  const double wall = wall_seconds() - start_wall_, cpu = process_cpu_seconds() - start_cpu_;
  metrics_.write({{"type", stopped_ ? "stop" : "end"},
                  {"step", pos_.step},
                  {"epoch", pos_.epoch},
                  {"best_top1", best_top1_},
                  {"best_step", best_step_},
                  {"train_time_s", train_seconds_},
                  {"wall_s", wall},
                  {"cpu_s", cpu}});
  if (stopped_) return;
  char buf[256];
  std::snprintf(buf, sizeof buf, "done: %lld steps; training %s, wall %s, CPU time %s; best top-1 %.2f%% at step %lld",
                (long long)pos_.step, format_duration(train_seconds_).c_str(), format_duration(wall).c_str(),
                format_duration(cpu).c_str(), 100 * std::max(best_top1_, 0.0), (long long)best_step_);
  progress_->line(buf);
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void Trainer::benchmark() {
  progress_ = std::make_unique<Progress>(false);
  train_loader_->start_epoch(0);
  Context& device = Context::get(plan_.device);
  if (!cfg_.trace_dir.empty()) trace_ = std::make_unique<StepTrace>(cfg_.trace_dir, *master_);
  for (int64_t s = 0; s < cfg_.bench_warmup; ++s) optimizer_step(cfg_.accum_steps);
  device.synchronize();
  if (plan_.device.is_cuda()) cuda_reset_peak(plan_.device.index);
  std::vector<double> step_ms;
  const double t0 = wall_seconds(), c0 = process_cpu_seconds();
  for (int64_t s = 0; s < cfg_.steps; ++s) {
    const double s0 = wall_seconds();
    optimizer_step(cfg_.accum_steps);
    device.synchronize();  // each step is timed whole; the wait costs one launch latency per step
    step_ms.push_back(1e3 * (wall_seconds() - s0));
  }
  const double secs = wall_seconds() - t0, cpu = process_cpu_seconds() - c0;
  const double images = double(cfg_.steps * cfg_.accum_steps * cfg_.batch_size);
  char memory[64] = "";
  if (plan_.device.is_cuda())
    std::snprintf(memory, sizeof memory, ", peak device memory %.1f MiB",
                  double(cuda_allocator_stats(plan_.device.index).peak_bytes_in_use) / double(1 << 20));
  std::printf(
      "benchmark: %s, batch %lld x %lld, %s%s, %lld threads: %.2f ms/step, %.1f img/s "
      "(%lld timed steps after %lld warm-up; CPU time %.2f s); median %.2f ms/step%s\n",
      plan_.model_name.c_str(), (long long)cfg_.batch_size, (long long)cfg_.accum_steps, plan_.device.str().c_str(),
      cfg_.amp ? " amp" : "", (long long)Context::get(Device::cpu()).cpu_threads(), 1e3 * secs / double(cfg_.steps),
      images / secs, (long long)cfg_.steps, (long long)cfg_.bench_warmup, cpu, median(step_ms), memory);
  if (trace_) {
    trace_->finish();
    std::printf("trace: %s (init.safetensors, %lld batches, losses.json)\n", cfg_.trace_dir.c_str(),
                (long long)cfg_.steps);
  }
  std::fflush(stdout);
}

void Trainer::profile() {
  progress_ = std::make_unique<Progress>(false);
  train_loader_->start_epoch(0);
  for (int64_t s = 0; s < cfg_.bench_warmup; ++s) optimizer_step(cfg_.accum_steps);
  Context::get(plan_.device).synchronize();
  profiler_ = std::make_unique<StepProfiler>(*compute_, plan_.device);
  for (int64_t s = 0; s < cfg_.profile; ++s) {
    profiler_->begin_step();
    optimizer_step(cfg_.accum_steps);
    profiler_->end_step();
  }
  const StepProfile p = profiler_->summary();
  profiler_.reset();
  std::printf("profile: %s, batch %lld x %lld, %s%s, %lld steps after %lld warm-up (%s; each step waited for)\n",
              plan_.model_name.c_str(), (long long)cfg_.batch_size, (long long)cfg_.accum_steps,
              plan_.device.str().c_str(), cfg_.amp ? " amp" : "", (long long)cfg_.profile,
              (long long)cfg_.bench_warmup, plan_.device.is_cuda() ? "CUDA events" : "host clock");
  std::printf("%s", format_profile(p, 40).c_str());
  std::fflush(stdout);
}

}  // namespace cnn::train
