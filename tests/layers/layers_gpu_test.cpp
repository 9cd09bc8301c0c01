// Every CNN layer op on cuda:0 against the CPU backend, forward and all input gradients, f32 and f16 (GPU
// machine). Tolerances: f32 differs only in summation order (cuDNN / Flash-DWC / column-sum splits) -> 1e-4 on
// values of magnitude <~ 10; f16 stores every output and gradient once in f16 (2^-11 = 4.9e-4 relative) after FP32
// math on f16-rounded inputs (identical on both sides), so 2e-3 relative plus an absolute term for sums near zero.
#include <gtest/gtest.h>

#include "layers/functional.h"
#include "layers/layers.h"
#include "tests/support/gpu_compare.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using V = std::vector<Tensor>;

class LayersGpu : public ::testing::TestWithParam<DType> {};

TEST_P(LayersGpu, Conv2d) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // Sums of R*S*C <= 108 products |x w| <= 1 (outputs ~10) and weight gradients over N*OH*OW <= 150 positions of
  // |dy x| <~ 3: FP32 order differences < 1e-4 relative; f16 adds one output rounding (5e-3 absolute near 10).
  const auto o = test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3);
  struct Case {
    Shape x, w;
    ops::Conv2dGeometry g;
  };
  for (const Case& c :
       {Case{{2, 17, 34, 3}, {8, 4, 4, 3}, {4, 4, 0, 0}}, Case{{1, 9, 7, 12}, {16, 3, 3, 12}, {2, 2, 1, 1}},
        Case{{2, 5, 6, 16}, {8, 1, 1, 16}, {1, 1, 0, 0}}, Case{{1, 8, 9, 4}, {5, 2, 3, 4}, {1, 2, 0, 1}}}) {
    const ops::Conv2dGeometry g = c.g;
    EXPECT_TRUE(test::compare_gpu_cpu(
        [g](Tape* tp, const V& in) { return ops::conv2d(tp, in[0], in[1], in[2], g); },
        {test::random_input(c.x, 1), test::random_input(c.w, 2), test::random_input({c.w[0]}, 3)}, o))
        << "x " << shape_str(c.x) << " w " << shape_str(c.w);
  }
}

TEST_P(LayersGpu, DepthwiseConv2d) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // Up to 255 taps (51x5) of |x w| <= 1: outputs ~10-20, FP32 order differences ~1e-5 relative; dW sums N*OH*OW
  // products: f32 1e-4 relative; f16 runs the FP16 Flash-DWC-T kernels (FP32 accumulation, one output rounding).
  const auto o = test::gpu_compare_options(t, 2e-4, 5e-2, 5e-3);
  struct Case {
    Shape x;
    int fh, fw;
    ops::DwGeometry g;
  };
  for (const Case& c :
       {Case{{2, 17, 34, 72}, 7, 7, {1, 1, 3, 3, 3, 3}}, Case{{1, 20, 13, 8}, 51, 5, {1, 1, 25, 25, 2, 2}},
        Case{{1, 13, 20, 8}, 5, 51, {1, 1, 2, 2, 25, 25}}, Case{{2, 17, 18, 12}, 3, 3, {2, 2, 1, 1, 1, 1}},
        Case{{1, 9, 10, 5}, 4, 3, {1, 2, 1, 2, 0, 3}}}) {
    const ops::DwGeometry g = c.g;
    EXPECT_TRUE(test::compare_gpu_cpu(
        [g](Tape* tp, const V& in) { return ops::depthwise_conv2d(tp, in[0], in[1], in[2], g); },
        {test::random_input(c.x, 1), test::random_input({c.fh, c.fw, c.x[3]}, 2), test::random_input({c.x[3]}, 3)}, o))
        << "x " << shape_str(c.x) << " filter " << c.fh << "x" << c.fw;
  }
}

