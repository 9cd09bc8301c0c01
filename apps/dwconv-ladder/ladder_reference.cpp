// FP64 reference of image 0 and its tolerances (see ladder_reference.h).
#include "apps/dwconv-ladder/ladder_reference.h"

#include <cmath>

#include "apps/dwconv-ladder/ladder_report.h"
#include "core/error.h"

namespace cnn::ladder {

ImageZeroReference image_zero_reference(const std::vector<float>& x, const std::vector<float>& w,
                                        const dwconv::DwconvParams& p) {
  dwconv::DwconvParams one = p;
  one.n = 1;
  CNN_CHECK(int64_t(x.size()) >= one.x_elems() && int64_t(w.size()) == p.w_elems(),
            "dwconv-ladder reference: expected ", one.x_elems(), " inputs and ", p.w_elems(), " weights, got ",
            x.size(), " and ", w.size());
  std::vector<double> xd(x.begin(), x.begin() + one.x_elems()), wd(w.begin(), w.end());
  ImageZeroReference r;
  r.y.resize(size_t(one.y_elems()));
  dwconv::dwconv_forward_reference(xd.data(), wd.data(), nullptr, r.y.data(), one);
  for (double& v : xd) v = std::abs(v);  // sum |x w| per output: the scale of the rounding error
  for (double& v : wd) v = std::abs(v);
  std::vector<double> abs_y(r.y.size());
  dwconv::dwconv_forward_reference(xd.data(), wd.data(), nullptr, abs_y.data(), one);
  r.tol_f32 = forward_tolerance(abs_y, r.y, p.fh * p.fw, false);
  r.tol_f16 = forward_tolerance(abs_y, r.y, p.fh * p.fw, true);
  return r;
}

}  // namespace cnn::ladder
