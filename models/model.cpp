// Model base checks and the shared building blocks.
#include "models/model.h"

#include <map>

#include "core/autograd.h"
#include "core/error.h"
#include "layers/functional.h"

namespace cnn {

void Model::check_input(const Tensor& x) const {
  CNN_CHECK(x.dim() == 4 && x.size(3) == common_.in_channels, common_.family, " '", common_.name,
            "': expected (N, H, W, ", common_.in_channels, ") NHWC input, got ", x.str());
}

Tensor ModuleList::forward(const ForwardContext&, const Tensor&) {
  throw Error("ModuleList: has no forward of its own; the owning module runs its items");
}

Residual::Residual(std::shared_ptr<Module> fn) : Module("Residual"), fn_(register_module("fn", std::move(fn))) {}

Tensor Residual::forward(const ForwardContext& ctx, const Tensor& x) {
  return ops::add(ctx.tape, fn_->call(ctx, x), x);
}

ConvBn::ConvBn(std::shared_ptr<Module> conv, int64_t out_channels, bool relu)
    : Module("ConvBn"),
      conv_(register_module("conv", std::move(conv))),
      bn_(register_module("bn", std::make_shared<BatchNorm2d>(out_channels))) {
  if (relu) relu_ = register_module("nonlinear", std::make_shared<ReLU>());
}

Tensor ConvBn::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor y = bn_->call(ctx, conv_->call(ctx, x));
  return relu_ ? relu_->call(ctx, y) : y;
}

Mlp::Mlp(int64_t channels, int64_t hidden) : Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<Linear>(channels, hidden));
  act_ = register_module("act", std::make_shared<GELU>());
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden, channels));
}

Tensor Mlp::forward(const ForwardContext& ctx, const Tensor& x) {
  return fc2_->call(ctx, act_->call(ctx, fc1_->call(ctx, x)));
}

std::shared_ptr<Module> make_activation(const std::string& name) {
  if (name == "gelu") return std::make_shared<GELU>();
  if (name == "relu") return std::make_shared<ReLU>();
  throw Error(str_cat("make_activation: expected gelu or relu, got '", name, "'"));
}

std::shared_ptr<DepthwiseConv2d> make_depthwise(int64_t channels, int kh, int kw, int stride, bool bias,
                                                const BuildOptions& options) {
  DepthwiseConv2dOptions o;
  o.channels = channels;
  o.kernel_h = kh;
  o.kernel_w = kw;
  o.stride_h = o.stride_w = stride;
  // PyTorch padding k // 2 on both sides ('same' for odd kernels at stride 1).
  o.pad_top = o.pad_bottom = kh / 2;
  o.pad_left = o.pad_right = kw / 2;
  o.bias = bias;
  o.bfc_accum = options.bfc_accum;
  return std::make_shared<DepthwiseConv2d>(o);
}

void copy_tensors_except(const Module& src, Module& dst, const std::string& skip) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> source;
  for (const auto& p : src.named_parameters()) source[p.name] = p.tensor;
  for (const auto& [name, t] : src.named_buffers()) source[name] = t;
  auto copy_from = [&](const std::string& name, Tensor& t) {
    if (name.find(skip) != std::string::npos) return;
    auto it = source.find(name);
    CNN_CHECK(it != source.end(), "copy_tensors_except: source model has no tensor '", name, "'");
    t.copy_(it->second);
  };
  for (auto& p : dst.named_parameters()) copy_from(p.name, p.tensor);
  for (auto& [name, t] : dst.named_buffers()) copy_from(name, t);
}

std::vector<double> drop_path_rates(double rate, int64_t total) {
  std::vector<double> r(size_t(total), 0.0);
  for (int64_t i = 1; i < total; ++i) r[size_t(i)] = rate * double(i) / double(total - 1);
  return r;
}

}  // namespace cnn
