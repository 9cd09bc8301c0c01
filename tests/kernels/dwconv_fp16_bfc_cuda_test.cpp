// FP16 depthwise backward-filter kernels (the register-tile kernel on FP16 inputs, the tiled strip kernel, the
// row-warp kernel) in both accumulation modes, FP32 and hybrid, and the small-filter kernel (FP32 accumulation),
// against the FP64 reference and its host emulation of hybrid accumulation, and the dispatcher's backward-filter
// choice.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/scratch_buffer.h"
#include "kernels/dwconv/cuda/select.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "tests/kernels/dwconv_fp16_device.h"
#include "tests/kernels/dwconv_fp16_test_util.h"
#include "tests/kernels/dwconv_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

using f16test::Case;
using f16test::DeviceArray;
using f16test::HalfData;
using f16test::kMareBound;
using f16test::same;
using f16test::widen;

// Every backward-filter column tiling and Z split, both accumulations.
TEST(DwconvFp16Gpu, BackwardFilterEveryTileAndSplit) {
  CNN_REQUIRE_GPU();
  const Case k = same(2, 19, 37, 66, 11, 11);
  const DwconvParams p = k.params();
  const HalfData d = f16test::make_data(p, 31337);
  const f16test::References ref = f16test::references(p, d);
  DeviceArray<__half> x(p.x_elems()), dy(p.y_elems());
  DeviceArray<float> dw(p.w_elems());
  x.upload(d.x.data()), dy.upload(d.dy.data());
  const double l_terms = double(p.n) * p.oh() * p.ow();
  for (int tm = 1; tm <= 9; ++tm)
    for (int z : {1, 5, 38}) {
      for (BfcAccum accum : {BfcAccum::fp32, BfcAccum::ha}) {
        dw.poison();
        const BfcF16Force force{tm, z};
        launch_dwconv_bfc_f16(x.get(), dy.get(), dw.get(), p, accum, force, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> got_f = dw.download<float>();
        const std::vector<double> got(got_f.begin(), got_f.end());
        const std::string name = dwconv_bfc_f16_path_name(p, accum, force) + " " + p.str() + " seed=31337";
        if (accum == BfcAccum::fp32) {
          f16test::expect_ok(f16test::compare(got, ref.dw, ref.dw_mag, f16test::fp32_output_bound(l_terms)), name);
        } else {
          const double merges = l_terms / kBfcHaRun + 2.0 * p.n * p.oh() + 2;  // runs + chunk atomics
          f16test::expect_ok(
              f16test::compare(got, ref.dw_ha_emulated, ref.dw_mag, f16test::fp32_output_bound(merges)), name);
        }
      }
    }
}

// One FP16 backward-filter result (FP32 dW) against the references. fp32 accumulation: FP32 sums of exact FP16
// products (per-thread FMA chains, block sums, atomics) against FP64. ha: the emulation's FP16 runs exactly, only the
// FP32 merges differ - run partials (<= runs), block sums (<= rows) and atomics (<= runs, segments being whole runs),
// one rounding each - and against FP64 within the ha bound.
void expect_bfc_f16(const std::vector<double>& got, const f16test::References& ref, const DwconvParams& p,
                    BfcAccum accum, const std::string& name) {
  const double l_terms = double(p.n) * p.oh() * p.ow();
  if (accum == BfcAccum::fp32) {
    const f16test::ErrorStats st = f16test::compare(got, ref.dw, ref.dw_mag, f16test::fp32_output_bound(l_terms));
    f16test::expect_ok(st, name);
    EXPECT_LE(st.mare, kMareBound) << name;
    return;
  }
  const double rows = double(p.n) * p.oh(), runs = rows * ((p.ow() + kBfcHaRun - 1) / kBfcHaRun);
  const double merges = 2 * runs + rows + 2;
  f16test::expect_ok(f16test::compare(got, ref.dw_ha_emulated, ref.dw_mag, f16test::fp32_output_bound(merges)), name);
  f16test::expect_ok(f16test::compare(got, ref.dw, ref.dw_mag, f16test::ha_bound(l_terms)), "vs FP64 " + name);
}

// The tiled backward-filter kernel, launched directly (through the dispatcher a fallback to the row-warp kernel
// would pass unnoticed), in both accumulation modes, with the planner's split and with forced Z chunks and column
// strips (ha: strips of whole runs); dW poisoned before each run.
// One backward-filter case on the device: FP16 inputs uploaded, references computed, dW poisoned before each run.
struct BfcF16Run {
  DwconvParams p;
  f16test::References ref;
  DeviceArray<__half> x, dy;
  DeviceArray<float> dw;
  BfcF16Run(const Case& k, uint64_t seed) : p(k.params()), x(p.x_elems()), dy(p.y_elems()), dw(p.w_elems()) {
    const HalfData d = f16test::make_data(p, seed);
    ref = f16test::references(p, d);
    x.upload(d.x.data()), dy.upload(d.dy.data());
  }
  template <class Launch>
  std::vector<double> run(Launch launch) {
    dw.poison();
    launch(x.get(), dy.get(), dw.get());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << p.str();
    const std::vector<float> got = dw.download<float>();
    return std::vector<double>(got.begin(), got.end());
  }
};

void check_bfc_tiled(const Case& k, uint64_t seed) {
  ASSERT_TRUE(bfc_f16_tiled_supports(k.params(), nullptr, nullptr)) << k.params().str();
  BfcF16Run b(k, seed);
  for (BfcAccum accum : {BfcAccum::fp32, BfcAccum::ha}) {
    const bool ha = accum == BfcAccum::ha;
    const BfcF16TiledForce forces[] = {BfcF16TiledForce{}, BfcF16TiledForce{3, ha ? kBfcHaRun : 5},
                                       BfcF16TiledForce{1000000, ha ? 2 * kBfcHaRun : 1}};
    for (const BfcF16TiledForce& force : forces) {
      const std::vector<double> got = b.run([&](const __half* x, const __half* dy, float* dw) {
        launch_dwconv_bfc_f16_tiled(x, dy, dw, b.p, accum, force, nullptr);
      });
      expect_bfc_f16(got, b.ref, b.p, accum,
                     dwconv_bfc_f16_tiled_path_name(b.p, accum, force) + " " + b.p.str() + " seed=" +
                         std::to_string(seed));
    }
  }
}

TEST(DwconvFp16Gpu, BackwardFilterTiledKernelSmallFilters) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7300;
  for (const Case& k : {
           same(1, 1, 1, 8, 1, 1),                   // single pixel, 1x1
           same(3, 2, 2, 72, 3, 3),                  // N=3, 2x2 image, 3x3
           same(1, 5, 5, 136, 5, 5),                 // two channel slices
           same(3, 17, 34, 72, 3, 3),                // R = 28 row slots of 18 channel groups
           same(1, 17, 34, 1032, 7, 7),              // 9 channel slices of 29 groups (last partial)
           same(3, 33, 70, 8, 5, 5),                 // C = 8: two channel groups, many row slots; 3 ha runs per row
           Case{3, 5, 2, 136, 2, 3, 1, 1, 0, 1, 1, 1},    // even filter height, asymmetric padding
           Case{1, 17, 34, 72, 3, 7, 1, 1, 0, 0, 0, 0},   // zero padding (output smaller than input)
           Case{1, 33, 70, 136, 7, 1, 1, 1, 8, 9, 3, 2},  // pads beyond the filter reach: output larger than input
           Case{1, 2, 5, 8, 3, 3, 1, 1, 4, 2, 0, 5},      // pads beyond the reach on a tiny image
           Case{3, 1, 34, 72, 1, 3, 1, 1, 0, 0, 2, 0},    // H = 1, left padding only
           Case{1, 17, 1, 12, 5, 5, 1, 1, 2, 2, 4, 0},    // W = 1, C % 8 != 0
           Case{1, 5, 17, 1032, 5, 3, 1, 1, 6, 7, 0, 3},  // rows entirely in the padding are skipped
           Case{3, 17, 34, 72, 7, 7, 1, 1, 0, 6, 6, 0},   // one-sided padding
           same(1, 17, 34, 72, 4, 6),                      // FW 6: one filter row per thread, 4 row groups
           same(1, 17, 34, 72, 7, 4),                      // FW 4: row groups of 1, 2, 2, 2 rows
           same(1, 17, 34, 72, 5, 2),                      // FW 2: row groups of 2 and 3 rows
           Case{1, 17, 34, 72, 7, 1, 1, 1, 1, 5, 0, 0},    // FW 1: row groups of 3 and 4 rows
       })
    check_bfc_tiled(k, seed++);
}

