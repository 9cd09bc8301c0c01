// Channel-vectorised host emulation of the FP16 backward-filter accumulation. The oracle is
// dwconv_backward_filter_reference_f16 (kernels/dwconv/dwconv_reference_f16.cpp); tests check bit equality.
#include "apps/cnn-compare/bfc_emulation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace cnn::compare {

namespace {

// Nearest FP16 value of v (ties to even), as the reference's round_to_half, without library calls so the channel
// loop vectorises: the quantum is 2^(e - 10) for the binade e >= -14 of v, and adding 1.5 * 2^52 rounds the scaled
// value (|v / q| < 2^12) to an integer in the default rounding mode. Non-finite v is returned as is.
inline double round_half(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int biased = int((bits >> 52) & 0x7ff);
  if (biased == 0x7ff) return v;
  const int e = std::max(biased - 1023, -14);
  const uint64_t inv_bits = uint64_t(1023 + 10 - e) << 52, q_bits = uint64_t(1023 - 10 + e) << 52;
  double inv, q;
  std::memcpy(&inv, &inv_bits, sizeof inv);
  std::memcpy(&q, &q_bits, sizeof q);
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double shifted = v * inv + kRound;  // not folded: IEEE semantics (no -ffast-math)
  const double r = (shifted - kRound) * q;
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, r) : r;
}

}  // namespace

void bfc_ha_emulated(const float* x, const float* dy, float* dw, const dwconv::DwconvParams& p) {
  p.validate("bfc_ha_emulated");
  CNN_CHECK(x != nullptr && dy != nullptr && dw != nullptr, "bfc_ha_emulated: expected non-null x, dy, dw");
  const int oh_n = p.oh(), ow_n = p.ow(), c_n = p.c;
  const int64_t taps = int64_t(p.fh) * p.fw;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < taps; ++t) {
    const int i = int(t / p.fw), j = int(t % p.fw);
    // Columns whose input column lies inside the image (the reference skips the others).
    int ow_lo = 0, ow_hi = ow_n;
    while (ow_lo < ow_n && ow_lo * p.stride_w + j - p.pad_left < 0) ++ow_lo;
    while (ow_hi > ow_lo && (ow_hi - 1) * p.stride_w + j - p.pad_left >= p.iw) --ow_hi;
    std::vector<float> acc(static_cast<size_t>(c_n), 0.f), part(static_cast<size_t>(c_n));
    for (int n = 0; n < p.n; ++n)
      for (int oh = 0; oh < oh_n; ++oh) {
        const int ih = oh * p.stride_h + i - p.pad_top;
        if (ih < 0 || ih >= p.ih) continue;
        const float* x_row = x + (int64_t(n) * p.ih + ih) * p.iw * c_n;
        const float* dy_row = dy + (int64_t(n) * oh_n + oh) * ow_n * c_n;
        for (int run = 0; run < ow_n; run += dwconv::kBfcHaRun) {
          std::fill(part.begin(), part.end(), 0.f);
          const int lo = std::max(run, ow_lo), hi = std::min(run + dwconv::kBfcHaRun, ow_hi);
          for (int ow = lo; ow < hi; ++ow) {
            const float* xv = x_row + int64_t(ow * p.stride_w + j - p.pad_left) * c_n;
            const float* dv = dy_row + int64_t(ow) * c_n;
            for (int c = 0; c < c_n; ++c)
              part[size_t(c)] = float(round_half(double(xv[c]) * double(dv[c]) + double(part[size_t(c)])));
          }
          for (int c = 0; c < c_n; ++c) acc[size_t(c)] += part[size_t(c)];
        }
      }
    std::copy(acc.begin(), acc.end(), dw + t * c_n);
  }
}

Tensor round_to_f16(const Tensor& t) {
  CNN_CHECK(t.device().is_cpu() && t.dtype() == DType::f32, "round_to_f16: expected a cpu f32 tensor, got ", t.str());
  return t.to(DType::f16).to(DType::f32);
}

Tensor bfc_f16_emulated(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum accum) {
  const Tensor x16 = round_to_f16(x.contiguous()), dy16 = round_to_f16(dy.contiguous());
  Tensor dw = Tensor::empty({p.fh, p.fw, p.c}, DType::f32, Device::cpu());
  if (accum == dwconv::BfcAccum::ha)
    bfc_ha_emulated(x16.data<float>(), dy16.data<float>(), dw.data<float>(), p);
  else
    dwconv::dwconv_backward_filter_cpu(x16.data<float>(), dy16.data<float>(), dw.data<float>(), p);
  return dw;
}

}  // namespace cnn::compare
