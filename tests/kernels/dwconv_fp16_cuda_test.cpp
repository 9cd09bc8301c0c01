// FP16 depthwise kernels (tensor-core Flash-DWC-T, CUDA-core and direct FP16 kernels, FP16 backward-filter with
// FP32 / hybrid accumulation) against the FP64 reference on FP16-rounded U(-1,1) inputs, and cuDNN's FP16
// depthwise conv as the same-precision baseline. The host emulation of hybrid accumulation is tested on the CPU.
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
#include "tests/kernels/dwconv_fp16_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::dwconv {
namespace {

using f16test::Case;
using f16test::HalfData;

// Device buffer of `n` elements of T (plus `offset` leading elements, to hand out misaligned pointers).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n, size_t offset = 0) : n_(n), offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, (n + offset + 1) * sizeof(T)), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(base_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return base_ + offset_; }
  void upload(const void* host) const {
    ASSERT_EQ(cudaMemcpy(get(), host, n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  void poison() const { ASSERT_EQ(cudaMemset(get(), 0xFF, n_ * sizeof(T)), cudaSuccess); }  // NaN in FP16 and FP32
  template <class H>
  std::vector<H> download() const {
    std::vector<H> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  T* base_ = nullptr;
  size_t n_, offset_;
};

std::vector<double> widen(const std::vector<Half>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = double(float(v[i]));
  return out;
}

// Device results of the three ops on one case; outputs poisoned before each run.
struct GpuResults {
  std::vector<double> y, y_no_bias, dx, dw_fp32, dw_ha;
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
  return r;
}

// MARE bound on the awkward shapes: FP16 outputs carry a rounding error of at most 2^-11 relative (mean ~2^-13),
// FP32 accumulation adds far less; 2e-3 leaves room while a dropped or doubled tap (error ~1/sqrt(K) relative, >= 1e-2
// for K <= 2601 taps) fails.
constexpr double kMareBound = 2e-3;

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

Case same(int n, int h, int w, int c, int fh, int fw) {
  return {n, h, w, c, fh, fw, 1, 1, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2};
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
  check_case(same(1, 17, 34, 124, 51, 5), seed++, 0, false);                // SLaK's strips and widths: padded
  check_case(same(1, 13, 20, 249, 5, 51), seed++, 0, false);
  check_case({1, 17, 34, 13, 5, 5, 2, 2, 2, 2, 2, 2}, seed++, 0, false);    // C odd, stride 2
  check_case(same(2, 9, 7, 40, 29, 29), seed++, 0, true);                   // output narrower than 8: T1
  check_case(same(1, 17, 20, 136, 11, 11), seed++, 0, true);                // T2, three channel blocks
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

TEST(DwconvFp16Gpu, MisalignedPointersTakeDirectPathAndMatch) {
  CNN_REQUIRE_GPU();
  check_case(same(1, 17, 34, 72, 7, 7), 77, 1, false);
  check_case(same(1, 17, 34, 64, 3, 3), 78, 3, false);
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
      kernels.emplace_back("direct tile", [](auto s, auto w, auto b, auto d, const auto& g) {
        launch_dwconv_direct_tile_f16(s, w, b, d, g, nullptr);
      });
    if (p.fw <= kCcMaxFw)
      for (int groups : {1, 2, 4})
        kernels.emplace_back("cuda-core groups=" + std::to_string(groups),
                             [groups](auto s, auto w, auto b, auto d, const auto& g) {
                               launch_dwconv_cc_f16(s, w, b, d, g, groups, nullptr);
                             });
    if (p.fw <= kTcRingMaxFw)
      for (RingMma mma : {RingMma::taps, RingMma::pairs})
        for (int q : {1, 2, 4})
          kernels.emplace_back(std::string("tc-ring ") + (mma == RingMma::pairs ? "pairs" : "taps") + " Q" +
                                   std::to_string(q),
                               [mma, q](auto s, auto w, auto b, auto d, const auto& g) {
                                 launch_dwconv_tc_ring_f16(s, w, b, d, g, q, mma, nullptr);
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
    const std::string padded = path_of(op, same(1, 17, 34, 12, 7, 7));  // larger: on 16 padded channels
    EXPECT_NE(padded.find("tc-ring tile=16x32 BN=16 frags/row=1 (channels padded 12->16)"), std::string::npos)
        << padded;
    // The ring kernel on channel pairs from FW = 9 (measured faster at 9-51), 8-tap fragments at 6-8.
    for (int f : {9, 13, 17, 31, 51, 64})
      EXPECT_NE(path_of(op, same(1, 17, 34, 72, f, f)).find("tc-ring mma=pairs"), std::string::npos) << f;
    for (int f : {6, 7, 8})
      EXPECT_NE(path_of(op, same(1, 17, 34, 72, f, f)).find("tc-ring tile="), std::string::npos) << f;
  }
}

// The dispatcher's backward-filter choice in both accumulation modes: the register-tile kernel at stride 1 above 9
// taps and at any stride above 1 (on padded channels where C % 8 != 0), the tiled kernel for the other stride-1
// shapes it supports (C % 4 == 0, unpadded).
TEST(DwconvFp16Gpu, BackwardFilterPathNamesTheChosenKernel) {
  CNN_REQUIRE_GPU();
  const auto path_of = [](const Case& k, BfcAccum accum) {
    return dwconv_path_name(DwconvOp::backward_filter, k.params(), DType::f16, accum);
  };
  for (BfcAccum accum : {BfcAccum::fp32, BfcAccum::ha}) {
    const std::string mode = bfc_accum_name(accum);
    const std::string tile = std::string("bfc f16 tile (") + mode + " accumulation)";
    const std::string tiled = std::string("bfc f16 ") + mode + " tiled";
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
    for (const Case& k : {strided_c12, same(1, 17, 34, 12, 5, 5)}) {  // C % 8 != 0: the tile kernel, padded
      const std::string path = path_of(k, accum);
      EXPECT_TRUE(path.rfind(tile, 0) == 0 && path.find("(channels padded 12->16)") != std::string::npos) << path;
    }
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