// Wide filters: several column tiles (the last one masked past FW), and beyond 16 tiles blocks that each hold a band
// of tiles and add their sums straight into dW. Rows of 70 and 117 columns: several ha runs, the last one short.
TEST(DwconvFp16Gpu, BackwardFilterTiledKernelWideFilters) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7500;
  for (const Case& k : {
           same(1, 17, 34, 72, 9, 9),                       // 2 column tiles of 5 (one padded column)
           same(3, 17, 34, 8, 13, 13),                      // N=3, C = 8: 26 tiles of 7 columns in one block
           same(1, 40, 70, 136, 17, 17),                    // tiles of 6, two channel slices, 3 ha runs per row
           same(1, 17, 34, 72, 31, 31),                     // tiles of 2 x 4, 5 blocks of tiles
           same(1, 17, 34, 72, 51, 51),                     // 338 tiles in 13 blocks, most taps in the padding
           same(1, 17, 34, 72, 51, 5),                      // tall: 51 row tiles of one row
           same(1, 17, 34, 72, 5, 51),                      // wide: 13 column tiles of 4
           same(3, 40, 70, 72, 13, 3),                      // tall narrow: shared sums, row groups of 2 and 3
           Case{1, 5, 5, 136, 9, 9, 1, 1, 4, 4, 4, 4},      // 5x5 image, filter larger than the image
           Case{1, 2, 5, 8, 9, 13, 1, 1, 10, 3, 14, 1},     // padding past the filter's reach, H = 2
           Case{3, 1, 1, 72, 9, 9, 1, 1, 4, 4, 4, 4},       // 1x1 images
           Case{1, 17, 34, 72, 13, 13, 1, 1, 0, 12, 7, 2},  // asymmetric padding
           Case{1, 17, 1, 8, 17, 9, 1, 1, 8, 8, 4, 4},      // W = 1
           same(1, 40, 70, 8, 31, 31),                      // C = 8: 128 tiles in one block of 256 threads
           Case{2, 9, 100, 72, 3, 11, 1, 1, 1, 1, 20, 7},   // OW = 117: 4 ha runs per row, the last of 21 columns
       })
    check_bfc_tiled(k, seed++);
}

