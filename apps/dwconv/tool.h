// The dwconv tool's operation: one Flash-DWC op (forward, backward-data or backward-filter) on named tensors of a
// safetensors file, checked for presence, rank, dtype and shape agreement before anything runs.
#pragma once

#include <map>
#include <string>

#include "core/device.h"
#include "core/tensor.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv_tool {

enum class Op { fwd, bdc, bfc };

struct Options {
  Op op = Op::fwd;
  std::string in, out;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int input_h = 0, input_w = 0;    // bdc: dX's extent (0: derived from dY at stride 1)
  int filter_h = 0, filter_w = 0;  // bfc: dW's extent (0: derived from X and dY at stride 1)
  DType dtype = DType::f32;        // compute dtype (f16: CUDA only; inputs are converted)
  dwconv::BfcAccum bfc_accum = dwconv::BfcAccum::fp32;
  bool bfc_accum_given = false;
  Device device = Device::cpu();
};

const char* op_name(Op op);     // "fwd", "bdc", "bfc"
const char* output_name(Op op); // "y", "dx", "dw"

// Problem geometry from the tensors and options; every inconsistency is a one-line cnn::Error naming the tensor
// or flag with what was expected and what arrived.
dwconv::DwconvParams resolve_params(const Options& o, const std::map<std::string, Tensor>& tensors);

// Runs the op and returns the output tensor (F32, on the CPU).
Tensor run_op(const Options& o, const std::map<std::string, Tensor>& tensors);

}  // namespace cnn::dwconv_tool
