// Fine-tuning start: the strict load of models/pretrained.h, reported on the console.
#include "apps/cnn-train/initial_checkpoint.h"

#include <cstdio>

#include "core/error.h"
#include "models/pretrained.h"

namespace cnn::train {

void load_initial_checkpoint(Model& model, const std::string& path) {
  PretrainedLoad r;
  try {
    r = load_pretrained(model, path);
  } catch (const Error& e) {
    throw Error(str_cat("--initial-checkpoint: ", e.what()));
  }
  if (r.head_replaced)
    std::printf("initial checkpoint: %s (classifier dropped: it has %lld classes, the run %d; re-initialised)\n",
                path.c_str(), (long long)r.checkpoint_classes, model.common().num_classes);
  else
    std::printf("initial checkpoint: %s (all tensors loaded)\n", path.c_str());
  std::fflush(stdout);
}

}  // namespace cnn::train
