// Finiteness checks on the host, in double precision (every float dtype converts exactly).
#include "core/finite_check.h"

#include <cmath>

#include "core/error.h"

namespace cnn {

void require_finite(const Tensor& t, const std::string& what) {
  if (!dtype_is_floating(t.dtype())) return;
  const Tensor host = t.to(Device::cpu()).to(DType::f64).contiguous();
  const double* v = host.data<double>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (!std::isfinite(v[i])) throw Error(str_cat(what, ": element ", i, " is not finite (", v[i], ")"));
}

}  // namespace cnn