// Enough dY rows x columns for several Z chunks and (on small maps) column strips under the planner's own split.
TEST(DwconvFp16Gpu, BackwardFilterTiledKernelManyChunks) {
  CNN_REQUIRE_GPU();
  check_bfc_tiled(same(3, 64, 96, 72, 3, 3), 7400);
  check_bfc_tiled(same(2, 48, 80, 128, 5, 5), 7401);
  check_bfc_tiled(same(4, 32, 32, 256, 7, 7), 7402);
  check_bfc_tiled(same(2, 48, 80, 128, 9, 9), 7403);
  check_bfc_tiled(same(2, 17, 34, 72, 51, 51), 7404);
}

// The FP32 backward-filter tile kernel on FP16 inputs (bfc_tile.cuh with T = __half, and __half2 for ha):
// the planner's choices, a forced Z and a forced tile, in both accumulation modes. fp32 against FP64 with the
// FP32-accumulation bound; ha against the host emulation (its FP16 runs exactly, FP32 merges within rounding) and
// against FP64 with the ha bound.
void check_bfc_tile_f16(const Case& k, uint64_t seed) {
  ASSERT_TRUE(bfc_tile_f16_supports(k.params(), nullptr, nullptr)) << k.params().str();
  BfcF16Run b(k, seed);
  BfcForce z3, t1x5;
  z3.z = 3;
  t1x5.tile_r = 1, t1x5.tile_tm = 5;
  for (BfcAccum accum : {BfcAccum::fp32, BfcAccum::ha}) {
    for (const BfcForce& force : {BfcForce{}, z3, t1x5}) {
      const std::vector<double> got = b.run([&](const __half* x, const __half* dy, float* dw) {
        dwconv_backward_filter_cuda_tile_f16(x, dy, dw, b.p, accum, force, nullptr);
      });
      expect_bfc_f16(got, b.ref, b.p, accum,
                     std::string("bfc f16 tile ") + bfc_accum_name(accum) + " force " + std::to_string(force.tile_r) +
                         "x" + std::to_string(force.tile_tm) + " z=" + std::to_string(force.z) + " " + b.p.str() +
                         " seed=" + std::to_string(seed));
    }
  }
}

