// FP32 CUDA backward-filter (BFC) kernels vs the FP64 reference (dwconv_backward_filter_reference): every tile,
// Z split, stride phase and alignment path of the register-tile kernel, and the small-filter kernel (bfc_small) on
// awkward shapes. GPU suites skip without a device; the planner and input-validation tests run on the CPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/scratch_buffer.h"
#include "kernels/dwconv/cuda/select.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "tests/kernels/dwconv_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

using cnn::test::dwconv_shape;

void cuda_ok(cudaError_t e, const char* what) { ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e); }

// Device buffer of floats, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (cudaMalloc(&ptr_, std::max<size_t>(n, 1) * sizeof(float)) != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return ptr_; }
  size_t size() const { return n_; }

 private:
  float* ptr_ = nullptr;
  size_t n_;
};

// 'same' padding for odd filters (floor/ceil split for even ones), stride 1.
DwconvParams same(int n, int ih, int iw, int c, int fh, int fw) {
  return dwconv_shape(n, ih, iw, c, fh, fw, 1, 1, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2);
}

std::vector<float> random_vector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = dist(rng);
  return v;
}

// Runs one BFC path (x offset by `x_offset` floats from an aligned allocation) and checks every dW entry against
// the FP64 reference: |got - ref| <= 8 * sqrt(L) * u * sum|x*dy| per entry (u = 2^-24, L = N*OH*OW terms).
// Each entry is a sequential FP32 sum of <= L/Z fused products per thread plus Z atomic adds; its rounding error is
// bounded by gamma_L * sum|x*dy| and with overwhelming probability by a small multiple of sqrt(L) * u * sum|x*dy|
// (Higham, probabilistic bound); 8 leaves a wide margin while any missing or doubled term is ~ sum|x*dy| / L.
// How check_bfc runs the op: the register-tile kernel directly (with a forced tile), the public entry point
// (select's plan, padded channels included), the small-filter kernel directly (with `small`'s forces), or the
// span-staged kernel directly.
enum class BfcCall { tile, entry, small, span };

