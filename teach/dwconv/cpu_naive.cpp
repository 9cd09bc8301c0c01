// CPU rung 1: the depthwise forward as plain loops (see ladder.h). The vectorized backend it is compared with is
// dwconv_forward_cpu (kernels/dwconv/cpu/dwconv_cpu.cpp); both are checked against dwconv_forward_reference.
#include <cstdint>

#include "teach/dwconv/ladder.h"

namespace cnn::teach {

void forward_naive_cpu(const float* x, const float* w, float* y, const DwconvParams& p) {
  p.validate("teach forward_naive_cpu");
  dwconv::check_pointers("teach forward_naive_cpu", x, "x", w, "w", y, "y");
  const int out_h = p.oh(), out_w = p.ow();
  for (int n = 0; n < p.n; ++n)
    for (int oh = 0; oh < out_h; ++oh)
      for (int ow = 0; ow < out_w; ++ow)
        for (int c = 0; c < p.c; ++c) {
          float acc = 0.f;
          for (int r = 0; r < p.fh; ++r) {
            const int ih = oh * p.stride_h + r - p.pad_top;
            if (ih < 0 || ih >= p.ih) continue;
            for (int s = 0; s < p.fw; ++s) {
              const int iw = ow * p.stride_w + s - p.pad_left;
              if (iw < 0 || iw >= p.iw) continue;
              acc += x[((int64_t(n) * p.ih + ih) * p.iw + iw) * p.c + c] * w[(int64_t(r) * p.fw + s) * p.c + c];
            }
          }
          y[((int64_t(n) * out_h + oh) * out_w + ow) * p.c + c] = acc;
        }
}

}  // namespace cnn::teach
