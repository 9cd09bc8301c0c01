// ops::batch_norm_act on cuda:0 (the fused kernels) against the CPU's separate ops (act, batch_norm, add): output,
// dx, dgamma, dbeta and the residual's gradient; relu and gelu, with and without a residual, training and eval, f32
// and f16; C = 72 (16-byte packs), 76 (f16: 8-byte packs), 74 (f16: 4-byte, f32: 8-byte packs) and 75 (one element
// per access), 2*17*13 = 442 rows, and 2*257*131 = 67334 rows (the statistics' row chunks at their cap, with a short
// last chunk) on values offset by 50 (one-pass Welford).
#include <gtest/gtest.h>

#include "layers/batch_norm_act.h"
#include "tests/support/gpu_compare.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using V = std::vector<Tensor>;
using kernels::NormAct;

class BatchNormActGpu : public ::testing::TestWithParam<DType> {};

TEST_P(BatchNormActGpu, MatchesTheSeparateOpsOnTheCpu) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  for (NormAct act : {NormAct::relu, NormAct::gelu}) {
    for (bool residual : {false, true}) {
      for (bool training : {true, false}) {
        for (int64_t c : {int64_t(72), int64_t(76), int64_t(74), int64_t(75)}) {
          auto op = [act, residual, training](Tape* tp, const V& in) {
            const Device d = in[0].device();
            Tensor rm = Tensor::full({in[0].size(-1)}, 0.1, DType::f32, d),
                   rv = Tensor::full({in[0].size(-1)}, 1.5, DType::f32, d);
            return ops::batch_norm_act(tp, in[0], act, in[1], in[2], rm, rv, training, 0.1, 1e-5,
                                       residual ? in[3] : Tensor());
          };
          // As ops::batch_norm (tests/layers/layers_gpu_test.cpp): per-channel FP32 sums over 442 rows in another
          // order, 1e-4; f16 adds one rounding of y / dx (the fused path skips the rounding of act(x)).
          EXPECT_TRUE(test::compare_gpu_cpu(
              op,
              {test::random_input({2, 17, 13, c}, 1, true, -2, 2), test::random_input({c}, 2),
               test::random_input({c}, 3), test::random_input({2, 17, 13, c}, 4)},
              test::gpu_compare_options(t, 1e-4, 3e-2, 5e-3)))
              << "act " << int(act) << " residual " << residual << " training " << training << " C " << c;
        }
      }
    }
  }
}

TEST_P(BatchNormActGpu, ManyRowsOffsetValues) {
  CNN_REQUIRE_GPU();
  const DType t = GetParam();
  auto op = [](Tape* tp, const V& in) {
    const Device d = in[0].device();
    Tensor rm = Tensor::zeros({in[0].size(-1)}, DType::f32, d), rv = Tensor::full({in[0].size(-1)}, 1.0, DType::f32, d);
    return ops::batch_norm_act(tp, in[0], NormAct::relu, in[1], in[2], rm, rv, true, 0.1, 1e-5, Tensor());
  };
  // Inputs 50 +- 1 (all pass the relu): the variance (1/3) is 1e-4 of the squared mean, which a one-pass sum of
  // squares in FP32 would lose; Welford keeps it. Sums over 67334 rows: FP32 order differences ~1e-4 of the
  // normalised values (|y| <~ 2); f16 inputs carry 50's f16 spacing (0.03), identical on both sides. FP32 bound
  // 3e-3: dgamma = sum(dy * (x - mean) * rstd) is ~17 here out of sum|dy| ~ 3e4, so each side's FP32 mean error
  // (a few ulps of 50, ~1e-5) enters it as mean error * rstd * |sum dy| (~260): up to ~1e-2 absolute, 1e-3 relative.
  // C = 72 (16-byte packs), 124 (f16: 8-byte packs) and 75 (single elements): each pack width of the passes, with
  // every thread of the elementwise passes walking many rows.
  for (int64_t c : {int64_t(72), int64_t(124), int64_t(75)})
    EXPECT_TRUE(test::compare_gpu_cpu(
        op,
        {test::random_input({2, 257, 131, c}, 5, true, 49, 51), test::random_input({c}, 6), test::random_input({c}, 7)},
        test::gpu_compare_options(t, 3e-3, 3e-2, 5e-3)))
        << "C " << c;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchNormActGpu, ::testing::Values(DType::f32, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace cnn