TEST(DwconvFp16Gpu, BackwardFilterTileKernelOnHalfInputs) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7600;
  for (const Case& k : {
           same(1, 1, 1, 8, 1, 1),                         // single pixel, 1x1
           same(3, 17, 34, 72, 3, 3),                      // partial channel slice (72 = 2 x 32 + 8)
           same(1, 17, 34, 1032, 7, 7),                    // 33 channel slices
           same(3, 33, 70, 8, 5, 5),                       // C = 8
           Case{3, 5, 2, 136, 2, 3, 1, 1, 0, 1, 1, 1},      // even filter height, asymmetric padding
           Case{1, 33, 70, 136, 7, 1, 1, 1, 8, 9, 3, 2},    // pads beyond the filter reach
           Case{1, 5, 17, 1032, 5, 3, 1, 1, 6, 7, 0, 3},    // rows entirely in the padding
           same(1, 40, 70, 136, 17, 17),                   // 1x17 tile
           same(1, 40, 70, 136, 9, 9),                     // 3x9 tile (fp32 and ha), two warps per row segment
           same(1, 17, 34, 72, 31, 31),                    // 2x16 tile (measured entry; ha 1x31)
           same(1, 17, 34, 72, 51, 51),                    // 3x13 tile (ha 2x13), most taps in the padding
           same(1, 17, 34, 72, 51, 5),                     // tall strip
           Case{2, 17, 34, 72, 7, 7, 2, 2, 3, 3, 3, 3},     // stride 2: four phases
           Case{1, 20, 21, 64, 5, 4, 2, 1, 2, 2, 1, 2},     // stride 2 x 1, even filter width
           same(4, 32, 32, 256, 13, 13),                   // 2x13 tile, several chunks (ha: narrow segments)
           same(2, 24, 64, 64, 13, 13),                    // ha 1x13 on 64-column segments
           Case{2, 9, 100, 72, 3, 11, 1, 1, 1, 1, 20, 7},   // OW = 117: ha runs of 32, the last of 21 columns
           same(2, 40, 70, 136, 7, 7),                     // OW = 70: runs split across warp segments
       })
    check_bfc_tile_f16(k, seed++);
}

// Backward-filter through the entry point under the current overrides, FP32 accumulation: checked against FP64; its
// path must start with `kernel` and name no padding, and hybrid accumulation is refused.
void expect_forced_bfc_f16(const Case& k, uint64_t seed, const std::string& kernel) {
  BfcF16Run b(k, seed);
  const std::vector<double> got = b.run([&](const __half* x, const __half* dy, float* dw) {
    ScratchBuffer scratch;
    dwconv_backward_filter_cuda(x, dy, dw, b.p, BfcAccum::fp32, nullptr, scratch.fn());
  });
  const std::string path = dwconv_path_name(DwconvOp::backward_filter, b.p, DType::f16, BfcAccum::fp32);
  EXPECT_EQ(path.rfind(kernel, 0), 0u) << path;
  EXPECT_EQ(path.find("padded"), std::string::npos) << path;
  expect_bfc_f16(got, b.ref, b.p, BfcAccum::fp32, path + " " + b.p.str());
  EXPECT_THROW(dwconv_path_name(DwconvOp::backward_filter, b.p, DType::f16, BfcAccum::ha), cnn::Error);
}

