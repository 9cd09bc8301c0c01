// SGD with momentum: one velocity per parameter, updated in place with Tensor::add_.
#include "optim/sgd.h"

#include <utility>

#include "core/error.h"

namespace cnn::optim {

SgdMomentum::SgdMomentum(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : params_(std::move(params)), lr_(lr), momentum_(momentum), weight_decay_(weight_decay) {
  CNN_CHECK(lr > 0 && momentum >= 0 && momentum < 1 && weight_decay >= 0, "SgdMomentum: expected lr > 0, momentum in ",
            "[0, 1), weight_decay >= 0, got lr=", lr, " momentum=", momentum, " weight_decay=", weight_decay);
  for (const Tensor& p : params_) {
    CNN_CHECK(p.requires_grad(), "SgdMomentum: parameter ", p.str(), " does not require grad");
    velocity_.push_back(Tensor::zeros(p.shape(), DType::f32, p.device(), p.label() + ".momentum"));
  }
}

void SgdMomentum::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor& v = velocity_[i];
    v.add_(v, momentum_ - 1.0);  // v *= momentum
    v.add_(g);
    if (weight_decay_ > 0) v.add_(p, weight_decay_);
    p.add_(v, -lr_);
  }
}

void SgdMomentum::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

void SgdMomentum::set_lr(double lr) {
  CNN_CHECK(lr > 0, "SgdMomentum: expected lr > 0, got ", lr);
  lr_ = lr;
}

}  // namespace cnn::optim
