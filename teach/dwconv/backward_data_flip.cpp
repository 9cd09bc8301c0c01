// Backward-data as a flipped forward (see ladder.h). Why it holds, for one axis at stride 1: y[o] = sum_j x[o+j-p]
// w[j], so dx[i] = sum_j dy[i-j+p] w[j]; with j' = F-1-j that is sum_j' dy[i + j' - (F-1-p)] w[F-1-j'], a forward
// correlation of dy with the reversed filter and padding F-1-p. Reference: dwconv_backward_data_reference.
#include <vector>

#include "core/error.h"
#include "teach/dwconv/ladder.h"

namespace cnn::teach {

DwconvParams flipped_forward_params(const DwconvParams& p) {
  const char* op = "teach backward_data_as_flipped_forward";
  p.validate(op);
  CNN_CHECK(p.stride_h == 1 && p.stride_w == 1, op, ": needs stride 1 (a strided backward-data skips taps), got ",
            p.str());
  CNN_CHECK(p.pad_top < p.fh && p.pad_bottom < p.fh && p.pad_left < p.fw && p.pad_right < p.fw, op,
            ": needs paddings <= filter extent - 1 (larger ones mirror to a crop), got ", p.str());
  DwconvParams f = p;
  f.ih = p.oh(), f.iw = p.ow();
  f.pad_top = p.fh - 1 - p.pad_top, f.pad_bottom = p.fh - 1 - p.pad_bottom;
  f.pad_left = p.fw - 1 - p.pad_left, f.pad_right = p.fw - 1 - p.pad_right;
  CNN_CHECK(f.oh() == p.ih && f.ow() == p.iw, op, ": the flipped forward gives ", f.oh(), "x", f.ow(), ", expected ",
            p.ih, "x", p.iw);
  return f;
}

void backward_data_as_flipped_forward(const float* dy, const float* w, float* dx, const DwconvParams& p) {
  const DwconvParams f = flipped_forward_params(p);
  dwconv::check_pointers("teach backward_data_as_flipped_forward", dy, "dy", w, "w", dx, "dx");
  std::vector<float> flipped(size_t(p.w_elems()));  // (FH, FW, C) turned by 180 degrees in the two spatial axes
  for (int r = 0; r < p.fh; ++r)
    for (int s = 0; s < p.fw; ++s)
      for (int c = 0; c < p.c; ++c)
        flipped[(size_t(p.fh - 1 - r) * p.fw + (p.fw - 1 - s)) * p.c + c] = w[(size_t(r) * p.fw + s) * p.c + c];
  dwconv::dwconv_forward_cpu(dy, flipped.data(), nullptr, dx, f);
}

}  // namespace cnn::teach