// The small-filter kernel (bfc_small) launched directly on FP16 inputs: x and dy aligned (half2 lanes where C is
// even) or `offset` halves off (single-half lanes); FP32 accumulation against FP64 (expect_bfc_f16's fp32 bound and
// MARE), dW poisoned before the run.
void check_bfc_small_f16(const DwconvParams& p, uint64_t seed, size_t offset, const BfcSmallForce& force = {}) {
  const HalfData d = f16test::make_data(p, seed);
  const f16test::References ref = f16test::references(p, d);
  DeviceArray<__half> x(p.x_elems(), offset), dy(p.y_elems(), offset);
  DeviceArray<float> dw(p.w_elems());
  x.upload(d.x.data()), dy.upload(d.dy.data());
  dw.poison();
  launch_dwconv_bfc_small_f16(x.get(), dy.get(), dw.get(), p, force, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << p.str();
  const std::vector<float> got_f = dw.download<float>();
  const std::vector<double> got(got_f.begin(), got_f.end());
  const int max_lanes = bfc_small_lane_channels(p.c, true, alignment_of({x.get(), dy.get()}));
  expect_bfc_f16(got, ref, p, BfcAccum::fp32,
                 dwconv_bfc_small_path_name(p, true, max_lanes, force) + " " + p.str() +
                     " seed=" + std::to_string(seed) + " offset=" + std::to_string(offset));
}

TEST(DwconvFp16Gpu, BackwardFilterSmallKernel) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7700;
  for (const DwconvParams& p : cnn::test::dwconv_bfc_small_shapes()) {
    check_bfc_small_f16(p, seed++, 0);
    check_bfc_small_f16(p, seed++, 1);
  }
}

// Every row tile at both lane widths (where instantiated), chunk counts from one to one task per chunk, and the
// override through the entry point, which refuses hybrid accumulation.
TEST(DwconvFp16Gpu, BackwardFilterSmallKernelEveryTileAndSplit) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7800;
  for (const Case& k : {same(2, 9, 11, 38, 5, 5), same(2, 9, 11, 38, 7, 7), same(1, 9, 11, 38, 3, 5)})
    for (int nr : kBfcSmallRowTiles)
      for (int lanes : {1, 2}) {
        const int col_tile = k.fw == 5 ? 5 : 7;  // the narrowest kBfcSmallColTiles entry >= FW
        if (bfc_small_rows_per_thread(true, lanes, nr, col_tile) > 0)
          check_bfc_small_f16(k.params(), seed++, 0, BfcSmallForce{lanes, nr, 0});
      }
  for (int z : {1, 2, 3, 5, 7, 16, 1000})
    check_bfc_small_f16(same(3, 10, 7, 40, 7, 5).params(), seed++, 0, BfcSmallForce{0, 0, z});
  const Overrides saved = overrides();
  set_overrides(parse_overrides("bfc=small", "test"));
  for (const Case& k : {same(2, 17, 34, 7, 3, 3), same(2, 13, 17, 249, 7, 7), same(2, 40, 40, 72, 5, 5)})
    expect_forced_bfc_f16(k, seed++, "bfc f16 small (fp32 accumulation)");
  set_overrides(saved);
}

