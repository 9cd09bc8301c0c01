// Finiteness of loaded or computed tensors: a NaN or Inf in weights, optimizer state or logits is refused with the
// tensor's name and the first bad element, never trained on or scored.
#pragma once

#include <string>

#include "core/tensor.h"

namespace cnn {

// Throws `<what>: element <i> is not finite (<value>)` unless every element of a floating tensor is finite (any
// device; other dtypes pass).
void require_finite(const Tensor& t, const std::string& what);

}  // namespace cnn
