// Structural re-parameterisation: a conv followed by an eval-mode BatchNorm equals the folded conv (dense and
// depthwise) within FP32 rounding, and a small depthwise kernel merged into a large one equals the sum of both
// 'same' convolutions.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "layers/functional.h"
#include "layers/layers.h"
#include "layers/reparam.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

Tensor rand(const Shape& s, uint64_t seed, double lo = -1, double hi = 1, DType t = DType::f32) {
  Tensor x = Tensor::empty(s, t);
  x.uniform_(seed, 0, lo, hi);
  return x;
}

// A BatchNorm2d with non-trivial statistics and affine parameters, in eval mode.
void randomize(BatchNorm2d& bn, int64_t c, uint64_t seed) {
  bn.weight.copy_(rand({c}, seed, 0.5, 1.5));
  bn.bias.copy_(rand({c}, seed + 1));
  bn.running_mean.copy_(rand({c}, seed + 2));
  bn.running_var.copy_(rand({c}, seed + 3, 0.2, 3.0));
  bn.eval();
}

TEST(Reparam, FoldBatchNormIntoDenseConv) {
  Conv2d conv(3, 6, 3, 2, 1, true);
  conv.init(InitScheme::pytorch_default, 1);
  BatchNorm2d bn(6);
  randomize(bn, 6, 10);
  const Tensor x = rand({2, 9, 8, 3}, 2);
  const ForwardContext ctx{};
  const Tensor want = bn.forward(ctx, conv.forward(ctx, x));
  const auto [w, b] = fold_bn_dense(conv.weight, conv.bias, bn);
  const Tensor got = ops::conv2d(nullptr, x, w, b, {2, 2, 1, 1});
  // Both sides are FP32 convolutions of 27 terms (|y| <~ 3) with one extra FP32 rounding of w' and b': 1e-5.
  EXPECT_TRUE(test::all_close(want, got, 1e-5, 1e-5, "folded dense conv"));
  // No conv bias: b' = beta - mean * s.
  Conv2d nobias(3, 6, 1, 1, 0, false);
  nobias.init(InitScheme::pytorch_default, 3);
  const auto [w2, b2] = fold_bn_dense(nobias.weight, Tensor(), bn);
  EXPECT_TRUE(test::all_close(bn.forward(ctx, nobias.forward(ctx, x)), ops::conv2d(nullptr, x, w2, b2, {}), 1e-5,
                              1e-5, "folded 1x1 conv without bias"));
}

TEST(Reparam, FoldBatchNormIntoDepthwiseConv) {
  DepthwiseConv2d dw(5, 7, 2, false);
  dw.init(InitScheme::pytorch_default, 4);
  BatchNorm2d bn(5);
  randomize(bn, 5, 20);
  const Tensor x = rand({2, 11, 10, 5}, 5);
  const ForwardContext ctx{};
  const Tensor want = bn.forward(ctx, dw.forward(ctx, x));
  const auto [w, b] = fold_bn_depthwise(dw.weight, Tensor(), bn);
  // 49-term FP32 sums of |x w| <= 1/7: 1e-5.
  EXPECT_TRUE(test::all_close(want, ops::depthwise_conv2d(nullptr, x, w, b, dw.geometry()), 1e-5, 1e-5,
                              "folded depthwise conv"));
}

TEST(Reparam, MergeSmallKernelIntoLargeKernel) {
  for (int stride : {1, 2}) {
    DepthwiseConv2d large(4, 13, stride, true), small(4, 5, stride, true);
    large.init(InitScheme::pytorch_default, 6);
    small.init(InitScheme::pytorch_default, 7);
    const Tensor x = rand({1, 15, 14, 4}, 8);
    const ForwardContext ctx{};
    const Tensor want = ops::add(nullptr, large.forward(ctx, x), small.forward(ctx, x));
    const Tensor merged = merge_depthwise_kernels(large.weight, small.weight);
    const Tensor bias = ops::add(nullptr, large.bias, small.bias);
    // FP32 sums of 169 + 25 terms vs one sum of 169 terms: reordering only, |y| <~ 3: 1e-5.
    EXPECT_TRUE(test::all_close(want, ops::depthwise_conv2d(nullptr, x, merged, bias, large.geometry()), 1e-5, 1e-5,
                                "merged 13x13 + 5x5, stride " + std::to_string(stride)));
  }
}

TEST(Reparam, ErrorPaths) {
  BatchNorm2d bn(4);
  std::string e;
  try {
    fold_bn_dense(Tensor::zeros({3, 1, 1, 2}, DType::f32), Tensor(), bn);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("fold_bn_dense: BatchNorm2d has 4 channels"), std::string::npos) << e;
  e.clear();
  try {
    merge_depthwise_kernels(Tensor::zeros({5, 5, 2}, DType::f32), Tensor::zeros({4, 4, 2}, DType::f32));
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("must fit centred"), std::string::npos) << e;
}

}  // namespace
}  // namespace cnn