// The span-staged kernel (bfc_span) launched directly and through the override: odd and even C with partial 32-channel
// slices (249, 75, 998, 124, 8), maps of at most 8 rows and columns (8-row, 8-column tiles) and larger ones with
// partial tiles in both directions, 'same' and asymmetric padding (rows and columns entirely in the padding), 3x3 to
// 9x9, 13x5 and 5x13, one image and several (chunks crossing images). FP32 accumulation against FP64 (expect_bfc_f16's
// fp32 bound and MARE), dW poisoned before the run. Shapes whose rows are not whole 16-byte chunks, unaligned tensors,
// other filters and ha are refused with an error.
TEST(DwconvFp16Gpu, BackwardFilterSpanKernel) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 7900;
  for (const Case& k : {same(2, 8, 8, 998, 5, 5), same(1, 17, 16, 249, 5, 5), same(3, 16, 24, 75, 3, 3),
                        same(2, 9, 8, 249, 7, 7), same(1, 40, 32, 124, 5, 5), same(5, 8, 8, 8, 3, 3),
                        Case{2, 13, 24, 75, 5, 5, 1, 1, 6, 1, 1, 3}, Case{1, 19, 40, 249, 7, 7, 1, 1, 0, 6, 4, 2},
                        // More tiles than blocks (one slice): chunks of several tiles, stepping over tile columns,
                        // rows and images.
                        same(80, 64, 64, 3, 5, 5), same(3000, 8, 8, 3, 3, 3),
                        // SLaK's 13x5 / 5x13 and the 9x9 beside them, on 8x8 maps and on larger ones.
                        same(3, 8, 8, 998, 13, 5), same(2, 8, 8, 998, 5, 13), same(2, 8, 8, 249, 9, 9),
                        same(1, 20, 24, 75, 13, 5), Case{1, 19, 16, 249, 5, 13, 1, 1, 0, 4, 9, 3}}) {
    ASSERT_TRUE(bfc_span_supports(k.params(), 16, 2)) << k.params().str();
    BfcF16Run b(k, seed);
    const std::vector<double> got = b.run(
        [&](const __half* x, const __half* dy, float* dw) { launch_dwconv_bfc_span_f16(x, dy, dw, b.p, nullptr); });
    expect_bfc_f16(got, b.ref, b.p, BfcAccum::fp32,
                   dwconv_bfc_span_path_name(b.p, true) + " " + b.p.str() + " seed=" + std::to_string(seed++));
  }
  const Overrides saved = overrides();
  set_overrides(parse_overrides("bfc=span", "test"));
  expect_forced_bfc_f16(same(2, 16, 16, 499, 5, 5), seed++, "bfc f16 span (fp32 accumulation) F=5x5");
  for (const Case& bad : {same(1, 8, 7, 249, 5, 5), same(1, 8, 8, 249, 5, 3), same(1, 8, 8, 249, 11, 11)})
    EXPECT_THROW(dwconv_path_name(DwconvOp::backward_filter, bad.params(), DType::f16, BfcAccum::fp32), cnn::Error)
        << bad.params().str();
  set_overrides(saved);
  EXPECT_FALSE(bfc_span_supports(same(1, 8, 8, 249, 5, 5).params(), 8, 2));  // 8-byte aligned tensors
}

// The tensor-core kernel (bfc_tc) launched directly and through the override: filters on the maps' own view (5 x K,
// K up to 64: one to four 16-column tiles) and on the transposed one (K x 5, 13x5), 7x7 and 8x8 (8 rows, all MMA
// columns in use) and 3x3 (lanes past the filter's rows reading zeros); C a multiple of 16 and not (124: a half-full
// last block, 40, 12); 'same' and asymmetric padding, padding larger than F - 1; one image and several, so that a
// block's dY rows start mid-image and cross images (the ring then restages a whole window). FP32 accumulation against
// FP64 (expect_bfc_f16's fp32 bound and MARE), dW poisoned before the run. Odd C runs on padded copies through the
// override; FP32 data, ha, 9x9 and unaligned tensors are refused.
TEST(DwconvFp16Gpu, BackwardFilterTensorCoreKernel) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 8000;
  for (const Case& k :
       {same(2, 16, 24, 124, 5, 51), same(2, 24, 16, 124, 51, 5), same(1, 20, 40, 64, 5, 33),
        same(3, 12, 20, 40, 5, 17), same(3, 8, 8, 1000, 13, 5), same(2, 9, 11, 40, 7, 7), same(1, 12, 12, 16, 8, 8),
        same(5, 7, 9, 12, 3, 3), same(1, 64, 8, 12, 3, 20), Case{2, 13, 24, 36, 5, 13, 1, 1, 0, 6, 4, 2},
        Case{1, 19, 30, 20, 47, 5, 1, 1, 30, 0, 1, 3}, Case{4, 10, 7, 8, 5, 5, 1, 1, 6, 1, 0, 7}}) {
    ASSERT_TRUE(bfc_tc_f16_supports(k.params(), 16)) << k.params().str();
    BfcF16Run b(k, seed);
    const std::vector<double> got =
        b.run([&](const __half* x, const __half* dy, float* dw) { launch_dwconv_bfc_tc_f16(x, dy, dw, b.p, nullptr); });
    expect_bfc_f16(got, b.ref, b.p, BfcAccum::fp32,
                   dwconv_bfc_tc_f16_path_name(b.p) + " " + b.p.str() + " seed=" + std::to_string(seed++));
  }
  const Overrides saved = overrides();
  set_overrides(parse_overrides("bfc=tc", "test"));
  expect_forced_bfc_f16(same(2, 16, 16, 124, 47, 5), seed++, "bfc f16 tc (fp32 accumulation) F=47x5 transposed");
  {
    const Case odd = same(2, 16, 16, 249, 5, 47);
    BfcF16Run b(odd, seed);
    const std::vector<double> got = b.run([&](const __half* x, const __half* dy, float* dw) {
      ScratchBuffer scratch;
      dwconv_backward_filter_cuda(x, dy, dw, b.p, BfcAccum::fp32, nullptr, scratch.fn());
    });
    const std::string path = dwconv_path_name(DwconvOp::backward_filter, b.p, DType::f16, BfcAccum::fp32);
    EXPECT_EQ(path.rfind("bfc f16 tc", 0), 0u) << path;
    EXPECT_NE(path.find("padded 249->256"), std::string::npos) << path;
    expect_bfc_f16(got, b.ref, b.p, BfcAccum::fp32, path + " " + b.p.str() + " seed=" + std::to_string(seed++));
  }
  EXPECT_THROW(
      dwconv_path_name(DwconvOp::backward_filter, same(1, 8, 8, 64, 9, 9).params(), DType::f16, BfcAccum::fp32),
      cnn::Error);
  EXPECT_THROW(
      dwconv_path_name(DwconvOp::backward_filter, same(1, 8, 8, 64, 5, 5).params(), DType::f32, BfcAccum::fp32),
      cnn::Error);
  set_overrides(saved);
  EXPECT_FALSE(bfc_tc_f16_supports(same(1, 8, 8, 64, 5, 5).params(), 4));   // 4-byte aligned tensors
  EXPECT_FALSE(bfc_tc_f16_supports(same(1, 8, 8, 62, 5, 5).params(), 16));  // C % 4 != 0
  EXPECT_FALSE(bfc_tc_f16_supports(same(1, 8, 8, 64, 9, 65).params(), 16));
  EXPECT_TRUE(bfc_tc_f16_supports(same(1, 8, 8, 64, 64, 8).params(), 16));
}

