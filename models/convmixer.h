// ConvMixer-h/d (timm convmixer.py): stem conv p x p stride p -> act -> BN; d blocks of
// Residual(dwconv k x k 'same' -> act -> BN) -> 1x1 conv -> act -> BN; global average pool -> Linear.
#pragma once

#include <memory>
#include <string>

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
