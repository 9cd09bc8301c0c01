// SLaK (VITA-Group/SLaK models/SLaK.py, dense weights): the ConvNeXt layout (stem 4x4 s4 conv + LayerNorm,
// LayerNorm + 2x2 s2 conv downsampling, pool -> LayerNorm -> Linear head) with dims int(dim * width_factor) and a
// large-kernel block: [K x s and s x K depthwise conv-BN strips (decomposed) | K x K depthwise conv-BN (dense)]
// + s x s depthwise conv-BN (when s < K), summed -> LayerNorm -> Linear 4C -> GELU -> Linear -> gamma -> DropPath
// + residual. Depthwise convs have no bias; every padding keeps the size (k // 2 per axis).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "models/model.h"
#include "models/yaml_struct.h"

namespace cnn {

struct SLaKStageConfig {
  int depth = 0;
  int dim = 0;           // before width_factor
  int kernel_size = 51;  // large kernel K (odd)
};

struct SLaKConfig {
  ModelCommon common;
  double width_factor = 1.0;    // channels = int(dim * width_factor) (Python int(): truncation)
  int small_kernel = 5;         // s (odd)
  bool decomposed = true;       // K x s + s x K strips (SLaK "Decom") or dense K x K
  double ls_init_value = 1e-6;  // LayerScale gamma init
  bool small_kernel_merged = false;  // build the re-parameterised form (one K x K conv with bias, lkb_reparam)
  std::vector<SLaKStageConfig> stages;
  int width(size_t stage) const { return int(double(stages[stage].dim) * width_factor); }
};

SLaKConfig parse_slak_config(yaml_struct::MapReader& r, const ModelCommon& common);

// children LoRA1 / LoRA2 (decomposed: K x s and s x K, the reference's names) or lkb_origin (dense), and
// small_conv when s < K; each a conv-BN. Merged: one K x K depthwise conv with bias, lkb_reparam.
class SLaKLargeKernel : public Module {
 public:
  SLaKLargeKernel(int64_t channels, int kernel, int small_kernel, bool decomposed, bool merged,
                  const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  // Eval-mode equivalent (K, K, C) kernel and (C) bias: every branch's BN folded, strips and the small kernel
  // centred into K x K.
  std::pair<Tensor, Tensor> equivalent_kernel_bias() const;
  DepthwiseConv2d& reparam() const;  // merged form only

 private:
  std::vector<std::shared_ptr<ConvBn>> branches_;
  std::shared_ptr<DepthwiseConv2d> reparam_;
};

class SLaKBlock : public Module {
 public:
  SLaKBlock(const SLaKConfig& c, int64_t dim, int kernel, double drop_path, uint32_t layer_id,
            const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  SLaKLargeKernel& large_kernel() const { return *large_kernel_; }

  Tensor gamma;  // (C) LayerScale ("stages.i.j.gamma")

 private:
  std::shared_ptr<SLaKLargeKernel> large_kernel_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> pwconv1_, pwconv2_;
  std::shared_ptr<GELU> act_;
  std::shared_ptr<DropPath> drop_path_;
};

class SLaK : public Model {
 public:
  SLaK(const SLaKConfig& config, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  InitScheme init_scheme() const override { return InitScheme::trunc_normal_002; }
  const SLaKConfig& config() const { return config_; }
  const std::vector<std::shared_ptr<SLaKBlock>>& blocks() const { return blocks_; }

 private:
  SLaKConfig config_;
  std::vector<std::shared_ptr<SLaKBlock>> blocks_;
  std::shared_ptr<ModuleList> downsample_layers_, stages_;
  std::vector<std::shared_ptr<Module>> downsample_list_, stage_list_;
  std::shared_ptr<GlobalAvgPool> pool_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> head_;
};

// Structural re-parameterisation for inference/export: a new SLaK built with small_kernel_merged whose large-kernel
// convs hold the folded + merged kernels (strips, small kernel and their BNs) and every other tensor is copied.
// Equal to `model` in eval mode up to FP32 rounding. The result is on the CPU in eval mode.
std::shared_ptr<SLaK> reparameterize(const SLaK& model, const BuildOptions& options = {});

}  // namespace cnn
