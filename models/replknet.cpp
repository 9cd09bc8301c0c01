// RepLKNet: config binding, modules (names as the reference: stem.k.conv/bn, stages.i.blocks.j.{prelkb_bn, pw1,
// large_kernel.lkb_origin, large_kernel.small_conv, pw2} / {preffn_bn, pw1, pw2}, transitions.i.k, norm, head)
// and structural re-parameterisation.
#include "models/replknet.h"

#include "core/autograd.h"
#include "layers/functional.h"
#include "layers/reparam.h"

namespace cnn {

namespace ys = yaml_struct;

RepLKNetConfig parse_replknet_config(ys::MapReader& r, const ModelCommon& common) {
  RepLKNetConfig c;
  c.common = common;
  r.optional("drop_path_rate", c.common.drop_path_rate, ys::number_in(0.0, 1.0, true));
  r.required("small_kernel", c.small_kernel, ys::odd_int_at_least(1));
  r.optional("dw_ratio", c.dw_ratio, ys::positive_number());
  r.optional("ffn_ratio", c.ffn_ratio, ys::positive_number());
  r.optional("small_kernel_merged", c.small_kernel_merged, ys::any_bool());
  r.required_struct_list<RepLKNetStageConfig>("stages", c.stages, ys::Length{1, 8},
                                              [](ys::MapReader& s, RepLKNetStageConfig& st) {
                                                s.required("depth", st.depth, ys::int_at_least(1));
                                                s.required("channels", st.channels, ys::int_at_least(1));
                                                s.required("kernel_size", st.kernel_size, ys::odd_int_at_least(1));
                                              });
  for (size_t i = 0; i < c.stages.size(); ++i)
    if (c.small_kernel > c.stages[i].kernel_size)
      r.fail("small_kernel", str_cat("expected <= every stage's kernel_size, got ", c.small_kernel, " > stages[", i,
                                     "].kernel_size = ", c.stages[i].kernel_size));
  return c;
}

namespace {

std::shared_ptr<ConvBn> pointwise_bn(int64_t in, int64_t out, bool relu) {
  return std::make_shared<ConvBn>(std::make_shared<PointwiseConv2d>(in, out, false), out, relu);
}

std::shared_ptr<ConvBn> depthwise_bn(int64_t channels, int kernel, int stride, bool relu, const BuildOptions& options) {
  return std::make_shared<ConvBn>(make_depthwise(channels, kernel, kernel, stride, false, options), channels, relu);
}

// blocks (alternating RepLK block and ConvFFN) then norm (Identity: only RepLKNet-XL downstream uses a BN here).
class RepLKNetStage : public Module {
 public:
  RepLKNetStage() : Module("RepLKNetStage") {
    blocks = register_module("blocks", std::make_shared<Sequential>());
    norm = register_module("norm", std::make_shared<Identity>());
  }
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override { return blocks->call(ctx, x); }
  std::shared_ptr<Sequential> blocks;
  std::shared_ptr<Identity> norm;
};

}  // namespace

ReparamLargeKernelConv::ReparamLargeKernelConv(int64_t channels, int kernel, int small_kernel, bool merged,
                                               const BuildOptions& options)
    : Module("ReparamLargeKernelConv") {
  CNN_CHECK(small_kernel <= kernel, "ReparamLargeKernelConv: expected small kernel <= large kernel, got ", small_kernel,
            " > ", kernel);
  if (merged) {
    reparam_ = register_module("lkb_reparam", make_depthwise(channels, kernel, kernel, 1, true, options));
    return;
  }
  origin_ = register_module("lkb_origin", depthwise_bn(channels, kernel, 1, false, options));
  small_ = register_module("small_conv", depthwise_bn(channels, small_kernel, 1, false, options));
}

Tensor ReparamLargeKernelConv::forward(const ForwardContext& ctx, const Tensor& x) {
  if (reparam_) return reparam_->call(ctx, x);
  return ops::add(ctx.tape, origin_->call(ctx, x), small_->call(ctx, x));
}

std::pair<Tensor, Tensor> ReparamLargeKernelConv::equivalent_kernel_bias() const {
  CNN_CHECK(!reparam_, "ReparamLargeKernelConv: already re-parameterised");
  NoGradGuard no_grad;
  const auto& large = static_cast<const DepthwiseConv2d&>(origin_->conv());
  const auto& small = static_cast<const DepthwiseConv2d&>(small_->conv());
  auto [wl, bl] = fold_bn_depthwise(large.weight, Tensor(), origin_->bn());
  auto [ws, bs] = fold_bn_depthwise(small.weight, Tensor(), small_->bn());
  Tensor w = merge_depthwise_kernels(wl, ws);
  Tensor b = bl.clone();
  b.add_(bs);
  return {w, b};
}

DepthwiseConv2d& ReparamLargeKernelConv::reparam() const {
  CNN_CHECK(reparam_, "ReparamLargeKernelConv: not re-parameterised (no lkb_reparam)");
  return *reparam_;
}

RepLKBlock::RepLKBlock(int64_t channels, int64_t dw_channels, int kernel, int small_kernel, bool merged,
                       double drop_path, uint32_t layer_id, const BuildOptions& options)
    : Module("RepLKBlock") {
  pw1_ = register_module("pw1", pointwise_bn(channels, dw_channels, true));
  pw2_ = register_module("pw2", pointwise_bn(dw_channels, channels, false));
  large_kernel_ = register_module(
      "large_kernel", std::make_shared<ReparamLargeKernelConv>(dw_channels, kernel, small_kernel, merged, options));
  lk_nonlinear_ = register_module("lk_nonlinear", std::make_shared<ReLU>());
  prelkb_bn_ = register_module("prelkb_bn", std::make_shared<BatchNorm2d>(channels));
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, layer_id));
}

