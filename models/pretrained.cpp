// Reference checkpoint names -> module paths, the fine-tuning classifier swap and checkpoint-shaped model builds.
#include "models/pretrained.h"

#include <algorithm>
#include <variant>

#include "core/device_memory.h"
#include "core/error.h"
#include "core/finite_check.h"
#include "core/safetensors.h"
#include "models/checkpoint.h"
#include "models/resource_estimate.h"

namespace cnn {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The prefix all keys share when it is one of the wrappers' ("module.", "model."), else "".
std::string wrapper_prefix(const std::map<std::string, Tensor>& tensors) {
  for (const std::string prefix : {"module.", "model."}) {
    bool all = !tensors.empty();
    for (const auto& [name, t] : tensors) all = all && name.compare(0, prefix.size(), prefix) == 0;
    if (all) return prefix;
  }
  return "";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The classifier's weight in `tensors` (after mapping), or nullptr.
const Tensor* classifier_weight(const std::map<std::string, Tensor>& tensors) {
  for (const char* key : {"head.fc.weight", "head.weight"}) {
    auto it = tensors.find(key);
    if (it != tensors.end() && it->second.dim() == 2) return &it->second;
  }
  return nullptr;
}

// A NaN or Inf weight would be trained on or scored (a NaN row of logits ranks its label first): refused by name.
void require_finite_tensors(const std::map<std::string, Tensor>& tensors, const std::string& path) {
  for (const auto& [name, t] : tensors) require_finite(t, str_cat("'", path, "': '", name, "'"));
}

// The model is built in FP32 on the CPU before the checkpoint is matched against it: a config too large for the
// host's memory is refused by its estimate (naming the key), not by an allocator failure inside a layer.
void require_weights_fit(const ModelConfig& config, const std::string& file) {
  const ResourceEstimate e = estimate_resources(config, std::max<int64_t>(model_common(config).input_size, 1));
  const double need = 4.0 * e.parameters;
  const uint64_t have = device_memory_bytes(Device::cpu());
  if (have > 0 && need > double(have))
    throw Error(str_cat(file, ": ", e.largest_key, ": the model's FP32 weights need an estimated ", format_bytes(need),
                        ", more than the ", format_bytes(double(have)), " of cpu"));
}

}  // namespace

std::map<std::string, Tensor> map_reference_names(std::map<std::string, Tensor> tensors) {
  const std::string prefix = wrapper_prefix(tensors);
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : tensors) {
    std::string key = name.substr(prefix.size());
    key = replace_all(key, ".large_kernel.Decom1.", ".large_kernel.LoRA1.");
    key = replace_all(key, ".large_kernel.Decom2.", ".large_kernel.LoRA2.");
    out[key] = std::move(t);
  }
  std::vector<std::string> counters;
  for (const auto& [name, t] : out)
    if (ends_with(name, ".running_var"))
      counters.push_back(name.substr(0, name.size() - std::string("running_var").size()) + "num_batches_tracked");
  for (const std::string& c : counters)
    if (!out.count(c)) out[c] = Tensor::zeros({}, DType::i64);
  return out;
}

std::vector<std::string> classifier_keys(const Model& model) {
  if (model.common().family == "convnext") return {"head.fc.weight", "head.fc.bias"};
  return {"head.weight", "head.bias"};
}

PretrainedLoad load_pretrained(Model& model, const std::string& path) {
  std::map<std::string, Tensor> tensors = map_reference_names(load_safetensors(path).tensors);
  PretrainedLoad result;
  const std::vector<std::string> head = classifier_keys(model);
  auto it = tensors.find(head[0]);
  if (it != tensors.end() && it->second.dim() == 2) {
    result.checkpoint_classes = it->second.size(0);
    if (result.checkpoint_classes != model.common().num_classes) {
      // Replace the checkpoint's classifier by the model's freshly initialised one, so the strict load keeps it.
      const std::map<std::string, Tensor> own = export_state_dict(model);
      for (const std::string& key : head) tensors[key] = own.at(key);
      result.head_replaced = true;
    }
  }
  import_state_dict(model, tensors, str_cat("'", path, "' (for ", model.common().family, " '", model.common().name, "')"));
  require_finite_tensors(tensors, path);
  return result;
}

ModelConfig config_for_checkpoint(ModelConfig config, const std::map<std::string, Tensor>& tensors) {
  if (const Tensor* w = classifier_weight(tensors)) model_common(config).num_classes = int(w->size(0));
  bool merged = false;
  for (const auto& [name, t] : tensors) merged = merged || ends_with(name, ".large_kernel.lkb_reparam.weight");
  if (auto* r = std::get_if<RepLKNetConfig>(&config)) r->small_kernel_merged = merged;
  if (auto* s = std::get_if<SLaKConfig>(&config)) s->small_kernel_merged = merged;
  return config;
}

std::shared_ptr<Model> load_model_checkpoint(const std::string& name_or_path, const std::string& path,
                                             const BuildOptions& options) {
  const std::string file = resolve_model_config(name_or_path);
  ModelConfig config = load_model_config(file, "--model");
  std::map<std::string, Tensor> tensors = map_reference_names(load_safetensors(path).tensors);
  config = config_for_checkpoint(std::move(config), tensors);
  require_weights_fit(config, file);
  std::shared_ptr<Model> model = build_model(config, options);
  import_state_dict(*model, tensors,
                    str_cat("'", path, "' (for ", model_common(config).family, " '", model_common(config).name, "')"));
  require_finite_tensors(tensors, path);
  model->eval();
  return model;
}

}  // namespace cnn
