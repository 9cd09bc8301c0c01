// Sampled FP64 reference check for dwconv-bench (see sampled_check.h for the error definition).
#include "apps/dwconv-bench/sampled_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "core/error.h"

namespace cnn::bench {
namespace {

constexpr int kDenseSamples = 2048;
constexpr int kFilterSamples = 64;
constexpr double kFloorFraction = 1e-3;  // relative-error denominator floor, as a fraction of mean |ref|
// FP32 accumulation of K = FH*FW products of U(-1,1) values errs by ~eps*sqrt(K)*sqrt(K)/3 while the floor is
// ~1e-3*0.27*sqrt(K), so a correct kernel stays near 7e-5*F (4e-3 at F = 51); one wrong or missing tap already
// costs ~2e-2 on a typical element and far more on small ones.
constexpr double kTolerance = 2e-2;

using Index4 = std::array<int, 4>;

// Positions (n, h, w, c) of an (N, H, W, C) tensor: 3/4 uniform, 1/4 with h or w inside the border band, where
// the padding masks act.
std::vector<Index4> sample_positions(int n, int h, int w, int c, int band, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto border = [&](int extent) {
    const int b = std::min(band, extent);
    const int k = uniform(0, 2 * b - 1);
    return k < b ? k : extent - 1 - (k - b);
  };
  std::vector<Index4> out;
  out.reserve(size_t(count));
  for (int s = 0; s < count; ++s) {
    Index4 idx{uniform(0, n - 1), uniform(0, h - 1), uniform(0, w - 1), uniform(0, c - 1)};
    if (s % 4 == 3) {
      if (uniform(0, 1) == 0) {
        idx[1] = border(h);
      } else {
        idx[2] = border(w);
      }
    }
    out.push_back(idx);
  }
  return out;
}

// Turns (reference, got) pairs into the max relative error with the floored denominator.
CheckResult summarize(const std::vector<double>& ref, const std::vector<double>& got, const std::vector<Index4>& at) {
  CheckResult r;
  r.samples = int(ref.size());
  double mean_abs = 0;
  for (double v : ref) mean_abs += std::fabs(v);
  mean_abs /= std::max<size_t>(ref.size(), 1);
  const double floor = std::max(kFloorFraction * mean_abs, 1e-30);
  for (size_t i = 0; i < ref.size(); ++i) {
    const double abs_err = std::fabs(got[i] - ref[i]);
    const double rel = std::isnan(got[i]) ? INFINITY : abs_err / std::max(std::fabs(ref[i]), floor);
    r.max_abs = std::max(r.max_abs, abs_err);
    r.mare += rel / double(ref.size());
    if (rel > r.max_rel || (i == 0 && r.worst.empty())) {
      r.max_rel = std::max(r.max_rel, rel);
      r.worst =
          str_cat("(", at[i][0], ",", at[i][1], ",", at[i][2], ",", at[i][3], ") expected ", ref[i], " got ", got[i]);
    }
  }
  return r;
}

void check_sizes(const char* op, const char* name, size_t size, int64_t expected) {
  CNN_CHECK(int64_t(size) == expected, op, " check: expected ", expected, " elements in ", name, ", got ", size);
}

}  // namespace

double check_tolerance() { return kTolerance; }

// FP16 outputs add a rounding of at most 2^-11 relative (5e-4), far inside the FP32 tolerance. FP16 forward and
// backward-data accumulate on tensor cores, whose FP32 sums are not IEEE-rounded: each MMA aligns its terms to the
// largest and truncates (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021: V100-A100; the H200 shows
// the same pattern: k8 MMAs, twice the accumulation steps of k16, give a worst sampled error at 51x51 of 2.58e-2
// against 1.45e-2, with MARE unchanged). That is a one-sided error of up to 2^-23 of the running sum
// per step, FH*FW/8 steps: ~FH*FW * 2^-24/8 of |y| on average, FH*FW * 7.5e-6 against the floor (1e-3 of mean |y|),
// 1.9e-2 at 51x51. The FP16 bound adds twice that, kTcPerTap per tap: 5.9e-2 at 51x51, 2.3e-2 at 13x13; a wrong or
// missing tap still costs ~1 relative on the elements near the floor that every 2048-sample check contains.
// Hybrid backward-filter accumulation errs by ~2^-11 per FP16 step on run partials of a few units, ~1.5e-3 of a
// typical dW element and up to ~10x that on elements near the floor over a 2M-term reduction: 1e-1 still flags a
// wrong run or missing chunk (errors of order 1 relative).
constexpr double kTcPerTap = 1.5e-5;

double check_tolerance(DType dtype, dwconv::DwconvOp op, dwconv::BfcAccum accum, int taps) {
  if (dtype != DType::f16) return kTolerance;
  if (op == dwconv::DwconvOp::backward_filter) return accum == dwconv::BfcAccum::ha ? 1e-1 : kTolerance;
  return kTolerance + kTcPerTap * taps;
}

CheckResult check_forward(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& y,
                          const dwconv::DwconvParams& p, uint64_t seed) {
  check_sizes("fwd", "x", x.size(), p.x_elems());
  check_sizes("fwd", "w", w.size(), p.w_elems());
  check_sizes("fwd", "y", y.size(), p.y_elems());
  const int oh = p.oh(), ow = p.ow();
  const std::vector<Index4> at = sample_positions(p.n, oh, ow, p.c, std::max(p.fh, p.fw) / 2 + 1, kDenseSamples, seed);
  std::vector<double> ref(at.size()), got(at.size());
#pragma omp parallel for schedule(static)
  for (size_t s = 0; s < at.size(); ++s) {
    const auto [n, r, q, c] = at[s];
    double acc = 0;
    for (int i = 0; i < p.fh; ++i) {
      const int ih = r * p.stride_h + i - p.pad_top;
      if (ih < 0 || ih >= p.ih) continue;
      for (int j = 0; j < p.fw; ++j) {
        const int iw = q * p.stride_w + j - p.pad_left;
        if (iw < 0 || iw >= p.iw) continue;
        acc += double(x[size_t(((int64_t(n) * p.ih + ih) * p.iw + iw) * p.c + c)]) *
               double(w[size_t((int64_t(i) * p.fw + j) * p.c + c)]);
      }
    }
    ref[s] = acc;
    got[s] = y[size_t(((int64_t(n) * oh + r) * ow + q) * p.c + c)];
  }
  return summarize(ref, got, at);
}

CheckResult check_backward_data(const std::vector<float>& dy, const std::vector<float>& w, const std::vector<float>& dx,
                                const dwconv::DwconvParams& p, uint64_t seed) {
  check_sizes("bdc", "dy", dy.size(), p.y_elems());
  check_sizes("bdc", "w", w.size(), p.w_elems());
  check_sizes("bdc", "dx", dx.size(), p.x_elems());
  const int oh = p.oh(), ow = p.ow();
  const std::vector<Index4> at =
      sample_positions(p.n, p.ih, p.iw, p.c, std::max(p.fh, p.fw) / 2 + 1, kDenseSamples, seed);
  std::vector<double> ref(at.size()), got(at.size());
#pragma omp parallel for schedule(static)
  for (size_t s = 0; s < at.size(); ++s) {
    const auto [n, r, q, c] = at[s];
    double acc = 0;
    // dX[n,r,q,c] = sum over taps (i,j) and outputs (a,b) with a*sH + i - pT = r, b*sW + j - pL = q.
    for (int i = 0; i < p.fh; ++i) {
      const int a_num = r + p.pad_top - i;
      if (a_num < 0 || a_num % p.stride_h != 0 || a_num / p.stride_h >= oh) continue;
      const int a = a_num / p.stride_h;
      for (int j = 0; j < p.fw; ++j) {
        const int b_num = q + p.pad_left - j;
        if (b_num < 0 || b_num % p.stride_w != 0 || b_num / p.stride_w >= ow) continue;
        const int b = b_num / p.stride_w;
        acc += double(dy[size_t(((int64_t(n) * oh + a) * ow + b) * p.c + c)]) *
               double(w[size_t((int64_t(i) * p.fw + j) * p.c + c)]);
      }
    }
    ref[s] = acc;
    got[s] = dx[size_t(((int64_t(n) * p.ih + r) * p.iw + q) * p.c + c)];
  }
  return summarize(ref, got, at);
}

CheckResult check_backward_filter(const std::vector<float>& x, const std::vector<float>& dy,
                                  const std::vector<float>& dw, const dwconv::DwconvParams& p, uint64_t seed) {
  check_sizes("bfc", "x", x.size(), p.x_elems());
  check_sizes("bfc", "dy", dy.size(), p.y_elems());
  check_sizes("bfc", "dw", dw.size(), p.w_elems());
  const int oh = p.oh(), ow = p.ow();
  // Taps as (0, i, j, c); the corner taps always included since they see the most padding.
  std::vector<Index4> at = sample_positions(1, p.fh, p.fw, p.c, 1, kFilterSamples, seed);
  at[0] = {0, 0, 0, at[0][3]};
  at[1] = {0, p.fh - 1, p.fw - 1, at[1][3]};
  std::vector<double> ref(at.size()), got(at.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t s = 0; s < int64_t(at.size()); ++s) {
    const auto [unused, i, j, c] = at[size_t(s)];
    (void)unused;
    double acc = 0;
    for (int n = 0; n < p.n; ++n) {
      for (int a = 0; a < oh; ++a) {
        const int ih = a * p.stride_h + i - p.pad_top;
        if (ih < 0 || ih >= p.ih) continue;
        const int64_t x_row = (int64_t(n) * p.ih + ih) * p.iw;
        const int64_t dy_row = (int64_t(n) * oh + a) * ow;
        for (int b = 0; b < ow; ++b) {
          const int iw = b * p.stride_w + j - p.pad_left;
          if (iw < 0 || iw >= p.iw) continue;
          acc += double(x[size_t((x_row + iw) * p.c + c)]) * double(dy[size_t((dy_row + b) * p.c + c)]);
        }
      }
    }
    ref[size_t(s)] = acc;
    got[size_t(s)] = dw[size_t((int64_t(i) * p.fw + j) * p.c + c)];
  }
  return summarize(ref, got, at);
}

}  // namespace cnn::bench
