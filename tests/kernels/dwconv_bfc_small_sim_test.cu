// The small-filter backward-filter kernel (Kernel::bfc_small) simulated on the host: every block and thread of a
// launch runs the kernel's own routines (bfc_small.cuh: run_thread, flush_block; __host__ __device__) one thread at a
// time, with the tile and chunk count the launcher would pick for a device of 132 SMs x 2 blocks or forced ones, and
// dW is compared with the FP64 reference dwconv_backward_filter_reference. Also the planning rules
// (bfc_small_plan.h). CPU suites: nvcc compiles this file for the header's host side, no device is needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/cuda/bfc_small.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/dwconv.h"
#include "tests/kernels/dwconv_test_util.h"

namespace cnn::dwconv {
namespace {

constexpr int64_t kSlots = 132 * 2;  // resident blocks of an H200 at two blocks per SM

struct SimCase {
  int n, h, w, c, fh, fw, pt, pb, pl, pr;
  DwconvParams params() const {
    DwconvParams p;
    p.n = n, p.ih = h, p.iw = w, p.c = c, p.fh = fh, p.fw = fw;
    p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
    return p;
  }
};
SimCase same(int n, int h, int w, int c, int fh, int fw) {
  return {n, h, w, c, fh, fw, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2};
}

// Runs every block and thread of the launch of `tile` with z chunks per slice on the host; dW starts at zero as the
// launcher's memset leaves it.
template <class T>
std::vector<float> simulate(const DwconvParams& p, const T* x, const T* dy, const BfcSmallTile& tile, int z) {
  bfc_small::Args a = bfc_small::make_args(p, tile, z);
  std::vector<float> dw(size_t(p.w_elems()), 0.f);
  a.x = x, a.dy = dy, a.dw = dw.data();
  alignas(16) static const float zeros[4] = {};
  const bool ran = bfc_small::with_tile<sizeof(T) == 2>(tile, [&]<int kP, int kNr, int kFw>() {
    std::vector<float> red(size_t(p.fh) * p.fw * a.block_c);
    for (int b = 0; b < a.slices * a.z; ++b) {
      std::fill(red.begin(), red.end(), 0.f);
      for (int t = 0; t < bfc_small::kThreads; ++t)
        bfc_small::run_thread<T, kP, kNr, kFw>(a, reinterpret_cast<const char*>(zeros), b, t, red.data());
      for (int t = 0; t < bfc_small::kThreads; ++t) bfc_small::flush_block(a, b, t, bfc_small::kThreads, red.data());
    }
  });
  EXPECT_TRUE(ran) << "no kernel for tile " << tile.p << " x " << tile.nr << "x" << tile.fw;
  return dw;
}

template <class T>
T to_elem(float v) {
  if constexpr (sizeof(T) == 2)
    return __float2half_rn(v);
  else
    return v;
}
template <class T>
double to_double(T v) {
  if constexpr (sizeof(T) == 2)
    return double(__half2float(v));
  else
    return double(v);
}

// Inputs `offset` elements past an aligned buffer's start: integers in [-3, 3] (exact in FP16 and FP32, and every
// partial sum of a dW entry is an integer below 2^24, so the kernel's result must equal the reference exactly) or
// uniform in [-1, 1) rounded to T.
template <class T>
struct Inputs {
  std::vector<T> x, dy;  // offset + elements
  std::vector<double> xd, dyd;
  int offset = 0;
  Inputs(const DwconvParams& p, uint32_t seed, bool integers, int off) : offset(off) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> ints(-3, 3);
    std::uniform_real_distribution<float> reals(-1.f, 1.f);
    const auto fill = [&](int64_t n, std::vector<T>& v, std::vector<double>& d) {
      v.assign(size_t(n + off), to_elem<T>(0.f));
      d.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        v[size_t(i + off)] = to_elem<T>(integers ? float(ints(rng)) : reals(rng));
        d[size_t(i)] = to_double(v[size_t(i + off)]);
      }
    };
    fill(p.x_elems(), x, xd);
    fill(p.y_elems(), dy, dyd);
  }
  const T* x_ptr() const { return x.data() + offset; }
  const T* dy_ptr() const { return dy.data() + offset; }
};