Tensor RepLKBlock::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = pw1_->call(ctx, prelkb_bn_->call(ctx, x));
  h = pw2_->call(ctx, lk_nonlinear_->call(ctx, large_kernel_->call(ctx, h)));
  return ops::add(ctx.tape, x, drop_path_->call(ctx, h));
}

ConvFFN::ConvFFN(int64_t channels, int64_t hidden, double drop_path, uint32_t layer_id) : Module("ConvFFN") {
  drop_path_ = register_module("drop_path", std::make_shared<DropPath>(drop_path, layer_id));
  preffn_bn_ = register_module("preffn_bn", std::make_shared<BatchNorm2d>(channels));
  pw1_ = register_module("pw1", pointwise_bn(channels, hidden, false));
  pw2_ = register_module("pw2", pointwise_bn(hidden, channels, false));
  nonlinear_ = register_module("nonlinear", std::make_shared<GELU>());
}

Tensor ConvFFN::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = pw1_->call(ctx, preffn_bn_->call(ctx, x));
  h = pw2_->call(ctx, nonlinear_->call(ctx, h));
  return ops::add(ctx.tape, x, drop_path_->call(ctx, h));
}

RepLKNet::RepLKNet(const RepLKNetConfig& config, const BuildOptions& options)
    : Model("RepLKNet", config.common), config_(config) {
  const auto& st = config.stages;
  const int64_t base = st[0].channels;
  stem_ = register_module("stem", std::make_shared<Sequential>());
  Conv2dOptions first;
  first.in_channels = config.common.in_channels;
  first.out_channels = base;
  first.kernel_h = first.kernel_w = 3;
  first.stride_h = first.stride_w = 2;
  first.pad_h = first.pad_w = 1;
  first.bias = false;
  stem_->add(std::make_shared<ConvBn>(std::make_shared<Conv2d>(first), base, true));
  stem_->add(depthwise_bn(base, 3, 1, true, options));
  stem_->add(pointwise_bn(base, base, true));
  stem_->add(depthwise_bn(base, 3, 2, true, options));

  int64_t total = 0;
  for (const auto& s : st) total += s.depth;
  const std::vector<double> rates = drop_path_rates(config.common.drop_path_rate, total);
  stages_ = register_module("stages", std::make_shared<ModuleList>());
  transitions_ = register_module("transitions", std::make_shared<ModuleList>());
  uint32_t layer_id = 0;
  size_t block = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    const int64_t c = st[i].channels;
    auto stage = stages_->add(std::make_shared<RepLKNetStage>());
    for (int j = 0; j < st[i].depth; ++j, ++block) {
      auto lk =
          std::make_shared<RepLKBlock>(c, int64_t(double(c) * config.dw_ratio), st[i].kernel_size, config.small_kernel,
                                       config.small_kernel_merged, rates[block], layer_id++, options);
      stage->blocks->add(lk);
      replk_blocks_.push_back(lk);
      stage->blocks->add(std::make_shared<ConvFFN>(c, int64_t(double(c) * config.ffn_ratio), rates[block], layer_id++));
    }
    stage_list_.push_back(stage);
    if (i + 1 < st.size()) {
      const int64_t c2 = st[i + 1].channels;
      auto t = std::make_shared<Sequential>();
      t->add(pointwise_bn(c, c2, true));
      t->add(depthwise_bn(c2, 3, 2, true, options));
      transition_list_.push_back(transitions_->add(t));
    }
  }
  norm_ = register_module("norm", std::make_shared<BatchNorm2d>(st.back().channels));
  avgpool_ = register_module("avgpool", std::make_shared<GlobalAvgPool>());
  head_ = register_module("head", std::make_shared<Linear>(st.back().channels, config.common.num_classes));
}

Tensor RepLKNet::forward(const ForwardContext& ctx, const Tensor& x) {
  check_input(x);
  Tensor h = stem_->call(ctx, x);
  for (size_t i = 0; i < stage_list_.size(); ++i) {
    h = stage_list_[i]->call(ctx, h);
    if (i < transition_list_.size()) h = transition_list_[i]->call(ctx, h);
  }
  return head_->call(ctx, avgpool_->call(ctx, norm_->call(ctx, h)));
}

std::shared_ptr<RepLKNet> reparameterize(const RepLKNet& model, const BuildOptions& options) {
  return merge_large_kernels(model, options, [](const RepLKNet& m) -> const auto& { return m.replk_blocks(); });
}

}  // namespace cnn
