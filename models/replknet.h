// RepLKNet (DingXiaoH/RepLKNet-pytorch replknet.py): stem [3x3 s2 conv, 3x3 dw, 1x1, 3x3 s2 dw] each conv-BN-ReLU;
// stages of (RepLK block, ConvFFN) pairs; transitions 1x1 conv-BN-ReLU + 3x3 s2 dw conv-BN-ReLU; head BN -> global
// average pool -> Linear. RepLK block: BN -> 1x1 conv-BN-ReLU -> (large dw conv-BN + small dw conv-BN) -> ReLU ->
// 1x1 conv-BN -> DropPath + residual. ConvFFN: BN -> 1x1 conv-BN -> GELU -> 1x1 conv-BN -> DropPath + residual.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "models/model.h"
#include "models/yaml_struct.h"

namespace cnn {

struct RepLKNetStageConfig {
  int depth = 0;  // (RepLK block, ConvFFN) pairs
  int channels = 0;
  int kernel_size = 31;  // large depthwise kernel (odd)
};

struct RepLKNetConfig {
  ModelCommon common;
  int small_kernel = 5;              // parallel small depthwise kernel (odd, <= every large kernel)
  double dw_ratio = 1.0;             // depthwise channels = int(channels * dw_ratio)
  double ffn_ratio = 4.0;            // ConvFFN hidden = int(channels * ffn_ratio)
  bool small_kernel_merged = false;  // build the re-parameterised form (lkb_reparam) directly
  std::vector<RepLKNetStageConfig> stages;
};

RepLKNetConfig parse_replknet_config(yaml_struct::MapReader& r, const ModelCommon& common);

// Large depthwise conv-BN with a parallel small one ("lkb_origin", "small_conv"), or after re-parameterisation a
// single large depthwise conv with bias ("lkb_reparam").
class ReparamLargeKernelConv : public Module {
 public:
  ReparamLargeKernelConv(int64_t channels, int kernel, int small_kernel, bool merged, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  bool merged() const { return reparam_ != nullptr; }
  // Eval-mode equivalent (FH, FW, C) kernel and (C) bias: both BNs folded, small kernel centred into the large.
  std::pair<Tensor, Tensor> equivalent_kernel_bias() const;
  DepthwiseConv2d& reparam() const;  // merged form only

 private:
  std::shared_ptr<ConvBn> origin_, small_;
  std::shared_ptr<DepthwiseConv2d> reparam_;
};

class RepLKBlock : public Module {
 public:
  RepLKBlock(int64_t channels, int64_t dw_channels, int kernel, int small_kernel, bool merged, double drop_path,
             uint32_t layer_id, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  ReparamLargeKernelConv& large_kernel() const { return *large_kernel_; }

 private:
  std::shared_ptr<ConvBn> pw1_, pw2_;
  std::shared_ptr<ReparamLargeKernelConv> large_kernel_;
  std::shared_ptr<ReLU> lk_nonlinear_;
  std::shared_ptr<BatchNorm2d> prelkb_bn_;
  std::shared_ptr<DropPath> drop_path_;
};

class ConvFFN : public Module {
 public:
  ConvFFN(int64_t channels, int64_t hidden, double drop_path, uint32_t layer_id);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  std::shared_ptr<BatchNorm2d> preffn_bn_;
  std::shared_ptr<ConvBn> pw1_, pw2_;
  std::shared_ptr<GELU> nonlinear_;
  std::shared_ptr<DropPath> drop_path_;
};

class RepLKNet : public Model {
 public:
  RepLKNet(const RepLKNetConfig& config, const BuildOptions& options);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  InitScheme init_scheme() const override { return InitScheme::pytorch_default; }
  const RepLKNetConfig& config() const { return config_; }
  const std::vector<std::shared_ptr<RepLKBlock>>& replk_blocks() const { return replk_blocks_; }

 private:
  RepLKNetConfig config_;
  std::shared_ptr<Sequential> stem_;
  std::shared_ptr<ModuleList> stages_, transitions_;
  std::vector<std::shared_ptr<Module>> stage_list_, transition_list_;
  std::vector<std::shared_ptr<RepLKBlock>> replk_blocks_;
  std::shared_ptr<BatchNorm2d> norm_;
  std::shared_ptr<GlobalAvgPool> avgpool_;
  std::shared_ptr<Linear> head_;
};

// Structural re-parameterisation for inference/export (reference structural_reparam): a new RepLKNet built with
// small_kernel_merged whose large-kernel convs hold the folded + merged kernels and every other tensor is copied.
// Equal to `model` in eval mode up to FP32 rounding. The result is on the CPU in eval mode.
std::shared_ptr<RepLKNet> reparameterize(const RepLKNet& model, const BuildOptions& options = {});

}  // namespace cnn
