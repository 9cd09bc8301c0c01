// Dynamic loss scaling for --amp (torch.cuda.amp.GradScaler semantics plus a floor and a cap). The whole state
// (scale, growth tracker, found_inf, skipped steps) lives in one f32 device tensor: the backward seed, the unscale,
// the AdamW skip and the update all read it on the device, so a training step never waits for the host.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "optim/optim_kernels.h"
#include "optim/param.h"

namespace cnn::optim {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;     // clean steps before the scale grows
  double min_scale = 1.0;         // backoff never goes below (torch has no floor)
  double max_scale = 16777216.0;  // 2^24: growth never goes above (torch has no cap)
};

// Host copy of the state, for logs and tests.
struct LossScalerState {
  double scale = 0;
  int64_t growth_tracker = 0;  // clean steps since the last growth or backoff
  bool found_inf = false;      // the last unscale_and_check saw inf/nan (that step was skipped)
  int64_t skipped_steps = 0;   // overflow steps since the start of training
};

class DynamicLossScaler {
 public:
  DynamicLossScaler(Device device, const LossScalerOptions& options = {});

  // f32 () tensor holding the current scale: seed backward with it (tape.backward(loss, scaler.scale())) to get
  // gradients of loss * scale without a multiply op.
  Tensor scale() const { return scale_; }
  // f32 (1) overflow flag of the last unscale_and_check: StepControl::found_inf for AdamW::step.
  Tensor found_inf() const { return found_inf_; }

  // Clears found_inf, multiplies every gradient by 1 / scale in place and sets found_inf if any result is inf or
  // nan. Call once per optimizer step, after the last backward of the step (and before clipping).
  void unscale_and_check(const std::vector<ParamRef>& params);

  // On the device, from found_inf: overflow -> scale *= backoff (floored), tracker = 0, skipped += 1;
  // clean -> tracker += 1 and, at growth_interval, scale *= growth (capped), tracker = 0. Needs one
  // unscale_and_check since the previous update.
  void update();
  // update(), then reads the state (one host sync) and returns whether this step overflowed (was skipped).
  bool update_sync();

  // Reads the state (synchronizes with the device; for logging intervals and tests).
  LossScalerState read_state() const;

  // "loss_scaler.scale" (f32 (1)), "loss_scaler.growth_tracker", "loss_scaler.skipped_steps" (i64 (1)).
  std::map<std::string, Tensor> state_dict() const;
  // Restores from state_dict's keys (other keys ignored; all three required with their dtypes and shapes).
  void load_state_dict(const std::map<std::string, Tensor>& state);

  const LossScalerOptions& options() const { return options_; }

 private:
  LossScalerOptions options_;
  ScalerConfig config_;
  Device device_;
  Tensor state_;           // f32 (kScalerStateSize), slots of ScalerSlot
  Tensor scale_;           // f32 () view of state_[kScale]
  Tensor found_inf_;       // f32 (1) view of state_[kFoundInf]
  bool unscaled_ = false;  // unscale_and_check ran since the last update
};

}  // namespace cnn::optim
