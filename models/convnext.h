// ConvNeXt (timm convnext.py, patch stem, channels-last blocks): stem conv p x p stride p + LayerNorm; stages of
// [LayerNorm + 2x2 stride-2 conv downsample (not in stage 0)] + blocks dwconv k x k -> LayerNorm -> Linear 4C ->
// GELU -> Linear C -> gamma (LayerScale) -> DropPath + residual; head: global average pool -> LayerNorm -> Linear.
#pragma once

#include <memory>
#include <vector>

#include "models/model.h"
#include "models/yaml_struct.h"

namespace cnn {

struct ConvNeXtStageConfig {
  int depth = 0;        // blocks
  int dim = 0;          // channels
  int kernel_size = 7;  // depthwise kernel (odd)
};

struct ConvNeXtConfig {
  ModelCommon common;
  int patch_size = 4;                       // stem conv kernel = stride
  int mlp_ratio = 4;                        // hidden = mlp_ratio * dim
  double ls_init_value = 1e-6;              // LayerScale gamma init
  double norm_eps = 1e-6;                   // every LayerNorm
  std::vector<ConvNeXtStageConfig> stages;  // 1 to 8 stages
};

// Reads the family's keys (common keys already read into `common`).
ConvNeXtConfig parse_convnext_config(yaml_struct::MapReader& r, const ModelCommon& common);

class ConvNeXtBlock : public Module {
 public:
  ConvNeXtBlock(const ConvNeXtConfig& c, int dim, int kernel_size, double drop_path, uint32_t layer_id,
                const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

  Tensor gamma;  // (C) LayerScale, a direct parameter as in timm ("...blocks.j.gamma")

 private:
  std::shared_ptr<DepthwiseConv2d> conv_dw_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Mlp> mlp_;
  std::shared_ptr<DropPath> drop_path_;
};

// downsample (LayerNorm + 2x2 stride-2 conv, or Identity in stage 0) then blocks.
class ConvNeXtStage : public Module {
 public:
  ConvNeXtStage(const ConvNeXtConfig& c, int index, const std::vector<double>& block_drop, uint32_t& layer_id,
                const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  std::shared_ptr<Module> downsample_;
  std::shared_ptr<Sequential> blocks_;
};

// timm NormMlpClassifierHead without hidden layer: global_pool -> norm -> fc.
class PoolNormHead : public Module {
 public:
  PoolNormHead(int64_t channels, int64_t num_classes, double eps);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  std::shared_ptr<GlobalAvgPool> pool_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> fc_;
};

class ConvNeXt : public Model {
 public:
  ConvNeXt(const ConvNeXtConfig& config, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  InitScheme init_scheme() const override { return InitScheme::trunc_normal_002; }
  const ConvNeXtConfig& config() const { return config_; }

 private:
  ConvNeXtConfig config_;
  std::shared_ptr<Sequential> stem_, stages_;
  std::shared_ptr<PoolNormHead> head_;
};

}  // namespace cnn
