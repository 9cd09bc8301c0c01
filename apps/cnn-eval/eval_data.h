// cnn-eval's inputs: ImageNet's validation split through timm's evaluation transform (resize the short side to
// floor(image_size / crop_pct), center crop, ImageNet mean/std), Fashion-MNIST's test split, or a safetensors file
// of ready images ("images" (N, H, W, C) F32, normalised NHWC; optional "labels" (N) I64), in batches on a device.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/loader.h"
#include "models/model.h"

namespace cnn::eval {

struct DataOptions {
  std::string dataset = "imagenet";  // imagenet | fashion-mnist (or "tensors" when --inputs is given)
  std::string data_dir;              // imagenet: the root holding val/; fashion-mnist: default folder when empty
  std::string split;                 // default: val (imagenet), test (fashion-mnist)
  std::string inputs;                // tensor file instead of a data set
  double crop_pct = 0.875;           // timm's crop_pct
  int image_size = 0;                // 0: the model config's input_size
  int64_t batch_size = 64;
  int workers = 2;
  int64_t samples = 0;  // first N samples (0: all)
};

void add_data_flags(CLI::App& app, DataOptions& o);

struct EvalBatch {
  Tensor images;  // (B, H, W, C) on the device, f32 or f16
  Tensor labels;  // (B) i64 on the CPU; undefined for a tensor file without labels
};

class EvalData {
 public:
  // Checks the data against the model (channels, class count) and opens it; errors name the flag.
  EvalData(DataOptions& options, const ModelCommon& model, const Device& device, DType dtype);
  std::optional<EvalBatch> next();
  int64_t batches() const;
  int64_t images_seen() const { return seen_; }

 private:
  DataOptions options_;
  Device device_;
  DType dtype_;
  std::unique_ptr<data::DataLoader> loader_;
  Tensor images_, labels_;  // tensor file (CPU)
  int64_t size_ = 0, seen_ = 0;
};

// Rows of (N_i, C) tensors stacked into one (sum N_i, C) CPU f32 tensor.
Tensor concat_rows(const std::vector<Tensor>& parts);

}  // namespace cnn::eval
