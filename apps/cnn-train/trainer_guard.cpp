// The non-finite guard of FP32 training: a step whose loss or gradient norm is not finite is skipped (no AdamW
// update, its losses left out of the logged means), counted, and reported; --max-nonfinite-steps consecutive ones
// stop the run with an error. The checkpoints already written stay: `last` is the last finite state. Under --amp
// the dynamic loss scaler does the same job on the device.
#include <cmath>

#include "apps/cnn-train/trainer.h"
#include "core/error.h"

namespace cnn::train {

void Trainer::remember_loss_sums() {
  log_loss_before_ = log_loss_sum_.clone();
  epoch_loss_before_ = epoch_loss_sum_.clone();
  log_count_before_ = log_loss_count_;
  epoch_count_before_ = epoch_loss_count_;
}

bool Trainer::finite_or_skip(const Tensor& grad_norm) {
  // The loss sums were finite before this step (a loaded checkpoint is checked), so a non-finite sum now means a
  // non-finite micro-batch loss in this step.
  const double loss_sum = log_loss_sum_.item(), norm = grad_norm.item();
  if (std::isfinite(loss_sum) && std::isfinite(norm)) {
    nonfinite_streak_ = 0;
    return true;
  }
  opt_->zero_grad();
  log_loss_sum_.copy_(log_loss_before_);
  epoch_loss_sum_.copy_(epoch_loss_before_);
  log_loss_count_ = log_count_before_;
  epoch_loss_count_ = epoch_count_before_;
  ++pos_.step;  // the step's data is consumed, as when the loss scaler skips a step
  ++nonfinite_skipped_;
  ++nonfinite_streak_;
  const std::string what = std::isfinite(loss_sum) ? str_cat("gradient norm ", norm) : str_cat("loss ", loss_sum);
  if (progress_)
    progress_->line(str_cat("step ", pos_.step, ": non-finite ", what, ", step skipped (", nonfinite_streak_,
                            " in a row, ", nonfinite_skipped_, " in all)"));
  if (nonfinite_streak_ >= cfg_.max_nonfinite_steps) {
    const int64_t last = checkpoints_ ? checkpoints_->linked_step("last") : -1;
    throw Error(str_cat("step ", pos_.step, ": ", nonfinite_streak_,
                        " consecutive steps with a non-finite loss or gradient norm (--max-nonfinite-steps ",
                        cfg_.max_nonfinite_steps, "; last: ", what, "); the run stops",
                        last >= 0 ? str_cat(", its checkpoints/last stays at step ", last, " (finite)")
                                  : std::string(" before its first checkpoint"),
                        "; lower --lr or raise --warmup-epochs"));
  }
  return false;
}

}  // namespace cnn::train