// The dispatcher's backward-filter choice. Hybrid accumulation: the register-tile kernel at stride 1 above 9 taps and
// at any stride above 1 (on padded channels where C % 8 != 0 and C is odd), the tiled kernel for the other stride-1
// shapes it supports (C % 4 == 0, unpadded). FP32 accumulation, C % 8 != 0 at stride 1: the span-staged kernel at
// 5x5 / 7x7 (3x3 at odd C and on maps of at most 8 rows) where map rows are whole 16-byte chunks, else the
// small-filter kernel up to 5x5 (both unpadded); the same kernels as ha elsewhere.
TEST(DwconvFp16Gpu, BackwardFilterPathNamesTheChosenKernel) {
  CNN_REQUIRE_GPU();
  const auto path_of = [](const Case& k, BfcAccum accum) {
    return dwconv_path_name(DwconvOp::backward_filter, k.params(), DType::f16, accum);
  };
  {
    const BfcAccum accum = BfcAccum::ha;
    const std::string tile = "bfc f16 tile (ha accumulation)", tiled = "bfc f16 ha tiled";
    for (const Case& k : {same(1, 17, 34, 72, 5, 5), same(1, 17, 34, 72, 3, 9), same(1, 17, 34, 72, 51, 51),
                          same(1, 17, 34, 72, 51, 5)})
      EXPECT_EQ(path_of(k, accum).rfind(tile, 0), 0u) << path_of(k, accum);
    for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(1, 17, 34, 72, 1, 9), same(1, 17, 34, 12, 3, 3)}) {
      EXPECT_TRUE(bfc_f16_tiled_supports(k.params(), nullptr, nullptr)) << k.params().str();
      EXPECT_EQ(path_of(k, accum).rfind(tiled, 0), 0u) << path_of(k, accum);  // 9 taps or fewer
    }
    const Case strided{1, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1}, strided_c12{1, 17, 34, 12, 3, 3, 2, 2, 1, 1, 1, 1};
    EXPECT_FALSE(bfc_f16_tiled_supports(strided.params(), nullptr, nullptr));
    EXPECT_EQ(path_of(strided, accum).rfind(tile, 0), 0u) << path_of(strided, accum);
    for (const Case& k : {strided_c12, same(1, 17, 34, 12, 5, 5)}) {  // C % 8 == 4: the tile kernel, 8-byte copies
      const std::string path = path_of(k, accum);
      EXPECT_TRUE(path.rfind(tile, 0) == 0 && path.find(" copy=8B") != std::string::npos &&
                  path.find("padded") == std::string::npos)
          << path;
    }
    for (const Case& k : {same(1, 17, 34, 14, 5, 5), same(1, 17, 34, 13, 5, 5)}) {  // C % 4 == 2: 4-byte; odd: padded
      const std::string path = path_of(k, accum);
      EXPECT_EQ(path.rfind(tile, 0), 0u) << path;
      if (k.c == 14)
        EXPECT_TRUE(path.find(" scalar") != std::string::npos && path.find("padded") == std::string::npos) << path;
      else
        EXPECT_NE(path.find("(channels padded 13->16)"), std::string::npos) << path;
    }
  }
  {
    const BfcAccum accum = BfcAccum::fp32;
    const std::string small = "bfc f16 small (fp32 accumulation)", tile = "bfc f16 tile (fp32 accumulation)",
                      tiled = "bfc f16 fp32 tiled";
    for (const Case& k : {same(1, 17, 34, 13, 5, 5), same(1, 17, 34, 249, 3, 3), same(1, 40, 40, 124, 1, 3),
                          same(1, 40, 40, 124, 3, 3)}) {
      const std::string path = path_of(k, accum);
      EXPECT_TRUE(path.rfind(small, 0) == 0 && path.find("padded") == std::string::npos) << path;
    }
    for (const Case& k : {same(1, 40, 40, 249, 5, 5), same(64, 32, 32, 249, 5, 5), same(1, 40, 40, 124, 5, 5),
                          same(1, 40, 40, 249, 7, 7), same(1, 40, 40, 249, 3, 3), same(64, 8, 8, 998, 5, 5),
                          same(1, 8, 8, 998, 3, 3)}) {
      const std::string path = path_of(k, accum);
      EXPECT_TRUE(path.rfind("bfc f16 span (fp32 accumulation)", 0) == 0 && path.find("padded") == std::string::npos)
          << path;
    }
    for (const Case& k : {same(1, 17, 34, 72, 5, 5), same(1, 40, 40, 72, 5, 5)})  // C % 8 == 0, small maps too
      EXPECT_EQ(path_of(k, accum).rfind(tile, 0), 0u) << path_of(k, accum);
    for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(1, 40, 40, 72, 3, 3)})
      EXPECT_EQ(path_of(k, accum).rfind(tiled, 0), 0u) << path_of(k, accum);
    const std::string narrow = path_of(same(1, 17, 33, 124, 5, 5), accum);  // even C beyond 3x3: 8-byte copies
    EXPECT_TRUE(narrow.rfind(tile, 0) == 0 && narrow.find("padded") == std::string::npos) << narrow;
    EXPECT_EQ(path_of(same(1, 17, 34, 72, 7, 7), accum).rfind(tile, 0), 0u);                    // beyond 5x5
    EXPECT_EQ(path_of(Case{1, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1}, accum).rfind(tile, 0), 0u);  // stride 2
  }
  const DwconvParams small = same(1, 17, 34, 72, 5, 5).params();
  EXPECT_FALSE(bfc_f16_tiled_supports(small, reinterpret_cast<const void*>(std::uintptr_t{4}), nullptr));
  EXPECT_FALSE(bfc_f16_tiled_supports(same(1, 17, 34, 6, 5, 5).params(), nullptr, nullptr));  // C % 4 != 0
  DeviceArray<__half> x(small.x_elems()), dy(small.y_elems());
  DeviceArray<float> dw(small.w_elems());
  EXPECT_THROW(launch_dwconv_bfc_f16_tiled(x.get(), dy.get(), dw.get(), small, BfcAccum::ha, BfcF16TiledForce{0, 20},
                                           nullptr),
               cnn::Error);
}

}  // namespace
}  // namespace cnn::dwconv
