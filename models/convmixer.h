// ConvMixer-h/d (timm convmixer.py): stem conv p x p stride p -> act -> BN; d blocks of
// Residual(dwconv k x k 'same' -> act -> BN) -> 1x1 conv -> act -> BN; global average pool -> Linear.
#pragma once

#include <memory>
#include <string>

#include "kernels/norm/norm.h"
#include "models/model.h"
#include "models/yaml_struct.h"

namespace cnn {

struct ConvMixerConfig {
  ModelCommon common;
  int dim = 0;                      // h: channels
  int depth = 0;                    // d: blocks
  int kernel_size = 9;              // depthwise kernel (odd)
  int patch_size = 7;               // stem kernel = stride
  std::string activation = "gelu";  // gelu | relu (timm convmixer_768_32 uses relu)
};

ConvMixerConfig parse_convmixer_config(yaml_struct::MapReader& r, const ModelCommon& common);

// One block, Residual(dwconv -> act -> BN) -> 1x1 conv -> act -> BN, with timm's child names (0.fn.0, 0.fn.2, 1, 3).
// The forward runs each act -> BN [-> + x] as one op (layers/batch_norm_act.h); the children's own forwards
// (Residual, Sequential) compute the same thing op by op.
class ConvMixerBlock : public Module {
 public:
  ConvMixerBlock(const ConvMixerConfig& config, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  kernels::NormAct act_;
  std::shared_ptr<DepthwiseConv2d> dw_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<PointwiseConv2d> pw_;
};

class ConvMixer : public Model {
 public:
  ConvMixer(const ConvMixerConfig& config, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  InitScheme init_scheme() const override { return InitScheme::pytorch_default; }
  const ConvMixerConfig& config() const { return config_; }

 private:
  ConvMixerConfig config_;
  std::shared_ptr<Sequential> stem_, blocks_;
  std::shared_ptr<GlobalAvgPool> pooling_;
  std::shared_ptr<Linear> head_;
};

}  // namespace cnn
