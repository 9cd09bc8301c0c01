// CUDA entry points of the Tensor-level kernels in a CPU-only build: unreachable (no cuda Tensor can exist), and
// an error naming the op if reached.
#include "core/error.h"
#include "layers/backend.h"

namespace cnn::backend::cuda {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw Error(str_cat(op, ": cuda tensors need a CUDA build, this binary was built without CUDA (CNN_CUDA=OFF)"));
}
}  // namespace

void binary(kernels::BinaryOp, const Tensor&, const Tensor&, Tensor&) { no_cuda("add/mul"); }
void scale(const Tensor&, double, Tensor&) { no_cuda("scale"); }
void broadcast(const Tensor&, double, Tensor&) { no_cuda("broadcast"); }
void relu_forward(const Tensor&, Tensor&) { no_cuda("relu"); }
void relu_backward(const Tensor&, const Tensor&, Tensor&) { no_cuda("relu_backward"); }
void sum_all(const Tensor&, double, Tensor&) { no_cuda("sum"); }
void sum_rows(const Tensor&, double, Tensor&) { no_cuda("sum over all but the last axis"); }
void gemm(const Tensor&, const Tensor&, bool, bool, Tensor&) { no_cuda("matmul"); }
void softmax_xent_forward(const Tensor&, const Tensor&, double, Tensor&, Tensor&) {
  no_cuda("softmax_cross_entropy");
}
void softmax_xent_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, Tensor&) {
  no_cuda("softmax_cross_entropy backward");
}

}  // namespace cnn::backend::cuda
