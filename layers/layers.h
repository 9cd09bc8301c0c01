// The CNN layer Modules: Conv2d, DepthwiseConv2d, Linear, LayerNorm, BatchNorm2d, GELU, ReLU, LayerScale,
// DropPath, GlobalAvgPool, Identity. Activations NHWC; parameters are created f32 on the CPU (weights zero until
// Module::init, norm affine ones / zeros, LayerScale filled with its init value); move them with Module::to.
#pragma once

#include <cstdint>

#include "kernels/dwconv/dwconv.h"
#include "layers/functional.h"
#include "layers/module.h"

namespace cnn {

// Dense conv, groups = 1 (stems, patch embeddings, downsampling). weight (K, R, S, C), bias (K).
struct Conv2dOptions {
  int64_t in_channels = 0, out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;  // symmetric
  bool bias = true;
};

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& o);
  // Square kernel / stride / padding shorthand.
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel, int stride = 1, int padding = 0, bool bias = true);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  const Conv2dOptions& options() const { return options_; }

  Tensor weight;  // (K, R, S, C)
  Tensor bias;    // (K), undefined without bias

 protected:
  void init_parameters(InitScheme scheme, InitRng& rng) override;

 private:
  Conv2dOptions options_;
};

// Depthwise conv on Flash-DWC. weight (FH, FW, C), bias (C). Padding -1 means 'same' for that side:
// top = (FH - 1) / 2, bottom = FH / 2 (symmetric FH / 2 for odd FH, as PyTorch padding = k // 2), likewise W.
struct DepthwiseConv2dOptions {
  int64_t channels = 0;
  int kernel_h = 3, kernel_w = 3;
  int stride_h = 1, stride_w = 1;
  int pad_top = -1, pad_bottom = -1, pad_left = -1, pad_right = -1;
  bool bias = true;
  dwconv::BfcAccum bfc_accum = dwconv::BfcAccum::fp32;  // FP16 backward-filter accumulation (run option)
};

class DepthwiseConv2d : public Module {
 public:
  explicit DepthwiseConv2d(const DepthwiseConv2dOptions& o);
  // Square kernel, 'same' padding.
  DepthwiseConv2d(int64_t channels, int kernel, int stride = 1, bool bias = true);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  const DepthwiseConv2dOptions& options() const { return options_; }  // paddings resolved (no -1)
  ops::DwGeometry geometry() const;
  // Replaces the backend's weight gradient of this layer (ops::depthwise_conv2d's filter_grad); {} restores it.
  void set_filter_grad(ops::DwFilterGrad fn) { filter_grad_ = std::move(fn); }

  Tensor weight;  // (FH, FW, C)
  Tensor bias;    // (C), undefined without bias

 protected:
  void init_parameters(InitScheme scheme, InitRng& rng) override;

 private:
  DepthwiseConv2dOptions options_;
  ops::DwFilterGrad filter_grad_;
};

// PyTorch Linear over the last axis of (..., in): also the 1x1 / pointwise conv on NHWC. weight (out, in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), undefined without bias

 protected:
  void init_parameters(InitScheme scheme, InitRng& rng) override;

 private:
  int64_t in_, out_;
};

// LayerNorm over the channel (last) axis, channels-last. weight = ones, bias = zeros (no decay).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t channels, double eps = 1e-6);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  double eps() const { return eps_; }

  Tensor weight;  // (C)
  Tensor bias;    // (C)

 private:
  double eps_;
};

// BatchNorm2d on NHWC. Buffers running_mean (C) = 0, running_var (C) = 1 (FP32; f64 after to(f64)),
// num_batches_tracked () i64 counting training forwards. weight = ones, bias = zeros (no decay).
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }

  Tensor weight;               // (C)
  Tensor bias;                 // (C)
  Tensor running_mean;         // (C)
  Tensor running_var;          // (C)
  Tensor num_batches_tracked;  // () i64, host-resident (stays on the CPU through Module::to)

 private:
  double eps_, momentum_;
};

class GELU : public Module {
 public:
  GELU() : Module("GELU") {}
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
};

// y = x * gamma over the channel axis; gamma (C) filled with init_value (ConvNeXt: 1e-6), no weight decay.
class LayerScale : public Module {
 public:
  LayerScale(int64_t channels, double init_value);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

  Tensor gamma;  // (C)
};

// Per-sample stochastic depth with drop probability p (keep 1 - p, survivors scaled by 1 / (1 - p)); identity in
// eval or when p == 0. layer_id makes each DropPath draw its own mask (see ops::drop_path_scales).
class DropPath : public Module {
 public:
  DropPath(double drop_prob, uint32_t layer_id);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  double drop_prob() const { return p_; }
  uint32_t layer_id() const { return layer_id_; }

 private:
  double p_;
  uint32_t layer_id_;
};

// (N, H, W, C) -> (N, C).
class GlobalAvgPool : public Module {
 public:
  GlobalAvgPool() : Module("GlobalAvgPool") {}
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
};

class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
};

}  // namespace cnn
