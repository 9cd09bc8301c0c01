// Host allocators (64-byte aligned) with use statistics, size classes and byte formatting shared by all allocators.
#include "core/allocator.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/error.h"

namespace cnn {

namespace {
std::atomic<int64_t> g_host_in_use{0};
std::atomic<int64_t> g_host_peak{0};
std::atomic<int64_t> g_host_allocs{0};

size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

// Training allocates and frees the same activation sizes (MiBs each) every step. glibc would serve them with mmap
// and munmap or trim its heap after each free, so every step faulted its pages in again (~15% of a CPU step);
// keeping them in the heap (up to glibc's 32 MiB mmap limit) lets freed blocks be reused as they are.
void keep_large_blocks_in_heap() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
#endif
}
}  // namespace

size_t cuda_size_class(size_t bytes) {
  if (bytes == 0) return 0;
  CNN_CHECK(bytes <= std::numeric_limits<size_t>::max() - kLargeRounding, "cuda allocator: request of ", bytes,
            " bytes is too large to round to a size class");
  return bytes < kSmallBlockLimit ? round_up(bytes, kSmallRounding) : round_up(bytes, kLargeRounding);
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.2f %s (%lld bytes)", v, units[u], static_cast<long long>(bytes));
  return buf;
}

void* host_alloc(size_t bytes, const std::string& label) {
  if (bytes == 0) return nullptr;
  keep_large_blocks_in_heap();
  void* p = nullptr;
  if (bytes <= std::numeric_limits<size_t>::max() - kHostAlignment) {
    p = std::aligned_alloc(kHostAlignment, round_up(bytes, kHostAlignment));
  }
  if (p == nullptr) {
    throw Error(str_cat("out of memory on cpu: cannot allocate ", format_bytes(int64_t(bytes)), " for tensor '",
                        label.empty() ? "<unnamed>" : label, "' (host allocator: ",
                        format_bytes(g_host_in_use.load()), " in use, 0 bytes cached)"));
  }
  const int64_t now = g_host_in_use.fetch_add(int64_t(bytes)) + int64_t(bytes);
  int64_t peak = g_host_peak.load();
  while (now > peak && !g_host_peak.compare_exchange_weak(peak, now)) {
  }
  g_host_allocs.fetch_add(1);
  return p;
}

void host_free(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::free(p);
  g_host_in_use.fetch_sub(int64_t(bytes));
}

AllocatorStats host_allocator_stats() {
  AllocatorStats s;
  s.bytes_in_use = g_host_in_use.load();
  s.peak_bytes_in_use = g_host_peak.load();
  s.num_allocs = g_host_allocs.load();
  return s;
}

}  // namespace cnn
