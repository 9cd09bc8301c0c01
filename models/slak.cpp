// SLaK: config binding, modules (names as the reference: downsample_layers.i.k, stages.i.j.large_kernel.
// {LoRA1, LoRA2, lkb_origin, small_conv}.{conv, bn} or .lkb_reparam, stages.i.j.{norm, pwconv1, pwconv2, gamma},
// norm, head) and structural re-parameterisation.
#include "models/slak.h"

#include <algorithm>

#include "core/autograd.h"
#include "layers/functional.h"
#include "layers/reparam.h"

namespace cnn {

namespace ys = yaml_struct;

SLaKConfig parse_slak_config(ys::MapReader& r, const ModelCommon& common) {
  SLaKConfig c;
  c.common = common;
  r.optional("drop_path_rate", c.common.drop_path_rate, ys::number_in(0.0, 1.0, true));
  r.required("width_factor", c.width_factor, ys::positive_number());
  r.required("small_kernel", c.small_kernel, ys::odd_int_at_least(1));
  r.required("decomposed", c.decomposed, ys::any_bool());
  r.optional("ls_init_value", c.ls_init_value, ys::number_in(0.0, 1.0));
  r.optional("small_kernel_merged", c.small_kernel_merged, ys::any_bool());
  r.required_struct_list<SLaKStageConfig>("stages", c.stages, ys::Length{1, 8},
                                          [](ys::MapReader& s, SLaKStageConfig& st) {
                                            s.required("depth", st.depth, ys::int_at_least(1));
                                            s.required("dim", st.dim, ys::int_at_least(1));
                                            s.required("kernel_size", st.kernel_size, ys::odd_int_at_least(1));
                                          });
  for (size_t i = 0; i < c.stages.size(); ++i)
    if (c.small_kernel > c.stages[i].kernel_size)
      r.fail("small_kernel", str_cat("expected <= every stage's kernel_size, got ", c.small_kernel, " > stages[", i,
                                     "].kernel_size = ", c.stages[i].kernel_size));
  for (size_t i = 0; i < c.stages.size(); ++i)
    if (c.width(i) < 1)
      r.fail("width_factor", str_cat("expected int(stages[", i, "].dim * width_factor) >= 1, got ", c.width(i)));
  return c;
}

namespace {

std::shared_ptr<ConvBn> depthwise_bn(int64_t channels, int kh, int kw, const BuildOptions& options) {
  return std::make_shared<ConvBn>(make_depthwise(channels, kh, kw, 1, false, options), channels, false);
}

}  // namespace

SLaKLargeKernel::SLaKLargeKernel(int64_t channels, int kernel, int small_kernel, bool decomposed, bool merged,
                                 const BuildOptions& options)
    : Module("SLaKLargeKernel") {
  if (merged) {
    reparam_ = register_module("lkb_reparam", make_depthwise(channels, kernel, kernel, 1, true, options));
    return;
  }
  if (decomposed) {
    branches_.push_back(register_module("LoRA1", depthwise_bn(channels, kernel, small_kernel, options)));
    branches_.push_back(register_module("LoRA2", depthwise_bn(channels, small_kernel, kernel, options)));
  } else {
    branches_.push_back(register_module("lkb_origin", depthwise_bn(channels, kernel, kernel, options)));
  }
  if (small_kernel < kernel)
    branches_.push_back(register_module("small_conv", depthwise_bn(channels, small_kernel, small_kernel, options)));
}

Tensor SLaKLargeKernel::forward(const ForwardContext& ctx, const Tensor& x) {
  if (reparam_) return reparam_->call(ctx, x);
  Tensor y = branches_[0]->call(ctx, x);
  for (size_t i = 1; i < branches_.size(); ++i) y = ops::add(ctx.tape, y, branches_[i]->call(ctx, x));
  return y;
}

std::pair<Tensor, Tensor> SLaKLargeKernel::equivalent_kernel_bias() const {
  CNN_CHECK(!reparam_, "SLaKLargeKernel: already re-parameterised");
  NoGradGuard no_grad;
  // The first branch is the K x K kernel (dense) or the K x s strip; start from a zero K x K kernel so every
  // branch, the strips included, is centred the same way.
  const auto& first = static_cast<const DepthwiseConv2d&>(branches_[0]->conv());
  const int64_t k = std::max(first.weight.size(0), first.weight.size(1)), c = first.weight.size(2);
  Tensor w = Tensor::zeros({k, k, c}, first.weight.dtype(), first.weight.device());
  Tensor b = Tensor::zeros({c}, first.weight.dtype(), first.weight.device());
  for (const auto& branch : branches_) {
    auto [wi, bi] = fold_bn_depthwise(static_cast<const DepthwiseConv2d&>(branch->conv()).weight, Tensor(),
                                      branch->bn());
    w = merge_depthwise_kernels(w, wi);
    b.add_(bi);
  }
  return {w, b};
}

DepthwiseConv2d& SLaKLargeKernel::reparam() const {
  CNN_CHECK(reparam_, "SLaKLargeKernel: not re-parameterised (no lkb_reparam)");
  return *reparam_;
}

SLaKBlock::SLaKBlock(const SLaKConfig& c, int64_t dim, int kernel, double drop_path, uint32_t layer_id,
                     const BuildOptions& options)
    : Module("SLaKBlock") {
  large_kernel_ = register_module(
      "large_kernel", std::make_shared<SLaKLargeKernel>(dim, kernel, c.small_kernel, c.decomposed,
                                                        c.small_kernel_merged, options));
  norm_ = register_module("norm", std::make_shared<LayerNorm>(dim, 1e-6));
  pwconv1_ = register_module("pwconv1", std::make_shared<Linear>(dim, 4 * dim));
  act_ = register_module("act", std::make_shared<GELU>());
  pwconv2_ = register_module("pwconv2", std::make_shared<Linear>(4 * dim, dim));
  gamma = Tensor::full({dim}, c.ls_init_value, DType::f32);
  register_parameter("gamma", &gamma, false);
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, layer_id));
}

