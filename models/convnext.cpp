// ConvNeXt: config binding and modules (names as timm: stem.0, stages.i.downsample.1, stages.i.blocks.j.conv_dw,
// .norm, .mlp.fc1, .mlp.fc2, .gamma, head.norm, head.fc).
#include "models/convnext.h"

#include "layers/functional.h"

namespace cnn {

namespace ys = yaml_struct;

ConvNeXtConfig parse_convnext_config(ys::MapReader& r, const ModelCommon& common) {
  ConvNeXtConfig c;
  c.common = common;
  r.optional("drop_path_rate", c.common.drop_path_rate, ys::number_in(0.0, 1.0, true));
  r.required("patch_size", c.patch_size, ys::int_at_least(1));
  r.optional("mlp_ratio", c.mlp_ratio, ys::int_at_least(1));
  r.optional("ls_init_value", c.ls_init_value, ys::number_in(0.0, 1.0));
  r.optional("norm_eps", c.norm_eps, ys::number_in(1e-12, 1e-2));
  r.required_struct_list<ConvNeXtStageConfig>("stages", c.stages, ys::Length{1, 8},
                                              [](ys::MapReader& s, ConvNeXtStageConfig& st) {
                                                s.required("depth", st.depth, ys::int_at_least(1));
                                                s.required("dim", st.dim, ys::int_at_least(1));
                                                s.required("kernel_size", st.kernel_size, ys::odd_int_at_least(1));
                                              });
  return c;
}

ConvNeXtBlock::ConvNeXtBlock(const ConvNeXtConfig& c, int dim, int kernel_size, double drop_path, uint32_t layer_id,
                             const BuildOptions& options)
    : Module("ConvNeXtBlock") {
  conv_dw_ = register_module("conv_dw", make_depthwise(dim, kernel_size, kernel_size, 1, true, options));
  norm_ = register_module("norm", std::make_shared<LayerNorm>(dim, c.norm_eps));
  mlp_ = register_module("mlp", std::make_shared<Mlp>(dim, int64_t(c.mlp_ratio) * dim));
  gamma = Tensor::full({dim}, c.ls_init_value, DType::f32);
  register_parameter("gamma", &gamma, false);
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, layer_id));
}

Tensor ConvNeXtBlock::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = mlp_->call(ctx, norm_->call(ctx, conv_dw_->call(ctx, x)));
  h = ops::mul(ctx.tape, h, gamma);
  return ops::add(ctx.tape, drop_path_->call(ctx, h), x);
}

ConvNeXtStage::ConvNeXtStage(const ConvNeXtConfig& c, int index, const std::vector<double>& block_drop,
                             uint32_t& layer_id, const BuildOptions& options)
    : Module("ConvNeXtStage") {
  const ConvNeXtStageConfig& st = c.stages[size_t(index)];
  if (index == 0) {
    downsample_ = register_module("downsample", std::make_shared<Identity>());
  } else {
    const int in = c.stages[size_t(index) - 1].dim;
    auto ds = std::make_shared<Sequential>();
    ds->add(std::make_shared<LayerNorm>(in, c.norm_eps));
    ds->add(std::make_shared<Conv2d>(in, st.dim, 2, 2, 0, true));
    downsample_ = register_module("downsample", ds);
  }
  blocks_ = register_module("blocks", std::make_shared<Sequential>());
  for (int j = 0; j < st.depth; ++j)
    blocks_->add(
        std::make_shared<ConvNeXtBlock>(c, st.dim, st.kernel_size, block_drop[size_t(j)], layer_id++, options));
}

Tensor ConvNeXtStage::forward(const ForwardContext& ctx, const Tensor& x) {
  return blocks_->call(ctx, downsample_->call(ctx, x));
}

PoolNormHead::PoolNormHead(int64_t channels, int64_t num_classes, double eps) : Module("PoolNormHead") {
  pool_ = register_module("global_pool", std::make_shared<GlobalAvgPool>());
  norm_ = register_module("norm", std::make_shared<LayerNorm>(channels, eps));
  fc_ = register_module("fc", std::make_shared<Linear>(channels, num_classes));
}

Tensor PoolNormHead::forward(const ForwardContext& ctx, const Tensor& x) {
  return fc_->call(ctx, norm_->call(ctx, pool_->call(ctx, x)));
}

ConvNeXt::ConvNeXt(const ConvNeXtConfig& config, const BuildOptions& options)
    : Model("ConvNeXt", config.common), config_(config) {
  const auto& st = config.stages;
  stem_ = register_module("stem", std::make_shared<Sequential>());
  stem_->add(
      std::make_shared<Conv2d>(config.common.in_channels, st[0].dim, config.patch_size, config.patch_size, 0, true));
  stem_->add(std::make_shared<LayerNorm>(st[0].dim, config.norm_eps));
  int64_t total = 0;
  for (const auto& s : st) total += s.depth;
  const std::vector<double> rates = drop_path_rates(config.common.drop_path_rate, total);
  stages_ = register_module("stages", std::make_shared<Sequential>());
  uint32_t layer_id = 0;
  size_t first = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    const std::vector<double> block_drop(rates.begin() + long(first), rates.begin() + long(first + st[i].depth));
    stages_->add(std::make_shared<ConvNeXtStage>(config, int(i), block_drop, layer_id, options));
    first += size_t(st[i].depth);
  }
  head_ = register_module("head",
                          std::make_shared<PoolNormHead>(st.back().dim, config.common.num_classes, config.norm_eps));
}

Tensor ConvNeXt::forward(const ForwardContext& ctx, const Tensor& x) {
  check_input(x);
  return head_->call(ctx, stages_->call(ctx, stem_->call(ctx, x)));
}

}  // namespace cnn
