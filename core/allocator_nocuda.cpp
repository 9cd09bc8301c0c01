// Allocator entry points of a CPU-only build: pinned memory is plain aligned memory, CUDA memory does not exist.
#include "core/allocator.h"
#include "core/error.h"

namespace cnn {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(str_cat(what, ": this binary was built without CUDA (CNN_CUDA=OFF)"));
}
}  // namespace

void* pinned_alloc(size_t bytes, const std::string& label, bool* is_pinned) {
  *is_pinned = false;
  return host_alloc(bytes, label);
}

void pinned_free(void* p, size_t bytes, bool) { host_free(p, bytes); }

AllocatorStats cuda_allocator_stats(int) { no_cuda("cuda_allocator_stats"); }
void cuda_empty_cache(int) { no_cuda("cuda_empty_cache"); }
void cuda_reset_peak(int) { no_cuda("cuda_reset_peak"); }

namespace detail {
void* cuda_storage_alloc(int, size_t, void*, const std::string&) { no_cuda("cuda allocation"); }
void cuda_storage_free(int, void*) { no_cuda("cuda free"); }
}  // namespace detail

}  // namespace cnn
