// Inference helpers shared by the evaluation and prediction tools: a model's form for a device and precision, the
// top-k of a row of logits, and accuracy / loss accumulation over batches.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "models/model.h"

namespace cnn {

// Moves `model` to `device` in eval mode; `amp` converts it to FP16 (FP16 compute with FP32 accumulation, norms
// and softmax in FP32, as in training under --amp).
void prepare_for_inference(Model& model, const Device& device, bool amp);

// Indices of the k largest of `row[0..classes)`, largest first (ties: lower index first).
std::vector<int64_t> top_k(const float* row, int64_t classes, int64_t k);

// Softmax of one row in double precision (stable: max subtracted).
std::vector<double> softmax(const float* row, int64_t classes);

// Running loss / top-1 / top-5 over batches of (logits, labels); a non-finite logit is an error, never scored.
struct Accuracy {
  int64_t images = 0, top1 = 0, top5 = 0;
  double loss_sum = 0;  // sum of per-image cross-entropy
  void add(const Tensor& logits, const Tensor& labels);  // logits (N, classes) any device/float dtype, labels (N) i64
  double loss() const { return images ? loss_sum / double(images) : 0.0; }
  double top1_rate() const { return images ? double(top1) / double(images) : 0.0; }
  double top5_rate() const { return images ? double(top5) / double(images) : 0.0; }
};

}  // namespace cnn
