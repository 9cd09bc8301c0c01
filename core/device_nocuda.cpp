// CUDA device discovery in a CPU-only build: there are none.
#include "core/device.h"
#include "core/device_memory.h"

namespace cnn {

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
uint64_t cuda_memory_bytes(int) { return 0; }

}  // namespace cnn
