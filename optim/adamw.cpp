// AdamW: state allocation, half-copy registration, step dispatch (CPU / fused CUDA) and state (de)serialization.
#include "optim/adamw.h"

#include <cmath>
#include <set>

namespace cnn::optim {

namespace {

constexpr const char* kPrefix = "optim.";

void check_control(const Tensor& t, const char* what, Device device) {
  if (!t.defined()) return;
  CNN_CHECK(t.dtype() == DType::f32 && t.numel() == 1 && t.device() == device, "AdamW::step: ", what,
            " must be a one-element f32 tensor on ", device.str(), ", got ", t.str());
}

const float* control_ptr(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }

void check_loaded(const std::map<std::string, Tensor>& state, const std::string& key, DType dtype, const Shape& shape) {
  const auto it = state.find(key);
  CNN_CHECK(it != state.end(), "AdamW::load_state_dict: missing key '", key, "'");
  const Tensor& t = it->second;
  CNN_CHECK(t.defined() && t.dtype() == dtype && t.shape() == shape, "AdamW::load_state_dict: '", key, "' expected ",
            dtype_name(dtype), " ", shape_str(shape), ", got ", t.defined() ? t.str() : "undefined");
}

}  // namespace

AdamW::AdamW(std::vector<ParamRef> params, const AdamWOptions& options)
    : params_(std::move(params)), options_(options) {
  device_ = check_params(params_, "AdamW");
  const AdamWOptions& o = options_;
  CNN_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps > 0 && o.weight_decay >= 0,
            "AdamW: expected betas in [0, 1), eps > 0, weight_decay >= 0, got betas (", o.beta1, ", ", o.beta2,
            "), eps ", o.eps, ", weight_decay ", o.weight_decay);
  for (const ParamRef& r : params_) {
    exp_avg_.push_back(Tensor::zeros(r.param.shape(), DType::f32, device_, "optim." + r.name + ".exp_avg"));
    exp_avg_sq_.push_back(Tensor::zeros(r.param.shape(), DType::f32, device_, "optim." + r.name + ".exp_avg_sq"));
  }
  half_copy_.resize(params_.size());
  step_ = Tensor::zeros({1}, DType::i64, device_, "optim.step");
}

void AdamW::set_half_copies(const std::vector<std::pair<Tensor, Tensor>>& copies) {
  std::vector<Tensor> found(params_.size());
  for (const auto& [master, half] : copies) {
    CNN_CHECK(master.defined() && half.defined(), "AdamW::set_half_copies: undefined tensor in a (master, f16) pair");
    size_t i = 0;
    while (i < params_.size() && params_[i].param.data_ptr() != master.data_ptr()) ++i;
    CNN_CHECK(i < params_.size(), "AdamW::set_half_copies: master ", master.str(), " is not one of the parameters");
    CNN_CHECK(half.dtype() == DType::f16 && half.is_contiguous() && half.shape() == master.shape() &&
                  half.device() == device_,
              "AdamW::set_half_copies: copy of '", params_[i].name, "' must be f16 contiguous ",
              shape_str(master.shape()), " on ", device_.str(), ", got ", half.str());
    CNN_CHECK(!found[i].defined(), "AdamW::set_half_copies: two copies for '", params_[i].name, "'");
    found[i] = half;
  }
  half_copy_ = std::move(found);
}

void AdamW::step(double lr, const StepControl& control) {
  CNN_CHECK(std::isfinite(lr) && lr >= 0, "AdamW::step: expected a finite lr >= 0, got ", lr);
  check_control(control.found_inf, "found_inf", device_);
  check_control(control.grad_scale, "grad_scale", device_);
  std::vector<AdamWTensor> tensors;
  tensors.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamRef& r = params_[i];
    const Tensor g = r.param.grad();
    if (!g.defined()) continue;
    CNN_CHECK(g.dtype() == DType::f32 && g.is_contiguous() && g.shape() == r.param.shape() && g.device() == device_,
              "AdamW::step: gradient of '", r.name, "' must be f32 contiguous shaped like ", r.param.str(), ", got ",
              g.str());
    AdamWTensor t;
    t.p = r.param.data<float>();
    t.g = g.data<float>();
    t.m = exp_avg_[i].data<float>();
    t.v = exp_avg_sq_[i].data<float>();
    t.p16 = half_copy_[i].defined() ? static_cast<uint16_t*>(half_copy_[i].data_ptr()) : nullptr;
    t.n = r.param.numel();
    t.decay = r.decay;
    tensors.push_back(t);
  }
  AdamWArgs a;
  a.lr = lr;
  a.beta1 = options_.beta1;
  a.beta2 = options_.beta2;
  a.eps = options_.eps;
  a.weight_decay = options_.weight_decay;
  a.step = step_.data<int64_t>();
  a.found_inf = control_ptr(control.found_inf);
  a.grad_scale = control_ptr(control.grad_scale);
  if (device_.is_cuda()) {
    adamw_step_cuda(device_.index, tensors, a);
  } else {
    adamw_step_cpu(tensors, a);
  }
}

int64_t AdamW::step_count() const { return step_.to_vector<int64_t>()[0]; }

std::map<std::string, Tensor> AdamW::state_dict() const {
  std::map<std::string, Tensor> out;
  out[std::string(kPrefix) + "step"] = step_;
  for (size_t i = 0; i < params_.size(); ++i) {
    out[kPrefix + params_[i].name + ".exp_avg"] = exp_avg_[i];
    out[kPrefix + params_[i].name + ".exp_avg_sq"] = exp_avg_sq_[i];
  }
  return out;
}

void AdamW::load_state_dict(const std::map<std::string, Tensor>& state) {
  std::set<std::string> expected{std::string(kPrefix) + "step"};
  check_loaded(state, *expected.begin(), DType::i64, {1});
  for (const ParamRef& r : params_) {
    for (const char* suffix : {".exp_avg", ".exp_avg_sq"}) {
      const std::string key = kPrefix + r.name + suffix;
      check_loaded(state, key, DType::f32, r.param.shape());
      expected.insert(key);
    }
  }
  for (const auto& [key, t] : state) {
    CNN_CHECK(key.rfind(kPrefix, 0) != 0 || expected.count(key) == 1, "AdamW::load_state_dict: unexpected key '", key,
              "' (no parameter of that name)");
  }
  const Tensor& step = state.at(std::string(kPrefix) + "step");
  const int64_t t = step.to_vector<int64_t>()[0];
  CNN_CHECK(t >= 0, "AdamW::load_state_dict: 'optim.step' expected a count >= 0, got ", t);
  step_.copy_(step);
  for (size_t i = 0; i < params_.size(); ++i) {
    exp_avg_[i].copy_(state.at(kPrefix + params_[i].name + ".exp_avg"));
    exp_avg_sq_[i].copy_(state.at(kPrefix + params_[i].name + ".exp_avg_sq"));
  }
}

}  // namespace cnn::optim
