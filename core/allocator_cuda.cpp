// Caching CUDA allocator (one per device, per-stream free lists, size classes from cuda_size_class) and pinned
// host memory. A freed block is reused only by allocations on the stream it was allocated on, so stream order
// alone makes reuse safe. Allocators live until process exit (never destroyed: no teardown-order hazards).
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_device_guard.h"
#include "core/device.h"

namespace cnn {

namespace {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}

  void* allocate(size_t bytes, cudaStream_t stream, const std::string& label) {
    const size_t size = cuda_size_class(bytes);
    if (size == 0) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.num_allocs;
    auto& free_list = free_[stream];
    auto it = free_list.find(size);
    if (it != free_list.end()) {
      void* p = it->second;
      free_list.erase(it);
      stats_.bytes_cached -= int64_t(size);
      ++stats_.num_cache_hits;
      hand_out(p, size, stream);
      return p;
    }
    void* p = device_malloc(size);
    if (p == nullptr) {
      release_cached();  // retry once with every cached block returned to the driver
      p = device_malloc(size);
    }
    if (p == nullptr) throw_oom(bytes, size, label);
    ++stats_.num_device_allocs;
    hand_out(p, size, stream);
    return p;
  }

  void free(void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    CNN_CHECK(it != live_.end(), "cuda allocator (cuda:", device_, "): free of a pointer it did not allocate");
    const Block b = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= int64_t(b.size);
    stats_.bytes_cached += int64_t(b.size);
    free_[b.stream].emplace(b.size, p);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached();
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

 private:
  struct Block {
    size_t size;
    cudaStream_t stream;
  };

  void hand_out(void* p, size_t size, cudaStream_t stream) {
    live_[p] = Block{size, stream};
    stats_.bytes_in_use += int64_t(size);
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  // nullptr on out-of-memory (the error is cleared); any other failure throws.
  void* device_malloc(size_t size) {
    CudaDeviceGuard guard(device_);
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    CNN_CUDA_CHECK(err);
    return p;
  }

  void release_cached() {
    CudaDeviceGuard guard(device_);
    // cudaFree waits for the device, so blocks still in use by queued kernels of their stream are safe to drop.
    for (auto& [stream, list] : free_) {
      for (auto& [size, p] : list) {
        CNN_CUDA_CHECK(cudaFree(p));
        stats_.bytes_cached -= int64_t(size);
      }
      list.clear();
    }
  }

  [[noreturn]] void throw_oom(size_t bytes, size_t size, const std::string& label) {
    size_t free_b = 0, total_b = 0;
    {
      CudaDeviceGuard guard(device_);
      if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    }
    throw Error(str_cat("out of memory on cuda:", device_, ": cannot allocate ", format_bytes(int64_t(bytes)),
                        " (size class ", format_bytes(int64_t(size)), ") for tensor '",
                        label.empty() ? "<unnamed>" : label, "'; caching allocator: ",
                        format_bytes(stats_.bytes_in_use), " in use, ", format_bytes(stats_.bytes_cached),
                        " cached (cache was emptied and the request retried); device: ", format_bytes(int64_t(free_b)),
                        " free of ", format_bytes(int64_t(total_b))));
  }

  int device_;
  std::mutex mu_;
  AllocatorStats stats_;
  std::unordered_map<void*, Block> live_;
  std::map<cudaStream_t, std::multimap<size_t, void*>> free_;
};

CachingAllocator& allocator_for(int device) {
  static std::mutex mu;
  static std::vector<CachingAllocator*>* allocators = new std::vector<CachingAllocator*>();
  require_device(Device::cuda(device), "cuda allocator");
  std::lock_guard<std::mutex> lock(mu);
  if (allocators->size() <= size_t(device)) allocators->resize(size_t(device) + 1, nullptr);
  if ((*allocators)[device] == nullptr) (*allocators)[device] = new CachingAllocator(device);
  return *(*allocators)[device];
}

}  // namespace

AllocatorStats cuda_allocator_stats(int device) { return allocator_for(device).stats(); }
void cuda_empty_cache(int device) { allocator_for(device).empty_cache(); }
void cuda_reset_peak(int device) { allocator_for(device).reset_peak(); }

namespace detail {
void* cuda_storage_alloc(int device, size_t bytes, void* stream, const std::string& label) {
  return allocator_for(device).allocate(bytes, static_cast<cudaStream_t>(stream), label);
}
void cuda_storage_free(int device, void* p) { allocator_for(device).free(p); }
}  // namespace detail

void* pinned_alloc(size_t bytes, const std::string& label, bool* is_pinned) {
  *is_pinned = false;
  if (bytes == 0) return nullptr;
  if (cuda_device_count() == 0) return host_alloc(bytes, label);
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error(str_cat("out of pinned host memory: cannot allocate ", format_bytes(int64_t(bytes)), " for '",
                        label.empty() ? "<unnamed>" : label, "' (", cudaGetErrorString(err), ")"));
  }
  *is_pinned = true;
  return p;
}

void pinned_free(void* p, size_t bytes, bool is_pinned) {
  if (p == nullptr) return;
  if (is_pinned) {
    cudaFreeHost(p);
  } else {
    host_free(p, bytes);
  }
}

}  // namespace cnn