// Checks one simulated launch: the planner's tile for the inputs' alignment (or force.lanes / force.nr) and chunk
// count (or force.z). Integer inputs: exact. Real inputs: each dW entry is an FP32 sum of L = N*OH*OW fused products
// in per-thread chains, block sums and per-block adds; |got - ref| <= 8 sqrt(L) u sum|x*dy| per entry (u = 2^-24, the
// probabilistic form of Higham's bound, as the FP32 GPU tests state) while a missing or doubled term is ~ sum|x*dy|/L.
template <class T>
void check_sim(const SimCase& k, uint32_t seed, bool integers, int offset = 0, const BfcSmallForce& force = {}) {
  constexpr bool kF16 = sizeof(T) == 2;
  const DwconvParams p = k.params();
  p.validate("check_sim");
  ASSERT_TRUE(bfc_small_supports(p, kF16)) << p.str();
  const Inputs<T> in(p, seed, integers, offset);
  const int p_max = bfc_small_lane_channels(p.c, kF16, alignment_of({in.x_ptr(), in.dy_ptr()}));
  const BfcSmallTile tile = bfc_small_tile(kF16, p.fh, p.fw, p.oh(), p.c, p_max, force.lanes, force.nr);
  const bfc_small::Args probe = bfc_small::make_args(p, tile, 1);
  const int64_t tasks = bfc_small::tasks_per_slice(probe);
  const int z = force.z > 0 ? int(std::min<int64_t>(force.z, tasks)) : bfc_small_chunks(tasks, probe.slices, kSlots);
  const std::vector<float> got = simulate(p, in.x_ptr(), in.dy_ptr(), tile, z);

  std::vector<double> ref(size_t(p.w_elems())), mag(size_t(p.w_elems()));
  dwconv_backward_filter_reference(in.xd.data(), in.dyd.data(), ref.data(), p);
  std::vector<double> xa(in.xd), dya(in.dyd);
  for (double& e : xa) e = std::fabs(e);
  for (double& e : dya) e = std::fabs(e);
  dwconv_backward_filter_reference(xa.data(), dya.data(), mag.data(), p);
  const double u = std::ldexp(1.0, -24), terms = double(p.n) * p.oh() * p.ow();
  const double rel = integers ? 0.0 : 8.0 * std::sqrt(terms) * u;
  int64_t bad = 0, first = -1;
  double max_abs = 0;
  for (int64_t e = 0; e < p.w_elems(); ++e) {
    const double err = std::fabs(double(got[size_t(e)]) - ref[size_t(e)]);
    max_abs = std::max(max_abs, std::isfinite(err) ? err : INFINITY);
    if (err <= rel * mag[size_t(e)]) continue;
    if (bad++ == 0) first = e;
  }
  if (bad > 0) {
    const int64_t e = first, c = e % p.c, j = e / p.c % p.fw, i = e / (int64_t(p.c) * p.fw);
    ADD_FAILURE() << (kF16 ? "FP16 " : "FP32 ") << p.str() << (integers ? " integers" : " reals") << " seed " << seed
                  << " offset " << offset << " tile lanes=" << tile.p << " " << tile.nr << "x" << tile.fw
                  << " dy_rows=" << tile.th << " Z=" << z << ": " << bad << " of " << p.w_elems()
                  << " entries off; first dW[" << i << "," << j << "," << c << "] expected " << ref[size_t(e)]
                  << " got " << got[size_t(e)] << " (allowed " << rel * mag[size_t(e)] << "), max abs err " << max_abs;
  }
}

// Both data types, exact integers and real data, aligned and one element off (lanes of one channel).
void check_both(const SimCase& k, uint32_t seed, const BfcSmallForce& force = {}) {
  for (int offset : {0, 1}) {
    if (force.lanes == 2 && offset == 1) continue;
    check_sim<__half>(k, seed, true, offset, force);
    check_sim<float>(k, seed + 1, true, offset, force);
  }
  check_sim<__half>(k, seed + 2, false, 0, force);
  check_sim<float>(k, seed + 3, false, 0, force);
}

