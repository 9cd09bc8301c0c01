// DeviceTimeline: host clock on the CPU, the CUDA event pool (timeline_cuda.cpp) on a GPU.
#include "core/timeline.h"

#include <chrono>

namespace cnn {

struct DeviceTimeline::Impl {
  detail::CudaEventPool* pool = nullptr;
  ~Impl() { detail::cuda_event_pool_destroy(pool); }
};

DeviceTimeline::DeviceTimeline(Device device) : device_(device) {
  if (device.is_cuda()) {
    cuda_ = std::make_unique<Impl>();
    cuda_->pool = detail::cuda_event_pool_create(device.index);
  }
}

DeviceTimeline::~DeviceTimeline() = default;

void DeviceTimeline::mark() {
  if (cuda_) {
    detail::cuda_event_pool_record(cuda_->pool, count_);
  } else {
    using clock = std::chrono::steady_clock;
    const double ms = std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
    if (host_ms_.size() <= count_) host_ms_.resize(count_ + 1);
    host_ms_[count_] = ms;
  }
  ++count_;
}

std::vector<double> DeviceTimeline::intervals_ms() {
  if (count_ < 2) return {};
  if (cuda_) return detail::cuda_event_pool_intervals_ms(cuda_->pool, count_);
  std::vector<double> gaps(count_ - 1);
  for (size_t i = 1; i < count_; ++i) gaps[i - 1] = host_ms_[i] - host_ms_[i - 1];
  return gaps;
}

}  // namespace cnn
