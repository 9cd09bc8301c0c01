// Model registry: configs/models/<name>.yaml -> typed family config -> Model. The YAML's `family` key picks the
// family; every config is one file (no built-in copies). Names resolve against the model config directory.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "models/convmixer.h"
#include "models/convnext.h"
#include "models/model.h"
#include "models/replknet.h"
#include "models/slak.h"

namespace cnn {

using ModelConfig = std::variant<ConvNeXtConfig, ConvMixerConfig, RepLKNetConfig, SLaKConfig>;

// Families known to the registry, in a fixed order ("convnext", "convmixer", "replknet", "slak").
std::vector<std::string> model_families();

// Parses one config file strictly (models/yaml_struct.h errors); common.name = the file's stem.
ModelConfig load_model_config(const std::string& path, const std::string& what = "model config");
// Same from YAML text; `name` is the config name and the file name in messages.
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name);
const ModelCommon& model_common(const ModelConfig& config);
ModelCommon& model_common(ModelConfig& config);

// The model config directory: $CNN_MODEL_CONFIG_DIR when set, else the first folder that exists of
// $CNN_SOURCE_DIR/configs/models, ./configs/models, <binary>/../share/cnn/configs/models (an installed tree),
// <install prefix>/share/cnn/configs/models and <source tree>/configs/models (both compiled in).
std::string model_config_dir();
// Sorted config names (YAML stems) in a directory (default: model_config_dir()).
std::vector<std::string> model_names(const std::string& dir = "");
// A path (contains '/' or ends in .yaml / .yml) is returned as is; a name becomes <dir>/<name>.yaml, which must
// exist ("unknown model 'x' (known: ...)").
std::string resolve_model_config(const std::string& name_or_path, const std::string& dir = "");

// Builds the module tree (parameters zero / norm defaults, not initialised: call Model::init_weights).
std::shared_ptr<Model> build_model(const ModelConfig& config, const BuildOptions& options = {});
// Resolves, loads and builds, then initialises with the family's scheme from `seed`.
std::shared_ptr<Model> build_model(const std::string& name_or_path, uint64_t seed = 0,
                                   const BuildOptions& options = {});

}  // namespace cnn
