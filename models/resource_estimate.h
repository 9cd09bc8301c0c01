// What a model config costs before anything is allocated: parameters, the activations one image keeps for the
// backward pass, the total downsampling factor, and the stochastic-depth block count. Used to refuse a config that
// cannot fit the device with one line naming the key and the estimate (instead of an allocator failure deep in a
// layer), and an input too small for the model's downsampling. Estimates are upper-bound-ish sums over the layers
// (every saved activation counted once in FP32); they decide feasibility, not exact memory use.
#pragma once

#include <cstdint>
#include <string>

#include "models/registry.h"

namespace cnn {

struct ResourceEstimate {
  double parameters = 0;                  // trainable parameters (double: a hostile config can exceed int64)
  double activation_floats_per_image = 0; // values saved for backward per image at the given input size
  int64_t downsampling = 1;               // input side / final feature-map side
  int64_t blocks = 0;                     // stochastic-depth layers (DropPath ids)
  std::string largest_key;                // config key of the largest stage or part: "stages[2]", "depth"
};

// The estimate at input side `image_size` (>= 1).
ResourceEstimate estimate_resources(const ModelConfig& config, int64_t image_size);

// DropPath layer ids are 12-bit (layers/layers.h): at most this many blocks with stochastic depth.
constexpr int64_t kMaxDropPathBlocks = 4095;

// Bytes a training run of `batch` images needs by the estimate: FP32 weights, gradients and two AdamW moments per
// parameter (plus an FP16 copy under amp), and the activations of one micro-batch (FP16 under amp).
double training_bytes(const ResourceEstimate& e, int64_t batch, bool amp);

// "1.5 GiB" / "3.2 TiB" for messages.
std::string format_bytes(double bytes);

}  // namespace cnn