void check_bfc(const DwconvParams& p, const BfcForce& force, uint32_t seed, int x_offset = 0,
               BfcCall call = BfcCall::tile, const BfcSmallForce& small = {}, int dy_offset = 0) {
  const std::vector<float> x = random_vector(p.x_elems(), seed), dy = random_vector(p.y_elems(), seed + 1);
  std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  std::vector<double> ref(size_t(p.w_elems())), bound(size_t(p.w_elems()));
  dwconv_backward_filter_reference(xd.data(), dyd.data(), ref.data(), p);
  for (double& e : xd) e = std::fabs(e);
  for (double& e : dyd) e = std::fabs(e);
  dwconv_backward_filter_reference(xd.data(), dyd.data(), bound.data(), p);

  DeviceBuffer x_dev(size_t(p.x_elems()) + 4), dy_dev(size_t(p.y_elems()) + 4), dw_dev(size_t(p.w_elems()));
  ASSERT_TRUE(x_dev.get() && dy_dev.get() && dw_dev.get()) << "cudaMalloc failed for " << p.str();
  float* x_ptr = x_dev.get() + x_offset;
  float* dy_ptr = dy_dev.get() + dy_offset;
  cuda_ok(cudaMemcpy(x_ptr, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  cuda_ok(cudaMemcpy(dy_ptr, dy.data(), dy.size() * sizeof(float), cudaMemcpyHostToDevice), "copy dy");
  cuda_ok(cudaMemset(dw_dev.get(), 0xFF, size_t(p.w_elems()) * sizeof(float)), "poison dw");  // all-ones = NaN
  ScratchBuffer scratch;
  if (call == BfcCall::entry)
    dwconv_backward_filter_cuda(x_ptr, dy_ptr, dw_dev.get(), p, nullptr, scratch.fn());
  else if (call == BfcCall::small)
    launch_dwconv_bfc_small(x_ptr, dy_ptr, dw_dev.get(), p, small, nullptr);
  else if (call == BfcCall::span)
    launch_dwconv_bfc_span(x_ptr, dy_ptr, dw_dev.get(), p, nullptr);
  else
    dwconv_backward_filter_cuda_tile(x_ptr, dy_ptr, dw_dev.get(), p, force, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "bfc run");
  std::vector<float> got(size_t(p.w_elems()));
  cuda_ok(cudaMemcpy(got.data(), dw_dev.get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy dw");

  const double u = std::ldexp(1.0, -24), terms = double(p.n) * p.oh() * p.ow();
  const double rel = 8.0 * std::sqrt(terms) * u;
  double max_abs = 0, max_rel = 0;
  int64_t first_bad = -1;
  for (int64_t e = 0; e < p.w_elems(); ++e) {
    const double err = std::fabs(double(got[size_t(e)]) - ref[size_t(e)]);
    max_abs = std::isnan(err) ? err : std::max(max_abs, err);
    if (bound[size_t(e)] > 0) max_rel = std::max(max_rel, err / bound[size_t(e)]);
    if (first_bad < 0 && !(err <= rel * bound[size_t(e)])) first_bad = e;
  }
  if (first_bad >= 0) {
    const int64_t e = first_bad, c = e % p.c, j = (e / p.c) % p.fw, i = e / (int64_t(p.c) * p.fw);
    const std::string path =
        call == BfcCall::entry  ? dwconv_path_name(DwconvOp::backward_filter, p)
        : call == BfcCall::span ? dwconv_bfc_span_path_name(p, false)
        : call == BfcCall::small
            ? dwconv_bfc_small_path_name(p, false, bfc_small_lane_channels(p.c, false, alignment_of({x_ptr, dy_ptr})),
                                         small)
            : bfc_tile_path_name(p, force);
    ADD_FAILURE() << "BFC mismatch for " << p.str() << " path '" << path << "' x_offset " << x_offset << " dy_offset "
                  << dy_offset << " seed " << seed << ": first bad dW[" << i << "," << j << "," << c << "] expected "
                  << ref[size_t(e)] << " got " << got[size_t(e)] << " (allowed " << rel * bound[size_t(e)]
                  << "); max abs err " << max_abs << ", max err / sum|x*dy| " << max_rel << " (bound " << rel << ")";
  }
}

struct Case {
  DwconvParams p;
  uint32_t seed;
};

std::vector<Case> default_cases() {
  return {
      {same(1, 17, 34, 72, 3, 3), 11},
      {same(1, 17, 34, 72, 1, 1), 12},
      {same(1, 17, 34, 72, 7, 7), 13},
      {same(1, 17, 34, 72, 13, 13), 14},
      {same(1, 17, 34, 72, 31, 31), 15},
      {same(1, 20, 24, 72, 51, 51), 16},
      {same(2, 23, 19, 40, 51, 5), 17},
      {same(2, 19, 23, 40, 5, 51), 18},
      {same(3, 16, 16, 64, 5, 5), 19},
      {same(2, 9, 13, 36, 9, 9), 20},                            // OW = 13: not a multiple of 8, L = 234
      {same(2, 11, 11, 96, 17, 17), 21},                         // filter wider than the image
      {dwconv_shape(2, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1), 22},  // stride 2
      {dwconv_shape(1, 17, 34, 72, 7, 7, 2, 2, 3, 2, 1, 3), 23},  // stride 2, asymmetric padding
      {dwconv_shape(2, 15, 20, 32, 5, 4, 2, 3, 0, 2, 3, 1), 24},  // strides 2x3, even filter width
      {dwconv_shape(2, 13, 14, 16, 3, 3, 1, 1, 4, 0, 1, 5), 25},  // padding > F-1 (rows of dW see only zeros)
      {dwconv_shape(1, 12, 10, 8, 2, 6, 3, 1, 2, 1, 5, 0), 26},   // stride 3, even filter, p > F-1
      {same(2, 17, 34, 3, 3, 3), 27},                            // C % 4 != 0: 4-byte copies
      {same(1, 17, 34, 130, 7, 7), 28},                          // C % 32 and C % 4 != 0
      {same(1, 1, 1, 4, 1, 1), 29},                              // single position
      {dwconv_shape(1, 5, 3, 8, 5, 3, 1, 1, 0, 0, 0, 0), 30},     // filter = image: OH = OW = 1
  };
}

TEST(DwconvBfcGpu, DefaultPathMatchesReference) {
  CNN_REQUIRE_GPU();
  for (const Case& k : default_cases()) check_bfc(k.p, BfcForce{}, k.seed);
}

// Channel counts that are not a multiple of 4 run the tile kernel on padded copies through the entry point, or (at
// stride 1 up to 5x5) the small-filter kernel unpadded; pad=off keeps the tile kernel's 4-byte-copy path.
TEST(DwconvBfcGpu, OddChannelsThroughTheEntryPoint) {
  CNN_REQUIRE_GPU();
  const DwconvParams cases[] = {same(2, 17, 34, 3, 3, 3), same(1, 13, 20, 249, 5, 51), same(2, 15, 12, 13, 51, 5),
                                dwconv_shape(2, 17, 34, 7, 7, 7, 2, 2, 3, 2, 1, 3)};
  uint32_t seed = 800;
  for (const DwconvParams& p : cases) check_bfc(p, BfcForce{}, seed++, 0, BfcCall::entry);
  const Overrides saved = overrides();
  set_overrides(parse_overrides("pad=off", "test"));
  for (const DwconvParams& p : cases) check_bfc(p, BfcForce{}, seed++, 0, BfcCall::entry);
  set_overrides(saved);
}

TEST(DwconvBfcGpu, EveryTileMatchesReference) {
  CNN_REQUIRE_GPU();
  const DwconvParams s1 = dwconv_shape(2, 13, 21, 40, 9, 11, 1, 1, 3, 5, 4, 2);
  const DwconvParams s2 = dwconv_shape(2, 14, 17, 36, 7, 9, 2, 2, 3, 2, 4, 4);
  for (const BfcTile& t : kBfcTiles) {
    check_bfc(s1, BfcForce{t.r, t.tm, 0}, 100 + uint32_t(t.r * 40 + t.tm));
    check_bfc(s2, BfcForce{t.r, t.tm, 3}, 200 + uint32_t(t.r * 40 + t.tm));
  }
}

TEST(DwconvBfcGpu, EveryZSplitMatchesReference) {
  CNN_REQUIRE_GPU();
  const DwconvParams p = same(3, 10, 19, 64, 5, 7);  // 30 dY rows, 10 per image
  for (int z : {1, 2, 3, 7, 10, 29, 30, 1000}) check_bfc(p, BfcForce{0, 0, z}, 300 + uint32_t(z));
  for (int z : {1, 4, 30}) check_bfc(p, BfcForce{1, 1, z}, 400 + uint32_t(z));
}

TEST(DwconvBfcGpu, UnalignedInputTakesNarrowerCopies) {
  CNN_REQUIRE_GPU();
  check_bfc(same(2, 17, 34, 72, 7, 7), BfcForce{}, 500, /*x_offset=*/1);
  check_bfc(dwconv_shape(1, 17, 34, 64, 3, 3, 2, 2, 1, 1, 1, 1), BfcForce{}, 501, /*x_offset=*/3);
  check_bfc(same(1, 17, 34, 72, 5, 5), BfcForce{}, 502, /*x_offset=*/2);  // 8-byte aligned: 8-byte copies
  check_bfc(same(1, 17, 34, 70, 5, 5), BfcForce{}, 503);                  // C % 4 == 2: 8-byte copies
}

TEST(DwconvBfcGpu, LargeShapeSplitsAccumulation) {
  CNN_REQUIRE_GPU();
  const DwconvParams p = same(2, 48, 48, 256, 31, 31);
  const std::string path = bfc_tile_path_name(p, BfcForce{});
  const size_t at = path.find(" Z=");
  ASSERT_NE(at, std::string::npos) << path;
  EXPECT_GT(std::stoi(path.substr(at + 3)), 1) << "expected an accumulation split for " << p.str() << ": " << path;
  check_bfc(p, BfcForce{}, 600);
}

// The small-filter kernel forced (bfc=small) on awkward shapes, with aligned tensors (lanes of two channels where C is
// even) and with x and dy one float off (lanes of one channel).
TEST(DwconvBfcGpu, SmallKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint32_t seed = 900;
  for (const DwconvParams& p : cnn::test::dwconv_bfc_small_shapes()) {
    check_bfc(p, BfcForce{}, seed++, 0, BfcCall::small);
    check_bfc(p, BfcForce{}, seed++, 1, BfcCall::small, BfcSmallForce{}, 1);
  }
}

// The span-staged kernel on FP32 data, launched directly: odd and even C with partial 32-channel slices (249, 75,
// 998, 124), maps of at most 8 rows and columns and larger ones with partial tiles both ways (17 columns: rows of
// whole 16-byte chunks at C % 4 == 0 only), 'same' and asymmetric padding, 3x3 to 9x9, 13x5 and 5x13, chunks of several
// tiles over tile columns, rows and images; check_bfc's FP32 bound. Through the override (bfc=span) it runs unpadded;
// rows that are not whole 16-byte chunks and tensors 4-byte aligned are refused.
TEST(DwconvBfcGpu, SpanKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint32_t seed = 950;
  for (const DwconvParams& p :
       {same(2, 8, 8, 998, 5, 5), same(1, 17, 16, 249, 5, 5), same(3, 16, 24, 75, 3, 3), same(2, 9, 8, 249, 7, 7),
        same(1, 40, 17, 124, 5, 5), dwconv_shape(2, 13, 24, 75, 5, 5, 1, 1, 6, 1, 1, 3),
        dwconv_shape(1, 19, 40, 249, 7, 7, 1, 1, 0, 6, 4, 2), same(80, 64, 64, 3, 5, 5), same(3000, 8, 8, 3, 3, 3),
        same(3, 8, 8, 998, 13, 5), same(2, 8, 8, 998, 5, 13), same(2, 8, 8, 249, 9, 9), same(1, 20, 24, 75, 13, 5),
        dwconv_shape(1, 19, 16, 249, 5, 13, 1, 1, 0, 4, 9, 3)}) {
    ASSERT_TRUE(bfc_span_supports(p, 16, 4)) << p.str();
    check_bfc(p, BfcForce{}, seed++, 0, BfcCall::span);
  }
  const Overrides saved = overrides();
  set_overrides(parse_overrides("bfc=span", "test"));
  const DwconvParams p = same(2, 16, 16, 499, 5, 5);
  EXPECT_EQ(dwconv_path_name(DwconvOp::backward_filter, p).rfind("bfc f32 span", 0), 0u)
      << dwconv_path_name(DwconvOp::backward_filter, p);
  check_bfc(p, BfcForce{}, seed++, 0, BfcCall::entry);
  EXPECT_THROW(dwconv_path_name(DwconvOp::backward_filter, same(1, 8, 7, 249, 5, 5)), Error);
  set_overrides(saved);
  EXPECT_FALSE(bfc_span_supports(same(1, 8, 8, 249, 5, 5), 4, 4));
}

// Every row tile of the small-filter kernel at both lane widths (where instantiated), chunk counts from one to one
// task per chunk, and the override through the entry point.
TEST(DwconvBfcGpu, SmallKernelEveryTileAndSplit) {
  CNN_REQUIRE_GPU();
  uint32_t seed = 1000;
  for (const DwconvParams& p : {same(2, 9, 11, 38, 5, 5), same(2, 9, 11, 38, 7, 7), same(1, 9, 11, 38, 3, 5)})
    for (int nr : kBfcSmallRowTiles)
      for (int lanes : {1, 2}) {
        const int col_tile = p.fw == 5 ? 5 : 7;  // the narrowest kBfcSmallColTiles entry >= FW
        if (bfc_small_rows_per_thread(false, lanes, nr, col_tile) > 0)
          check_bfc(p, BfcForce{}, seed++, 0, BfcCall::small, BfcSmallForce{lanes, nr, 0});
      }
  const DwconvParams p = same(3, 10, 7, 40, 7, 5);
  for (int z : {1, 2, 3, 5, 7, 16, 1000}) check_bfc(p, BfcForce{}, seed++, 0, BfcCall::small, BfcSmallForce{0, 0, z});
  const Overrides saved = overrides();
  set_overrides(parse_overrides("bfc=small", "test"));
  for (const DwconvParams& q : {same(2, 17, 34, 3, 3, 3), same(2, 13, 17, 249, 7, 7), same(4, 8, 8, 72, 5, 5)}) {
    const std::string path = dwconv_path_name(DwconvOp::backward_filter, q);
    EXPECT_EQ(path.rfind("bfc small ", 0), 0u) << path;
    EXPECT_EQ(path.find("padded"), std::string::npos) << path;
    check_bfc(q, BfcForce{}, seed++, 0, BfcCall::entry);
  }
  set_overrides(saved);
}

TEST(DwconvBfcGpu, RepeatedCallsOverwrite) {
  CNN_REQUIRE_GPU();
  const DwconvParams p = same(2, 17, 34, 72, 3, 3);
  check_bfc(p, BfcForce{}, 700);
  check_bfc(p, BfcForce{}, 701);  // cached plan, fresh poison: dw must be fully rewritten
  check_bfc(p, BfcForce{}, 702, 0, BfcCall::small);
  check_bfc(p, BfcForce{}, 703, 0, BfcCall::small);
}

// ---- CPU-only: input validation and planner rules --------------------------------------------------------------

TEST(DwconvBfcValidation, RejectsBadParamsBeforeTouchingTheDevice) {
  float host[4] = {};
  DwconvParams bad = same(1, 8, 8, 4, 3, 3);
  bad.c = 0;
  EXPECT_THROW(dwconv_backward_filter_cuda(host, host, host, bad, nullptr, {}), Error);
  DwconvParams too_big = same(1, 4, 4, 4, 7, 7);
  too_big.pad_top = too_big.pad_bottom = too_big.pad_left = too_big.pad_right = 0;
  EXPECT_THROW(dwconv_backward_filter_cuda(host, host, host, too_big, nullptr, {}), Error);
  DwconvParams neg = same(1, 8, 8, 4, 3, 3);
  neg.stride_w = 0;
  EXPECT_THROW(dwconv_backward_filter_cuda(host, host, host, neg, nullptr, {}), Error);
  const DwconvParams ok = same(1, 8, 8, 4, 3, 3);
  EXPECT_THROW(dwconv_backward_filter_cuda(nullptr, host, host, ok, nullptr, {}), Error);
  EXPECT_THROW(dwconv_backward_filter_cuda_tile(host, host, host, ok, BfcForce{2, 2, 0}, nullptr), Error);
  EXPECT_THROW(dwconv_backward_filter_cuda_tile(host, host, host, ok, BfcForce{0, 0, -1}, nullptr), Error);
  // The small-filter kernel: stride 1 and filters up to 7x7 only, forces within range, before any device call.
  DwconvParams strided = ok;
  strided.stride_h = strided.stride_w = 2;
  EXPECT_THROW(launch_dwconv_bfc_small(host, host, host, strided, {}, nullptr), Error);
  EXPECT_THROW(launch_dwconv_bfc_small(host, host, host, same(1, 8, 8, 4, 9, 9), {}, nullptr), Error);
  EXPECT_THROW(launch_dwconv_bfc_small(host, host, host, same(1, 8, 8, 3, 3, 3), BfcSmallForce{2, 0, 0}, nullptr),
               Error);  // odd C: lanes of one channel
  EXPECT_THROW(launch_dwconv_bfc_small(host, host, host, ok, BfcSmallForce{0, 0, -1}, nullptr), Error);
  EXPECT_THROW(launch_dwconv_bfc_small(nullptr, host, host, ok, {}, nullptr), Error);
}

TEST(DwconvBfcPlan, TileChoiceFollowsCostModel) {
  const auto tile = [](int fh, int fw) {
    const BfcTile t = bfc_choose_tile(fh, fw);
    return std::to_string(t.r) + "x" + std::to_string(t.tm);
  };
  EXPECT_EQ(tile(1, 1), "1x1");
  EXPECT_EQ(tile(3, 3), "3x3");
  EXPECT_EQ(tile(5, 5), "5x5");
  EXPECT_EQ(tile(7, 7), "7x7");
  EXPECT_EQ(tile(9, 9), "3x9");
  EXPECT_EQ(tile(13, 13), "2x13");  // measured (kBfcMeasuredTiles); the model would pick 1x13
  EXPECT_EQ(tile(17, 17), "1x17");
  EXPECT_EQ(tile(31, 31), "2x16");  // measured; the model would pick 1x31
  EXPECT_EQ(tile(51, 51), "3x13");  // measured; the model would pick 1x17
  EXPECT_EQ(tile(50, 50), "1x17");  // the model's 3x17 is forced-only (low occupancy)
  EXPECT_EQ(tile(51, 5), "3x5");
  EXPECT_EQ(tile(5, 51), "1x17");
  for (const BfcMeasuredTile& m : kBfcMeasuredTiles) EXPECT_TRUE(bfc_is_tile(m.tile.r, m.tile.tm)) << m.fh;
  const auto measured = [](int f) {
    return std::any_of(std::begin(kBfcMeasuredTiles), std::end(kBfcMeasuredTiles),
                       [&](const BfcMeasuredTile& m) { return m.fh == f && m.fw == f; });
  };
  for (int f = 1; f <= 64; ++f) {
    const BfcTile t = bfc_choose_tile(f, f);
    EXPECT_TRUE(bfc_is_tile(t.r, t.tm)) << f;
    if (measured(f)) continue;  // the table's tile, not the cost model's
    EXPECT_FALSE(bfc_is_forced_only(t)) << f;
    for (const BfcTile& o : kBfcTiles) {
      if (!bfc_is_forced_only(o)) {
        EXPECT_LE(bfc_tile_cost(t, f, f), bfc_tile_cost(o, f, f) + 1e-9) << f;
      }
    }
  }
}

// Hybrid accumulation's tiles (FP16 inputs): its own measured tile, else a measured tile of at most kBfcHaMaxTaps taps,
// else the cheapest tile of at most kBfcHaMaxTaps taps by the same cost model.
TEST(DwconvBfcPlan, HaTileChoiceKeepsItsRegisterBudget) {
  for (const BfcMeasuredTile& m : kBfcHaMeasuredTiles) {
    EXPECT_TRUE(bfc_is_tile(m.tile.r, m.tile.tm));
    EXPECT_LE(m.tile.r * m.tile.tm, kBfcHaMaxTaps);
  }
  const auto measured_within_budget = [](int fh, int fw) -> const BfcMeasuredTile* {
    for (const BfcMeasuredTile& m : kBfcHaMeasuredTiles)
      if (m.fh == fh && m.fw == fw) return &m;
    for (const BfcMeasuredTile& m : kBfcMeasuredTiles)
      if (m.fh == fh && m.fw == fw && m.tile.r * m.tile.tm <= kBfcHaMaxTaps) return &m;
    return nullptr;
  };
  int measured_seen = 0;
  for (int fh = 1; fh <= 64; ++fh)
    for (int fw = 1; fw <= 64; fw += (fh == fw ? 1 : 2)) {
      const BfcTile t = bfc_choose_tile_ha(fh, fw);
      EXPECT_TRUE(bfc_is_tile(t.r, t.tm)) << fh << "x" << fw;
      EXPECT_LE(t.r * t.tm, kBfcHaMaxTaps) << fh << "x" << fw;
      EXPECT_FALSE(bfc_is_forced_only(t)) << fh << "x" << fw;
      if (const BfcMeasuredTile* m = measured_within_budget(fh, fw)) {
        EXPECT_EQ(t.r, m->tile.r) << fh << "x" << fw;
        EXPECT_EQ(t.tm, m->tile.tm) << fh << "x" << fw;
        ++measured_seen;
        continue;
      }
      for (const BfcTile& o : kBfcTiles) {
        if (!bfc_is_forced_only(o) && o.r * o.tm <= kBfcHaMaxTaps) {
          EXPECT_LE(bfc_tile_cost(t, fh, fw), bfc_tile_cost(o, fh, fw) + 1e-9) << fh << "x" << fw;
        }
      }
    }
  EXPECT_GT(measured_seen, 0);  // kBfcHaMeasuredTiles has entries
  EXPECT_EQ(bfc_choose_tile_ha(3, 3).r * bfc_choose_tile_ha(3, 3).tm, 9);  // within budget: as bfc_choose_tile
  EXPECT_THROW(bfc_choose_tile_ha(0, 3), cnn::Error);
}

// The narrow-segment rule of hybrid accumulation: each entry replaces the tile the planner picks for its filter, by a
// listed tile within the ha budget, and only below its segment width.
TEST(DwconvBfcPlan, HaNarrowSegmentsSwapOnlyTheListedTile) {
  for (const BfcNarrowTile& n : kBfcHaNarrowTiles) {
    const BfcTile chosen = bfc_choose_tile_ha(n.fh, n.fw);
    EXPECT_EQ(chosen.r, n.from.r) << n.fh << "x" << n.fw;  // the rule is reachable from the planner's pick
    EXPECT_EQ(chosen.tm, n.from.tm) << n.fh << "x" << n.fw;
    EXPECT_TRUE(bfc_is_tile(n.to.r, n.to.tm));
    EXPECT_LE(n.to.r * n.to.tm, kBfcHaMaxTaps);
    const BfcTile below = bfc_narrow_tile_ha(chosen, n.fh, n.fw, n.below_cols - 1);
    EXPECT_EQ(below.r, n.to.r);
    EXPECT_EQ(below.tm, n.to.tm);
    const BfcTile at = bfc_narrow_tile_ha(chosen, n.fh, n.fw, n.below_cols);
    EXPECT_EQ(at.r, chosen.r);
    EXPECT_EQ(at.tm, chosen.tm);
  }
  const BfcTile other = bfc_narrow_tile_ha({1, 11}, 11, 11, 8);  // filters without an entry keep their tile
  EXPECT_EQ(other.r, 1);
  EXPECT_EQ(other.tm, 11);
  const BfcTile forced = bfc_narrow_tile_ha({3, 9}, 17, 17, 8);  // another tile for a listed filter is kept
  EXPECT_EQ(forced.r, 3);
  EXPECT_EQ(forced.tm, 9);
}

// The bfc_tile override's parser: only instantiated tiles, written RxTM; anything else names the variable.
TEST(DwconvBfcPlan, ParseTileAcceptsInstantiatedTilesOnly) {
  const BfcTile t = bfc_parse_tile("3x17", "VAR");
  EXPECT_EQ(t.r, 3);
  EXPECT_EQ(t.tm, 17);
  EXPECT_EQ(bfc_parse_tile("1x31", "VAR").tm, 31);
  for (const char* bad : {"", "x", "3x", "x17", "3x17x1", "3X17", "2x3", "-1x1", "1x17 ", "a"}) {
    try {
      bfc_parse_tile(bad, "VAR");
      ADD_FAILURE() << "expected an error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("VAR: expected RxTM", 0), 0u) << e.what();
    }
  }
}

TEST(DwconvBfcPlan, GroupsAreBalanced) {
  EXPECT_EQ(bfc_group_size(17, 2), 2);
  EXPECT_EQ(bfc_group_size(31, 8), 8);
  EXPECT_EQ(bfc_group_size(13, 8), 7);
  EXPECT_EQ(bfc_group_size(3, 8), 3);
  EXPECT_EQ(bfc_group_size(1, 1), 1);
  EXPECT_THROW(bfc_group_size(0, 4), Error);
}

TEST(DwconvBfcPlan, ZFillsTheMachineWithinLimits) {
  // 8 blocks per chunk, 528 slots, 16384 rows: one full wave needs z = 66; anything within 3% is accepted.
  const int64_t z = bfc_choose_z(8, 528, 16384, 16, 4096);
  EXPECT_GE(bfc_z_efficiency(8, 528, 16384, z), 0.96);
  EXPECT_LE(z, 66);
  // Few rows cap z: at most rows / min_rows_per_chunk chunks.
  EXPECT_EQ(bfc_choose_z(8, 528, 17, 6, 4096), 2);
  EXPECT_EQ(bfc_choose_z(8, 528, 5, 6, 4096), 1);
  // More blocks than slots already: no split needed beyond wave quantization.
  EXPECT_GE(bfc_z_efficiency(1000, 264, 100, bfc_choose_z(1000, 264, 100, 2, 4096)), 0.9);
  EXPECT_NEAR(bfc_z_efficiency(66, 132, 10, 2), 1.0, 1e-12);
  EXPECT_NEAR(bfc_z_efficiency(66, 132, 10, 3), (198.0 / 264.0) * (10.0 / 3.0 / 4.0), 1e-12);
}

}  // namespace
}  // namespace cnn::dwconv
