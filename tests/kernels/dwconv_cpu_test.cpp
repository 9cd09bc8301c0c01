// Depthwise conv on the CPU: the FP64 reference's backward ops are the true adjoints (finite differences), and the
// FP32 CPU backend (every ISA build this CPU runs) matches the reference on awkward shapes; invalid calls throw naming the op.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/cpu/impl.h"
#include "tests/kernels/dwconv_test_util.h"

namespace cnn::dwconv {
namespace {

using test::all_close;
using test::convert;
using test::random_uniform;

constexpr double kU32 = 0x1p-24;  // unit roundoff of FP32
constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t k = 0; k < a.size(); ++k) s += a[k] * b[k];
  return s;
}

// L(x, w) = sum(forward_reference(x, w) * r).
double loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& r,
            const DwconvParams& p) {
  std::vector<double> y(p.y_elems());
  dwconv_forward_reference(x.data(), w.data(), nullptr, y.data(), p);
  return dot(y, r);
}

// dL/dv by central differences, one element of v at a time.
std::vector<double> numeric_grad(std::vector<double>& v, double step, const std::function<double()>& f) {
  std::vector<double> g(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const double keep = v[k];
    v[k] = keep + step;
    const double up = f();
    v[k] = keep - step;
    const double down = f();
    v[k] = keep;
    g[k] = (up - down) / (2 * step);
  }
  return g;
}

TEST(DwconvGradCheck, ReferenceBackwardIsTheAdjointOfForward) {
  const std::vector<DwconvParams> shapes = {
      test::dwconv_shape(2, 6, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1),
      test::dwconv_shape(1, 7, 8, 2, 3, 4, 2, 2, 0, 2, 1, 0),  // stride 2, asymmetric padding
      test::dwconv_shape(2, 5, 9, 2, 2, 5, 2, 1, 3, 1, 0, 4),  // padding > filter - 1
      test::dwconv_shape(1, 6, 5, 1, 5, 1, 1, 2, 2, 2, 0, 0),
  };
  // L is bilinear in (x, w): the central difference has no truncation error for any step, so only FP64 rounding
  // of L remains, <= (#terms) * 2^-53 * sum|terms| / step (< 1e-12 * sum|terms| here, #terms < 4000).
  constexpr double kStep = 0.5;
  uint64_t seed = 100;
  for (const DwconvParams& p : shapes) {
    ++seed;
    std::vector<double> x = random_uniform<double>(p.x_elems(), seed * 3);
    std::vector<double> w = random_uniform<double>(p.w_elems(), seed * 3 + 1);
    const std::vector<double> r = random_uniform<double>(p.y_elems(), seed * 3 + 2);
    std::vector<double> y_abs(p.y_elems());
    dwconv_forward_reference(test::abs_values(x).data(), test::abs_values(w).data(), nullptr, y_abs.data(), p);
    const double terms = dot(y_abs, test::abs_values(r));
    const double tol = 1e-12 * terms / kStep;
    const std::string what = "seed " + std::to_string(seed) + " " + p.str();

    std::vector<double> dx(p.x_elems()), dw(p.w_elems());
    dwconv_backward_data_reference(r.data(), w.data(), dx.data(), p);
    dwconv_backward_filter_reference(x.data(), r.data(), dw.data(), p);
    const auto gx = numeric_grad(x, kStep, [&] { return loss(x, w, r, p); });
    const auto gw = numeric_grad(w, kStep, [&] { return loss(x, w, r, p); });
    EXPECT_TRUE(all_close(dx, gx, tol, 0.0, "dL/dx " + what));
    EXPECT_TRUE(all_close(dw, gw, tol, 0.0, "dL/dw " + what));
  }
}

// FP32 accumulation of k products: each rounding is <= 2^-24 of a partial sum bounded by m = sum|terms|, so
// k * 2^-24 * m is the worst case (covered by 4 * sqrt(k) for k <= 16); for larger k the errors of random inputs
// add like a random walk (spread ~sqrt(k/3) * 2^-24 * m), and 4 * sqrt(k) * 2^-24 * m is ~7 sigma yet still fails
// on a single dropped tap of a 51x51 filter (~m/k). Measured: factor 1 instead of 4 fails only where k <= 9.
std::function<double(size_t)> accumulation_tol(const std::vector<double>& magnitude, double k) {
  return [&magnitude, k](size_t e) { return 4.0 * std::sqrt(k) * kU32 * magnitude[e]; };
}

// Inputs and FP64 expectations for one shape, shared by the ISA builds.
struct Case {
  DwconvParams p;
  uint64_t seed;
  std::vector<float> x, w, bias, dy;
  std::vector<double> y, y_mag, dx, dx_mag, dw, dw_mag;

