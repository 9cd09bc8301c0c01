// ops::batch_norm_act without CUDA: the CUDA entries cannot be reached (tensors cannot live on a GPU).
#include "core/error.h"
#include "layers/batch_norm_act.h"

namespace cnn::backend::cuda {

void batch_norm_act_stats(const Tensor&, kernels::NormAct, Tensor&, Tensor&, double, double, NormStats&) {
  throw Error("batch_norm_act: this build has no CUDA support");
}
void batch_norm_act_apply(const Tensor&, kernels::NormAct, const Tensor&, const Tensor&, const NormStats&,
                          const Tensor&, Tensor&) {
  throw Error("batch_norm_act: this build has no CUDA support");
}
void batch_norm_act_backward(const Tensor&, const Tensor&, kernels::NormAct, const Tensor&, const NormStats&, bool,
                             NormGrads&) {
  throw Error("batch_norm_act: this build has no CUDA support");
}

}  // namespace cnn::backend::cuda
