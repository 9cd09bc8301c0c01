// Timestamps of one device's work, for profiling: on CUDA, events recorded on the device's compute stream (they
// time the GPU's progress through the queued work); on the CPU, the host's steady clock (CPU ops run synchronously).
// mark() appends a timestamp; intervals_ms() waits for the device and returns the gaps between consecutive marks.
#pragma once

#include <memory>
#include <vector>

#include "core/device.h"

namespace cnn {

class DeviceTimeline {
 public:
  explicit DeviceTimeline(Device device);
  ~DeviceTimeline();
  DeviceTimeline(const DeviceTimeline&) = delete;
  DeviceTimeline& operator=(const DeviceTimeline&) = delete;

  void mark();
  size_t size() const { return count_; }
  // size() - 1 gaps in milliseconds (empty for fewer than two marks); synchronizes with the device.
  std::vector<double> intervals_ms();
  // Forgets the marks (CUDA events are kept for reuse).
  void clear() { count_ = 0; }

 private:
  struct Impl;
  Device device_;
  size_t count_ = 0;
  std::vector<double> host_ms_;  // CPU: the marks' host times
  std::unique_ptr<Impl> cuda_;   // CUDA: the event pool
};

namespace detail {
// CUDA side of DeviceTimeline (CUDA builds; errors without CUDA). The pool grows on demand.
struct CudaEventPool;
CudaEventPool* cuda_event_pool_create(int device);
void cuda_event_pool_destroy(CudaEventPool* pool);
void cuda_event_pool_record(CudaEventPool* pool, size_t index);
std::vector<double> cuda_event_pool_intervals_ms(CudaEventPool* pool, size_t count);
}  // namespace detail

}  // namespace cnn
