// FP16 depthwise kernels (tensor-core Flash-DWC-T, CUDA-core and direct FP16 kernels; the three ops through the
// entry points) against the FP64 reference on FP16-rounded U(-1,1) inputs, and cuDNN's FP16 depthwise conv as the
// same-precision baseline. The backward-filter kernels have their own file (dwconv_fp16_bfc_cuda_test.cpp); the host
// emulation of hybrid accumulation is tested on the CPU.
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
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

using f16test::Case;
using f16test::DeviceArray;
using f16test::HalfData;
using f16test::kMareBound;
using f16test::same;
using f16test::widen;

// Device results of the three ops on one case; outputs poisoned before each run.
struct GpuResults {
  std::vector<double> y, y_no_bias, dx, dw_fp32, dw_ha;
  std::vector<double> dx_pair, dw_pair;  // both backward ops in one call (dwconv_backward_cuda), FP32 accumulation
};

GpuResults run_gpu(const Case& k, const HalfData& d, size_t misalign) {
  const DwconvParams p = k.params();
  DeviceArray<__half> x(p.x_elems(), misalign), w(p.w_elems(), misalign), b(p.c, misalign), dy(p.y_elems(), misalign);
  DeviceArray<__half> y(p.y_elems(), misalign), dx(p.x_elems(), misalign);
  DeviceArray<float> dw(p.w_elems());
  x.upload(d.x.data()), w.upload(d.w.data()), b.upload(d.bias.data()), dy.upload(d.dy.data());
  y.poison(), dx.poison();
  ScratchBuffer scratch;
  dwconv_forward_cuda(x.get(), w.get(), b.get(), y.get(), p, nullptr, scratch.fn());
  dwconv_backward_data_cuda(dy.get(), w.get(), dx.get(), p, nullptr, scratch.fn());
  GpuResults r;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  r.y = widen(y.download<Half>());
  y.poison();
  dwconv_forward_cuda(x.get(), w.get(), nullptr, y.get(), p, nullptr, scratch.fn());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  r.y_no_bias = widen(y.download<Half>());
  r.dx = widen(dx.download<Half>());
  for (BfcAccum accum : {BfcAccum::fp32, BfcAccum::ha}) {
    dw.poison();
    dwconv_backward_filter_cuda(x.get(), dy.get(), dw.get(), p, accum, nullptr, scratch.fn());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = dw.download<float>();
    (accum == BfcAccum::ha ? r.dw_ha : r.dw_fp32).assign(got.begin(), got.end());
  }
  dx.poison(), dw.poison();
  dwconv_backward_cuda(x.get(), dy.get(), w.get(), dx.get(), dw.get(), p, BfcAccum::fp32, nullptr, scratch.fn());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  r.dx_pair = widen(dx.download<Half>());
  const std::vector<float> got = dw.download<float>();
  r.dw_pair.assign(got.begin(), got.end());
  return r;
}


