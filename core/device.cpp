// Device parsing and formatting.
#include "core/device.h"

#include <unistd.h>

#include <cctype>

#include "core/device_memory.h"
#include "core/error.h"

namespace cnn {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  const std::string prefix = "cuda:";
  if (s.rfind(prefix, 0) == 0 && s.size() > prefix.size() && s.size() <= prefix.size() + 4) {
    int idx = 0;
    bool ok = true;
    for (size_t i = prefix.size(); i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) ok = false;
      else idx = idx * 10 + (s[i] - '0');
    }
    if (ok) return cuda(idx);
  }
  throw Error(str_cat("device: cannot parse '", s, "', expected 'cpu', 'cuda' or 'cuda:N' (N a device ordinal)"));
}

std::string Device::str() const { return is_cpu() ? std::string("cpu") : str_cat("cuda:", index); }

uint64_t device_memory_bytes(const Device& d) {
  if (d.is_cuda()) return cuda_memory_bytes(d.index);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

void require_device(const Device& d, const char* what) {
  if (d.is_cpu()) return;
  CNN_CHECK(cuda_built(), what, ": ", d.str(), " requested but this binary was built without CUDA (CNN_CUDA=OFF)");
  const int n = cuda_device_count();
  CNN_CHECK(n > 0, what, ": ", d.str(), " requested but no CUDA device is available");
  CNN_CHECK(d.index >= 0 && d.index < n, what, ": ", d.str(), " requested but only ", n,
            " CUDA device(s) are visible (cuda:0..cuda:", n - 1, ")");
}

}  // namespace cnn
