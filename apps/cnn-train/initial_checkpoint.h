// cnn-train --initial-checkpoint FILE (timm's --initial-checkpoint): a new run starts from a safetensors state dict
// with timm names (ConvNeXt, ConvMixer), the reference repositories' names (RepLKNet, SLaK) or a cnn checkpoint,
// instead of random weights. Shapes must match exactly; a classifier with another class count than --num-classes
// is dropped and re-initialised, and the run says so.
#pragma once

#include <string>

#include "models/model.h"

namespace cnn::train {

// Loads `path` into the freshly initialised FP32 `model` and prints one line saying what was loaded. Errors name
// --initial-checkpoint and the file (missing file, truncated file, wrong model, shape mismatch with both shapes).
void load_initial_checkpoint(Model& model, const std::string& path);

}  // namespace cnn::train
