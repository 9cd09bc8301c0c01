// Module registry: parameter / buffer slots by address, recursive naming, device and dtype moves, init.
#include "layers/module.h"

#include "core/error.h"

namespace cnn {

void Module::check_new_name(const std::string& name) const {
  CNN_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_,
            ": parameter / buffer / child names must be non-empty and dot-free, got '", name, "'");
  for (const auto& p : params_)
    CNN_CHECK(p.name != name, type_name_, ": name '", name, "' is already a parameter");
  for (const auto& b : buffers_) CNN_CHECK(b.name != name, type_name_, ": name '", name, "' is already a buffer");
  for (const auto& c : children_) CNN_CHECK(c.first != name, type_name_, ": name '", name, "' is already a child");
}

void Module::register_parameter(const std::string& name, Tensor* slot) {
  CNN_CHECK(slot != nullptr && slot->defined(), type_name_, ": parameter '", name, "' is undefined");
  register_parameter(name, slot, slot->dim() >= 2);
}

void Module::register_parameter(const std::string& name, Tensor* slot, bool decay) {
  check_new_name(name);
  CNN_CHECK(slot != nullptr && slot->defined(), type_name_, ": parameter '", name, "' is undefined");
  CNN_CHECK(dtype_is_floating(slot->dtype()), type_name_, ": parameter '", name, "' must be floating, got ",
            slot->str());
  slot->set_requires_grad(true);
  params_.push_back({name, slot, decay});
}

void Module::register_buffer(const std::string& name, Tensor* slot, bool host_resident) {
  check_new_name(name);
  CNN_CHECK(slot != nullptr && slot->defined(), type_name_, ": buffer '", name, "' is undefined");
  CNN_CHECK(!host_resident || !slot->device().is_cuda(), type_name_, ": host-resident buffer '", name,
            "' must be created on the cpu, got ", slot->str());
  buffers_.push_back({name, slot, host_resident});
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name);
  CNN_CHECK(child != nullptr, type_name_, ": child '", name, "' is null");
  children_.emplace_back(name, std::move(child));
}

void Module::collect_parameters(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const auto& p : params_) out.push_back({prefix + p.name, *p.slot, p.decay});
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& b : buffers_) out.emplace_back(prefix + b.name, *b.slot);
  for (const auto& [name, child] : children_) child->collect_buffers(prefix + name + ".", out);
}

std::vector<NamedParameter> Module::named_parameters() const {
  std::vector<NamedParameter> out;
  collect_parameters("", out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters()) out.push_back(std::move(p.tensor));
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : named_parameters()) n += p.tensor.numel();
  return n;
}

namespace {
// `t` is a fresh tensor from to() (no autograd meta yet): it becomes a new leaf requiring grad.
Tensor as_parameter(Tensor t) {
  t.set_requires_grad(true);
  return t;
}
}  // namespace

void Module::to(Device device) {
  for (auto& p : params_)
    if (p.slot->device() != device) *p.slot = as_parameter(p.slot->to(device));
  for (auto& b : buffers_)
    if (!b.host_resident && b.slot->device() != device) *b.slot = b.slot->to(device);
  for (auto& c : children_) c.second->to(device);
}

void Module::to(DType dtype) {
  CNN_CHECK(dtype_is_floating(dtype), type_name_, ".to: expected a floating dtype, got ", dtype_name(dtype));
  const bool half = dtype == DType::f16 || dtype == DType::bf16;
  for (auto& p : params_)
    if (p.slot->dtype() != dtype) *p.slot = as_parameter(p.slot->to(dtype));
  const DType buffer_dtype = half ? DType::f32 : dtype;
  for (auto& b : buffers_)
    if (dtype_is_floating(b.slot->dtype()) && b.slot->dtype() != buffer_dtype) *b.slot = b.slot->to(buffer_dtype);
  for (auto& c : children_) c.second->to(dtype);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->train(on);
}

void Module::init(InitScheme scheme, uint64_t seed) {
  InitRng rng{seed, 0};
  init(scheme, rng);
}

void Module::init(InitScheme scheme, InitRng& rng) {
  NoGradGuard no_grad;
  init_parameters(scheme, rng);
  for (auto& c : children_) c.second->init(scheme, rng);
}

void Module::init_parameters(InitScheme, InitRng&) {}

void Module::zero_grad() {
  for (auto& p : params_) p.slot->reset_grad();
  for (auto& c : children_) c.second->zero_grad();
}

Tensor Module::call(const ForwardContext& ctx, const Tensor& x) {
  TapeObserver* observer = ctx.tape != nullptr ? ctx.tape->observer() : nullptr;
  if (observer == nullptr) return forward(ctx, x);
  observer->on_scope_begin(this);
  Tensor y = forward(ctx, x);
  observer->on_scope_end(this);
  return y;
}

Tensor Sequential::forward(const ForwardContext& ctx, const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, child] : named_children()) h = child->call(ctx, h);
  return h;
}

}  // namespace cnn
