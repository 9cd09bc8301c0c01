// Global gradient norm and clipping: dispatch to the multi-tensor kernels of optim_kernels.h.
#include "optim/grad_clip.h"

#include <cmath>

namespace cnn::optim {

GradNorm grad_norm(const std::vector<ParamRef>& params, double max_norm) {
  CNN_CHECK(std::isfinite(max_norm) && max_norm > 0, "grad_norm: expected a finite max_norm > 0, got ", max_norm);
  const Device device = check_params(params, "grad_norm");
  const std::vector<GradTensor> grads = grad_tensors(params, "grad_norm");
  Tensor out = Tensor::empty({2}, DType::f32, device, "grad_norm");
  if (device.is_cuda()) {
    grad_norm_cuda(device.index, grads, float(max_norm), out.data<float>());
  } else {
    grad_norm_cpu(grads, float(max_norm), out.data<float>());
  }
  return GradNorm{out.slice(0, 0, 1), out.slice(0, 1, 2)};
}

GradNorm clip_grad_norm_(const std::vector<ParamRef>& params, double max_norm) {
  GradNorm n = grad_norm(params, max_norm);
  const std::vector<GradTensor> grads = grad_tensors(params, "clip_grad_norm_");
  const Device device = n.coef.device();
  if (device.is_cuda()) {
    scale_grads_cuda(device.index, grads, n.coef.data<float>());
  } else {
    scale_grads_cpu(grads, n.coef.data<float>());
  }
  return n;
}

}  // namespace cnn::optim
