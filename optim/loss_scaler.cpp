// Dynamic loss scaler: option checks, device state, dispatch to the unscale / update kernels, state I/O.
#include "optim/loss_scaler.h"

#include <cmath>
#include <vector>

namespace cnn::optim {

namespace {

constexpr double kMaxCounter = 16777216.0;  // 2^24: f32 counters stay exact below it

const Tensor& required(const std::map<std::string, Tensor>& state, const std::string& key, DType dtype) {
  const auto it = state.find(key);
  CNN_CHECK(it != state.end(), "DynamicLossScaler::load_state_dict: missing key '", key, "'");
  const Tensor& t = it->second;
  CNN_CHECK(t.defined() && t.dtype() == dtype && t.shape() == Shape{1}, "DynamicLossScaler::load_state_dict: '", key,
            "' expected ", dtype_name(dtype), " (1), got ", t.defined() ? t.str() : "undefined");
  return t;
}

}  // namespace

DynamicLossScaler::DynamicLossScaler(Device device, const LossScalerOptions& options)
    : options_(options), device_(device) {
  const LossScalerOptions& o = options_;
  CNN_CHECK(o.growth_factor > 1 && std::isfinite(o.growth_factor) && o.backoff_factor > 0 && o.backoff_factor < 1,
            "DynamicLossScaler: expected growth_factor > 1 and backoff_factor in (0, 1), got ", o.growth_factor,
            " and ", o.backoff_factor);
  CNN_CHECK(o.growth_interval >= 1 && o.growth_interval < kMaxCounter,
            "DynamicLossScaler: expected growth_interval in [1, 2^24), got ", o.growth_interval);
  CNN_CHECK(o.min_scale > 0 && o.min_scale <= o.init_scale && o.init_scale <= o.max_scale && o.max_scale < 3e38,
            "DynamicLossScaler: expected 0 < min_scale <= init_scale <= max_scale < 3e38, got min ", o.min_scale,
            ", init ", o.init_scale, ", max ", o.max_scale);
  config_.growth_factor = float(o.growth_factor);
  config_.backoff_factor = float(o.backoff_factor);
  config_.growth_interval = o.growth_interval;
  config_.min_scale = float(o.min_scale);
  config_.max_scale = float(o.max_scale);
  std::vector<float> init(kScalerStateSize, 0.0f);
  init[kScale] = float(o.init_scale);
  state_ = Tensor::from_vector(init, {kScalerStateSize}, device_, "loss_scaler.state");
  scale_ = state_.slice(0, kScale, kScale + 1).reshape({});
  found_inf_ = state_.slice(0, kFoundInf, kFoundInf + 1);
}

void DynamicLossScaler::unscale_and_check(const std::vector<ParamRef>& params) {
  const Device device = check_params(params, "DynamicLossScaler::unscale_and_check");
  CNN_CHECK(device == device_, "DynamicLossScaler::unscale_and_check: parameters on ", device.str(),
            ", the scaler lives on ", device_.str());
  const std::vector<GradTensor> grads = grad_tensors(params, "DynamicLossScaler::unscale_and_check");
  float* s = state_.data<float>();
  if (device_.is_cuda()) {
    unscale_check_cuda(device_.index, grads, s + kScale, s + kFoundInf);
  } else {
    unscale_check_cpu(grads, s + kScale, s + kFoundInf);
  }
  unscaled_ = true;
}

void DynamicLossScaler::update() {
  CNN_CHECK(unscaled_,
            "DynamicLossScaler::update: no unscale_and_check since the last update (the overflow flag "
            "would be stale)");
  if (device_.is_cuda()) {
    scaler_update_cuda(device_.index, state_.data<float>(), config_);
  } else {
    scaler_update_cpu(state_.data<float>(), config_);
  }
  unscaled_ = false;
}

bool DynamicLossScaler::update_sync() {
  update();
  return read_state().found_inf;
}

LossScalerState DynamicLossScaler::read_state() const {
  const std::vector<float> v = state_.to_vector<float>();
  LossScalerState s;
  s.scale = v[kScale];
  s.growth_tracker = int64_t(v[kGrowthTracker]);
  s.found_inf = v[kFoundInf] != 0.0f;
  s.skipped_steps = int64_t(v[kSkippedSteps]);
  return s;
}

std::map<std::string, Tensor> DynamicLossScaler::state_dict() const {
  const LossScalerState s = read_state();
  return {
      {"loss_scaler.scale", Tensor::from_vector(std::vector<float>{float(s.scale)}, {1})},
      {"loss_scaler.growth_tracker", Tensor::from_vector(std::vector<int64_t>{s.growth_tracker}, {1})},
      {"loss_scaler.skipped_steps", Tensor::from_vector(std::vector<int64_t>{s.skipped_steps}, {1})},
  };
}

void DynamicLossScaler::load_state_dict(const std::map<std::string, Tensor>& state) {
  const double scale = required(state, "loss_scaler.scale", DType::f32).item();
  const double tracker = required(state, "loss_scaler.growth_tracker", DType::i64).item();
  const double skipped = required(state, "loss_scaler.skipped_steps", DType::i64).item();
  CNN_CHECK(std::isfinite(scale) && scale >= options_.min_scale && scale <= options_.max_scale,
            "DynamicLossScaler::load_state_dict: 'loss_scaler.scale' expected a value in [", options_.min_scale, ", ",
            options_.max_scale, "], got ", scale);
  CNN_CHECK(tracker >= 0 && tracker < options_.growth_interval,
            "DynamicLossScaler::load_state_dict: 'loss_scaler.growth_tracker' expected a count in [0, ",
            options_.growth_interval, "), got ", tracker);
  CNN_CHECK(skipped >= 0 && skipped < kMaxCounter,
            "DynamicLossScaler::load_state_dict: 'loss_scaler.skipped_steps' expected a count in [0, 2^24), got ",
            skipped);
  std::vector<float> v(kScalerStateSize, 0.0f);
  v[kScale] = float(scale);
  v[kGrowthTracker] = float(tracker);
  v[kSkippedSteps] = float(skipped);
  state_.copy_(Tensor::from_vector(v, {kScalerStateSize}));
  unscaled_ = false;
}

}  // namespace cnn::optim