void check_case(const Case& k, uint64_t seed, size_t misalign, bool compare_cudnn) {
  const DwconvParams p = k.params();
  const std::string name = p.str() + " seed=" + std::to_string(seed) + " misalign=" + std::to_string(misalign);
  const HalfData d = f16test::make_data(p, seed);
  const f16test::References ref = f16test::references(p, d);
  const GpuResults g = run_gpu(k, d, misalign);

  const f16test::ErrorStats fwd = f16test::compare(g.y, ref.y, ref.y_mag, f16test::fp16_output_bound(p.fh * p.fw + 1));
  const int taps_dx = ((p.fh + p.stride_h - 1) / p.stride_h) * ((p.fw + p.stride_w - 1) / p.stride_w);
  const f16test::ErrorStats bdc = f16test::compare(g.dx, ref.dx, ref.dx_mag, f16test::fp16_output_bound(taps_dx));
  const double l_terms = double(p.n) * p.oh() * p.ow();
  const f16test::ErrorStats bfc = f16test::compare(g.dw_fp32, ref.dw, ref.dw_mag, f16test::fp32_output_bound(l_terms));
  const f16test::ErrorStats bdc_pair =
      f16test::compare(g.dx_pair, ref.dx, ref.dx_mag, f16test::fp16_output_bound(taps_dx));
  const f16test::ErrorStats bfc_pair =
      f16test::compare(g.dw_pair, ref.dw, ref.dw_mag, f16test::fp32_output_bound(l_terms));
  // HA vs its host emulation: identical FP16 runs, only the order of the FP32 merges differs (<= one FP32 rounding
  // per run, chunk and atomic add, each <= 2^-24 of the running magnitude).
  const double merges = l_terms / kBfcHaRun + 2.0 * p.n * p.oh() + 2;  // runs + chunk atomics
  const f16test::ErrorStats ha_emu = f16test::compare(g.dw_ha, ref.dw_ha_emulated, ref.dw_mag,
                                                      f16test::fp32_output_bound(merges));
  const f16test::ErrorStats ha = f16test::compare(g.dw_ha, ref.dw, ref.dw_mag, f16test::ha_bound(l_terms));

  const std::string paths = " [" + dwconv_path_name(DwconvOp::forward, p, DType::f16) + " | " +
                            dwconv_path_name(DwconvOp::backward_data, p, DType::f16) + " | " +
                            dwconv_path_name(DwconvOp::backward_filter, p, DType::f16, BfcAccum::ha) + "]";
  std::printf("%s%s\n  MARE fwd %.3e bdc %.3e bfc(fp32) %.3e bfc(ha) %.3e\n", name.c_str(), paths.c_str(), fwd.mare,
              bdc.mare, bfc.mare, ha.mare);
  f16test::expect_ok(fwd, "forward " + name + paths);
  f16test::expect_ok(bdc, "backward-data " + name + paths);
  f16test::expect_ok(bfc, "backward-filter fp32 " + name + paths);
  f16test::expect_ok(bdc_pair, "backward-data in dwconv_backward_cuda " + name + paths);
  f16test::expect_ok(bfc_pair, "backward-filter in dwconv_backward_cuda " + name + paths);
  f16test::expect_ok(ha_emu, "backward-filter ha vs host emulation " + name + paths);
  f16test::expect_ok(ha, "backward-filter ha vs FP64 (worst-case HA bound) " + name + paths);
  EXPECT_LE(fwd.mare, kMareBound) << "forward " << name << paths;
  EXPECT_LE(bdc.mare, kMareBound) << "backward-data " << name << paths;
  EXPECT_LE(bfc.mare, kMareBound) << "backward-filter fp32 " << name << paths;

  if (!compare_cudnn) return;
  const f16test::CudnnMare cu = f16test::cudnn_mare(p, d, ref);
  std::printf("  cuDNN FP16 MARE fwd(no bias) %.3e bdc %.3e bfc %.3e\n", cu.fwd, cu.bdc, cu.bfc);
  // Same-precision baseline rule: no worse than 2x cuDNN's FP16 error on the same inputs (forward without bias,
  // as cuDNN's convolution call computes it).
  const double fwd_no_bias = f16test::mare_of(g.y_no_bias, ref.y_no_bias);
  if (cu.fwd >= 0) {
    EXPECT_LE(fwd_no_bias, 2 * cu.fwd) << "forward vs cuDNN FP16 " << name << paths;
  }
  if (cu.bdc >= 0) {
    EXPECT_LE(bdc.mare, 2 * cu.bdc) << "backward-data vs cuDNN FP16 " << name << paths;
  }
  if (cu.bfc >= 0) {
    EXPECT_LE(bfc.mare, 2 * cu.bfc) << "backward-filter vs cuDNN FP16 " << name << paths;
  }
}

// A directly launched kernel's forward output y and backward-data output dx against the FP64 references: the
// element bound of FP16 rounding over the taps summed, and the mean relative error bound.
void expect_forward_style_match(const DwconvParams& p, const f16test::References& ref, const DeviceArray<__half>& y,
                                const DeviceArray<__half>& dx, const std::string& name) {
  const auto fwd =
      f16test::compare(widen(y.download<Half>()), ref.y, ref.y_mag, f16test::fp16_output_bound(p.fh * p.fw + 1));
  const auto bdc =
      f16test::compare(widen(dx.download<Half>()), ref.dx, ref.dx_mag, f16test::fp16_output_bound(p.fh * p.fw));
  f16test::expect_ok(fwd, "forward " + name);
  f16test::expect_ok(bdc, "backward-data " + name);
  EXPECT_LE(fwd.mare, kMareBound) << "forward " << name;
  EXPECT_LE(bdc.mare, kMareBound) << "backward-data " << name;
}

