// Context registry and the device-independent parts of Context.
#include "core/context.h"

#include <omp.h>

#include <map>

#include "core/error.h"

namespace cnn {

Context::Context(Device device) : device_(device) {
  if (device.is_cuda()) cuda_ = detail::make_cuda_context(device.index);
}

Context& Context::get(Device device) {
  require_device(device, "Context::get");
  static std::mutex mu;
  static auto* contexts = new std::map<std::pair<int, int>, Context*>();
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(int(device.type), device.index);
  auto it = contexts->find(key);
  if (it == contexts->end()) it = contexts->emplace(key, new Context(device)).first;
  return *it->second;
}

int Context::cpu_threads() const { return omp_get_max_threads(); }

void Context::set_cpu_threads(int n) {
  CNN_CHECK(n >= 1, "Context::set_cpu_threads: expected n >= 1, got ", n);
  omp_set_num_threads(n);
}

CudaContext& Context::cuda() {
  CNN_CHECK(cuda_ != nullptr, "Context::cuda: ", device_.str(), " has no CUDA state (not a cuda device)");
  return *cuda_;
}

void* Context::compute_stream_handle() { return detail::cuda_context_stream(&cuda()); }

void Context::synchronize() {
  if (cuda_ != nullptr) detail::cuda_context_synchronize(cuda_);
}

}  // namespace cnn
