// Model base class and the small building blocks the four families share (ModuleList, Residual, conv + BN,
// pointwise conv, MLP). Child and parameter names follow the reference implementations, so checkpoint names are
// the module paths themselves (models/checkpoint.h only converts layouts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "kernels/dwconv/dwconv.h"
#include "layers/layers.h"
#include "layers/module.h"

namespace cnn {

// Fields every model config has (configs/models/*.yaml top level).
struct ModelCommon {
  std::string name;             // config name: the YAML file's stem
  std::string family;           // convnext | convmixer | replknet | slak
  int in_channels = 3;          // image channels
  int num_classes = 1000;       // classifier outputs
  int input_size = 224;         // square training resolution the config is meant for
  double drop_path_rate = 0.0;  // stochastic depth, linear over blocks from 0 to this rate
};

// Run-time choices that are not part of an architecture.
struct BuildOptions {
  dwconv::BfcAccum bfc_accum = dwconv::BfcAccum::fp32;  // FP16 backward-filter accumulation of every DWC layer
};

// A classifier: forward maps NHWC images (N, H, W, in_channels) to logits (N, num_classes).
class Model : public Module {
 public:
  Model(std::string type_name, ModelCommon common) : Module(std::move(type_name)), common_(std::move(common)) {}
  const ModelCommon& common() const { return common_; }
  // The reference implementation's initialisation (PyTorch default or timm trunc-normal).
  virtual InitScheme init_scheme() const = 0;
  void init_weights(uint64_t seed) { init(init_scheme(), seed); }

 protected:
  // Checks an input batch against in_channels: "<family>: expected (N, H, W, 3) NHWC input, got ...".
  void check_input(const Tensor& x) const;

 private:
  ModelCommon common_;
};

// A list of modules named "0", "1", ... whose owner runs them itself (interleaved stages, transitions).
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  template <class M>
  std::shared_ptr<M> add(std::shared_ptr<M> child) {
    return register_module(std::to_string(size_++), std::move(child));
  }
  size_t size() const { return size_; }
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;  // throws: the owner runs the items

 private:
  size_t size_ = 0;
};

// y = x + fn(x) (timm convmixer Residual; child "fn").
class Residual : public Module {
 public:
  explicit Residual(std::shared_ptr<Module> fn);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  std::shared_ptr<Module> fn_;
};

// A 1x1 convolution on NHWC activations: a Linear over channels whose checkpoint tensor is (K, C, 1, 1).
class PointwiseConv2d : public Linear {
 public:
  PointwiseConv2d(int64_t in_channels, int64_t out_channels, bool bias) : Linear(in_channels, out_channels, bias) {}
};

// conv -> BatchNorm2d [-> ReLU], children "conv", "bn", "nonlinear" (RepLKNet / SLaK conv_bn, conv_bn_relu).
class ConvBn : public Module {
 public:
  ConvBn(std::shared_ptr<Module> conv, int64_t out_channels, bool relu);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;
  Module& conv() const { return *conv_; }
  BatchNorm2d& bn() const { return *bn_; }

 private:
  std::shared_ptr<Module> conv_;
  std::shared_ptr<BatchNorm2d> bn_;
  std::shared_ptr<ReLU> relu_;
};

// fc1 -> act -> fc2 over the channel axis (timm Mlp; children "fc1", "act", "fc2").
class Mlp : public Module {
 public:
  Mlp(int64_t channels, int64_t hidden);
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
  std::shared_ptr<GELU> act_;
};

// Activation by config name: "gelu" or "relu".
std::shared_ptr<Module> make_activation(const std::string& name);
// Depthwise conv with 'same' padding (stride 1) or PyTorch padding k // 2 (stride 2), kernel kh x kw.
std::shared_ptr<DepthwiseConv2d> make_depthwise(int64_t channels, int kh, int kw, int stride, bool bias,
                                                const BuildOptions& options);
// Copies every parameter and buffer of `dst` whose name does not contain `skip` from the tensor of the same name in
// `src` (re-parameterisation: all but the merged kernels); a name missing from `src` is an error.
void copy_tensors_except(const Module& src, Module& dst, const std::string& skip);
// Structural re-parameterisation shared by RepLKNet and SLaK: a new `Net` built from model's config with
// small_kernel_merged, every tensor copied except the merged kernels, which get each block's eval-mode
// equivalent_kernel_bias(). `blocks(net)` lists a model's blocks (each with large_kernel()) in the same order in
// both forms. The result is on the CPU in eval mode.
template <class Net, class Blocks>
std::shared_ptr<Net> merge_large_kernels(const Net& model, const BuildOptions& options, Blocks blocks) {
  CNN_CHECK(!model.config().small_kernel_merged, "reparameterize: ", model.common().family, " '",
            model.common().name, "' is already re-parameterised");
  auto merged_config = model.config();
  merged_config.small_kernel_merged = true;
  auto merged = std::make_shared<Net>(merged_config, options);
  merged->eval();
  copy_tensors_except(model, *merged, ".lkb_reparam.");
  NoGradGuard no_grad;
  for (size_t i = 0; i < blocks(model).size(); ++i) {
    auto [w, b] = blocks(model)[i]->large_kernel().equivalent_kernel_bias();
    DepthwiseConv2d& dst = blocks(*merged)[i]->large_kernel().reparam();
    dst.weight.copy_(w);
    dst.bias.copy_(b);
  }
  return merged;
}

// Per-block stochastic-depth rates: linspace(0, rate, total) as torch.linspace.
std::vector<double> drop_path_rates(double rate, int64_t total);

}  // namespace cnn
