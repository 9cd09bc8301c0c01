// Module system: a Module owns named parameters (leaf tensors requiring grad, each with a weight-decay flag),
// named buffers (BatchNorm running statistics) and named children; names are dotted paths from the root
// ("stages.0.blocks.1.dwconv.weight"). forward(ctx, x) runs one NHWC activation through the module.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace cnn {

// What one forward pass needs besides its input. A layer behaves in training mode (batch statistics, stochastic
// depth) only when ctx.training is set AND the layer itself is in train() mode, so eval() on a sub-tree freezes
// it. seed and step feed the stochastic layers (DropPath), so a run with the same (seed, step) is reproducible
// and CPU and GPU draw the same masks.
struct ForwardContext {
  Tape* tape = nullptr;  // null: no recording (inference)
  bool training = false;
  uint64_t seed = 0;
  uint64_t step = 0;
};

// Weight initialisation schemes (layers/init.h has the formulas).
enum class InitScheme {
  pytorch_default,   // Conv2d / Linear: kaiming-uniform, b = 1/sqrt(fan_in) for weight and bias (ConvMixer, RepLKNet)
  trunc_normal_002,  // Conv2d / Linear: trunc_normal(std 0.02, [-2, 2]), bias 0 (timm ConvNeXt)
};

// Disjoint Philox streams for parameter initialisation: each parameter takes the next numel() counters.
struct InitRng {
  uint64_t seed = 0;
  uint64_t offset = 0;
  uint64_t take(int64_t n) {
    const uint64_t o = offset;
    offset += uint64_t(n);
    return o;
  }
};

struct NamedParameter {
  std::string name;
  Tensor tensor;
  bool decay = true;  // weight decay applies (>= 2-D weights); false for biases, norm affine, LayerScale
};

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // x: NHWC (N, H, W, C) activations, or (N, C) after pooling. Records on ctx.tape.
  virtual Tensor forward(const ForwardContext& ctx, const Tensor& x) = 0;
  // forward inside this module's scope: the observer of ctx.tape, if any, sees the module enter and leave (its
  // address is the scope key). Parents run their children through call(), so profiles name module paths.
  Tensor call(const ForwardContext& ctx, const Tensor& x);

  const std::string& type_name() const { return type_name_; }

  // Recursive, registration order, dotted names relative to this module.
  std::vector<NamedParameter> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {  // direct children
    return children_;
  }
  std::vector<Tensor> parameters() const;
  int64_t parameter_count() const;  // total elements of all parameters

  // Moves / converts every parameter and buffer (parameters stay leaves requiring grad; gradients are dropped;
  // host-resident buffers stay on the CPU).
  // to(f16 / bf16) converts parameters only; floating buffers become f32 (running statistics stay FP32).
  void to(Device device);
  void to(DType dtype);

  void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Training behaviour for this forward: ctx.training && is_training().
  bool training_in(const ForwardContext& ctx) const { return ctx.training && training_; }

  // Initialises every parameter of the tree in registration order, each from its own Philox stream.
  void init(InitScheme scheme, uint64_t seed);
  void init(InitScheme scheme, InitRng& rng);
  void zero_grad();  // drops every parameter's gradient

 protected:
  // Registers a member tensor by address: to() replaces *slot, so the member always holds the current tensor.
  // The tensor is marked requires_grad. decay defaults to true for >= 2-D tensors.
  void register_parameter(const std::string& name, Tensor* slot);
  void register_parameter(const std::string& name, Tensor* slot, bool decay);
  // host_resident buffers stay on the CPU through to(Device) (counters the host updates, e.g. num_batches_tracked).
  void register_buffer(const std::string& name, Tensor* slot, bool host_resident = false);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }
  // This module's own parameters (children excluded); called by init() for every module of the tree.
  virtual void init_parameters(InitScheme scheme, InitRng& rng);

 private:
  struct ParamSlot {
    std::string name;
    Tensor* slot;
    bool decay;
  };
  struct BufferSlot {
    std::string name;
    Tensor* slot;
    bool host_resident;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  void collect_parameters(const std::string& prefix, std::vector<NamedParameter>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::string type_name_;
  bool training_ = true;
  std::vector<ParamSlot> params_;
  std::vector<BufferSlot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Runs its children in order; children are named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  template <class M>
  std::shared_ptr<M> add(std::shared_ptr<M> child) {
    return register_module(std::to_string(size_++), std::move(child));
  }
  size_t size() const { return size_; }
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override;

 private:
  size_t size_ = 0;
};

}  // namespace cnn
