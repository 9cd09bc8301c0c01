// ops::batch_norm_act: validation, the CPU composition, the fused CUDA path and its tape node.
#include "layers/batch_norm_act.h"

#include "layers/backend/backend.h"
#include "layers/functional.h"

namespace cnn {

namespace ops {

namespace {

void check_args(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                const Tensor& running_var, bool training, const Tensor& residual) {
  CNN_CHECK(x.defined() && dtype_is_floating(x.dtype()) && x.dim() >= 2 && x.numel() >= 1,
            "batch_norm_act: expected non-empty floating x (N, H, W, C), got ", x.defined() ? x.str() : "undefined");
  const int64_t c = x.size(-1);
  for (const Tensor* t : {&gamma, &beta})
    CNN_CHECK(t->defined() && t->dim() == 1 && t->size(0) == c && t->dtype() == x.dtype() && t->device() == x.device(),
              "batch_norm_act: expected weight and bias (", c, ") like x ", x.str(), ", got ",
              t->defined() ? t->str() : "undefined");
  for (const Tensor* t : {&running_mean, &running_var})
    CNN_CHECK(t->defined() && t->dim() == 1 && t->size(0) == c && t->dtype() == DType::f32 &&
                  t->device() == x.device() && t->is_contiguous(),
              "batch_norm_act: expected contiguous f32 running statistics (", c, ") on ", x.device().str(), ", got ",
              t->defined() ? t->str() : "undefined");
  CNN_CHECK(!training || x.numel() / c > 1, "batch_norm_act: training needs more than one value per channel, got ",
            x.str());
  CNN_CHECK(!residual.defined() || (residual.shape() == x.shape() && residual.dtype() == x.dtype() &&
                                    residual.device() == x.device()),
            "batch_norm_act: expected a residual like x ", x.str(), ", got ", residual.defined() ? residual.str() : "");
}

}  // namespace

Tensor batch_norm_act(Tape* tape, const Tensor& x_in, kernels::NormAct act, const Tensor& gamma, const Tensor& beta,
                      Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                      const Tensor& residual_in) {
  CNN_CHECK(act == kernels::NormAct::relu || act == kernels::NormAct::gelu,
            "batch_norm_act: expected a relu or gelu activation (ops::batch_norm has none)");
  if (!x_in.defined() || !x_in.device().is_cuda()) {  // the reference: the separate ops
    const Tensor a = act == kernels::NormAct::gelu ? gelu(tape, x_in) : relu(tape, x_in);
    const Tensor y = batch_norm(tape, a, gamma, beta, running_mean, running_var, training, momentum, eps);
    return residual_in.defined() ? add(tape, y, residual_in) : y;
  }
  check_args(x_in, gamma, beta, running_mean, running_var, training, residual_in);
  CNN_CHECK(eps > 0.0 && momentum >= 0.0 && momentum <= 1.0,
            "batch_norm_act: expected eps > 0 and momentum in [0, 1], got eps=", eps, " momentum=", momentum);
  const Tensor x = x_in.contiguous(), residual = residual_in.defined() ? residual_in.contiguous() : Tensor();
  const int64_t c = x.size(-1);
  backend::NormStats stats;
  if (training) {
    stats = {Tensor::empty({c}, DType::f32, x.device()), Tensor::empty({c}, DType::f32, x.device())};
    backend::cuda::batch_norm_act_stats(x, act, running_mean, running_var, momentum, eps, stats);
  } else {
    stats = backend::batchnorm_running_stats(running_mean, running_var, eps);
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend::cuda::batch_norm_act_apply(x, act, gamma, beta, stats, residual, y);
  if (Tape::should_record(tape, {&x_in, &gamma, &beta, &residual_in})) {
    const bool need_dx = x_in.requires_grad(), need_residual = residual_in.defined() && residual_in.requires_grad();
    tape->record("batch_norm_act", {&x_in, &gamma, &beta, &residual_in}, {&y},
                 [x, gamma, stats, act, training, need_dx, need_residual](const std::vector<Tensor>& g) {
                   const Tensor dy = g[0].contiguous();
                   backend::NormGrads d;
                   if (need_dx) d.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
                   d.dgamma = Tensor::empty(gamma.shape(), gamma.dtype(), x.device());
                   d.dbeta = Tensor::empty(gamma.shape(), gamma.dtype(), x.device());
                   backend::cuda::batch_norm_act_backward(dy, x, act, gamma, stats, training, d);
                   return std::vector<Tensor>{d.dx, d.dgamma, d.dbeta, need_residual ? g[0] : Tensor()};
                 });
  }
  return y;
}

}  // namespace ops

Tensor batch_norm_act(const ForwardContext& ctx, BatchNorm2d& bn, const Tensor& x, kernels::NormAct act,
                      const Tensor& residual) {
  TapeObserver* observer = ctx.tape != nullptr ? ctx.tape->observer() : nullptr;
  if (observer != nullptr) observer->on_scope_begin(&bn);  // profiles charge the op to the BatchNorm layer
  const bool training = bn.training_in(ctx);
  Tensor y = ops::batch_norm_act(ctx.tape, x, act, bn.weight, bn.bias, bn.running_mean, bn.running_var, training,
                                 bn.momentum(), bn.eps(), residual);
  if (training) ++*bn.num_batches_tracked.data<int64_t>();  // host-resident: no device round trip
  if (observer != nullptr) observer->on_scope_end(&bn);
  return y;
}

}  // namespace cnn
