// CUDA entries of the optimizer kernels in a CPU-only build: unreachable (no cuda Tensor can exist), and an
// error naming the op if reached.
#include "core/error.h"
#include "optim/optim_kernels.h"

namespace cnn::optim {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw Error(str_cat(op, ": cuda tensors need a CUDA build, this binary was built without CUDA (CNN_CUDA=OFF)"));
}
}  // namespace

void adamw_step_cuda(int, const std::vector<AdamWTensor>&, const AdamWArgs&) { no_cuda("adamw_step"); }
void unscale_check_cuda(int, const std::vector<GradTensor>&, const float*, float*) { no_cuda("unscale_and_check"); }
void grad_norm_cuda(int, const std::vector<GradTensor>&, float, float*) { no_cuda("grad_norm"); }
void scale_grads_cuda(int, const std::vector<GradTensor>&, const float*) { no_cuda("scale_grads"); }
void zero_grads_cuda(int, const std::vector<GradTensor>&) { no_cuda("zero_grad"); }
void scaler_update_cuda(int, float*, const ScalerConfig&) { no_cuda("loss scaler update"); }

}  // namespace cnn::optim
