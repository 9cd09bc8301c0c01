// SLaK: config binding and modules (names as the reference: downsample_layers.i.k, stages.i.j.large_kernel.
// {Decom1, Decom2, lkb_origin, small_conv}.{conv, bn}, stages.i.j.{norm, pwconv1, pwconv2, gamma}, norm, head).
#include "models/slak.h"

#include "layers/functional.h"

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

SLaKLargeKernel::SLaKLargeKernel(int64_t channels, int kernel, int small_kernel, bool decomposed,
                                 const BuildOptions& options)
    : Module("SLaKLargeKernel") {
  if (decomposed) {
    branches_.push_back(register_module("Decom1", depthwise_bn(channels, kernel, small_kernel, options)));
    branches_.push_back(register_module("Decom2", depthwise_bn(channels, small_kernel, kernel, options)));
  } else {
    branches_.push_back(register_module("lkb_origin", depthwise_bn(channels, kernel, kernel, options)));
  }
  if (small_kernel < kernel)
    branches_.push_back(register_module("small_conv", depthwise_bn(channels, small_kernel, small_kernel, options)));
}

Tensor SLaKLargeKernel::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor y = branches_[0]->forward(ctx, x);
  for (size_t i = 1; i < branches_.size(); ++i) y = ops::add(ctx.tape, y, branches_[i]->forward(ctx, x));
  return y;
}

SLaKBlock::SLaKBlock(const SLaKConfig& c, int64_t dim, int kernel, double drop_path, uint32_t layer_id,
                     const BuildOptions& options)
    : Module("SLaKBlock") {
  large_kernel_ = register_module(
      "large_kernel", std::make_shared<SLaKLargeKernel>(dim, kernel, c.small_kernel, c.decomposed, options));
  norm_ = register_module("norm", std::make_shared<LayerNorm>(dim, 1e-6));
  pwconv1_ = register_module("pwconv1", std::make_shared<Linear>(dim, 4 * dim));
  act_ = register_module("act", std::make_shared<GELU>());
  pwconv2_ = register_module("pwconv2", std::make_shared<Linear>(4 * dim, dim));
  gamma = Tensor::full({dim}, c.ls_init_value, DType::f32);
  register_parameter("gamma", &gamma, false);
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, layer_id));
}

Tensor SLaKBlock::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = norm_->forward(ctx, large_kernel_->forward(ctx, x));
  h = pwconv2_->forward(ctx, act_->forward(ctx, pwconv1_->forward(ctx, h)));
  h = ops::mul(ctx.tape, h, gamma);
  return ops::add(ctx.tape, x, drop_path_->forward(ctx, h));
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
      stage->add(
          std::make_shared<SLaKBlock>(config, config.width(i), st[i].kernel_size, rates[block], layer_id++, options));
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
    h = stage_list_[i]->forward(ctx, downsample_list_[i]->forward(ctx, h));
  return head_->forward(ctx, norm_->forward(ctx, pool_->forward(ctx, h)));
}

}  // namespace cnn
