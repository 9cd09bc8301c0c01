// Recipe flags: bound from the field table of train_config.cpp, so flags and YAML keys never drift.
#include "apps/cnn-train/train_flags.h"

namespace cnn::train {

void add_train_flags(CLI::App& app, TrainFlags& flags) {
  for (const FieldInfo& f : train_fields()) {
    const std::string flag = flag_name(f.key);
    if (f.is_bool) {
      flags.switches[f.key] = false;
      flags.options[f.key] = app.add_flag(flag + ",!--no-" + flag.substr(2), flags.switches[f.key], f.help);
    } else {
      const std::string help = f.default_value == "\"\"" ? f.help : f.help + " [" + f.default_value + "]";
      flags.options[f.key] = app.add_option(flag, flags.values[f.key], help)->type_name(f.type_name);
    }
  }
}

void apply_train_flags(const TrainFlags& flags, TrainConfig& config) {
  for (const auto& [key, option] : flags.options) {
    if (option->count() == 0) continue;
    auto sw = flags.switches.find(key);
    set_from_flag(config, key, sw != flags.switches.end() ? (sw->second ? "true" : "false") : flags.values.at(key));
  }
}

bool any_train_flag(const TrainFlags& flags) {
  for (const auto& [key, option] : flags.options)
    if (option->count() > 0) return true;
  return false;
}

}  // namespace cnn::train
