// --trace-dir: what a second implementation needs to replay a benchmark run's first steps and compare losses:
// init.safetensors (the FP32 weights before the first step, reference names and layouts: models/checkpoint.h),
// batch_<i>.safetensors (images F32 NHWC (N, H, W, C) as the model received them, labels I64 (N)) and
// losses.json ({"losses": [...]}, one loss per micro-batch, FP32 before loss scaling). Files are written atomically.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/loader.h"
#include "layers/module.h"

namespace cnn::train {

class StepTrace {
 public:
  // Creates `dir` (it must not hold a trace already) and writes init.safetensors from `model`.
  StepTrace(const std::string& dir, const Module& model);
  void record(const data::Batch& batch, const Tensor& loss);
  void finish();  // writes losses.json

 private:
  std::string dir_;
  std::vector<double> losses_;
};

}  // namespace cnn::train
