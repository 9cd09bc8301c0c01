// Helpers of the FP16 depthwise tests (see dwconv_fp16_test_util.h).
#include "tests/kernels/dwconv_fp16_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace cnn::dwconv::f16test {

DwconvParams Case::params() const {
  DwconvParams p;
  p.n = n, p.ih = h, p.iw = w, p.c = c, p.fh = fh, p.fw = fw;
  p.stride_h = sh, p.stride_w = sw;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  return p;
}

namespace {

std::vector<Half> uniform_half(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Half> v(static_cast<size_t>(n));
  for (Half& e : v) e = Half(dist(rng));
  return v;
}

std::vector<double> to_double(const std::vector<Half>& v, bool absolute) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = absolute ? std::fabs(float(v[i])) : float(v[i]);
  return out;
}

}  // namespace

double mare_of(const std::vector<double>& got, const std::vector<double>& ref) {
  double mean_abs = 0;
  for (double r : ref) mean_abs += std::fabs(r);
  const double eps = 1e-3 * mean_abs / double(std::max<size_t>(ref.size(), 1)) + 1e-30;
  double sum = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::isfinite(got[i]) ? std::fabs(got[i] - ref[i]) : INFINITY;
    sum += err / std::max(std::fabs(ref[i]), eps);
  }
  return sum / double(std::max<size_t>(ref.size(), 1));
}

HalfData make_data(const DwconvParams& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HalfData d;
  d.x = uniform_half(p.x_elems(), rng);
  d.w = uniform_half(p.w_elems(), rng);
  d.bias = uniform_half(p.c, rng);
  d.dy = uniform_half(p.y_elems(), rng);
  return d;
}

References references(const DwconvParams& p, const HalfData& d) {
  References r;
  r.y.resize(p.y_elems()), r.y_mag.resize(p.y_elems());
  r.dx.resize(p.x_elems()), r.dx_mag.resize(p.x_elems());
  r.dw.resize(p.w_elems()), r.dw_mag.resize(p.w_elems());
  const auto x = to_double(d.x, false), w = to_double(d.w, false), b = to_double(d.bias, false);
  const auto dy = to_double(d.dy, false);
  const auto xa = to_double(d.x, true), wa = to_double(d.w, true), ba = to_double(d.bias, true);
  const auto dya = to_double(d.dy, true);
  dwconv_forward_reference(x.data(), w.data(), b.data(), r.y.data(), p);
  dwconv_forward_reference(xa.data(), wa.data(), ba.data(), r.y_mag.data(), p);
  r.y_no_bias.resize(p.y_elems());
  dwconv_forward_reference(x.data(), w.data(), nullptr, r.y_no_bias.data(), p);
  dwconv_backward_data_reference(dy.data(), w.data(), r.dx.data(), p);
  dwconv_backward_data_reference(dya.data(), wa.data(), r.dx_mag.data(), p);
  dwconv_backward_filter_reference(x.data(), dy.data(), r.dw.data(), p);
  dwconv_backward_filter_reference(xa.data(), dya.data(), r.dw_mag.data(), p);
  std::vector<float> ha(size_t(p.w_elems()));
  dwconv_backward_filter_reference_f16(d.x.data(), d.dy.data(), ha.data(), p, BfcAccum::ha);
  r.dw_ha_emulated.assign(ha.begin(), ha.end());
  return r;
}

Bound fp16_output_bound(double k_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{1.0 / 2048, 4 * k_terms * u * (1 + 1.0 / 2048), 1.0 / (1 << 25)};
}

Bound fp32_output_bound(double k_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{0, 2 * k_terms * u, 1e-30};
}

Bound ha_bound(double l_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{0, 1.1 * kBfcHaRun / 2048.0 + 2 * l_terms * u, l_terms / (1 << 25)};
}

ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                   const Bound& b) {
  ErrorStats s;
  s.count = ref.size();
  EXPECT_EQ(got.size(), ref.size());
  if (got.size() != ref.size()) return s;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    const bool ok = std::isfinite(got[i]) && err <= b.rel * std::fabs(ref[i]) + b.mag_factor * mag[i] + b.abs;
    if (!ok && s.bad++ == 0) {
      s.first_bad = i;
      s.expected = ref[i];
      s.got = got[i];
    }
    s.max_abs = std::max(s.max_abs, std::isfinite(err) ? err : INFINITY);
    if (mag[i] > 0) s.max_rel = std::max(s.max_rel, err / mag[i]);
  }
  s.mare = mare_of(got, ref);
  return s;
}

void expect_ok(const ErrorStats& s, const std::string& what) {
  EXPECT_EQ(s.bad, 0u) << what << ": " << s.bad << " of " << s.count << " elements out of bound; first at index "
                       << s.first_bad << " expected " << s.expected << " got " << s.got << " (max abs err "
                       << s.max_abs << ", max err/magnitude " << s.max_rel << ", MARE " << s.mare << ")";
}

}  // namespace cnn::dwconv::f16test
