// The recipe's command-line flags (one per train_config.h field, `batch_size` -> `--batch-size`, booleans with a
// `--no-` form), shared by cnn-train and the tools that run its loop (cnn-compare).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "apps/cnn-train/train_config.h"

namespace cnn::train {

struct TrainFlags {
  std::map<std::string, std::string> values;  // key -> flag value as typed
  std::map<std::string, bool> switches;       // boolean keys
  std::map<std::string, CLI::Option*> options;
};

// Adds every recipe field as a flag of `app`, bound to `flags`.
void add_train_flags(CLI::App& app, TrainFlags& flags);
// Sets the fields whose flags were given, over `config` (the same checks as the YAML keys).
void apply_train_flags(const TrainFlags& flags, TrainConfig& config);
// Whether any recipe flag was given.
bool any_train_flag(const TrainFlags& flags);

}  // namespace cnn::train
