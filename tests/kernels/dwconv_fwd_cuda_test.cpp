// GPU tests of the FP32 depthwise forward and backward-data paths (GEMV and direct kernels) against the FP64
// reference, on awkward shapes; outputs are poisoned with NaN before each run to catch unwritten elements.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/scratch_buffer.h"
#include "kernels/dwconv/cuda/select.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

// Device buffer of floats with `offset_floats` leading floats, so a test can hand out misaligned pointers.
class DeviceFloats {
 public:
  explicit DeviceFloats(size_t n, size_t offset_floats = 0) : offset_(offset_floats) {
    EXPECT_EQ(cudaMalloc(&base_, (n + offset_floats) * sizeof(float)), cudaSuccess);
  }
  ~DeviceFloats() { cudaFree(base_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return base_ + offset_; }

 private:
  float* base_ = nullptr;
  size_t offset_;
};

std::vector<double> uniform(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& e : v) e = static_cast<float>(dist(rng));  // values exactly representable in FP32
  return v;
}

std::vector<double> absolute(const std::vector<double>& v) {
  std::vector<double> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

void upload(const DeviceFloats& d, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  ASSERT_EQ(cudaMemcpy(d.get(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
}

std::vector<float> download(const DeviceFloats& d, size_t n) {
  std::vector<float> f(n);
  EXPECT_EQ(cudaMemcpy(f.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return f;
}

// FP32 result vs FP64 reference. Each output is a sum of K products accumulated in FP32 (FMA: one rounding per
// term). Per element we require |got - ref| <= K * u * mag (u = 2^-24, mag = the same sum over |terms|): Higham's
// worst-case bound for recursive summation, so a correct kernel can never fail it. Over all elements we also
// require rms(err) <= 4 * sqrt(K) * u * rms(mag) (rounding errors behave like a random walk), which catches a
// single dropped or duplicated tap (error ~ mag / K) that the worst-case bound alone might let through.
void expect_close(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                  double k_terms, const std::string& what) {
  constexpr double u = 1.0 / (1 << 24);
  ASSERT_EQ(got.size(), ref.size());
  double max_abs = 0, max_rel = 0, sum_err2 = 0, sum_mag2 = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(double(got[i]) - ref[i]);
    const bool ok = std::isfinite(got[i]) && err <= k_terms * u * mag[i] + 1e-30;
    if (!ok && bad++ == 0) first_bad = i;
    max_abs = std::max(max_abs, std::isfinite(err) ? err : INFINITY);
    if (mag[i] > 0) max_rel = std::max(max_rel, err / mag[i]);
    sum_err2 += err * err;
    sum_mag2 += mag[i] * mag[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " elements out of bound; first at index " << first_bad
                     << " expected " << ref[first_bad] << " got " << got[first_bad] << " (max abs err " << max_abs
                     << ", max err/mag " << max_rel << ")";
  const double rms_err = std::sqrt(sum_err2 / ref.size()), rms_mag = std::sqrt(sum_mag2 / ref.size());
  EXPECT_LE(rms_err, 4 * std::sqrt(k_terms) * u * rms_mag + 1e-30) << what << ": rms error " << rms_err;
}

struct Case {
  int n, h, w, c, fh, fw, sh, sw, pt, pb, pl, pr;
};

DwconvParams params_of(const Case& k) {
  DwconvParams p;
  p.n = k.n, p.ih = k.h, p.iw = k.w, p.c = k.c, p.fh = k.fh, p.fw = k.fw;
  p.stride_h = k.sh, p.stride_w = k.sw;
  p.pad_top = k.pt, p.pad_bottom = k.pb, p.pad_left = k.pl, p.pad_right = k.pr;
  return p;
}

// 'same' padding for odd filters: (F-1)/2 on each side.
Case same(int n, int h, int w, int c, int fh, int fw) {
  return {n, h, w, c, fh, fw, 1, 1, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2};
}

// Random inputs of a case and their FP64 forward / backward-data results with the same sums over |terms|.
struct ForwardStyleData {
  std::vector<double> x, w, bias, dy;
  std::vector<double> y_ref, y_mag, dx_ref, dx_mag;
};

ForwardStyleData forward_style_data(const DwconvParams& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ForwardStyleData d;
  d.x = uniform(p.x_elems(), rng), d.w = uniform(p.w_elems(), rng), d.bias = uniform(p.c, rng);
  d.dy = uniform(p.y_elems(), rng);
  d.y_ref.resize(p.y_elems()), d.y_mag.resize(p.y_elems()), d.dx_ref.resize(p.x_elems()), d.dx_mag.resize(p.x_elems());
  dwconv_forward_reference(d.x.data(), d.w.data(), d.bias.data(), d.y_ref.data(), p);
  dwconv_forward_reference(absolute(d.x).data(), absolute(d.w).data(), absolute(d.bias).data(), d.y_mag.data(), p);
  dwconv_backward_data_reference(d.dy.data(), d.w.data(), d.dx_ref.data(), p);
  dwconv_backward_data_reference(absolute(d.dy).data(), absolute(d.w).data(), d.dx_mag.data(), p);
  return d;
}

void run_forward_and_backward_data(const Case& k, uint64_t seed, size_t misalign_floats) {
  const DwconvParams p = params_of(k);
  const std::string name = p.str() + " seed=" + std::to_string(seed) + " misalign=" + std::to_string(misalign_floats);
  const ForwardStyleData fd = forward_style_data(p, seed);
  const auto &x = fd.x, &w = fd.w, &bias = fd.bias, &dy = fd.dy;
  const auto &y_ref = fd.y_ref, &y_mag = fd.y_mag, &dx_ref = fd.dx_ref, &dx_mag = fd.dx_mag;

  DeviceFloats dx_d(p.x_elems(), misalign_floats), x_d(p.x_elems(), misalign_floats);
  DeviceFloats w_d(p.w_elems(), misalign_floats), b_d(p.c, misalign_floats);
  DeviceFloats y_d(p.y_elems(), misalign_floats), dy_d(p.y_elems(), misalign_floats);
  upload(x_d, x), upload(w_d, w), upload(b_d, bias), upload(dy_d, dy);
  ASSERT_EQ(cudaMemset(y_d.get(), 0xFF, p.y_elems() * sizeof(float)), cudaSuccess);  // NaN poison
  ASSERT_EQ(cudaMemset(dx_d.get(), 0xFF, p.x_elems() * sizeof(float)), cudaSuccess);

  ScratchBuffer scratch;
  dwconv_forward_cuda(x_d.get(), w_d.get(), b_d.get(), y_d.get(), p, nullptr, scratch.fn());
  dwconv_backward_data_cuda(dy_d.get(), w_d.get(), dx_d.get(), p, nullptr, scratch.fn());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  expect_close(download(y_d, p.y_elems()), y_ref, y_mag, p.fh * p.fw + 1,
               "forward " + name + " [" + dwconv_path_name(DwconvOp::forward, p) + "]");
  const int taps_per_dx = ((p.fh + p.stride_h - 1) / p.stride_h) * ((p.fw + p.stride_w - 1) / p.stride_w);
  expect_close(download(dx_d, p.x_elems()), dx_ref, dx_mag, taps_per_dx,
               "backward-data " + name + " [" + dwconv_path_name(DwconvOp::backward_data, p) + "]");
}

const std::vector<Case>& awkward_cases() {
  static const std::vector<Case> cases = {
      same(1, 17, 34, 72, 1, 1),
      same(1, 17, 34, 72, 3, 3),
      same(2, 17, 34, 72, 7, 7),
      same(1, 17, 34, 72, 13, 13),
      same(1, 17, 34, 72, 31, 31),
      same(1, 17, 34, 72, 51, 51),
      same(1, 17, 34, 72, 51, 5),
      same(1, 17, 34, 72, 5, 51),
      same(2, 9, 7, 40, 29, 29),                // run-time FW, output narrower than a tile
      {1, 17, 34, 72, 4, 4, 1, 1, 1, 2, 2, 1},  // even filter, asymmetric padding
      {1, 17, 34, 72, 3, 5, 1, 1, 4, 0, 0, 5},  // padding > F-1: edge rows see only padding, bdc crops
      {2, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1},  // stride 2
      {1, 17, 34, 72, 7, 7, 2, 2, 3, 2, 1, 3},  // stride 2, asymmetric padding
      {1, 18, 33, 8, 5, 5, 2, 1, 2, 2, 2, 2},   // stride 2x1
      same(1, 17, 34, 3, 7, 7),                 // C % 4 != 0
      same(2, 19, 70, 249, 5, 5),               // small filter at SLaK's width: the tiled direct kernel,
                                                // several row and column tiles, a partial 32-channel block
      {1, 17, 34, 37, 4, 5, 1, 1, 1, 2, 3, 1},  // the tiled kernel: even filter height, asymmetric padding
      {1, 17, 34, 37, 3, 5, 1, 1, 4, 0, 0, 5},  // the tiled kernel: padding > F-1, bdc crops
      same(1, 17, 34, 130, 9, 9),               // C % 4 != 0 (padded to 132), several channel blocks
      same(1, 13, 20, 249, 5, 51),              // SLaK's strip and width, padded to 252, C-channel output stores
      same(2, 15, 12, 499, 51, 5),
      same(1, 13, 20, 249, 15, 15),  // padded, the padded output cropped
      same(1, 1, 1, 36, 3, 3),       // 1x1 map
      same(3, 40, 70, 100, 17, 17),  // C % 32 != 0 with the vector path, several tiles
      same(2, 8, 8, 998, 5, 5),      // even C % 4 != 0, 8 rows: the tiled kernel, 2 channels per lane
      same(1, 5, 7, 75, 3, 3),       // odd C, 5 rows: the tiled kernel, 1 channel per lane
  };
  return cases;
}

TEST(DwconvGpu, ForwardAndBackwardDataMatchReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 1000;
  for (const Case& k : awkward_cases()) run_forward_and_backward_data(k, seed++, 0);
}

// pad=off keeps odd channel counts on the direct kernel (padded plans are the default, above).
TEST(DwconvGpu, OddChannelsUnpaddedMatchReference) {
  CNN_REQUIRE_GPU();
  const Overrides saved = overrides();
  set_overrides(parse_overrides("pad=off", "test"));
  run_forward_and_backward_data(same(1, 17, 34, 3, 7, 7), 611, 0);
  run_forward_and_backward_data(same(1, 13, 20, 249, 5, 51), 612, 0);
  set_overrides(saved);
}

TEST(DwconvGpu, MisalignedPointersTakeDirectPathAndMatch) {
  CNN_REQUIRE_GPU();
  run_forward_and_backward_data(same(1, 17, 34, 72, 7, 7), 77, 1);
  run_forward_and_backward_data(same(2, 17, 34, 64, 13, 13), 78, 2);
  // The tiled kernel at an even C: one channel per lane when 4-byte aligned, two when 8-byte aligned.
  run_forward_and_backward_data(same(2, 8, 8, 998, 5, 5), 79, 1);
  run_forward_and_backward_data(same(2, 8, 8, 998, 5, 5), 80, 2);
}

TEST(DwconvGpu, LargerShapeMatchesReference) {
  CNN_REQUIRE_GPU();
  run_forward_and_backward_data(same(4, 64, 64, 256, 31, 31), 4242, 0);
  run_forward_and_backward_data(same(2, 32, 32, 1024, 51, 51), 4243, 0);
}

// The dispatcher picks one GEMV configuration per width; every configuration must be right for every width class.
TEST(DwconvGpu, GemvEveryConfigurationMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9000;
  for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(2, 17, 70, 40, 13, 13), same(1, 9, 20, 8, 29, 29),
                        same(1, 33, 12, 64, 51, 5), same(1, 12, 33, 64, 5, 51)}) {
    const DwconvParams p = params_of(k);
    std::mt19937_64 rng(seed++);
    const auto x = uniform(p.x_elems(), rng), w = uniform(p.w_elems(), rng);
    std::vector<double> y_ref(p.y_elems()), y_mag(p.y_elems());
    dwconv_forward_reference(x.data(), w.data(), nullptr, y_ref.data(), p);
    dwconv_forward_reference(absolute(x).data(), absolute(w).data(), nullptr, y_mag.data(), p);
    DeviceFloats x_d(p.x_elems()), w_d(p.w_elems()), y_d(p.y_elems());
    upload(x_d, x), upload(w_d, w);
    for (int variant = 0; variant < 8; ++variant) {
      ASSERT_EQ(cudaMemset(y_d.get(), 0xFF, p.y_elems() * sizeof(float)), cudaSuccess);
      GemvConfig cfg;
      cfg.tm = variant & 1 ? 16 : 8;
      cfg.prefetch = variant & 2;
      cfg.whole_filter = variant & 4;
      launch_dwconv_gemv(x_d.get(), w_d.get(), nullptr, y_d.get(), forward_geometry(p), cfg, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_close(download(y_d, p.y_elems()), y_ref, y_mag, p.fh * p.fw,
                   dwconv_gemv_path_name(forward_geometry(p), cfg) + " " + p.str() + " seed=" + std::to_string(seed - 1));
    }
  }
}

// Rows of c values copied into rows of cp >= c values, zeros after them (what a padded plan's copies hold).
std::vector<double> padded_rows(const std::vector<double>& v, int c, int cp) {
  const size_t rows = v.size() / c;
  std::vector<double> out(rows * cp, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (int ch = 0; ch < c; ++ch) out[r * cp + ch] = v[r * c + ch];
  return out;
}

// On channel-padded inputs (src_c > C) the GEMV kernel writes the output at C channels itself: every configuration,
// C % 4 = 1, 3 and 2, a destination one float off 16-byte alignment, with bias; the float past the output stays
// untouched.
TEST(DwconvGpu, GemvWritesUnpaddedOutputFromPaddedCopies) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9100;
  for (const Case& k : {same(1, 13, 20, 249, 5, 51), same(2, 15, 12, 499, 51, 5), same(1, 17, 34, 130, 9, 9)}) {
    const DwconvParams p = params_of(k);
    const int cp = (p.c + 3) / 4 * 4;
    const ForwardStyleData fd = forward_style_data(p, seed++);
    DeviceFloats x_d(p.x_elems() / p.c * cp), w_d(p.w_elems() / p.c * cp), b_d(cp), y_d(p.y_elems() + 1, 1);
    upload(x_d, padded_rows(fd.x, p.c, cp)), upload(w_d, padded_rows(fd.w, p.c, cp));
    upload(b_d, padded_rows(fd.bias, p.c, cp));
    for (int variant = 0; variant < 8; ++variant) {
      ASSERT_EQ(cudaMemset(y_d.get(), 0xFF, (p.y_elems() + 1) * sizeof(float)), cudaSuccess);  // NaN poison
      GemvConfig cfg;
      cfg.tm = variant & 1 ? 16 : 8;
      cfg.prefetch = variant & 2;
      cfg.whole_filter = (variant & 4) && gemv_whole_filter_fits(p.fh, p.fw);
      launch_dwconv_gemv(x_d.get(), w_d.get(), b_d.get(), y_d.get(), forward_geometry(p), cfg, nullptr, cp);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> y = download(y_d, p.y_elems() + 1);
      EXPECT_TRUE(std::isnan(y.back())) << "wrote past the output: " << p.str();
      y.pop_back();
      expect_close(y, fd.y_ref, fd.y_mag, p.fh * p.fw + 1,
                   dwconv_gemv_path_name(forward_geometry(p), cfg) + " src_c=" + std::to_string(cp) + " " + p.str());
    }
  }
}

// Outputs of a forward-style kernel in the forward and the backward-data geometry.
struct ForwardStyleOutputs {
  std::vector<float> y, dx;
};

// Runs launch(src, w, bias, dst, geometry) on case k in the forward and the stride-1 backward-data geometry (outputs
// NaN-poisoned first) and compares both against the FP64 references; the outputs go to `out` where it is not null.
template <class Launch>
void check_forward_style_kernel(const Case& k, uint64_t seed, const std::string& what, Launch&& launch,
                                ForwardStyleOutputs* out = nullptr) {
  const DwconvParams p = params_of(k);
  const ForwardStyleData fd = forward_style_data(p, seed);
  DeviceFloats x_d(p.x_elems()), w_d(p.w_elems()), b_d(p.c), y_d(p.y_elems()), dy_d(p.y_elems()), dx_d(p.x_elems());
  upload(x_d, fd.x), upload(w_d, fd.w), upload(b_d, fd.bias), upload(dy_d, fd.dy);
  ASSERT_EQ(cudaMemset(y_d.get(), 0xFF, p.y_elems() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dx_d.get(), 0xFF, p.x_elems() * sizeof(float)), cudaSuccess);
  launch(x_d.get(), w_d.get(), b_d.get(), y_d.get(), forward_geometry(p));
  launch(dy_d.get(), w_d.get(), nullptr, dx_d.get(), backward_data_geometry_stride1(p));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what << " " << p.str();
  const std::string name = what + " " + p.str() + " seed=" + std::to_string(seed);
  std::vector<float> y = download(y_d, p.y_elems()), dx = download(dx_d, p.x_elems());
  expect_close(y, fd.y_ref, fd.y_mag, p.fh * p.fw + 1, "forward " + name);
  expect_close(dx, fd.dx_ref, fd.dx_mag, p.fh * p.fw, "backward-data " + name);
  if (out != nullptr) out->y = std::move(y), out->dx = std::move(dx);
}

// The tiled direct kernel on both lane widths, launched directly in both geometries: even C on one and two channels
// per lane (998 and 74 leave a partial 64- and 32-channel block) and odd C (249, 75), maps of at most 8 rows and
// taller (FP32 tiles are 8 rows either way: several row tiles at 17 and 19), 3x3 to 13x13 filters (13x5 and 5x13
// strips, 9x9, 11x11 and a 13x13 whose 32-column FP32 tile does not fit), an even filter
// with asymmetric padding and a padding that crops, each on tiles of 8, 16 and 32 columns where they fit. Two channels
// per lane and every tile width must give the same bits as one channel on the first (the same FMAs in the same order).
TEST(DwconvGpu, DirectTileKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9800;
  for (const Case& k :
       {same(2, 8, 8, 998, 5, 5), same(1, 5, 7, 74, 3, 3), same(2, 17, 13, 74, 5, 5), same(1, 8, 8, 249, 5, 5),
        same(1, 5, 7, 75, 7, 7), same(2, 17, 13, 249, 5, 5), same(1, 19, 40, 998, 3, 3),
        Case{1, 6, 9, 74, 4, 5, 1, 1, 1, 2, 3, 1}, Case{1, 17, 34, 38, 3, 5, 1, 1, 4, 0, 0, 5},
        same(2, 8, 8, 998, 13, 5), same(1, 8, 8, 998, 5, 13), same(1, 17, 13, 249, 9, 9), same(1, 19, 40, 75, 11, 11),
        same(1, 20, 36, 74, 13, 13), Case{1, 9, 30, 38, 12, 9, 1, 1, 2, 3, 0, 8}}) {
    ForwardStyleOutputs first;  // the first lane width and tile width run
    const DwconvParams p = params_of(k);
    for (int tile_w : {8, 16, 32}) {
      // A tile must fit both geometries; the 13x13 case runs 8 and 16 columns only.
      if (!direct_tile_width_fits(forward_geometry(p), false, tile_w) ||
          !direct_tile_width_fits(backward_data_geometry_stride1(p), false, tile_w))
        continue;
      for (int ch = 1; ch <= direct_tile_lane_channels(k.c, false, 16); ++ch) {
        ForwardStyleOutputs got;
        const std::string what = "direct tile lanes=32x" + std::to_string(ch) + " cols=" + std::to_string(tile_w);
        check_forward_style_kernel(
            k, seed, what,
            [ch, tile_w](const float* src, const float* w, const float* b, float* dst, const ConvGeometry& g) {
              launch_dwconv_direct_tile(src, w, b, dst, g, ch, tile_w, nullptr);
            },
            first.y.empty() ? &first : &got);
        if (got.y.empty()) continue;  // this run was the first
        const std::string name = what + " " + p.str();
        for (size_t i = 0; i < got.y.size(); ++i)
          ASSERT_EQ(std::memcmp(&got.y[i], &first.y[i], sizeof(float)), 0) << "forward at " << i << " " << name;
        for (size_t i = 0; i < got.dx.size(); ++i)
          ASSERT_EQ(std::memcmp(&got.dx[i], &first.dx[i], sizeof(float)), 0) << "backward-data at " << i << " " << name;
      }
    }
    ASSERT_FALSE(first.y.empty()) << "no tile width fits " << p.str();
    ++seed;
  }
}

// The FP32 row-sliding kernel (filters up to 3x3), launched directly in both geometries: tiles of 16 rows cut
// short, column strips past OW, channel lanes that do not fill a block (C/4 = 2, 18) or need several channel blocks
// (C = 1032: 258 groups), paddings that crop or extend (backward-data geometry), 1-row and 1-column maps, non-square
// and even filters. Outputs NaN-poisoned first.
TEST(DwconvGpu, VslideKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9500;
  for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(3, 40, 37, 1032, 3, 3), same(2, 33, 5, 8, 3, 3),
                        same(1, 1, 1, 8, 3, 3), same(1, 1, 9, 16, 1, 3), same(1, 9, 1, 16, 3, 1),
                        Case{1, 18, 19, 24, 3, 2, 1, 1, 0, 2, 1, 0}, Case{2, 16, 16, 8, 2, 3, 1, 1, 1, 0, 2, 0},
                        Case{1, 35, 17, 40, 3, 3, 1, 1, 0, 0, 0, 0}, Case{1, 6, 7, 8, 3, 3, 1, 1, 3, 3, 3, 3},
                        same(1, 16, 64, 128, 1, 1), same(2, 31, 31, 256, 2, 2)}) {
    check_forward_style_kernel(k, seed++, "vslide", [](const float* src, const float* w, const float* b, float* dst,
                                                        const ConvGeometry& g) {
      ASSERT_TRUE(vslide_f32_supports(g, src, w, b, dst));
      launch_dwconv_vslide_f32(src, w, b, dst, g, nullptr);
    });
  }
  const auto supported = [](const Case& k) {
    return vslide_f32_supports(forward_geometry(params_of(k)), nullptr, nullptr, nullptr, nullptr);
  };
  EXPECT_FALSE(supported(Case{1, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1}));  // stride 2
  EXPECT_FALSE(supported(same(1, 17, 34, 6, 3, 3)));                     // C % 4 != 0
  EXPECT_FALSE(supported(same(1, 17, 34, 72, 5, 5)));                    // FH and FW > 3
  EXPECT_FALSE(supported(same(1, 17, 34, 72, 5, 3)));                    // FH > 3
  EXPECT_FALSE(supported(same(1, 17, 34, 72, 3, 5)));                    // FW > 3
}

// The FP32 TMA-fed CUDA-core kernel (filters up to 5 wide), launched directly in both geometries: tiles of 16 rows
// and 8 columns cut short, channel slices of 32 that C does not fill (C = 8, 72, 1032), several images, paddings
// that crop or extend (the backward-data geometry, asymmetric cases: boxes past either edge, zero-filled by the TMA),
// 1-row and 1-column maps, even and tall filters. Outputs NaN-poisoned first.
TEST(DwconvGpu, TmaKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  if (!tma_cc_f32_supports(forward_geometry(params_of(same(1, 17, 34, 72, 3, 3))))) GTEST_SKIP() << "needs sm_90";
  uint64_t seed = 9700;
  for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(3, 40, 37, 1032, 5, 5), same(2, 33, 5, 8, 3, 3),
                        same(1, 1, 1, 8, 3, 3), same(1, 1, 9, 16, 1, 3), same(1, 9, 1, 16, 3, 1),
                        Case{1, 18, 19, 24, 3, 2, 1, 1, 0, 2, 1, 0}, Case{2, 16, 16, 8, 2, 5, 1, 1, 1, 0, 4, 0},
                        Case{1, 35, 17, 40, 5, 4, 1, 1, 0, 0, 0, 0}, Case{1, 6, 7, 8, 3, 3, 1, 1, 3, 3, 3, 3},
                        same(1, 16, 64, 128, 1, 1), same(2, 31, 31, 256, 13, 5), same(1, 2, 8, 12800, 3, 3)}) {
    // (3, 40, 37, 1032): more tiles than blocks, so blocks walk several; (1, 2, 8, 12800): more 32-channel slices
    // (400) than an H200 has blocks of this kernel (396), so the sliced order falls back to contiguous ranges.
    // Each lane shape on 8-column tiles (three stages) and on 16-column tiles (two and four stages).
    for (const auto& [lane_bytes, rows, cols, stages] : {std::tuple{16, 1, 8, 3}, std::tuple{8, 1, 8, 3},
                                                         std::tuple{8, 2, 8, 3}, std::tuple{16, 1, 16, 2},
                                                         std::tuple{8, 1, 16, 4}, std::tuple{8, 2, 16, 2}}) {
      const TmaCcConfig cfg{lane_bytes, rows, cols, stages};
      const std::string what = "tma lane=" + std::to_string(lane_bytes) + " rows=" + std::to_string(rows) +
                               " cols=" + std::to_string(cols) + " stages=" + std::to_string(stages);
      if (!tma_cc_config_fits(forward_geometry(params_of(k)), cfg, false)) {
        EXPECT_FALSE(cols == 8 && stages == 3) << what;  // supported shapes fit the narrow three-stage ring
        continue;
      }
      check_forward_style_kernel(k, seed, what, [&](const float* src, const float* w, const float* b, float* dst,
                                                    const ConvGeometry& g) {
        ASSERT_TRUE(tma_cc_f32_supports(g)) << "geometry " << g.in_h << "x" << g.in_w << " F=" << g.fh << "x" << g.fw;
        launch_dwconv_tma_cc_f32(src, w, b, dst, g, cfg, nullptr);
      });
    }
    ++seed;
  }
  const auto supported = [](const Case& k) { return tma_cc_f32_supports(forward_geometry(params_of(k))); };
  EXPECT_FALSE(supported(Case{1, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1}));  // stride 2
  EXPECT_FALSE(supported(same(1, 17, 34, 6, 3, 3)));                     // C % 4 != 0
  EXPECT_FALSE(supported(same(1, 17, 34, 72, 7, 7)));                    // FW > 5
  EXPECT_FALSE(supported(same(1, 300, 34, 72, 201, 5)));                 // window over the shared memory
  // The dispatcher takes it at 5x5 (8-byte lanes), where it was measured faster than the GEMV kernel; 3x3 keeps the
  // row-sliding kernel.
  for (DwconvOp op : {DwconvOp::forward, DwconvOp::backward_data}) {
    const std::string five = dwconv_path_name(op, params_of(same(1, 17, 34, 72, 5, 5)));
    const std::string three = dwconv_path_name(op, params_of(same(1, 17, 34, 72, 3, 3)));
    EXPECT_NE(five.find("cuda-core tma FW=5 tile=16x8 BN=32 lane=8B"), std::string::npos) << five;
    EXPECT_NE(three.find("vslide"), std::string::npos) << three;
  }
}

TEST(DwconvCudaEntry, RejectsBadParamsBeforeTouchingTheDevice) {
  DwconvParams p;
  p.n = 1, p.ih = 4, p.iw = 4, p.c = 8, p.fh = 9, p.fw = 3;  // filter taller than the unpadded input
  float dummy = 0;
  EXPECT_THROW(dwconv_forward_cuda(&dummy, &dummy, nullptr, &dummy, p, nullptr, {}), cnn::Error);
  p.fh = 3, p.stride_h = 0;
  EXPECT_THROW(dwconv_backward_data_cuda(&dummy, &dummy, &dummy, p, nullptr, {}), cnn::Error);
  p.stride_h = 1;
  EXPECT_THROW(dwconv_forward_cuda(nullptr, &dummy, nullptr, &dummy, p, nullptr, {}), cnn::Error);
}

}  // namespace
}  // namespace cnn::dwconv