TEST(DwconvFp16Gpu, AwkwardShapesMatchReferenceAndCudnn) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 500;
  for (int f : {1, 3, 7, 13, 31, 51}) check_case(same(1, 17, 34, 72, f, f), seed++, 0, true);
  check_case(same(1, 17, 34, 72, 51, 5), seed++, 0, true);
  check_case(same(1, 17, 34, 72, 5, 51), seed++, 0, true);
  check_case({2, 17, 34, 72, 3, 3, 2, 2, 1, 1, 1, 1}, seed++, 0, true);     // stride 2
  check_case({1, 17, 34, 72, 7, 7, 2, 2, 3, 3, 3, 3}, seed++, 0, true);     // stride 2, larger filter
  check_case({1, 17, 34, 72, 4, 6, 1, 1, 1, 2, 3, 2}, seed++, 0, false);    // even filter, asymmetric padding
  check_case({1, 17, 34, 72, 3, 5, 1, 1, 4, 0, 0, 5}, seed++, 0, false);    // padding > F-1: backward-data crops
  check_case({1, 17, 34, 72, 7, 7, 2, 2, 3, 2, 1, 3}, seed++, 0, false);    // stride 2, asymmetric padding
  check_case(same(1, 17, 34, 12, 7, 7), seed++, 0, true);                   // C % 8 != 0: padded to 16
  check_case(same(1, 17, 34, 7, 3, 3), seed++, 0, true);                    // C odd
  check_case(same(2, 19, 70, 249, 5, 5), seed++, 0, false);                 // small filter at odd C: tiled direct
  check_case(same(2, 19, 70, 124, 5, 5), seed++, 0, false);                 // C % 8 == 4: cuda-core, 4-half lanes
  check_case({1, 17, 34, 12, 3, 5, 1, 1, 4, 0, 0, 5}, seed++, 0, false);    // the same, backward-data crops
  check_case(same(1, 17, 34, 14, 5, 5), seed++, 0, false);                  // C % 4 == 2: 4-byte bfc copies
  check_case({2, 17, 34, 12, 5, 5, 2, 1, 2, 2, 1, 3}, seed++, 0, false);    // bfc tile at stride 2x1, 8-byte copies
  check_case(same(1, 17, 34, 124, 51, 5), seed++, 0, false);                // SLaK's strips at 124: ring unpadded
  check_case(same(1, 17, 34, 124, 51, 5), seed++, 4, false);                // ... with 8-byte aligned tensors
  check_case(same(1, 13, 20, 249, 5, 51), seed++, 0, false);                // at 249: padded input, direct output
  check_case(same(1, 17, 35, 15, 51, 5), seed++, 0, false);                 // odd C and W, transposed view
  check_case(same(2, 19, 33, 7, 9, 9), seed++, 1, false);                   // ... 2-byte aligned output
  check_case(same(1, 17, 34, 12, 7, 7), seed++, 1, false);                  // 8-tap policy, 2-byte aligned output
  check_case(same(1, 17, 34, 124, 51, 5), seed++, 2, false);                // C % 8 == 4, 4-byte aligned: padded
  check_case(same(1, 17, 34, 30, 5, 13), seed++, 0, false);                 // C % 4 == 2: ring pairs unpadded
  check_case(same(1, 17, 34, 30, 5, 13), seed++, 2, false);                 // ... with 4-byte aligned tensors
  check_case(same(2, 19, 40, 14, 9, 9), seed++, 2, false);                  // one channel block, its last pair
  check_case(same(1, 17, 34, 46, 51, 5), seed++, 0, false);                 // a tall strip, transposed view
  check_case({1, 17, 34, 13, 5, 5, 2, 2, 2, 2, 2, 2}, seed++, 0, false);    // C odd, stride 2
  check_case(same(2, 9, 7, 40, 29, 29), seed++, 0, true);                   // output narrower than 8: T1
  check_case(same(1, 17, 20, 136, 11, 11), seed++, 0, true);                // T2, three channel blocks
  check_case(same(2, 8, 8, 998, 5, 5), seed++, 0, false);                   // even C, 8 rows: tiled direct, 2 per lane
  check_case(same(1, 5, 7, 75, 3, 3), seed++, 0, false);                    // odd C, 5 rows: tiled direct, 8-row tile
}