// The layer's bfc_accum reaches the FP16 backward-filter kernel: hybrid accumulation gives a dW that differs from
// FP32 accumulation (FP16 partial sums round) but stays within HA's measured error (MARE <= 8e-3 on the kernel's
// awkward shapes, docs/perf/dwconv-fp16-h200.md; 5e-2 of the largest |dW| bounds every element here).
TEST(LayersGpuF16, DepthwiseBackwardFilterAccumulationModeReachesKernel) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  const Tensor x = test::random_input({2, 17, 34, 72}, 11, false).to(DType::f16).to(gpu);
  const Tensor dy = test::random_input({2, 17, 34, 72}, 13, false).to(DType::f16).to(gpu);
  const ops::DwGeometry g{1, 1, 3, 3, 3, 3};
  std::vector<Tensor> dws;
  for (dwconv::BfcAccum accum : {dwconv::BfcAccum::fp32, dwconv::BfcAccum::ha}) {
    Tensor w = test::random_input({7, 7, 72}, 12, false).to(DType::f16).to(gpu);  // a fresh leaf per mode
    w.set_requires_grad(true);
    Tape tape;
    const Tensor y = ops::depthwise_conv2d(&tape, x, w, Tensor(), g, accum);
    tape.backward(y, dy);
    dws.push_back(w.grad().to(DType::f32).to(Device::cpu()));
  }
  double max_ref = 0;
  for (int64_t i = 0; i < dws[0].numel(); ++i) max_ref = std::max(max_ref, double(std::abs(dws[0].data<float>()[i])));
  EXPECT_FALSE(test::bitwise_equal(dws[0], dws[1]))
      << "ha and fp32 accumulation gave identical dW: the mode did not reach the kernel";
  EXPECT_TRUE(test::all_close(dws[0], dws[1], 5e-2 * max_ref, 0.0, "ha dW vs fp32-accumulated dW"));
}

TEST_P(LayersGpu, LinearNd) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // K = 72, |x w| <= 1: outputs <~ 10; dW sums 2*5*7 rows.
  EXPECT_TRUE(test::compare_gpu_cpu(
      [](Tape* tp, const V& in) { return ops::linear_nd(tp, in[0], in[1], in[2]); },
      {test::random_input({2, 5, 7, 72}, 1), test::random_input({40, 72}, 2), test::random_input({40}, 3)},
      test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3)));
}

TEST_P(LayersGpu, LayerNorm) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // Normalised outputs are O(3); statistics in FP32 on both sides (row of <= 1030 values); gamma/beta gradients
  // sum 2*9*11 rows. f16: one rounding of y / dx and of the summed dgamma (values ~20 -> 2e-2 absolute).
  // C up to 998 takes the register kernels (4 to 32 lanes per row; f16 in 16-byte packs at 96, 8-byte at 124,
  // 4-byte at 998, single elements at 5 and 249), 1030 the loop kernels; 198 rows fill no block exactly.
  for (int64_t c : {5, 72, 96, 124, 200, 249, 998, 1030}) {
    EXPECT_TRUE(test::compare_gpu_cpu(
        [](Tape* tp, const V& in) { return ops::layer_norm(tp, in[0], in[1], in[2], 1e-6); },
        {test::random_input({2, 9, 11, c}, 1, true, -3, 3), test::random_input({c}, 2), test::random_input({c}, 3)},
        test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3)))
        << "C = " << c;
  }
  // 34542 rows: the backward's blocks take 34-row chunks (1016 partials per channel). dgamma / dbeta sum 34542 rows
  // of |dy xhat| <~ 5 (values ~200): FP32 order differences stay under 1e-4 relative; f16 rounds the sums once
  // (2^-11 relative, inside 5e-3).
  for (int64_t c : {96, 249}) {
    EXPECT_TRUE(test::compare_gpu_cpu(
        [](Tape* tp, const V& in) { return ops::layer_norm(tp, in[0], in[1], in[2], 1e-6); },
        {test::random_input({2, 171, 101, c}, 4, true, -3, 3), test::random_input({c}, 5), test::random_input({c}, 6)},
        test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3)))
        << "rows 34542, C = " << c;
  }
}

