// Everything a run needs, resolved and checked before any work starts: the device, the model config with the
// run's overrides, the data sets and loader settings, the schedule length. Each impossible combination is one
// cnn::Error line naming the flag(s).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "apps/cnn-train/train_config.h"
#include "core/device.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "models/model.h"
#include "models/registry.h"

namespace cnn::train {

struct Plan {
  TrainConfig config;        // with auto values resolved (image_size, num_classes, drop_path, augment)
  Device device;             // resolved --device
  ModelConfig model_config;  // the model YAML with num_classes / drop_path overrides applied
  std::string model_name;    // the model config's name (YAML stem)
  BuildOptions build_options;
  std::shared_ptr<const data::Dataset> train_set, val_set;
  data::LoaderConfig train_loader, val_loader;
  int64_t batches_per_epoch = 0;  // micro-batches
  int64_t steps_per_epoch = 0;    // optimizer steps: ceil(batches / accum_steps)
  int64_t total_steps = 0;
  int64_t warmup_steps = 0;
};

// Resolves and validates `config` (benchmark mode: synthetic data sized for the timed steps, no validation set).
Plan make_plan(const TrainConfig& config);

// Loads the model config named by config.model and applies num_classes / drop_path; fills the resolved values
// back into `config`. Exposed for the resume check, which compares resolved configs.
ModelConfig resolve_model(TrainConfig& config);

}  // namespace cnn::train