  Case(const DwconvParams& shape, uint64_t s) : p(shape), seed(s) {
    x = random_uniform<float>(p.x_elems(), seed);
    w = random_uniform<float>(p.w_elems(), seed + 1);
    bias = random_uniform<float>(p.c, seed + 2);
    dy = random_uniform<float>(p.y_elems(), seed + 3);
    const auto xd = convert<double>(x), wd = convert<double>(w), bd = convert<double>(bias), dyd = convert<double>(dy);
    const auto xa = test::abs_values(xd), wa = test::abs_values(wd), ba = test::abs_values(bd);
    const auto dya = test::abs_values(dyd);
    y.resize(p.y_elems()), y_mag.resize(p.y_elems());
    dx.resize(p.x_elems()), dx_mag.resize(p.x_elems());
    dw.resize(p.w_elems()), dw_mag.resize(p.w_elems());
    dwconv_forward_reference(xd.data(), wd.data(), bd.data(), y.data(), p);
    dwconv_forward_reference(xa.data(), wa.data(), ba.data(), y_mag.data(), p);
    dwconv_backward_data_reference(dyd.data(), wd.data(), dx.data(), p);
    dwconv_backward_data_reference(dya.data(), wa.data(), dx_mag.data(), p);
    dwconv_backward_filter_reference(xd.data(), dyd.data(), dw.data(), p);
    dwconv_backward_filter_reference(xa.data(), dya.data(), dw_mag.data(), p);
  }
  std::string what(const char* op, cpu::Isa isa) const {
    return std::string(op) + " [" + cpu::isa_name(isa) + "] seed " + std::to_string(seed) + " " + p.str();
  }
};

void check_case(const Case& cs, cpu::Isa isa) {
  const DwconvParams& p = cs.p;
  const double taps = double(p.fh) * p.fw;
  // Backward-data sums at most ceil(FH/sH) * ceil(FW/sW) taps per element.
  const double bdc_taps = double((p.fh + p.stride_h - 1) / p.stride_h) * ((p.fw + p.stride_w - 1) / p.stride_w);
  // Backward-filter sums N*OH*OW products plus at most 4 * threads partial-buffer merges.
  const double bfc_terms = double(p.n) * p.oh() * p.ow() + 4.0 * omp_get_max_threads();

  std::vector<float> y(p.y_elems(), kPoison);
  cpu::forward(isa, cs.x.data(), cs.w.data(), cs.bias.data(), y.data(), p);
  EXPECT_TRUE(all_close(y, cs.y, accumulation_tol(cs.y_mag, taps + 1), cs.what("forward", isa)));

  std::vector<float> dx(p.x_elems(), kPoison);
  cpu::backward_data(isa, cs.dy.data(), cs.w.data(), dx.data(), p);
  EXPECT_TRUE(all_close(dx, cs.dx, accumulation_tol(cs.dx_mag, bdc_taps), cs.what("backward_data", isa)));

  std::vector<float> dw(p.w_elems(), kPoison);
  cpu::backward_filter(isa, cs.x.data(), cs.dy.data(), dw.data(), p);
  EXPECT_TRUE(all_close(dw, cs.dw, accumulation_tol(cs.dw_mag, bfc_terms), cs.what("backward_filter", isa)));
}

TEST(DwconvCpu, MatchesReferenceOnAwkwardShapes) {
  uint64_t seed = 1000;
  for (const DwconvParams& p : test::dwconv_awkward_shapes()) {
    const Case cs(p, seed += 10);
    for (cpu::Isa isa : {cpu::Isa::generic, cpu::Isa::avx2, cpu::Isa::avx512})
      if (cpu::isa_supported(isa)) check_case(cs, isa);
  }
}

TEST(DwconvCpu, MatchesReferenceOnTwoRowTileShapes) {
  // 16-channel blocks with wide filters take the two-row tiles (forward and backward-filter); vertical stride 2,
  // odd output heights, column tails and 3 threads put unpaired rows at image and chunk ends.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(3);
  uint64_t seed = 5000;
  for (const DwconvParams& p : {test::dwconv_shape(2, 19, 23, 32, 9, 15, 2, 1, 4, 3, 7, 6),
                                test::dwconv_shape(3, 13, 30, 48, 11, 8, 1, 1, 0, 5, 3, 4),
                                test::dwconv_shape(1, 9, 40, 16, 3, 17, 3, 2, 2, 2, 8, 8)}) {
    const Case cs(p, seed += 10);
    for (cpu::Isa isa : {cpu::Isa::generic, cpu::Isa::avx2, cpu::Isa::avx512})
      if (cpu::isa_supported(isa)) check_case(cs, isa);
  }
  omp_set_num_threads(threads);
}

TEST(DwconvCpu, MatchesReferenceOnEveryTileTail) {
  // 13x13 'same' filters on output widths 9..15: the AVX-512 two-row tiles (8 wide) leave every ragged tail
  // width 1..7, the single-row tiles (14 wide) tails 9..14 and 1, and backward-filter runs its 7 + 6 column tiles.
  uint64_t seed = 7000;
  for (int w = 9; w <= 15; ++w) {
    const Case cs(test::dwconv_shape(2, 15, w, 32, 13, 13, 1, 1, 6, 6, 6, 6), seed += 10);
    for (cpu::Isa isa : {cpu::Isa::generic, cpu::Isa::avx2, cpu::Isa::avx512})
      if (cpu::isa_supported(isa)) check_case(cs, isa);
  }
}

