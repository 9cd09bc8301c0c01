// ConvMixer: config binding and modules (names as timm: stem.0, stem.2, blocks.i.0.fn.0, blocks.i.0.fn.2,
// blocks.i.1, blocks.i.3, head).
#include "models/convmixer.h"

#include "layers/batch_norm_act.h"

namespace cnn {

namespace ys = yaml_struct;

ConvMixerConfig parse_convmixer_config(ys::MapReader& r, const ModelCommon& common) {
  ConvMixerConfig c;
  c.common = common;
  r.required("dim", c.dim, ys::int_at_least(1));
  r.required("depth", c.depth, ys::int_at_least(1));
  r.required("kernel_size", c.kernel_size, ys::odd_int_at_least(1));
  r.required("patch_size", c.patch_size, ys::int_at_least(1));
  r.required("activation", c.activation, ys::one_of({"gelu", "relu"}));
  return c;
}

ConvMixerBlock::ConvMixerBlock(const ConvMixerConfig& config, const BuildOptions& options)
    : Module("ConvMixerBlock"),
      act_(config.activation == "gelu" ? kernels::NormAct::gelu : kernels::NormAct::relu) {
  const int h = config.dim;
  auto fn = std::make_shared<Sequential>();
  dw_ = fn->add(make_depthwise(h, config.kernel_size, config.kernel_size, 1, true, options));
  fn->add(make_activation(config.activation));
  bn1_ = fn->add(std::make_shared<BatchNorm2d>(h));
  register_module("0", std::make_shared<Residual>(fn));
  pw_ = register_module("1", std::make_shared<PointwiseConv2d>(h, h, true));
  register_module("2", make_activation(config.activation));
  bn2_ = register_module("3", std::make_shared<BatchNorm2d>(h));
}

Tensor ConvMixerBlock::forward(const ForwardContext& ctx, const Tensor& x) {
  const Tensor h = batch_norm_act(ctx, *bn1_, dw_->call(ctx, x), act_, x);
  return batch_norm_act(ctx, *bn2_, pw_->call(ctx, h), act_);
}

ConvMixer::ConvMixer(const ConvMixerConfig& config, const BuildOptions& options)
    : Model("ConvMixer", config.common), config_(config) {
  const int h = config.dim;
  stem_ = register_module("stem", std::make_shared<Sequential>());
  stem_->add(std::make_shared<Conv2d>(config.common.in_channels, h, config.patch_size, config.patch_size, 0, true));
  stem_->add(make_activation(config.activation));
  stem_->add(std::make_shared<BatchNorm2d>(h));
  blocks_ = register_module("blocks", std::make_shared<Sequential>());
  for (int i = 0; i < config.depth; ++i) blocks_->add(std::make_shared<ConvMixerBlock>(config, options));
  pooling_ = register_module("pooling", std::make_shared<GlobalAvgPool>());
  head_ = register_module("head", std::make_shared<Linear>(h, config.common.num_classes));
}

Tensor ConvMixer::forward(const ForwardContext& ctx, const Tensor& x) {
  check_input(x);
  return head_->call(ctx, pooling_->call(ctx, blocks_->call(ctx, stem_->call(ctx, x))));
}

}  // namespace cnn
