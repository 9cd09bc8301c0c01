// Model registry: common keys, family dispatch, config file resolution.
#include "models/registry.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "models/resource_estimate.h"
#include "models/yaml_struct.h"

namespace cnn {

namespace ys = yaml_struct;
namespace fs = std::filesystem;

namespace {

struct Family {
  const char* name;
  std::function<ModelConfig(ys::MapReader&, const ModelCommon&)> parse;
  std::function<std::shared_ptr<Model>(const ModelConfig&, const BuildOptions&)> build;
};

template <class Config, class Net>
std::shared_ptr<Model> build_as(const ModelConfig& c, const BuildOptions& o) {
  return std::make_shared<Net>(std::get<Config>(c), o);
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      {"convnext", [](ys::MapReader& r, const ModelCommon& m) { return ModelConfig(parse_convnext_config(r, m)); },
       build_as<ConvNeXtConfig, ConvNeXt>},
      {"convmixer", [](ys::MapReader& r, const ModelCommon& m) { return ModelConfig(parse_convmixer_config(r, m)); },
       build_as<ConvMixerConfig, ConvMixer>},
      {"replknet", [](ys::MapReader& r, const ModelCommon& m) { return ModelConfig(parse_replknet_config(r, m)); },
       build_as<RepLKNetConfig, RepLKNet>},
      {"slak", [](ys::MapReader& r, const ModelCommon& m) { return ModelConfig(parse_slak_config(r, m)); },
       build_as<SLaKConfig, SLaK>},
  };
  return table;
}

const Family& family_named(const std::string& name) {
  for (const Family& f : families())
    if (name == f.name) return f;
  throw Error(str_cat("model registry: no family '", name, "'"));
}

ModelConfig parse_root(const YAML::Node& root, const std::string& file, const std::string& name) {
  ys::MapReader r(root, file, "");
  ModelCommon common;
  common.name = name;
  r.required("family", common.family, ys::one_of(model_families()));
  r.required("in_channels", common.in_channels, ys::int_at_least(1));
  r.required("num_classes", common.num_classes, ys::int_at_least(1));
  r.required("input_size", common.input_size, ys::int_at_least(1));
  ModelConfig config = family_named(common.family).parse(r, common);
  r.finish();
  const ResourceEstimate e = estimate_resources(config, common.input_size);
  if (e.blocks > kMaxDropPathBlocks)
    r.fail("stages", str_cat("expected at most ", kMaxDropPathBlocks,
                             " blocks in all (stochastic depth numbers them in 12 bits), got ", e.blocks));
  if (common.input_size < e.downsampling)
    r.fail("input_size", str_cat("expected >= ", e.downsampling, " (the model downsamples its input ", e.downsampling,
                                 "x), got ", common.input_size));
  return config;
}

}  // namespace

std::vector<std::string> model_families() {
  std::vector<std::string> out;
  for (const Family& f : families()) out.push_back(f.name);
  return out;
}

ModelConfig load_model_config(const std::string& path, const std::string& what) {
  return parse_root(ys::load_file(path, what), path, fs::path(path).stem().string());
}

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name) {
  return parse_root(ys::load_string(yaml_text, name), name, fs::path(name).stem().string());
}

const ModelCommon& model_common(const ModelConfig& config) {
  return std::visit([](const auto& c) -> const ModelCommon& { return c.common; }, config);
}

ModelCommon& model_common(ModelConfig& config) {
  return std::visit([](auto& c) -> ModelCommon& { return c.common; }, config);
}

namespace {

// Where model names are looked up when CNN_MODEL_CONFIG_DIR is not set, in order: the source tree named by
// CNN_SOURCE_DIR, the working folder, then the installed data folders and the source tree the binary was built from.
std::vector<std::string> model_config_candidates() {
  std::vector<std::string> out;
  if (const char* s = std::getenv("CNN_SOURCE_DIR"); s && *s) out.push_back((fs::path(s) / "configs" / "models").string());
  out.push_back((fs::path("configs") / "models").string());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);  // <prefix>/bin/cnn-train when installed
  if (!ec) out.push_back((exe.parent_path().parent_path() / "share" / "cnn" / "configs" / "models").string());
#ifdef CNN_INSTALL_CONFIG_DIR
  out.push_back((fs::path(CNN_INSTALL_CONFIG_DIR) / "models").string());
#endif
#ifdef CNN_SOURCE_CONFIG_DIR
  out.push_back((fs::path(CNN_SOURCE_CONFIG_DIR) / "models").string());
#endif
  return out;
}

}  // namespace

std::string model_config_dir() {
  // An explicit CNN_MODEL_CONFIG_DIR is used even when it does not exist, so the error names it.
  if (const char* d = std::getenv("CNN_MODEL_CONFIG_DIR"); d && *d) return d;
  const std::vector<std::string> candidates = model_config_candidates();
  std::error_code ec;
  for (const std::string& c : candidates)
    if (fs::is_directory(c, ec)) return c;
  return candidates.front();
}

std::vector<std::string> model_names(const std::string& dir) {
  const std::string d = dir.empty() ? model_config_dir() : dir;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(d, ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".yaml") names.push_back(entry.path().stem());
  if (ec) throw Error(str_cat("model configs: cannot list '", d, "': ", ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_model_config(const std::string& name_or_path, const std::string& dir) {
  const fs::path p(name_or_path);
  if (name_or_path.find('/') != std::string::npos || p.extension() == ".yaml" || p.extension() == ".yml")
    return name_or_path;
  const std::string d = dir.empty() ? model_config_dir() : dir;
  const fs::path file = fs::path(d) / (name_or_path + ".yaml");
  std::error_code ec;
  if (fs::exists(file, ec)) return file.string();  // a FIFO or folder of that name is refused when it is read
  std::string known;
  if (fs::is_directory(d, ec))
    for (const std::string& n : model_names(d)) known += (known.empty() ? "" : ", ") + n;
  throw Error(str_cat("unknown model '", name_or_path, "' (no ", file.string(), "; known: ",
                      known.empty() ? "none" : known,
                      "; set CNN_MODEL_CONFIG_DIR to a folder of model YAMLs, or give a path to one)"));
}

std::shared_ptr<Model> build_model(const ModelConfig& config, const BuildOptions& options) {
  return family_named(model_common(config).family).build(config, options);
}

std::shared_ptr<Model> build_model(const std::string& name_or_path, uint64_t seed, const BuildOptions& options) {
  std::shared_ptr<Model> model = build_model(load_model_config(resolve_model_config(name_or_path)), options);
  model->init_weights(seed);
  return model;
}

}  // namespace cnn