TEST(DwconvCpu, MatchesReferenceWithoutBiasAndWithPartialDwBuffers) {
  // C = 16 is one channel unit, so backward-filter splits the rows over several partial dW buffers.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(4);
  const DwconvParams p = test::dwconv_shape(3, 20, 23, 16, 7, 7, 1, 1, 3, 3, 3, 3);
  Case cs(p, 77);
  std::fill(cs.bias.begin(), cs.bias.end(), 0.0f);
  const auto xd = convert<double>(cs.x), wd = convert<double>(cs.w);
  dwconv_forward_reference(xd.data(), wd.data(), nullptr, cs.y.data(), p);
  dwconv_forward_reference(test::abs_values(xd).data(), test::abs_values(wd).data(), nullptr, cs.y_mag.data(), p);
  std::vector<float> y(p.y_elems(), kPoison);
  dwconv_forward_cpu(cs.x.data(), cs.w.data(), nullptr, y.data(), p);
  EXPECT_TRUE(all_close(y, cs.y, accumulation_tol(cs.y_mag, 49 + 1), cs.what("forward", cpu::best_isa())));
  check_case(cs, cpu::best_isa());
  omp_set_num_threads(threads);
}

TEST(DwconvCpu, PublicEntryPointsMatchTheBestIsa) {
  const DwconvParams p = test::dwconv_shape(2, 12, 15, 40, 5, 5, 1, 1, 2, 2, 2, 2);
  const Case cs(p, 55);
  std::vector<float> a(p.y_elems()), b(p.y_elems());
  dwconv_forward_cpu(cs.x.data(), cs.w.data(), cs.bias.data(), a.data(), p);
  cpu::forward(cpu::best_isa(), cs.x.data(), cs.w.data(), cs.bias.data(), b.data(), p);
  EXPECT_EQ(a, b);
  std::vector<float> dx(p.x_elems(), kPoison), dw(p.w_elems(), kPoison);
  dwconv_backward_data_cpu(cs.dy.data(), cs.w.data(), dx.data(), p);
  dwconv_backward_filter_cpu(cs.x.data(), cs.dy.data(), dw.data(), p);
  EXPECT_TRUE(all_close(dx, cs.dx, accumulation_tol(cs.dx_mag, 25), cs.what("backward_data", cpu::best_isa())));
  EXPECT_TRUE(all_close(dw, cs.dw, accumulation_tol(cs.dw_mag, 2 * 12 * 15 + 64), cs.what("bfc", cpu::best_isa())));
}

// Runs f and expects a cnn::Error whose message names `op` and contains `detail`.
template <class F>
void expect_error(F&& f, const std::string& op, const std::string& detail) {
  try {
    f();
    ADD_FAILURE() << "expected cnn::Error from " << op << " (" << detail << ")";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find(detail), std::string::npos) << msg;
  }
}

TEST(DwconvCpu, InvalidCallsThrowNamingTheOp) {
  std::vector<float> a(4096, 1.0f), b(4096, 1.0f), out(4096);
  const DwconvParams ok = test::dwconv_shape(1, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1);
  std::vector<std::pair<DwconvParams, std::string>> bad;
  DwconvParams p = ok;
  p.c = 0, bad.push_back({p, "expected N, IH, IW, C >= 1"});
  p = ok, p.fw = 0, bad.push_back({p, "expected filter extents >= 1"});
  p = ok, p.stride_h = 0, bad.push_back({p, "expected strides >= 1"});
  p = ok, p.pad_right = -1, bad.push_back({p, "expected non-negative padding"});
  p = ok, p.fh = 7, bad.push_back({p, "filter larger than the padded input"});
  for (const auto& [params, detail] : bad) {
    expect_error([&] { dwconv_forward_cpu(a.data(), b.data(), nullptr, out.data(), params); }, "dwconv_forward_cpu",
                 detail);
    expect_error([&] { dwconv_backward_data_cpu(a.data(), b.data(), out.data(), params); },
                 "dwconv_backward_data_cpu", detail);
    expect_error([&] { dwconv_backward_filter_cpu(a.data(), b.data(), out.data(), params); },
                 "dwconv_backward_filter_cpu", detail);
  }
  expect_error([&] { dwconv_forward_cpu(nullptr, b.data(), nullptr, out.data(), ok); }, "dwconv_forward_cpu",
               "x=null");
  expect_error([&] { dwconv_backward_data_cpu(a.data(), nullptr, out.data(), ok); }, "dwconv_backward_data_cpu",
               "w=null");
  expect_error([&] { dwconv_backward_filter_cpu(a.data(), b.data(), nullptr, ok); }, "dwconv_backward_filter_cpu",
               "dw=null");
}

}  // namespace
}  // namespace cnn::dwconv