TEST(DwconvBfcSmallSim, AwkwardShapesMatchTheReference) {
  uint32_t seed = 100;
  for (const SimCase& k : {
           same(1, 1, 1, 1, 1, 1),                    // one pixel, one channel
           same(2, 3, 5, 3, 3, 3),                    // 3x5 map, C = 3
           same(3, 8, 8, 8, 5, 5),                    // C = 8: 8 of 32 or 64 lanes
           same(1, 13, 17, 75, 3, 5),                 // odd C, 3x5 filter
           same(2, 13, 17, 75, 5, 3),                 // 5x3
           same(5, 8, 8, 124, 5, 5),                  // N = 5, C % 8 == 4
           same(1, 32, 32, 249, 5, 5),                // SLaK's 32x32x249
           same(2, 3, 5, 998, 1, 1),                  // 1x1, 16 slices of 64 channels
           same(1, 8, 8, 998, 7, 7),                  // 7x7: two row groups of 4 rows
           same(2, 13, 17, 8, 7, 7),                  // 7x7, C = 8
           same(1, 13, 17, 75, 6, 4),                 // even filters: a masked column and row group
           same(2, 8, 8, 3, 2, 2),                    // 2x2 on the 3-column tile
           SimCase{2, 13, 17, 75, 5, 5, 0, 0, 0, 0},  // no padding: dY smaller than X
           SimCase{1, 8, 8, 124, 5, 5, 2, 1, 0, 2},   // asymmetric padding
           SimCase{2, 3, 5, 3, 3, 3, 4, 2, 5, 1},     // padding past the filter's reach (rows and columns of zeros)
           SimCase{1, 1, 1, 8, 5, 5, 2, 2, 2, 2},     // 1x1 map, 5x5 filter
           SimCase{3, 13, 17, 9, 3, 5, 1, 1, 0, 4},   // one-sided column padding
           SimCase{1, 5, 3, 75, 5, 3, 0, 0, 0, 0},    // filter = map: OH = OW = 1
       })
    check_both(k, seed += 10);
}

// The GPU tests' shapes (dwconv_bfc_small_shapes), aligned and one element off, exact and real data.
TEST(DwconvBfcSmallSim, GpuTestShapesMatchTheReference) {
  uint32_t seed = 300;
  for (const DwconvParams& p : cnn::test::dwconv_bfc_small_shapes()) {
    const SimCase k{p.n, p.ih, p.iw, p.c, p.fh, p.fw, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right};
    check_both(k, seed += 10);
  }
}

// Every instantiated row count of the 5x5, 3x5, 7x7 and 1x7 filters, both lane widths (where a kernel exists).
TEST(DwconvBfcSmallSim, EveryRowTileMatchesTheReference) {
  uint32_t seed = 400;
  for (const SimCase& k :
       {same(2, 9, 11, 38, 5, 5), same(1, 9, 11, 38, 3, 5), same(1, 9, 11, 38, 7, 7), same(1, 9, 11, 38, 1, 7)})
    for (int nr : kBfcSmallRowTiles)
      for (int lanes : {1, 2}) {
        const BfcSmallForce force{lanes, nr, 0};
        for (bool f16 : {true, false}) {
          const int col_tile = k.fw == 5 ? 5 : 7;  // the narrowest kBfcSmallColTiles entry >= FW
          if (bfc_small_rows_per_thread(f16, lanes, nr, col_tile) == 0) continue;
          if (f16)
            check_sim<__half>(k, seed += 3, true, 0, force);
          else
            check_sim<float>(k, seed += 3, true, 0, force);
        }
      }
}

// Chunk counts from one to one task per chunk: tasks split mid-image and between the row groups of one dY row group.
TEST(DwconvBfcSmallSim, EveryChunkCountMatchesTheReference) {
  const SimCase k = same(3, 10, 7, 40, 7, 5);  // two row groups at 7 rows
  uint32_t seed = 700;
  for (int z : {1, 2, 3, 5, 7, 16, 1000}) check_both(k, seed += 10, BfcSmallForce{0, 0, z});
}

// ---- Planning rules ---------------------------------------------------------------------------------------------

TEST(DwconvBfcSmallPlan, RowTableHasAKernelForEveryFilter) {
  for (bool f16 : {true, false})
    for (int fh = 1; fh <= kBfcSmallMaxF; ++fh)
      for (int fw = 1; fw <= kBfcSmallMaxF; ++fw)
        for (int p_max : {1, 2}) {
          const BfcSmallTile t = bfc_small_tile(f16, fh, fw, 32, 64, p_max);
          EXPECT_GT(t.th, 0);
          EXPECT_LE(t.p, p_max);
          EXPECT_GE(t.fw, fw);
          EXPECT_EQ(t.th, bfc_small_rows_per_thread(f16, t.p, t.nr, t.fw));
          for (int c : kBfcSmallColTiles) EXPECT_TRUE(c < fw || t.fw <= c) << "the narrowest column tile >= FW";
        }
  EXPECT_EQ(bfc_small_rows_per_thread(true, 1, 6, 5), 0);  // not an instantiated row tile
  EXPECT_EQ(bfc_small_rows_per_thread(true, 1, 5, 4), 0);  // not an instantiated column tile
  EXPECT_EQ(bfc_small_rows_per_thread(true, 3, 5, 5), 0);
  EXPECT_THROW(bfc_small_tile(true, 8, 3, 32, 64, 1), cnn::Error);
  EXPECT_THROW(bfc_small_tile(true, 3, 3, 32, 64, 1, 2), cnn::Error);      // forced lanes past the limit
  EXPECT_THROW(bfc_small_tile(false, 5, 5, 32, 64, 2, 2, 5), cnn::Error);  // FP32 pairs x 5x5 rows: no kernel
}

