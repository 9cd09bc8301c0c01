// GPU rungs of the teaching ladder (teach/dwconv/ladder_cuda.h) against the FP64 reference on awkward shapes, and
// their error paths. Suite names contain "Gpu": labelled gpu, skipped without a device.
#include <gtest/gtest.h>

#include "core/tensor.h"
#include "teach/dwconv/ladder_cuda.h"
#include "tests/support/numeric.h"
#include "tests/teach/ladder_shapes.h"

namespace cnn::test {
namespace {

using teach::GpuRung;

constexpr uint64_t kSeed = 2026;

// Runs `rung` on p with seeded U(-1,1) inputs (FP16-rounded for an FP16 rung) and compares with FP64.
void expect_rung_matches(const GpuRung& rung, const dwconv::DwconvParams& p, uint64_t seed) {
  const bool f16 = rung.dtype == DType::f16;
  std::vector<float> x = random_uniform<float>(size_t(p.x_elems()), seed);
  std::vector<float> w = random_uniform<float>(size_t(p.w_elems()), seed + 1);
  if (f16) {
    for (float& v : x) v = half_bits_to_float(float_to_half_bits(v));
    for (float& v : w) v = half_bits_to_float(float_to_half_bits(v));
  }
  const Device gpu = Device::cuda(0);
  const Tensor xt = Tensor::from_vector(x, {p.n, p.ih, p.iw, p.c}, gpu).to(rung.dtype);
  const Tensor wt = Tensor::from_vector(w, {p.fh, p.fw, p.c}, gpu).to(rung.dtype);
  const std::vector<float> y = teach::run_rung(rung, xt, wt, p).to(DType::f32).to_vector<float>();
  std::vector<double> ref, abs_ref;
  ladder_reference(x, w, p, ref, abs_ref);
  const std::vector<double> tol = ladder_tolerance(abs_ref, ref, p.fh * p.fw, f16);
  EXPECT_TRUE(all_close<float>(
      y, ref, [&](size_t k) { return tol[k]; },
      str_cat("rung ", rung.number, " (", rung.name, ") ", p.str(), " seed ", seed)));
}

TEST(TeachLadderGpu, EveryRungMatchesFp64OnStrideOneShapes) {
  CNN_REQUIRE_GPU();
  for (const GpuRung& rung : teach::gpu_rungs())
    for (const dwconv::DwconvParams& p : ladder_stride1_shapes()) expect_rung_matches(rung, p, kSeed);
}

TEST(TeachLadderGpu, GeneralRungsMatchFp64OnStridedAndNarrowChannelShapes) {
  CNN_REQUIRE_GPU();
  for (const GpuRung& rung : teach::gpu_rungs())
    for (const dwconv::DwconvParams& p : ladder_general_shapes()) {
      // The table says which rungs take these; the rest must refuse them with their reason.
      alignas(16) static float dummy[4];
      if (rung.unsupported(p, dummy, dummy, dummy).empty()) {
        expect_rung_matches(rung, p, kSeed + 7);
      } else {
        EXPECT_GE(rung.number, 2) << "rung 1 takes every shape";
        const Device gpu = Device::cuda(0);
        const Tensor x = Tensor::zeros({p.n, p.ih, p.iw, p.c}, rung.dtype, gpu);
        const Tensor w = Tensor::zeros({p.fh, p.fw, p.c}, rung.dtype, gpu);
        EXPECT_NE(error_of([&] { teach::run_rung(rung, x, w, p); }).find(str_cat("teach forward_")), std::string::npos)
            << rung.name << " " << p.str();
      }
    }
}

TEST(TeachLadderGpu, RunRungRejectsTensorsThatDoNotMatchTheShape) {
  CNN_REQUIRE_GPU();
  const dwconv::DwconvParams p = dwconv_shape(1, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  const GpuRung& rung = teach::gpu_rungs().at(3);
  const Tensor x = Tensor::zeros({1, 8, 8, 16}, DType::f32, Device::cuda(0));
  const Tensor w = Tensor::zeros({3, 3, 8}, DType::f32, Device::cuda(0));
  EXPECT_NE(error_of([&] { teach::run_rung(rung, x, w, p); }).find("expected x contiguous f32 (1, 8, 8, 8)"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn::test
