// Tensor comparison helpers with index / expected / got / max error diagnostics.
#include "tests/support/numeric.h"

#include "core/error.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace cnn::test {

::testing::AssertionResult all_close(const Tensor& expected, const Tensor& got, double atol, double rtol,
                                     const std::string& what) {
  if (expected.shape() != got.shape()) {
    return ::testing::AssertionFailure() << what << ": shape mismatch, expected " << shape_str(expected.shape())
                                         << ", got " << shape_str(got.shape());
  }
  const std::vector<double> e = expected.to(DType::f64).to_vector<double>();
  const std::vector<double> g = got.to(DType::f64).to_vector<double>();
  double max_abs = 0, max_rel = 0;
  int64_t bad = -1, bad_count = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i] == g[i] || (std::isnan(e[i]) && std::isnan(g[i]))) continue;  // also equal infinities
    const double err = std::fabs(g[i] - e[i]);
    const bool nan_mismatch = std::isnan(e[i]) != std::isnan(g[i]);
    if (!std::isnan(err)) {
      max_abs = std::max(max_abs, err);
      max_rel = std::max(max_rel, err / std::max(std::fabs(e[i]), 1e-300));
    }
    if (nan_mismatch || err > atol + rtol * std::fabs(e[i]) || (std::isnan(err) && !std::isnan(e[i]))) {
      if (bad < 0) bad = int64_t(i);
      ++bad_count;
    }
  }
  if (bad < 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(10);
  os << what << ": " << bad_count << " of " << e.size() << " elements outside atol=" << atol << " rtol=" << rtol
     << "; first at flat index " << bad << ": expected " << e[size_t(bad)] << ", got " << g[size_t(bad)]
     << "; max abs err " << max_abs << ", max rel err " << max_rel;
  return ::testing::AssertionFailure() << os.str();
}

::testing::AssertionResult bitwise_equal(const Tensor& expected, const Tensor& got, const std::string& what) {
  if (expected.shape() != got.shape() || expected.dtype() != got.dtype()) {
    return ::testing::AssertionFailure() << what << ": expected " << expected.str() << ", got " << got.str();
  }
  const int64_t es = dtype_size(expected.dtype());
  std::vector<uint8_t> e(size_t(expected.nbytes())), g(size_t(got.nbytes()));
  expected.copy_to_host(e.data());
  got.copy_to_host(g.data());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (std::memcmp(e.data() + i * es, g.data() + i * es, size_t(es)) != 0) {
      const Tensor ev = expected.contiguous().reshape({-1}).slice(0, i, i + 1), gv = got.contiguous().reshape({-1}).slice(0, i, i + 1);
      return ::testing::AssertionFailure() << what << ": first difference at flat index " << i << ": expected "
                                           << ev.item() << ", got " << gv.item();
    }
  }
  return ::testing::AssertionSuccess();
}

bool has_cuda_device() { return cuda_built() && cuda_device_count() > 0; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace cnn::test
