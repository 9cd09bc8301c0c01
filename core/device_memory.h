// How much memory a device has, for checks before allocation (models/resource_estimate.h).
#pragma once

#include <cstdint>

#include "core/device.h"

namespace cnn {

// Total memory of a device in bytes: physical RAM for the CPU, global memory for a CUDA device (0 when unknown).
uint64_t device_memory_bytes(const Device& d);
// Global memory of CUDA device `index` (0 without CUDA or when it cannot be queried); device_cuda.cpp / _nocuda.cpp.
uint64_t cuda_memory_bytes(int index);

}  // namespace cnn