// pad=off keeps odd channel counts on the direct kernels (padded plans are the default, above).
TEST(DwconvFp16Gpu, OddChannelsUnpaddedMatchReference) {
  CNN_REQUIRE_GPU();
  const Overrides saved = overrides();
  set_overrides(parse_overrides("pad=off", "test"));
  check_case(same(1, 17, 34, 12, 7, 7), 601, 0, false);
  check_case(same(1, 13, 20, 249, 5, 51), 602, 0, false);
  set_overrides(saved);
}

TEST(DwconvFp16Gpu, MisalignedPointersMatch) {
  CNN_REQUIRE_GPU();
  check_case(same(1, 17, 34, 72, 7, 7), 77, 1, false);
  check_case(same(1, 17, 34, 64, 3, 3), 78, 3, false);
  // 4- and 8-byte aligned: the backward-filter tile kernel stages with 4- and 8-byte copies.
  check_case(same(1, 17, 34, 72, 7, 7), 79, 2, false);
  check_case(same(2, 17, 34, 72, 5, 5), 80, 4, false);
  // The tiled direct kernel at an even C: one channel per lane when 2-byte aligned, two when 4-byte aligned.
  check_case(same(2, 8, 8, 998, 5, 5), 81, 1, false);
  check_case(same(2, 8, 8, 998, 5, 5), 82, 2, false);
}

TEST(DwconvFp16Gpu, LargerShapesMatchReference) {
  CNN_REQUIRE_GPU();
  check_case(same(2, 40, 70, 128, 17, 17), 4242, 0, true);
  check_case(same(1, 32, 32, 256, 51, 51), 4243, 0, false);
}

