// Host-to-device staging of loader batches (CUDA builds): per-slot events around cudaMemcpyAsync on the device's
// copy stream. Without CUDA the constructor throws "built without CUDA". No CUDA headers here.
#pragma once

#include <memory>

#include "core/device.h"
#include "core/tensor.h"

namespace cnn::data {

class DeviceStager {
 public:
  DeviceStager(Device device, int slots);
  ~DeviceStager();  // waits for every pending upload
  DeviceStager(const DeviceStager&) = delete;
  DeviceStager& operator=(const DeviceStager&) = delete;

  // Blocks the calling thread until the last upload from `slot`'s pinned buffers has finished reading them.
  void wait_slot_free(int slot);
  // Allocates device tensors shaped like the host ones and queues their copies on the copy stream, after the
  // compute stream's earlier work (the new blocks may have been used there); records the slot's event.
  void upload(int slot, const Tensor& host_images, const Tensor& host_labels, Tensor& dev_images, Tensor& dev_labels);
  // Makes the compute stream wait for `slot`'s last upload (no host synchronization).
  void consumer_wait(int slot);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cnn::data