TEST_P(LayersGpu, BatchNormTrainingAndEval) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  for (bool training : {true, false}) {
    // Running statistics are created on the op's device, FP32 on both sides.
    auto op = [training](Tape* tp, const V& in) {
      const Device d = in[0].device();
      Tensor rm = Tensor::full({in[0].size(-1)}, 0.1, DType::f32, d),
             rv = Tensor::full({in[0].size(-1)}, 1.5, DType::f32, d);
      return ops::batch_norm(tp, in[0], in[1], in[2], rm, rv, training, 0.1, 1e-5);
    };
    // Per-channel sums over 2*17*13 = 442 rows in FP32 (different split): 1e-4; f16 as LayerNorm.
    EXPECT_TRUE(test::compare_gpu_cpu(
        op,
        {test::random_input({2, 17, 13, 24}, 1, true, -2, 2), test::random_input({24}, 2), test::random_input({24}, 3)},
        test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3)))
        << (training ? "training" : "eval");
  }
}

TEST_P(LayersGpu, RunningStatisticsMatchCpu) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  const Tensor x =
      test::random_input({4, 7, 9, 16}, 5, false, -2, 2).to(t).to(DType::f32);  // same (rounded) values both sides
  BatchNorm2d cpu_bn(16), gpu_bn(16);
  gpu_bn.to(t);
  gpu_bn.to(Device::cuda(0));
  const ForwardContext ctx{nullptr, true, 0, 0};
  cpu_bn.forward(ctx, x);
  gpu_bn.forward(ctx, x.to(t).to(Device::cuda(0)));
  // FP32 statistics on both sides from identical inputs: order differences only.
  EXPECT_TRUE(test::all_close(cpu_bn.running_mean, gpu_bn.running_mean, 1e-6, 1e-5, "running_mean"));
  EXPECT_TRUE(test::all_close(cpu_bn.running_var, gpu_bn.running_var, 1e-6, 1e-5, "running_var"));
  EXPECT_EQ(gpu_bn.num_batches_tracked.item(), 1.0);
  EXPECT_TRUE(gpu_bn.num_batches_tracked.device().is_cpu());
}

TEST_P(LayersGpu, GeluScaleDropPathPool) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  // CUDA erff (2 ulp) vs the CPU's fitted f32 GELU (<= 6.4 ulp forward; backward <= 6.2 ulp of Phi + |x phi| <= 1.2,
  // times |dy| <= ~4 for N(0,1) seeds): up to ~3e-6 absolute on the gradient, so 4e-6.
  // 3003 elements: whole packs and an element tail; 256: packs only.
  for (const Shape& shape : {Shape{3, 1001}, Shape{2, 8, 16}})
    EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::gelu(tp, in[0]); },
                                      {test::random_input(shape, 1, true, -5, 5)},
                                      test::gpu_compare_options(t, 4e-6, 2e-3)));
  // A per-channel scale at C = 72 (16-byte packs), 76 (f16: 8-byte), 74 (f16: 4-byte, f32: 8-byte), 75 (elements).
  for (int64_t c : {int64_t(72), int64_t(76), int64_t(74), int64_t(75)})
    EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::mul(tp, in[0], in[1]); },
                                      {test::random_input({2, 5, 6, c}, 2), test::random_input({c}, 3)},
                                      test::gpu_compare_options(t, 1e-5, 2e-2)))
        << "C " << c;
  // Drop-path masks are bitwise equal on both devices (same Philox draws); scaling is exact up to one rounding.
  // Samples of 96 elements (16-byte packs), 12 (f16: 8-byte) and 105 (element by element).
  for (const Shape& shape : {Shape{33, 3, 4, 8}, Shape{6, 2, 3, 2}, Shape{5, 3, 5, 7}})
    EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::drop_path(tp, in[0], 0.3, 17, 5, 9); },
                                      {test::random_input(shape, 4)}, test::gpu_compare_options(t, 1e-6, 2e-3)));
  const auto cpu_s = ops::drop_path_scales(1000, 0.3, 17, 5, 9, DType::f32, Device::cpu());
  const auto gpu_s = ops::drop_path_scales(1000, 0.3, 17, 5, 9, DType::f32, Device::cuda(0));
  EXPECT_TRUE(test::bitwise_equal(cpu_s, gpu_s, "drop_path scales"));
  // Means over 7*9 = 63 pixels.
  EXPECT_TRUE(test::compare_gpu_cpu([](Tape* tp, const V& in) { return ops::global_avg_pool(tp, in[0]); },
                                    {test::random_input({3, 7, 9, 130}, 5)}, test::gpu_compare_options(t, 1e-6, 2e-3)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayersGpu, ::testing::Values(DType::f32, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace cnn
