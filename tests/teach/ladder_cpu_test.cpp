// CPU rungs and backward examples of the teaching ladder (teach/dwconv/ladder.h) against the FP64 references.
#include <gtest/gtest.h>

#include <cmath>

#include "teach/dwconv/ladder.h"
#include "tests/support/numeric.h"
#include "tests/teach/ladder_shapes.h"

namespace cnn::test {
namespace {

constexpr uint64_t kSeed = 4242;

std::vector<dwconv::DwconvParams> all_shapes() {
  std::vector<dwconv::DwconvParams> shapes = ladder_stride1_shapes();
  for (const auto& p : ladder_general_shapes()) shapes.push_back(p);
  return shapes;
}

TEST(TeachLadderCpu, NaiveLoopsMatchFp64) {
  for (const dwconv::DwconvParams& p : all_shapes()) {
    const std::vector<float> x = random_uniform<float>(size_t(p.x_elems()), kSeed);
    const std::vector<float> w = random_uniform<float>(size_t(p.w_elems()), kSeed + 1);
    std::vector<float> y(size_t(p.y_elems()));
    teach::forward_naive_cpu(x.data(), w.data(), y.data(), p);
    std::vector<double> ref, abs_ref;
    ladder_reference(x, w, p, ref, abs_ref);
    const std::vector<double> tol = ladder_tolerance(abs_ref, ref, p.fh * p.fw, false);
    EXPECT_TRUE(all_close<float>(
        y, ref, [&](size_t k) { return tol[k]; }, str_cat(p.str(), " seed ", kSeed)));
  }
}

TEST(TeachLadderCpu, BackwardDataAsFlippedForwardMatchesFp64) {
  for (const dwconv::DwconvParams& p : ladder_stride1_shapes()) {
    if (p.pad_top >= p.fh || p.pad_bottom >= p.fh || p.pad_left >= p.fw || p.pad_right >= p.fw) continue;
    const std::vector<float> dy = random_uniform<float>(size_t(p.y_elems()), kSeed + 2);
    const std::vector<float> w = random_uniform<float>(size_t(p.w_elems()), kSeed + 3);
    std::vector<float> dx(size_t(p.x_elems()));
    teach::backward_data_as_flipped_forward(dy.data(), w.data(), dx.data(), p);
    const std::vector<double> dyd(dy.begin(), dy.end()), wd(w.begin(), w.end());
    std::vector<double> ref(dx.size()), abs_ref(dx.size());
    dwconv::dwconv_backward_data_reference(dyd.data(), wd.data(), ref.data(), p);
    const std::vector<double> dya = abs_values(dyd), wa = abs_values(wd);
    dwconv::dwconv_backward_data_reference(dya.data(), wa.data(), abs_ref.data(), p);
    const std::vector<double> tol = ladder_tolerance(abs_ref, ref, p.fh * p.fw, false);
    EXPECT_TRUE(all_close<float>(
        dx, ref, [&](size_t k) { return tol[k]; }, str_cat(p.str(), " seed ", kSeed + 2)));
  }
}

TEST(TeachLadderCpu, FlippedForwardRefusesStrideAndCroppingPadding) {
  const std::string strided = error_of([] { teach::flipped_forward_params(ladder_general_shapes()[0]); });
  EXPECT_NE(strided.find("needs stride 1"), std::string::npos) << strided;
  const std::string crop = error_of([] { teach::flipped_forward_params(ladder_stride1_shapes().back()); });
  EXPECT_NE(crop.find("needs paddings <= filter extent - 1"), std::string::npos) << crop;
}

// dW of FP16 inputs through the split reduction: FP32 chunks against the FP64 reference for any chunk count.
TEST(TeachLadderCpu, BackwardFilterSplitMatchesFp64ForAnyChunkCount) {
  for (const dwconv::DwconvParams& p : all_shapes()) {
    const std::vector<float> x = random_uniform<float>(size_t(p.x_elems()), kSeed + 4);
    const std::vector<float> dy = random_uniform<float>(size_t(p.y_elems()), kSeed + 5);
    const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
    std::vector<double> ref(size_t(p.w_elems())), abs_ref(ref.size());
    dwconv::dwconv_backward_filter_reference(xd.data(), dyd.data(), ref.data(), p);
    const std::vector<double> xa = abs_values(xd), dya = abs_values(dyd);
    dwconv::dwconv_backward_filter_reference(xa.data(), dya.data(), abs_ref.data(), p);
    // The reduction is N*OH*OW terms long, summed in FP32 in each chunk, then chunks merged in FP32.
    const int terms = int(p.y_elems() / p.c);
    const std::vector<double> tol = ladder_tolerance(abs_ref, ref, terms, false);
    for (int chunks : {1, 3, 1000}) {
      std::vector<float> dw(ref.size());
      teach::backward_filter_split(x.data(), dy.data(), dw.data(), p, chunks, teach::Accumulation::fp32);
      EXPECT_TRUE(all_close<float>(
          dw, ref, [&](size_t k) { return tol[k]; }, str_cat(p.str(), " chunks ", chunks)));
    }
  }
}

// Hybrid accumulation follows the production kernels' emulation (the same FP16 runs, one chunk, so only the FP32
// adds of the run partials can differ in order: none here), and beats pure FP16 accumulation by a wide margin.
TEST(TeachLadderCpu, HybridAccumulationMatchesTheKernelEmulationAndBeatsFp16) {
  const dwconv::DwconvParams p = dwconv_shape(16, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1);
  std::vector<float> x = random_uniform<float>(size_t(p.x_elems()), kSeed + 6);
  std::vector<float> dy = random_uniform<float>(size_t(p.y_elems()), kSeed + 7);
  std::vector<Half> xh, dyh;
  for (float& v : x) xh.push_back(Half(v)), v = float(xh.back());
  for (float& v : dy) dyh.push_back(Half(v)), v = float(dyh.back());
  std::vector<float> hybrid(size_t(p.w_elems())), fp16(hybrid.size()), emulated(hybrid.size());
  teach::backward_filter_split(x.data(), dy.data(), hybrid.data(), p, 1, teach::Accumulation::hybrid);
  teach::backward_filter_split(x.data(), dy.data(), fp16.data(), p, 1, teach::Accumulation::fp16);
  dwconv::dwconv_backward_filter_reference_f16(xh.data(), dyh.data(), emulated.data(), p, dwconv::BfcAccum::ha);
  const std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  std::vector<double> ref(hybrid.size());
  dwconv::dwconv_backward_filter_reference(xd.data(), dyd.data(), ref.data(), p);
  double err_hybrid = 0, err_fp16 = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    EXPECT_EQ(hybrid[k], emulated[k]) << "dW index " << k;
    err_hybrid = std::max(err_hybrid, std::abs(hybrid[k] - ref[k]));
    err_fp16 = std::max(err_fp16, std::abs(fp16[k] - ref[k]));
  }
  // 16384 products per tap: an FP16 running sum wanders to magnitudes ~40, rounding at 2^-6 per step; runs of 32
  // keep the FP16 partials near 2, rounding at 2^-10 (random-walk estimate: a factor ~25 between the two errors).
  // A factor 8 leaves room for the seed.
  EXPECT_GT(err_fp16, 8 * err_hybrid) << "fp16 " << err_fp16 << ", hybrid " << err_hybrid;
}

TEST(TeachLadderCpu, BadArgumentsNameTheFunction) {
  const dwconv::DwconvParams p = dwconv_shape(1, 4, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  std::vector<float> x(64), y(64), w(36);
  EXPECT_NE(error_of([&] { teach::forward_naive_cpu(x.data(), nullptr, y.data(), p); }).find("teach forward_naive_cpu"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              teach::backward_filter_split(x.data(), y.data(), w.data(), p, 0, teach::Accumulation::fp32);
            }).find("teach backward_filter_split: expected chunks >= 1, got 0"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn::test
