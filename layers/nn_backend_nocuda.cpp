// CUDA entry points of the CNN layer kernels in a CPU-only build: unreachable (no cuda Tensor can exist), and an
// error naming the op if reached.
#include "core/error.h"
#include "layers/nn_backend.h"

namespace cnn::backend::cuda {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw Error(str_cat(op, ": cuda tensors need a CUDA build, this binary was built without CUDA (CNN_CUDA=OFF)"));
}
}  // namespace

void conv2d_forward(const Tensor&, const Tensor&, const kernels::Conv2dParams&, Tensor&) { no_cuda("conv2d"); }
void conv2d_backward_data(const Tensor&, const Tensor&, const kernels::Conv2dParams&, Tensor&) {
  no_cuda("conv2d backward_data");
}
void conv2d_backward_filter(const Tensor&, const Tensor&, const kernels::Conv2dParams&, Tensor&) {
  no_cuda("conv2d backward_filter");
}
void dwconv_forward(const Tensor&, const Tensor&, const Tensor&, const dwconv::DwconvParams&, Tensor&) {
  no_cuda("depthwise_conv2d");
}
void dwconv_backward_data(const Tensor&, const Tensor&, const dwconv::DwconvParams&, Tensor&) {
  no_cuda("depthwise_conv2d backward_data");
}
void dwconv_backward_filter(const Tensor&, const Tensor&, const dwconv::DwconvParams&, dwconv::BfcAccum, Tensor&) {
  no_cuda("depthwise_conv2d backward_filter");
}
void layernorm_forward(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, NormStats&) {
  no_cuda("layer_norm");
}
void layernorm_backward(const Tensor&, const Tensor&, const Tensor&, const NormStats&, NormGrads&) {
  no_cuda("layer_norm backward");
}
void batchnorm_batch_stats(const Tensor&, Tensor&, Tensor&, double, double, bool, NormStats&) {
  no_cuda("batch_norm");
}
void batchnorm_running_stats(const Tensor&, const Tensor&, double, NormStats&) { no_cuda("batch_norm (eval)"); }
void batchnorm_apply(const Tensor&, const Tensor&, const Tensor&, const NormStats&, Tensor&) { no_cuda("batch_norm"); }
void batchnorm_backward(const Tensor&, const Tensor&, const Tensor&, const NormStats&, bool, NormGrads&) {
  no_cuda("batch_norm backward");
}
void gelu_forward(const Tensor&, Tensor&) { no_cuda("gelu"); }
void gelu_backward(const Tensor&, const Tensor&, Tensor&) { no_cuda("gelu backward"); }
void sample_scale(const Tensor&, const Tensor&, Tensor&) { no_cuda("sample_scale"); }
void gap_forward(const Tensor&, Tensor&) { no_cuda("global_avg_pool"); }
void gap_backward(const Tensor&, Tensor&) { no_cuda("global_avg_pool backward"); }
void drop_scales(const Tensor&, double, Tensor&) { no_cuda("drop_path"); }

}  // namespace cnn::backend::cuda
