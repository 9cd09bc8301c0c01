// DeviceStager in a CPU-only build: device batches are impossible, so construction reports why.
#include "core/error.h"
#include "data/device_stager.h"

namespace cnn::data {

struct DeviceStager::Impl {};

DeviceStager::DeviceStager(Device device, int) {
  require_device(device, "data loader");  // throws "built without CUDA" for any cuda device
  throw Error(str_cat("data loader: device batches need a cuda device, got ", device.str()));
}
DeviceStager::~DeviceStager() = default;
void DeviceStager::wait_slot_free(int) {}
void DeviceStager::upload(int, const Tensor&, const Tensor&, Tensor&, Tensor&) {}
void DeviceStager::consumer_wait(int) {}

}  // namespace cnn::data
