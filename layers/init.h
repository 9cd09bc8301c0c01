// Parameter initialisation matching PyTorch / timm, drawn from core's Philox fills (Tensor::uniform_ /
// trunc_normal_) so CPU and GPU produce identical values. fan_in of a conv weight = in_channels * R * S
// (depthwise: FH * FW); of a Linear weight (out, in) = in.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "layers/module.h"

namespace cnn::init {

// PyTorch default for Conv2d / Linear weights: kaiming_uniform_(a = sqrt(5)) = uniform(-b, b), b = 1 / sqrt(fan_in).
void kaiming_uniform_(Tensor& w, int64_t fan_in, InitRng& rng);
// PyTorch default bias of Conv2d / Linear: uniform(-b, b), b = 1 / sqrt(fan_in) of the layer's weight.
void bias_uniform_(Tensor& b, int64_t fan_in, InitRng& rng);
// timm trunc_normal_(std, a, b): normal(0, std) restricted to the ABSOLUTE interval [a, b] (timm default +-2).
void trunc_normal_(Tensor& w, double stddev, InitRng& rng, double lo = -2.0, double hi = 2.0);

}  // namespace cnn::init
