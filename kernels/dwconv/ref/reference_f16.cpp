// Host emulation of the FP16 backward-filter kernels (fp32 and hybrid accumulation, dwconv.h), so the numerical
// effect of hybrid accumulation can be studied without a GPU. X, dY (N,H,W,C) hold FP16 values, dW (FH,FW,C) FP32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

namespace {

// Rounds v to the nearest FP16 value (ties to even), exactly: the FP16 quantum at v's binade is a power of two, so
// v / q is exact and nearbyint (round-to-nearest-even mode) does the rounding once. Overflow gives +-inf.
double round_to_half(double v) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  const int e = std::max(std::ilogb(v), -14);  // binades below 2^-14 share the subnormal quantum 2^-24
  const double q = std::ldexp(1.0, e - 10);
  const double r = std::nearbyint(v / q) * q;
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r;
}

// One FP16 fused multiply-add, as HFMA2 does it: the exact x*y + z rounded once to FP16. x*y has at most 22
// significant bits, so the double sum is exact unless z and x*y lie over 31 binades apart (never in these sums).
float fma_f16(float x, float y, float z) { return float(round_to_half(double(x) * double(y) + double(z))); }

// dW for one tap row i and column j of one channel c: the kernels' per-(tap, channel) order.
float reduce_tap(const std::vector<float>& xf, const std::vector<float>& dyf, const DwconvParams& p, int i, int j,
                 int c, BfcAccum accum) {
  const int oh_n = p.oh(), ow_n = p.ow();
  float acc = 0.f;
  for (int n = 0; n < p.n; ++n)
    for (int oh = 0; oh < oh_n; ++oh) {
      const int ih = oh * p.stride_h + i - p.pad_top;
      if (ih < 0 || ih >= p.ih) continue;
      const float* x_row = xf.data() + (int64_t(n) * p.ih + ih) * p.iw * p.c + c;
      const float* dy_row = dyf.data() + (int64_t(n) * oh_n + oh) * ow_n * p.c + c;
      for (int run = 0; run < ow_n; run += kBfcHaRun) {
        float part = 0.f;  // FP16 partial of the run (ha) or the FP32 accumulator itself (fp32)
        for (int ow = run; ow < std::min(ow_n, run + kBfcHaRun); ++ow) {
          const int iw = ow * p.stride_w + j - p.pad_left;
          if (iw < 0 || iw >= p.iw) continue;  // zero-padded input: the kernels' step leaves the sum unchanged
          const float xv = x_row[int64_t(iw) * p.c], dv = dy_row[int64_t(ow) * p.c];
          if (accum == BfcAccum::ha)
            part = fma_f16(xv, dv, part);
          else
            acc = std::fma(xv, dv, acc);
        }
        if (accum == BfcAccum::ha) acc += part;
      }
    }
  return acc;
}

std::vector<float> widen_all(const Half* v, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) out[size_t(e)] = float(v[e]);
  return out;
}

}  // namespace

const char* bfc_accum_name(BfcAccum a) { return a == BfcAccum::ha ? "ha" : "fp32"; }

void dwconv_backward_filter_reference_f16(const Half* x, const Half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum) {
  p.validate("dwconv_backward_filter_reference_f16");
  CNN_CHECK(x != nullptr && dy != nullptr && dw != nullptr,
            "dwconv_backward_filter_reference_f16: expected non-null x, dy, dw");
  const std::vector<float> xf = widen_all(x, p.x_elems()), dyf = widen_all(dy, p.y_elems());
  const int64_t taps = int64_t(p.fh) * p.fw;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < taps; ++t)
    for (int c = 0; c < p.c; ++c)
      dw[t * p.c + c] = reduce_tap(xf, dyf, p, int(t / p.fw), int(t % p.fw), c, accum);
}

}  // namespace cnn::dwconv
