// What the launchers that size their grids to the device share: a thread-safe cache of plans made once per key, the
// current device's SM count, and a kernel's resident blocks per SM.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/cuda_check.h"

namespace cnn::dwconv {

// Plans made once per key (a DeviceShapeKey from kernels.h, plus whatever else the plan depends on): `make` runs on a
// miss, under the lock; a plan lives as long as the process.
template <class Key, class Plan>
class PlanCache {
 public:
  template <class Make>
  const Plan& get(const Key& key, Make&& make) {
    const std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, Plan> plans_;
};

inline int current_device_sms() {
  int device = 0, sms = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Blocks of `kernel` one SM holds at `threads` threads and `smem` bytes of dynamic shared memory, at least 1 (its
// shared-memory limit raised first where smem needs it).
template <class Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads, size_t smem) {
  int blocks = 0;
  CNN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
  return std::max(1, blocks);
}

}  // namespace cnn::dwconv
