// Reference-named state dicts: a walk over the module tree that knows each layer type's PyTorch layout.
#include "models/checkpoint.h"

#include <functional>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "layers/layers.h"
#include "models/model.h"

namespace cnn {

namespace {

enum class Layout { plain, dense_conv, depthwise, pointwise };

struct Slot {
  std::string name;
  Tensor tensor;  // the model's tensor (our layout)
  Layout layout;
};

Layout weight_layout(const Module& m) {
  if (dynamic_cast<const Conv2d*>(&m)) return Layout::dense_conv;
  if (dynamic_cast<const DepthwiseConv2d*>(&m)) return Layout::depthwise;
  if (dynamic_cast<const PointwiseConv2d*>(&m)) return Layout::pointwise;
  return Layout::plain;
}

// Direct parameters and buffers of `m` (names without a dot), then its children, in registration order.
void collect(const Module& m, const std::string& prefix, std::vector<Slot>& out) {
  const Layout wl = weight_layout(m);
  for (const NamedParameter& p : m.named_parameters()) {
    if (p.name.find('.') != std::string::npos) continue;
    out.push_back({prefix + p.name, p.tensor, p.name == "weight" ? wl : Layout::plain});
  }
  for (const auto& [name, t] : m.named_buffers()) {
    if (name.find('.') != std::string::npos) continue;
    out.push_back({prefix + name, t, Layout::plain});
  }
  for (const auto& [name, child] : m.named_children()) collect(*child, prefix + name + ".", out);
}

std::vector<Slot> slots(const Module& model) {
  std::vector<Slot> out;
  collect(model, "", out);
  return out;
}

Shape reference_shape(const Slot& s) {
  const Shape& d = s.tensor.shape();
  switch (s.layout) {
    case Layout::dense_conv:
      return {d[0], d[3], d[1], d[2]};  // (K, R, S, C) -> (K, C, R, S)
    case Layout::depthwise:
      return {d[2], 1, d[0], d[1]};  // (FH, FW, C) -> (C, 1, FH, FW)
    case Layout::pointwise:
      return {d[0], d[1], 1, 1};  // (K, C) -> (K, C, 1, 1)
    case Layout::plain:
      break;
  }
  return d;
}

DType reference_dtype(const Tensor& t) { return dtype_is_floating(t.dtype()) ? DType::f32 : t.dtype(); }

// Our tensor -> reference layout (CPU, contiguous).
Tensor to_reference(const Slot& s) {
  Tensor t = s.tensor.to(Device::cpu()).to(reference_dtype(s.tensor));
  switch (s.layout) {
    case Layout::dense_conv:
      return t.permute({0, 3, 1, 2}).contiguous();
    case Layout::depthwise:
      return t.permute({2, 0, 1}).contiguous().reshape(reference_shape(s));
    case Layout::pointwise:
      return t.contiguous().reshape(reference_shape(s));
    case Layout::plain:
      break;
  }
  return t.contiguous();
}

// Reference-layout tensor -> our layout (CPU, contiguous, the tensor's dtype unchanged).
Tensor from_reference(const Slot& s, const Tensor& ref) {
  const Shape& d = s.tensor.shape();
  switch (s.layout) {
    case Layout::dense_conv:
      return ref.contiguous().permute({0, 2, 3, 1}).contiguous();
    case Layout::depthwise:
      return ref.contiguous().reshape({d[2], d[0], d[1]}).permute({1, 2, 0}).contiguous();
    case Layout::pointwise:
      return ref.contiguous().reshape(d);
    case Layout::plain:
      break;
  }
  return ref.contiguous();
}

// "a, b, c ... and N more" for error messages.
std::string list(const std::vector<std::string>& items) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > kShown) out += str_cat(" ... and ", items.size() - kShown, " more");
  return out;
}

}  // namespace

std::map<std::string, CheckpointEntry> checkpoint_signature(const Module& model) {
  std::map<std::string, CheckpointEntry> out;
  for (const Slot& s : slots(model)) out[s.name] = {reference_shape(s), reference_dtype(s.tensor)};
  return out;
}

std::map<std::string, Tensor> export_state_dict(const Module& model) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> out;
  for (const Slot& s : slots(model)) out[s.name] = to_reference(s);
  return out;
}

void import_state_dict(Module& model, const std::map<std::string, Tensor>& tensors, const std::string& source) {
  const std::vector<Slot> all = slots(model);
  std::vector<std::string> missing, unexpected, wrong;
  std::map<std::string, const Slot*> by_name;
  for (const Slot& s : all) by_name[s.name] = &s;
  for (const Slot& s : all) {
    auto it = tensors.find(s.name);
    if (it == tensors.end()) {
      missing.push_back(s.name);
      continue;
    }
    const Tensor& t = it->second;
    const bool kind_ok = dtype_is_floating(t.dtype()) == dtype_is_floating(s.tensor.dtype());
    if (t.shape() != reference_shape(s) || !kind_ok)
      wrong.push_back(str_cat(s.name, " (expected ", dtype_name(reference_dtype(s.tensor)), " ",
                              shape_str(reference_shape(s)), ", got ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                              ")"));
  }
  for (const auto& [name, t] : tensors)
    if (!by_name.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !wrong.empty()) {
    std::string msg = str_cat("import_state_dict: ", source, " does not match the model:");
    if (!missing.empty()) msg += str_cat(" missing ", missing.size(), " key(s): ", list(missing), ";");
    if (!unexpected.empty()) msg += str_cat(" unexpected ", unexpected.size(), " key(s): ", list(unexpected), ";");
    if (!wrong.empty()) msg += str_cat(" wrong shape/dtype for ", wrong.size(), " key(s): ", list(wrong), ";");
    msg.pop_back();
    throw Error(msg);
  }
  NoGradGuard no_grad;
  for (const Slot& s : all) {
    Tensor dst = s.tensor;
    dst.copy_(from_reference(s, tensors.at(s.name)));
  }
}

void save_checkpoint(const std::string& path, const Module& model, const std::map<std::string, std::string>& metadata) {
  save_safetensors(path, export_state_dict(model), metadata);
}

void load_checkpoint(const std::string& path, Module& model) {
  import_state_dict(model, load_safetensors(path).tensors, "'" + path + "'");
}

}  // namespace cnn
