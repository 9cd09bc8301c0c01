// Allocators: 64-byte-aligned host memory, pinned host memory (cudaHostAlloc; plain aligned memory without CUDA
// or without a device) and the caching CUDA allocator's statistics and cache control. Out of memory throws a
// cnn::Error naming the request, the bytes in use and cached, and the tensor's label. Layout rules: docs/core.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cnn {

struct AllocatorStats {
  int64_t bytes_in_use = 0;       // handed out and not yet freed (size-class bytes)
  int64_t peak_bytes_in_use = 0;  // since start or the last reset_peak
  int64_t bytes_cached = 0;       // freed blocks kept for reuse
  int64_t num_allocs = 0;         // allocate() calls
  int64_t num_cache_hits = 0;     // allocate() calls served from the cache
  int64_t num_device_allocs = 0;  // cudaMalloc calls that succeeded
};

constexpr size_t kHostAlignment = 64;
constexpr size_t kSmallBlockLimit = size_t(1) << 20;  // 1 MiB
constexpr size_t kSmallRounding = 512;
constexpr size_t kLargeRounding = size_t(2) << 20;  // 2 MiB

// Size class of a CUDA request: multiples of 512 B below 1 MiB, multiples of 2 MiB from 1 MiB up; 0 stays 0.
// Throws on requests so large that rounding would overflow.
size_t cuda_size_class(size_t bytes);
// "1.50 GiB (1610612736 bytes)": used in every memory message.
std::string format_bytes(int64_t bytes);

// 64-byte-aligned host memory; `label` names the tensor in the out-of-memory message. Zero bytes -> nullptr.
void* host_alloc(size_t bytes, const std::string& label);
void host_free(void* p, size_t bytes);
AllocatorStats host_allocator_stats();

// Page-locked host memory when CUDA and a device are present, else 64-byte-aligned memory.
// `*is_pinned` reports which one was returned; pass it back to pinned_free.
void* pinned_alloc(size_t bytes, const std::string& label, bool* is_pinned);
void pinned_free(void* p, size_t bytes, bool is_pinned);

// Caching CUDA allocator of one device (errors in a CPU-only build). empty_cache returns every cached block to
// the driver; reset_peak sets the peak to the current use.
AllocatorStats cuda_allocator_stats(int device);
void cuda_empty_cache(int device);
void cuda_reset_peak(int device);

namespace detail {
// Device memory for a Storage: allocated on `stream` (an opaque cudaStream_t), reusable by later allocations on
// the same stream once freed. Implemented by the caching allocator.
void* cuda_storage_alloc(int device, size_t bytes, void* stream, const std::string& label);
void cuda_storage_free(int device, void* p);
}  // namespace detail

}  // namespace cnn
