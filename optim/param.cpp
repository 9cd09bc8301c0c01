// Parameter list validation, zero_grad and gradient scaling (dispatch to the multi-tensor kernels).
#include "optim/param.h"

#include <map>
#include <set>

namespace cnn::optim {

Device check_params(const std::vector<ParamRef>& params, const char* op) {
  CNN_CHECK(!params.empty(), op, ": expected at least one parameter, got an empty list");
  std::set<std::string> names;
  const Device device = params.front().param.defined() ? params.front().param.device() : Device::cpu();
  for (const ParamRef& r : params) {
    CNN_CHECK(!r.name.empty(), op, ": parameter with an empty name");
    CNN_CHECK(names.insert(r.name).second, op, ": duplicate parameter name '", r.name, "'");
    const Tensor& p = r.param;
    CNN_CHECK(p.defined(), op, ": parameter '", r.name, "' is undefined");
    CNN_CHECK(p.dtype() == DType::f32 && p.is_contiguous(), op, ": parameter '", r.name,
              "' must be an f32 contiguous master weight, got ", p.str());
    CNN_CHECK(p.requires_grad() && p.is_leaf(), op, ": parameter '", r.name, "' must be a leaf requiring grad, got ",
              p.str());
    CNN_CHECK(p.device() == device, op, ": parameter '", r.name, "' is on ", p.device().str(),
              ", expected every parameter on ", device.str());
  }
  return device;
}

std::vector<GradTensor> grad_tensors(const std::vector<ParamRef>& params, const char* op) {
  std::vector<GradTensor> out;
  out.reserve(params.size());
  for (const ParamRef& r : params) {
    const Tensor g = r.param.grad();
    if (!g.defined()) continue;
    CNN_CHECK(
        g.dtype() == DType::f32 && g.is_contiguous() && g.shape() == r.param.shape() && g.device() == r.param.device(),
        op, ": gradient of '", r.name, "' must be f32 contiguous shaped like ", r.param.str(), ", got ", g.str());
    out.push_back(GradTensor{g.data<float>(), g.numel()});
  }
  return out;
}

// CUDA FP32 gradients are zeroed by the multi-tensor kernel, a launch per batch of tensors; others one by one.
void zero_grad(const std::vector<ParamRef>& params) {
  std::map<int, std::vector<GradTensor>> cuda_grads;  // by device index
  for (const ParamRef& r : params) {
    Tensor p = r.param;  // a handle sharing the parameter's autograd state
    const Tensor g = p.grad();
    if (g.defined() && g.device().is_cuda() && g.dtype() == DType::f32 && g.is_contiguous()) {
      cuda_grads[g.device().index].push_back(GradTensor{g.data<float>(), g.numel()});
    } else {
      p.zero_grad();
    }
  }
  for (const auto& [device, grads] : cuda_grads) zero_grads_cuda(device, grads);
}

Tensor scalar_tensor(float value, Device device, const std::string& label) {
  return Tensor::full({1}, double(value), DType::f32, device, label);
}

void scale_grads(const std::vector<ParamRef>& params, double alpha) {
  const Device device = check_params(params, "scale_grads");
  const std::vector<GradTensor> grads = grad_tensors(params, "scale_grads");
  if (grads.empty()) return;
  const Tensor factor = scalar_tensor(float(alpha), device, "scale_grads.factor");
  if (device.is_cuda()) {
    scale_grads_cuda(device.index, grads, factor.data<float>());
  } else {
    scale_grads_cpu(grads, factor.data<float>());
  }
}

}  // namespace cnn::optim