// The dispatcher picks one kernel per shape; every forward-style kernel must be right on every shape class.
TEST(DwconvFp16Gpu, EveryForwardKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9100;
  // Filter widths cover every fragment count of the ring kernel (gamma = ceil(FW/8) = 1..8); heights > 16 give
  // several row tiles, C = 72 and 24 leave a partial 16-channel block, odd paddings crop or extend; C = 136 and 200
  // leave a partial 64-channel slice of the CUDA-core kernels, asymmetric padding puts TMA boxes past either edge;
  // 4x64x64x200 has more tiles than the TMA kernel has blocks, so each block walks several; FW = 63 is the ring
  // kernels' widest class (8 fragments; 17 block offsets on channel pairs).
  for (const Case& k : {same(1, 17, 34, 72, 3, 3), same(2, 13, 70, 64, 9, 9), same(1, 9, 20, 8, 29, 29),
                        same(1, 33, 12, 64, 51, 5), same(1, 12, 33, 128, 5, 51), same(1, 17, 34, 72, 2, 2),
                        Case{1, 17, 34, 72, 3, 10, 1, 1, 4, 0, 0, 12}, same(1, 40, 45, 24, 17, 17),
                        same(1, 21, 50, 16, 7, 40), Case{2, 35, 29, 32, 13, 47, 1, 1, 2, 9, 30, 1},
                        same(1, 19, 66, 8, 61, 61), same(1, 23, 9, 16, 31, 31),
                        same(2, 17, 34, 72, 4, 4), same(1, 20, 41, 136, 5, 5),
                        Case{3, 21, 19, 64, 5, 3, 1, 1, 0, 4, 2, 0}, same(2, 35, 70, 200, 1, 1),
                        same(4, 64, 64, 200, 3, 3), same(1, 10, 70, 16, 5, 63)}) {
    const DwconvParams p = k.params();
    const HalfData d = f16test::make_data(p, seed++);
    const f16test::References ref = f16test::references(p, d);
    DeviceArray<__half> x(p.x_elems()), w(p.w_elems()), b(p.c), y(p.y_elems()), dx(p.x_elems()), dy(p.y_elems());
    x.upload(d.x.data()), w.upload(d.w.data()), b.upload(d.bias.data()), dy.upload(d.dy.data());
    const ConvGeometry gf = forward_geometry(p), gb = backward_data_geometry_stride1(p);
    // Every kernel and configuration that can run the shape: T-theta, the direct vec8 and tiled kernels, the register kernel
    // with 1, 2 and 4 groups per row, the ring kernel with both MMA policies at Q = 1, 2, 4, and the TMA kernel on
    // each lane shape with 8- and 16-column tiles and 2-4 stages.
    using Launch = std::function<void(const __half*, const __half*, const __half*, __half*, const ConvGeometry&)>;
    std::vector<std::pair<std::string, Launch>> kernels;
    for (int theta : {1, 2, 4})
      kernels.emplace_back("tc T" + std::to_string(theta), [theta](auto s, auto w, auto b, auto d, const auto& g) {
        launch_dwconv_tc_f16(s, w, b, d, g, theta, nullptr);
      });
    kernels.emplace_back("direct vec8", [](auto s, auto w, auto b, auto d, const auto& g) {
      launch_dwconv_direct_f16_forward(s, w, b, d, g, true, nullptr);
    });
    if (direct_tile_supports(gf) && direct_tile_supports(gb))
      for (int ch = 1; ch <= direct_tile_lane_channels(p.c, true, 16); ++ch)
        kernels.emplace_back("direct tile lanes=32x" + std::to_string(ch),
                             [ch](auto s, auto w, auto b, auto d, const auto& g) {
                               launch_dwconv_direct_tile_f16(s, w, b, d, g, ch, direct_tile_width(g, true), nullptr);
                             });
    if (p.fw <= kCcMaxFw)
      for (int groups : {1, 2, 4})
        kernels.emplace_back("cuda-core groups=" + std::to_string(groups),
                             [groups](auto s, auto w, auto b, auto d, const auto& g) {
                               launch_dwconv_cc_f16(s, w, b, d, g, groups, nullptr);
                             });
    // The ring kernel also on the transposed view, where FH is the view's width.
    for (bool transposed : {false, true})
      if ((transposed ? p.fh : p.fw) <= kTcRingMaxFw)
        for (RingMma mma : {RingMma::taps, RingMma::pairs})
          for (int q : {1, 2, 4})
            kernels.emplace_back(std::string("tc-ring ") + (mma == RingMma::pairs ? "pairs" : "taps") + " Q" +
                                     std::to_string(q) + (transposed ? " transposed" : ""),
                                 [mma, q, transposed](auto s, auto w, auto b, auto d, const auto& g) {
                                   launch_dwconv_tc_ring_f16(s, w, b, d, g, q, mma, transposed, nullptr);
                                 });
    if (tma_cc_f16_supports(gf) && tma_cc_f16_supports(gb))
      for (const TmaCcConfig cfg : {TmaCcConfig{16, 1, 8, 3}, TmaCcConfig{8, 1, 8, 3}, TmaCcConfig{8, 2, 8, 3},
                                    TmaCcConfig{8, 2, 8, 2}, TmaCcConfig{16, 1, 16, 3}, TmaCcConfig{8, 1, 16, 2},
                                    TmaCcConfig{8, 2, 16, 4}, TmaCcConfig{8, 1, 16, 4}}) {
        if (!tma_cc_config_fits(gf, cfg, true) || !tma_cc_config_fits(gb, cfg, true)) continue;
        kernels.emplace_back("cuda-core tma lane=" + std::to_string(cfg.lane_bytes) + " rows=" +
                                 std::to_string(cfg.rows_per_thread) + " cols=" + std::to_string(cfg.tile_cols) +
                                 " stages=" + std::to_string(cfg.stages),
                             [cfg](auto s, auto w, auto b, auto d, const auto& g) {
                               launch_dwconv_tma_cc_f16(s, w, b, d, g, cfg, nullptr);
                             });
      }
    for (const auto& [what, launch] : kernels) {
      y.poison(), dx.poison();
      launch(x.get(), w.get(), b.get(), y.get(), gf);
      launch(dy.get(), w.get(), nullptr, dx.get(), gb);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      const std::string name = what + " " + p.str() + " seed=" + std::to_string(seed - 1);
      expect_forward_style_match(p, ref, y, dx, name);
    }
  }
}