Tensor SLaKBlock::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = norm_->call(ctx, large_kernel_->call(ctx, x));
  h = pwconv2_->call(ctx, act_->call(ctx, pwconv1_->call(ctx, h)));
  h = ops::mul(ctx.tape, h, gamma);
  return ops::add(ctx.tape, x, drop_path_->call(ctx, h));
}

SLaK::SLaK(const SLaKConfig& config, const BuildOptions& options) : Model("SLaK", config.common), config_(config) {
  const auto& st = config.stages;
  downsample_layers_ = register_module("downsample_layers", std::make_shared<ModuleList>());
  auto stem = std::make_shared<Sequential>();
  stem->add(std::make_shared<Conv2d>(config.common.in_channels, config.width(0), 4, 4, 0, true));
  stem->add(std::make_shared<LayerNorm>(config.width(0), 1e-6));
  downsample_list_.push_back(downsample_layers_->add(stem));
  for (size_t i = 1; i < st.size(); ++i) {
    auto ds = std::make_shared<Sequential>();
    ds->add(std::make_shared<LayerNorm>(config.width(i - 1), 1e-6));
    ds->add(std::make_shared<Conv2d>(config.width(i - 1), config.width(i), 2, 2, 0, true));
    downsample_list_.push_back(downsample_layers_->add(ds));
  }
  int64_t total = 0;
  for (const auto& s : st) total += s.depth;
  const std::vector<double> rates = drop_path_rates(config.common.drop_path_rate, total);
  stages_ = register_module("stages", std::make_shared<ModuleList>());
  uint32_t layer_id = 0;
  size_t block = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    auto stage = std::make_shared<Sequential>();
    for (int j = 0; j < st[i].depth; ++j, ++block)
      blocks_.push_back(stage->add(
          std::make_shared<SLaKBlock>(config, config.width(i), st[i].kernel_size, rates[block], layer_id++, options)));
    stage_list_.push_back(stages_->add(stage));
  }
  pool_ = register_module("pool", std::make_shared<GlobalAvgPool>());
  norm_ = register_module("norm", std::make_shared<LayerNorm>(config.width(st.size() - 1), 1e-6));
  head_ = register_module("head", std::make_shared<Linear>(config.width(st.size() - 1), config.common.num_classes));
}

Tensor SLaK::forward(const ForwardContext& ctx, const Tensor& x) {
  check_input(x);
  Tensor h = x;
  for (size_t i = 0; i < stage_list_.size(); ++i)
    h = stage_list_[i]->call(ctx, downsample_list_[i]->call(ctx, h));
  return head_->call(ctx, norm_->call(ctx, pool_->call(ctx, h)));
}

std::shared_ptr<SLaK> reparameterize(const SLaK& model, const BuildOptions& options) {
  return merge_large_kernels(model, options, [](const SLaK& m) -> const auto& { return m.blocks(); });
}

}  // namespace cnn
