// Checkpoint interop with the reference PyTorch implementations: a state dict named exactly like the reference
// module (timm for ConvNeXt / ConvMixer, the authors' repos for RepLKNet / SLaK) with PyTorch layouts:
// dense conv (K, R, S, C) -> (K, C, R, S), depthwise (FH, FW, C) -> (C, 1, FH, FW), pointwise (K, C) ->
// (K, C, 1, 1); Linear, norms and LayerScale unchanged; BatchNorm buffers running_mean / running_var (F32) and
// num_batches_tracked (I64, shape ()) included. Parameters are exported as F32.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"
#include "layers/module.h"

namespace cnn {

struct CheckpointEntry {
  Shape shape;  // reference (PyTorch) shape
  DType dtype;  // f32, or i64 for num_batches_tracked
};

// Name -> reference shape and dtype for every parameter and buffer (no data is copied).
std::map<std::string, CheckpointEntry> checkpoint_signature(const Module& model);

// CPU tensors in reference layout (copies).
std::map<std::string, Tensor> export_state_dict(const Module& model);
// Strict load (PyTorch load_state_dict(strict=True)): the names must match exactly and the shapes must equal the
// reference shapes; otherwise one cnn::Error lists every missing, unexpected and wrong-shaped key. Floating
// tensors of any floating dtype are converted into the model's tensors (keeping their device and dtype).
// `source` names the origin in messages.
void import_state_dict(Module& model, const std::map<std::string, Tensor>& tensors,
                       const std::string& source = "state dict");

// safetensors file with the state dict; metadata is stored alongside.
void save_checkpoint(const std::string& path, const Module& model,
                     const std::map<std::string, std::string>& metadata = {});
void load_checkpoint(const std::string& path, Module& model);

}  // namespace cnn