// The tiled direct kernel on both lane widths, launched directly in the forward and backward-data geometries: even
// C on one and two channels per lane (998 and 74 leave a partial 64- and 32-channel block) and odd C (249, 75), maps
// of at most 8 rows (8x8, 5x7, 6x9: 8-row tiles) and taller (17x13, 19x40: 16-row tiles, several row and column
// tiles), 3x3 to 13x13 filters (13x5 and 5x13
// strips, 9x9, 11x11 and a 13x13), an even filter with asymmetric padding and a padding that crops, each on tiles of
// 8, 16 and 32 columns where they fit. Two channels per lane and every tile width must give the same bits as one
// channel on the first (the same FMAs in the same order, one rounding per output).
TEST(DwconvFp16Gpu, DirectTileKernelMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9600;
  for (const Case& k :
       {same(2, 8, 8, 998, 5, 5), same(1, 5, 7, 74, 3, 3), same(2, 17, 13, 74, 5, 5), same(1, 8, 8, 249, 5, 5),
        same(1, 5, 7, 75, 7, 7), same(2, 17, 13, 249, 5, 5), same(1, 19, 40, 998, 3, 3),
        Case{1, 6, 9, 74, 4, 5, 1, 1, 1, 2, 3, 1}, Case{1, 17, 34, 38, 3, 5, 1, 1, 4, 0, 0, 5},
        same(2, 8, 8, 998, 13, 5), same(1, 8, 8, 998, 5, 13), same(1, 17, 13, 249, 9, 9), same(1, 19, 40, 75, 11, 11),
        same(1, 20, 36, 74, 13, 13), Case{1, 9, 30, 38, 12, 9, 1, 1, 2, 3, 0, 8}}) {
    const DwconvParams p = k.params();
    const HalfData d = f16test::make_data(p, seed++);
    const f16test::References ref = f16test::references(p, d);
    DeviceArray<__half> x(p.x_elems()), w(p.w_elems()), b(p.c), y(p.y_elems()), dx(p.x_elems()), dy(p.y_elems());
    x.upload(d.x.data()), w.upload(d.w.data()), b.upload(d.bias.data()), dy.upload(d.dy.data());
    std::vector<Half> y1, dx1;  // the first lane width and tile width run
    const ConvGeometry gf = forward_geometry(p), gb = backward_data_geometry_stride1(p);
    for (int tile_w : {8, 16, 32}) {
      if (!direct_tile_width_fits(gf, true, tile_w) || !direct_tile_width_fits(gb, true, tile_w)) continue;
      for (int ch = 1; ch <= direct_tile_lane_channels(p.c, true, 16); ++ch) {
        y.poison(), dx.poison();
        launch_dwconv_direct_tile_f16(x.get(), w.get(), b.get(), y.get(), gf, ch, tile_w, nullptr);
        launch_dwconv_direct_tile_f16(dy.get(), w.get(), nullptr, dx.get(), gb, ch, tile_w, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::string name =
            "direct tile lanes=32x" + std::to_string(ch) + " cols=" + std::to_string(tile_w) + " " + p.str();
        expect_forward_style_match(p, ref, y, dx, name);
        const std::vector<Half> yh = y.download<Half>(), dxh = dx.download<Half>();
        if (y1.empty()) {
          y1 = yh, dx1 = dxh;
          continue;
        }
        for (size_t i = 0; i < yh.size(); ++i) ASSERT_EQ(yh[i].bits, y1[i].bits) << "forward at " << i << " " << name;
        for (size_t i = 0; i < dxh.size(); ++i)
          ASSERT_EQ(dxh[i].bits, dx1[i].bits) << "backward-data at " << i << " " << name;
      }
    }
    ASSERT_FALSE(y1.empty()) << "no tile width fits " << p.str();
  }
}

// The CUDA-core register kernel on 4-half lanes (C % 8 == 4, 8-byte aligned) with 1 and 2 groups per row: a partial
// 64-channel slice (C = 124, 76), rows shorter than a group, asymmetric padding that extends and crops, 1 <= FW <= 5.
TEST(DwconvFp16Gpu, CudaCoreKernelOnFourHalfLanesMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9300;
  for (const Case& k : {same(2, 19, 70, 124, 5, 5), same(1, 9, 5, 76, 3, 3), Case{1, 17, 34, 12, 3, 5, 1, 1, 4, 0, 0, 5},
                        Case{2, 21, 19, 20, 5, 4, 1, 1, 0, 4, 2, 1}, same(1, 13, 40, 44, 7, 1), same(1, 16, 33, 4, 2, 2)}) {
    const DwconvParams p = k.params();
    const HalfData d = f16test::make_data(p, seed++);
    const f16test::References ref = f16test::references(p, d);
    DeviceArray<__half> x(p.x_elems()), w(p.w_elems()), b(p.c), y(p.y_elems()), dx(p.x_elems()), dy(p.y_elems());
    x.upload(d.x.data()), w.upload(d.w.data()), b.upload(d.bias.data()), dy.upload(d.dy.data());
    ASSERT_EQ(cc_f16_lane_halves(p.c), 4) << p.str();
    ASSERT_EQ(cc_f16_max_groups(p.c), 2) << p.str();
    for (int groups : {1, 2}) {
      y.poison(), dx.poison();
      launch_dwconv_cc_f16(x.get(), w.get(), b.get(), y.get(), forward_geometry(p), groups, nullptr);
      launch_dwconv_cc_f16(dy.get(), w.get(), nullptr, dx.get(), backward_data_geometry_stride1(p), groups, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::string name = "groups=" + std::to_string(groups) + " " + p.str();
      expect_forward_style_match(p, ref, y, dx, name);
    }
    EXPECT_THROW(launch_dwconv_cc_f16(x.get(), w.get(), b.get(), y.get(), forward_geometry(p), 4, nullptr), cnn::Error);
  }
}

// The ring kernel at C % 8 == 4 (8-byte aligned, the last 16-channel block half full, 8-byte output stores), both
// MMA policies at Q = 1, 2, 4, on the maps and on their transposed view: a partial block at C = 124 and 20, a single
// group at C = 4, tall and wide strips, and paddings that crop and extend.
TEST(DwconvFp16Gpu, RingKernelAtFourChannelGroupsMatchesReference) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 9400;
  for (const Case& k : {same(1, 19, 40, 124, 7, 7), same(2, 21, 17, 20, 13, 13), same(1, 40, 24, 12, 51, 5),
                        same(1, 12, 45, 124, 5, 51), Case{1, 23, 30, 4, 9, 17, 1, 1, 0, 10, 6, 1}}) {
    const DwconvParams p = k.params();
    const HalfData d = f16test::make_data(p, seed++);
    const f16test::References ref = f16test::references(p, d);
    // Offset by 4 halves: 8-byte aligned only, as a tensor view at channel 4 would be.
    DeviceArray<__half> x(p.x_elems(), 4), w(p.w_elems(), 4), b(p.c, 4), y(p.y_elems(), 4), dx(p.x_elems(), 4),
        dy(p.y_elems(), 4);
    x.upload(d.x.data()), w.upload(d.w.data()), b.upload(d.bias.data()), dy.upload(d.dy.data());
    for (bool transposed : {false, true})
      for (RingMma mma : {RingMma::taps, RingMma::pairs})
        for (int q : {1, 2, 4}) {
          y.poison(), dx.poison();
          launch_dwconv_tc_ring_f16(x.get(), w.get(), b.get(), y.get(), forward_geometry(p), q, mma, transposed,
                                    nullptr);
          launch_dwconv_tc_ring_f16(dy.get(), w.get(), nullptr, dx.get(), backward_data_geometry_stride1(p), q, mma,
                                    transposed, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::string name = std::string(mma == RingMma::pairs ? "pairs" : "taps") + " Q" + std::to_string(q) +
                                   (transposed ? " transposed " : " ") + p.str();
          expect_forward_style_match(p, ref, y, dx, name);
        }
  }
}

// Forward and backward-data take the TMA-fed kernel where it was measured faster (8-byte lanes; one row per thread
// at 3x3, two at 5x5), the other kernels elsewhere.
TEST(DwconvFp16Gpu, ForwardPathTakesTmaKernelAtMeasuredShapes) {
  CNN_REQUIRE_GPU();
  const auto path_of = [](DwconvOp op, const Case& k) { return dwconv_path_name(op, k.params(), DType::f16); };
  if (!tma_cc_f16_supports(forward_geometry(same(1, 17, 34, 72, 3, 3).params()))) GTEST_SKIP() << "needs sm_90";
  for (DwconvOp op : {DwconvOp::forward, DwconvOp::backward_data}) {
    const std::string wide = "cuda-core tma FW=3 tile=16x16 BN=64 lane=8B stages=3";
    EXPECT_NE(path_of(op, same(1, 17, 34, 72, 3, 3)).find(wide), std::string::npos)
        << path_of(op, same(1, 17, 34, 72, 3, 3));
    EXPECT_NE(path_of(op, same(1, 17, 34, 72, 5, 5)).find("cuda-core tma FW=5 tile=16x8 BN=64 lane=8B rows=2"),
              std::string::npos)
        << path_of(op, same(1, 17, 34, 72, 5, 5));
    for (const Case& k : {same(1, 17, 34, 72, 5, 3), same(1, 17, 34, 72, 7, 7)})
      EXPECT_EQ(path_of(op, k).find("tma"), std::string::npos) << path_of(op, k);
    const std::string small = path_of(op, same(1, 17, 34, 13, 3, 3));  // C % 4 != 0, up to 5x5: unpadded
    EXPECT_NE(small.find("direct tile"), std::string::npos) << small;
    const std::string half4 = path_of(op, same(1, 17, 34, 12, 5, 5));  // C % 8 == 4: 4-half lanes, unpadded
    EXPECT_EQ(half4, std::string(op == DwconvOp::forward ? "fwd" : "bdc") +
                         " f16 cuda-core FW=5 TM=8 BN=64 lane=4h tile=4x16");
    // Larger: the ring kernel, unpadded at C % 8 == 4, on 16 padded channels at an odd C.
    EXPECT_EQ(path_of(op, same(1, 17, 34, 12, 7, 7)),
              std::string(op == DwconvOp::forward ? "fwd" : "bdc") + " f16 tc-ring tile=16x32 BN=16 frags/row=1");
    const std::string padded = path_of(op, same(1, 17, 34, 13, 7, 7));
    EXPECT_NE(padded.find("tc-ring tile=16x32 BN=16 frags/row=1 (channels padded 13->16)"), std::string::npos)
        << padded;
    // Tall strips on the transposed view (there 5 x 51 on channel pairs, 17 columns: Q = 2).
    const std::string tall = path_of(op, same(1, 17, 34, 72, 51, 5));
    EXPECT_NE(tall.find("tc-ring mma=pairs tile=16x16 BN=16 offsets/group=14 transposed"), std::string::npos) << tall;
    // The ring kernel on channel pairs from FW = 9 (measured faster at 9-51), 8-tap fragments at 6-8.
    for (int f : {9, 13, 17, 31, 51, 64})
      EXPECT_NE(path_of(op, same(1, 17, 34, 72, f, f)).find("tc-ring mma=pairs"), std::string::npos) << f;
    for (int f : {6, 7, 8})
      EXPECT_NE(path_of(op, same(1, 17, 34, 72, f, f)).find("tc-ring tile="), std::string::npos) << f;
  }
}

TEST(DwconvFp16CudaEntry, RejectsBadParamsBeforeTouchingTheDevice) {
  DwconvParams p;
  p.n = 1, p.ih = 4, p.iw = 4, p.c = 8, p.fh = 9, p.fw = 3;  // filter taller than the unpadded input
  __half dummy{};
  float dummy_f = 0;
  EXPECT_THROW(dwconv_forward_cuda(&dummy, &dummy, nullptr, &dummy, p, nullptr, {}), cnn::Error);
  p.fh = 3, p.stride_h = 0;
  EXPECT_THROW(dwconv_backward_data_cuda(&dummy, &dummy, &dummy, p, nullptr, {}), cnn::Error);
  p.stride_h = 1;
  EXPECT_THROW(dwconv_backward_filter_cuda(nullptr, &dummy, &dummy_f, p, BfcAccum::ha, nullptr, {}), cnn::Error);
  // The TMA kernel's lane configurations: two rows per thread exist only with 8-byte lanes, and lanes are 8 or 16.
  const ConvGeometry g = forward_geometry(same(1, 17, 34, 72, 5, 5).params());
  const auto refused = [](const auto& call, const std::string& why) {
    try {
      call();
    } catch (const cnn::Error& e) {
      return std::string(e.what()).find(why) != std::string::npos;
    }
    return false;
  };
  for (const auto& [cfg, why] : {std::pair{TmaCcConfig{16, 2}, "rows per thread"},
                                 std::pair{TmaCcConfig{8, 3}, "rows per thread"},
                                 std::pair{TmaCcConfig{4, 1}, "lane width"},
                                 std::pair{TmaCcConfig{8, 1, 24}, "tile width"},
                                 std::pair{TmaCcConfig{8, 1, 8, 5}, "stages"}}) {
    EXPECT_TRUE(refused([&] { launch_dwconv_tma_cc_f16(&dummy, &dummy, nullptr, &dummy, g, cfg, nullptr); }, why));
    EXPECT_TRUE(refused([&] { tma_cc_f16_describe(g, cfg); }, why));
  }
}

}  // namespace
}  // namespace cnn::dwconv