// The cost model's picks for SLaK's shapes: FP16 5x5 takes all five rows in one group (2 dY rows per task on single
// channels, 1 on pairs), 7x7 two groups of 4 rows, 3x3 one group of 3 on 4 dY rows; and no instantiated tile is
// cheaper by the model than its pick.
TEST(DwconvBfcSmallPlan, TilesForTheTargetShapes) {
  const auto tile = [](bool f16, int f, int oh, int c, int p_max) {
    const BfcSmallTile t = bfc_small_tile(f16, f, f, oh, c, p_max);
    return std::to_string(t.p) + ":" + std::to_string(t.nr) + "x" + std::to_string(t.fw) + "/" + std::to_string(t.th);
  };
  EXPECT_EQ(tile(true, 5, 32, 249, 1), "1:5x5/2");
  EXPECT_EQ(tile(true, 5, 16, 499, 1), "1:5x5/2");
  EXPECT_EQ(tile(true, 5, 8, 998, 2), "2:5x5/1");
  EXPECT_EQ(tile(true, 5, 64, 124, 2), "2:5x5/1");
  EXPECT_EQ(tile(false, 5, 32, 249, 1), "1:5x5/2");
  EXPECT_EQ(tile(true, 7, 32, 249, 1), "1:4x7/2");
  EXPECT_EQ(tile(true, 3, 32, 249, 1), "1:3x3/4");
  EXPECT_EQ(tile(true, 1, 32, 249, 1), "1:1x1/8");
  for (bool f16 : {true, false})
    for (int f = 1; f <= kBfcSmallMaxF; ++f)
      for (int p_max : {1, 2}) {
        const BfcSmallTile t = bfc_small_tile(f16, f, f, 32, 248, p_max);
        for (int p = 1; p <= p_max; ++p)
          for (int nr : kBfcSmallRowTiles) {
            const BfcSmallTile o{p, nr, t.fw, bfc_small_rows_per_thread(f16, p, nr, t.fw)};
            if (o.th > 0) EXPECT_LE(bfc_small_cost(f16, t, f, 32, 248), bfc_small_cost(f16, o, f, 32, 248) + 1e-9);
          }
      }
}

TEST(DwconvBfcSmallPlan, ChunksFillTheMachineInWholeRounds) {
  // 8 slices x 1024 tasks on 264 slots: 33 chunks would give 31 or 32 tasks per block (4 rounds of 8 warps); 32
  // chunks give exactly 32, the same 4 rounds in one wave with fewer blocks.
  EXPECT_EQ(bfc_small_chunks(1024, 8, 264), 32);
  EXPECT_EQ(bfc_small_chunks(1, 1, 264), 1);
  EXPECT_EQ(bfc_small_chunks(5, 1, 264), 1);        // one block: 5 tasks for 8 warps
  EXPECT_EQ(bfc_small_chunks(64, 1, 264), 8);       // one task per warp
  EXPECT_EQ(bfc_small_chunks(1000, 1000, 264), 1);  // slices alone fill several waves
  for (int64_t tasks : {1, 7, 100, 4096})
    for (int64_t slices : {1, 3, 16, 300}) {
      const int z = bfc_small_chunks(tasks, slices, 264);
      EXPECT_GE(z, 1);
      EXPECT_LE(z, tasks);
    }
  EXPECT_THROW(bfc_small_chunks(0, 1, 1), cnn::Error);
}

TEST(DwconvBfcSmallPlan, LanesAndSupport) {
  EXPECT_EQ(bfc_small_lane_channels(998, true, 4), 2);
  EXPECT_EQ(bfc_small_lane_channels(998, true, 2), 1);
  EXPECT_EQ(bfc_small_lane_channels(249, true, 16), 1);
  EXPECT_EQ(bfc_small_lane_channels(124, false, 8), 2);
  EXPECT_EQ(bfc_small_lane_channels(124, false, 4), 1);
  DwconvParams p = same(1, 8, 8, 3, 7, 7).params();
  EXPECT_TRUE(bfc_small_supports(p, true));
  p.fw = 9;
  EXPECT_FALSE(bfc_small_supports(p, true));
  p.fw = 3, p.stride_w = 2;
  EXPECT_FALSE(bfc_small_supports(p, false));
}

}  // namespace
}  // namespace cnn::dwconv
