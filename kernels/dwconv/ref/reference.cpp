// FP64 reference for depthwise conv forward, backward-data and backward-filter: direct loops, no tricks.
// The oracle every CPU and CUDA path is tested against; layouts and formulas are in dwconv.h.
#include <algorithm>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

namespace {
// Calls f(n, oh, ow, i, j, ih, iw) for every (output position, tap) whose input lies inside X.
template <class F>
void for_each_valid_tap(const DwconvParams& p, F&& f) {
  const int oh_n = p.oh(), ow_n = p.ow();
  for (int n = 0; n < p.n; ++n)
    for (int oh = 0; oh < oh_n; ++oh)
      for (int ow = 0; ow < ow_n; ++ow)
        for (int i = 0; i < p.fh; ++i) {
          const int ih = oh * p.stride_h + i - p.pad_top;
          if (ih < 0 || ih >= p.ih) continue;
          for (int j = 0; j < p.fw; ++j) {
            const int iw = ow * p.stride_w + j - p.pad_left;
            if (iw < 0 || iw >= p.iw) continue;
            f(n, oh, ow, i, j, ih, iw);
          }
        }
}
}  // namespace

void dwconv_forward_reference(const double* x, const double* w, const double* bias, double* y,
                              const DwconvParams& p) {
  p.validate("dwconv_forward_reference");
  const int oh_n = p.oh(), ow_n = p.ow(), c_n = p.c;
  for (int64_t e = 0; e < p.y_elems(); ++e) y[e] = bias ? bias[e % c_n] : 0.0;
  for_each_valid_tap(p, [&](int n, int oh, int ow, int i, int j, int ih, int iw) {
    double* yp = y + ((int64_t(n) * oh_n + oh) * ow_n + ow) * c_n;
    const double* xp = x + ((int64_t(n) * p.ih + ih) * p.iw + iw) * c_n;
    const double* wp = w + (int64_t(i) * p.fw + j) * c_n;
    for (int c = 0; c < c_n; ++c) yp[c] += xp[c] * wp[c];
  });
}

void dwconv_backward_data_reference(const double* dy, const double* w, double* dx, const DwconvParams& p) {
  p.validate("dwconv_backward_data_reference");
  const int oh_n = p.oh(), ow_n = p.ow(), c_n = p.c;
  std::fill(dx, dx + p.x_elems(), 0.0);
  for_each_valid_tap(p, [&](int n, int oh, int ow, int i, int j, int ih, int iw) {
    const double* dyp = dy + ((int64_t(n) * oh_n + oh) * ow_n + ow) * c_n;
    double* dxp = dx + ((int64_t(n) * p.ih + ih) * p.iw + iw) * c_n;
    const double* wp = w + (int64_t(i) * p.fw + j) * c_n;
    for (int c = 0; c < c_n; ++c) dxp[c] += dyp[c] * wp[c];
  });
}

void dwconv_backward_filter_reference(const double* x, const double* dy, double* dw, const DwconvParams& p) {
  p.validate("dwconv_backward_filter_reference");
  const int oh_n = p.oh(), ow_n = p.ow(), c_n = p.c;
  std::fill(dw, dw + p.w_elems(), 0.0);
  for_each_valid_tap(p, [&](int n, int oh, int ow, int i, int j, int ih, int iw) {
    const double* dyp = dy + ((int64_t(n) * oh_n + oh) * ow_n + ow) * c_n;
    const double* xp = x + ((int64_t(n) * p.ih + ih) * p.iw + iw) * c_n;
    double* dwp = dw + (int64_t(i) * p.fw + j) * c_n;
    for (int c = 0; c < c_n; ++c) dwp[c] += xp[c] * dyp[c];
  });
}

}  // namespace cnn::dwconv
