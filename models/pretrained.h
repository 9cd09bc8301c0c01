// Weights from elsewhere: a reference-named safetensors state dict (timm for ConvNeXt / ConvMixer, the authors'
// repositories for RepLKNet / SLaK, or a cnn checkpoint) mapped onto a model, for fine-tuning (the classifier is
// replaced when the class count differs) and for evaluation, prediction and export (the model is built in the form
// the file holds: classes from its classifier, the deploy form when it holds merged large kernels).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/registry.h"

namespace cnn {

// The names a reference checkpoint may carry, mapped onto this project's module paths:
// - a prefix every key shares from a training wrapper ("module." of DistributedDataParallel, "model.") is dropped;
// - SLaK strips written as "Decom1" / "Decom2" (the reference's --Decom flag) are the reference's "LoRA1" / "LoRA2";
// - BatchNorm "num_batches_tracked" absent from older PyTorch files is added as 0 (as load_state_dict does).
// Pure renames: tensors are not copied.
std::map<std::string, Tensor> map_reference_names(std::map<std::string, Tensor> tensors);

// The classifier's parameter names: "head.fc.weight", "head.fc.bias" (ConvNeXt) or "head.weight", "head.bias".
std::vector<std::string> classifier_keys(const Model& model);

struct PretrainedLoad {
  int64_t checkpoint_classes = 0;  // rows of the checkpoint's classifier
  bool head_replaced = false;      // the class count differed: the model's own (initialised) classifier was kept
};

// Fine-tuning start (timm --initial-checkpoint): loads `path` into `model`, strictly (every name present, every
// shape equal; one error names each offending tensor with both shapes) except that a classifier with another
// class count than the model's is dropped and the model's initialised classifier kept. A non-finite value in any
// tensor loaded is refused, naming the tensor.
PretrainedLoad load_pretrained(Model& model, const std::string& path);

// The model config for a checkpoint's tensors: num_classes from its classifier, and for RepLKNet / SLaK
// small_kernel_merged when it holds deploy kernels ("...large_kernel.lkb_reparam.weight").
ModelConfig config_for_checkpoint(ModelConfig config, const std::map<std::string, Tensor>& tensors);

// Builds model `name_or_path` (configs/models) in the form `path` holds and loads it strictly (eval mode, CPU); a
// non-finite value in any tensor is refused, naming the tensor.
std::shared_ptr<Model> load_model_checkpoint(const std::string& name_or_path, const std::string& path,
                                             const BuildOptions& options = {});

}  // namespace cnn
