// CUDA device discovery in a CPU-only build: there are none.
#include "core/device.h"

namespace cnn {

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }

}  // namespace cnn
