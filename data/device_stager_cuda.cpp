// DeviceStager with CUDA events: alloc_ready orders the copy after the compute stream's use of recycled blocks,
// copied orders the consumer's compute stream (and the slot's reuse) after the copy.
#include <cuda_runtime.h>

#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "data/device_stager.h"

namespace cnn::data {

struct DeviceStager::Impl {
  Device device;
  std::vector<cudaEvent_t> alloc_ready, copied;
};

DeviceStager::DeviceStager(Device device, int slots) : impl_(std::make_unique<Impl>()) {
  require_device(device, "data loader");
  CNN_CHECK(device.is_cuda(), "DeviceStager: expected a cuda device, got ", device.str());
  impl_->device = device;
  CudaDeviceGuard guard(device.index);
  Context::get(device);  // creates the streams before any worker thread needs them
  for (int s = 0; s < slots; ++s) {
    cudaEvent_t a = nullptr, c = nullptr;
    CNN_CUDA_CHECK(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
    impl_->alloc_ready.push_back(a);
    CNN_CUDA_CHECK(cudaEventCreateWithFlags(&c, cudaEventDisableTiming));
    impl_->copied.push_back(c);
  }
}

DeviceStager::~DeviceStager() {
  cudaSetDevice(impl_->device.index);
  for (cudaEvent_t e : impl_->copied) {
    cudaEventSynchronize(e);
    cudaEventDestroy(e);
  }
  for (cudaEvent_t e : impl_->alloc_ready) cudaEventDestroy(e);
}

void DeviceStager::wait_slot_free(int slot) {
  CudaDeviceGuard guard(impl_->device.index);
  CNN_CUDA_CHECK(cudaEventSynchronize(impl_->copied[size_t(slot)]));
}

void DeviceStager::upload(int slot, const Tensor& host_images, const Tensor& host_labels, Tensor& dev_images,
                          Tensor& dev_labels) {
  CudaDeviceGuard guard(impl_->device.index);
  CudaContext& ctx = cuda_context(impl_->device);
  dev_images = Tensor::empty(host_images.shape(), host_images.dtype(), impl_->device, "loader batch images");
  dev_labels = Tensor::empty(host_labels.shape(), host_labels.dtype(), impl_->device, "loader batch labels");
  cudaEvent_t ready = impl_->alloc_ready[size_t(slot)], done = impl_->copied[size_t(slot)];
  CNN_CUDA_CHECK(cudaEventRecord(ready, ctx.compute_stream()));
  CNN_CUDA_CHECK(cudaStreamWaitEvent(ctx.copy_stream(), ready, 0));
  CNN_CUDA_CHECK(cudaMemcpyAsync(dev_images.data_ptr(), host_images.data_ptr(), size_t(host_images.nbytes()),
                                 cudaMemcpyHostToDevice, ctx.copy_stream()));
  CNN_CUDA_CHECK(cudaMemcpyAsync(dev_labels.data_ptr(), host_labels.data_ptr(), size_t(host_labels.nbytes()),
                                 cudaMemcpyHostToDevice, ctx.copy_stream()));
  CNN_CUDA_CHECK(cudaEventRecord(done, ctx.copy_stream()));
}

void DeviceStager::consumer_wait(int slot) {
  CudaDeviceGuard guard(impl_->device.index);
  CNN_CUDA_CHECK(cudaStreamWaitEvent(cuda_context(impl_->device).compute_stream(), impl_->copied[size_t(slot)], 0));
}

}  // namespace cnn::data
