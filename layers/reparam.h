// Structural re-parameterisation (RepLKNet): fold an eval-mode BatchNorm into the convolution before it, and merge
// a small depthwise kernel into a large one (zero-padded, centred). Computed in FP64 on the host; results come
// back in the weight's dtype and device.
#pragma once

#include <utility>

#include "core/tensor.h"

namespace cnn {

class BatchNorm2d;

// BN(conv(x) + b) == conv'(x) + b' with s = gamma / sqrt(running_var + eps):
//   w' = w * s over the output-channel axis, b' = (b - running_mean) * s + beta (b = 0 when undefined).
// Dense weight (K, R, S, C): output channel is axis 0. Returns {w', b'}.
std::pair<Tensor, Tensor> fold_bn_dense(const Tensor& w, const Tensor& bias, const BatchNorm2d& bn);
// Depthwise weight (FH, FW, C): output channel is the last axis.
std::pair<Tensor, Tensor> fold_bn_depthwise(const Tensor& w, const Tensor& bias, const BatchNorm2d& bn);

// large (FH, FW, C) + small (fh, fw, C) zero-padded to the centre: fh <= FH, fw <= FW, FH - fh and FW - fw even.
// Equal to summing both 'same'-padded depthwise convolutions (stride 1 or 2) of one input.
Tensor merge_depthwise_kernels(const Tensor& large, const Tensor& small);

}  // namespace cnn
