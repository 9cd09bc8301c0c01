// CUDA event pool of DeviceTimeline: events recorded on the device's compute stream, read after one synchronize.
#include <cuda_runtime.h>

#include "core/context.h"
#include "core/cuda_check.h"
#include "core/cuda_device_guard.h"
#include "core/timeline.h"

namespace cnn::detail {

struct CudaEventPool {
  int device = 0;
  std::vector<cudaEvent_t> events;
};

CudaEventPool* cuda_event_pool_create(int device) {
  auto* pool = new CudaEventPool;
  pool->device = device;
  return pool;
}

void cuda_event_pool_destroy(CudaEventPool* pool) {
  if (pool == nullptr) return;
  CudaDeviceGuard guard(pool->device);
  for (cudaEvent_t e : pool->events) cudaEventDestroy(e);  // teardown: nothing useful to do with an error here
  delete pool;
}

void cuda_event_pool_record(CudaEventPool* pool, size_t index) {
  CudaDeviceGuard guard(pool->device);
  while (pool->events.size() <= index) {
    cudaEvent_t e = nullptr;
    CNN_CUDA_CHECK(cudaEventCreate(&e));
    pool->events.push_back(e);
  }
  auto stream = static_cast<cudaStream_t>(Context::get(Device::cuda(pool->device)).compute_stream_handle());
  CNN_CUDA_CHECK(cudaEventRecord(pool->events[index], stream));
}

std::vector<double> cuda_event_pool_intervals_ms(CudaEventPool* pool, size_t count) {
  CudaDeviceGuard guard(pool->device);
  CNN_CUDA_CHECK(cudaEventSynchronize(pool->events[count - 1]));
  std::vector<double> gaps(count - 1);
  for (size_t i = 1; i < count; ++i) {
    float ms = 0.f;
    CNN_CUDA_CHECK(cudaEventElapsedTime(&ms, pool->events[i - 1], pool->events[i]));
    gaps[i - 1] = double(ms);
  }
  return gaps;
}

}  // namespace cnn::detail
