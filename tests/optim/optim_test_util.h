// Helpers for the optimizer tests: parameters and gradients from literal values.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "optim/param.h"

namespace cnn::test {

inline optim::ParamRef make_param(const std::string& name, const std::vector<float>& values, bool decay,
                                  Device device = Device::cpu()) {
  Tensor p = Tensor::from_vector(values, {int64_t(values.size())}, device, name);
  p.set_requires_grad(true);
  return optim::ParamRef{name, p, decay};
}

// Replaces the parameter's gradient by `values` (as a backward would leave it).
inline void set_grad(const optim::ParamRef& r, const std::vector<float>& values) {
  r.param.autograd_meta()->grad = Tensor::from_vector(values, r.param.shape(), r.param.device(), r.name + ".grad");
}

inline std::vector<float> values(const Tensor& t) { return t.to(Device::cpu()).to_vector<float>(); }

}  // namespace cnn::test
