// Storage allocation and release through the host, pinned or caching CUDA allocator.
#include "core/storage.h"

#include "core/allocator.h"
#include "core/context.h"
#include "core/error.h"

namespace cnn {

std::shared_ptr<Storage> Storage::allocate(int64_t bytes, Device device, const std::string& label, bool pinned) {
  CNN_CHECK(bytes >= 0, "Storage::allocate: negative size ", bytes, " for tensor '", label, "'");
  CNN_CHECK(!(pinned && device.is_cuda()), "Storage::allocate: pinned memory is host memory, got device ",
            device.str(), " for tensor '", label, "'");
  std::shared_ptr<Storage> s(new Storage());
  s->bytes_ = bytes;
  s->device_ = device;
  s->label_ = label;
  if (device.is_cpu()) {
    s->data_ = pinned ? pinned_alloc(size_t(bytes), label, &s->pinned_) : host_alloc(size_t(bytes), label);
  } else {
    Context& ctx = Context::get(device);
    s->data_ = detail::cuda_storage_alloc(device.index, size_t(bytes), ctx.compute_stream_handle(), label);
  }
  return s;
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  if (device_.is_cpu()) {
    if (pinned_) {
      pinned_free(data_, size_t(bytes_), true);
    } else {
      host_free(data_, size_t(bytes_));
    }
  } else {
    detail::cuda_storage_free(device_.index, data_);
  }
}

}  // namespace cnn
