// Dense and depthwise convolution ops on the CPU: forward against direct loops, the f32 backends against the f64
// path, gradient checks in double (stride 2, padding, 1x1, patchify, 7x7, 51x5, asymmetric) and error messages.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "layers/functional.h"
#include "tests/support/gradcheck.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using V = std::vector<Tensor>;

Tensor rand(const Shape& s, uint64_t seed, DType t = DType::f64, bool grad = true) {
  Tensor x = Tensor::empty(s, t);
  x.uniform_(seed, 0, -1, 1);
  if (grad) x.set_requires_grad(true);
  return x;
}

using test::error_of;

// y[n, oh, ow, k] = b[k] + sum x[n, oh*sh + i - ph, ow*sw + j - pw, c] w[k, i, j, c], in double.
Tensor conv_direct(const Tensor& x, const Tensor& w, const Tensor& b, const ops::Conv2dGeometry& g) {
  const auto xv = x.to(DType::f64).to_vector<double>(), wv = w.to(DType::f64).to_vector<double>();
  const auto bv = b.defined() ? b.to(DType::f64).to_vector<double>() : std::vector<double>(size_t(w.size(0)), 0.0);
  const int64_t n = x.size(0), h = x.size(1), wd = x.size(2), c = x.size(3), k = w.size(0), r = w.size(1),
                s = w.size(2);
  const int64_t oh = (h + 2 * g.pad_h - r) / g.stride_h + 1, ow = (wd + 2 * g.pad_w - s) / g.stride_w + 1;
  std::vector<double> y(size_t(n * oh * ow * k));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t yo = 0; yo < oh; ++yo)
      for (int64_t xo = 0; xo < ow; ++xo)
        for (int64_t ko = 0; ko < k; ++ko) {
          double acc = bv[size_t(ko)];
          for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < s; ++j) {
              const int64_t hi = yo * g.stride_h + i - g.pad_h, wi = xo * g.stride_w + j - g.pad_w;
              if (hi < 0 || hi >= h || wi < 0 || wi >= wd) continue;
              for (int64_t ci = 0; ci < c; ++ci)
                acc += xv[size_t(((in * h + hi) * wd + wi) * c + ci)] * wv[size_t(((ko * r + i) * s + j) * c + ci)];
            }
          y[size_t(((in * oh + yo) * ow + xo) * k + ko)] = acc;
        }
  return Tensor::from_vector(y, {n, oh, ow, k});
}

struct ConvCase {
  Shape x, w;
  ops::Conv2dGeometry g;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{2, 7, 6, 3}, {4, 3, 3, 3}, {2, 2, 1, 1}},  // stride 2, padding 1
      {{1, 5, 5, 4}, {3, 1, 1, 4}, {1, 1, 0, 0}},  // 1x1 (no im2col)
      {{2, 8, 8, 3}, {5, 4, 4, 3}, {4, 4, 0, 0}},  // patchify stem
      {{1, 6, 9, 2}, {3, 2, 3, 2}, {1, 2, 0, 2}},  // rectangular kernel, unequal strides and paddings
      {{3, 17, 5, 1}, {2, 3, 3, 1}, {2, 1, 1, 1}},  // odd extents, one channel
  };
  return cases;
}

TEST(Conv2d, ForwardMatchesDirectLoops) {
  for (const ConvCase& cc : conv_cases()) {
    for (DType t : {DType::f64, DType::f32}) {
      const Tensor x = rand(cc.x, 1, t, false), w = rand(cc.w, 2, t, false), b = rand({cc.w[0]}, 3, t, false);
      const Tensor want = conv_direct(x, w, b, cc.g);
      // f64: BLAS vs loop order, ~1e-15; f32: dot products of <= 48 terms |x w| <= 1: below 1e-5.
      const double tol = t == DType::f64 ? 1e-12 : 1e-5;
      EXPECT_TRUE(test::all_close(want, ops::conv2d(nullptr, x, w, b, cc.g), tol, tol, "conv2d " + x.str()));
    }
  }
}

TEST(Conv2d, ChunkedColumnBufferAgrees) {
  // 40 x 40 output pixels x 27 column entries x 200 samples exceeds the 2^23-element chunk: several chunks.
  const ops::Conv2dGeometry g{1, 1, 1, 1};
  const Tensor x = rand({200, 40, 40, 3}, 4, DType::f32, false), w = rand({2, 3, 3, 3}, 5, DType::f32, false);
  const Tensor y = ops::conv2d(nullptr, x, w, Tensor(), g);
  const Tensor head = ops::conv2d(nullptr, x.slice(0, 0, 2).contiguous(), w, Tensor(), g);
  const Tensor tail = ops::conv2d(nullptr, x.slice(0, 198, 200).contiguous(), w, Tensor(), g);
  // Same dot products (27 terms, |x w| <= 1), possibly blocked differently by BLAS: FP32 rounding only.
  EXPECT_TRUE(test::all_close(head, y.slice(0, 0, 2).contiguous(), 1e-6, 1e-6, "first samples"));
  EXPECT_TRUE(test::all_close(tail, y.slice(0, 198, 200).contiguous(), 1e-6, 1e-6, "last samples"));
}

TEST(Conv2dGrad, AllCases) {
  for (const ConvCase& cc : conv_cases()) {
    const ops::Conv2dGeometry g = cc.g;
    EXPECT_TRUE(test::gradcheck([g](Tape* t, const V& in) { return ops::conv2d(t, in[0], in[1], in[2], g); },
                                {rand(cc.x, 1), rand(cc.w, 2), rand({cc.w[0]}, 3)}))
        << "x " << shape_str(cc.x) << " w " << shape_str(cc.w);
  }
  // Weight only (x captured), and no bias.
  const ops::Conv2dGeometry g{2, 2, 1, 1};
  EXPECT_TRUE(test::gradcheck([g](Tape* t, const V& in) { return ops::conv2d(t, in[0], in[1], Tensor(), g); },
                              {rand({1, 5, 5, 2}, 4, DType::f64, false), rand({3, 3, 3, 2}, 5)}));
}

struct DwCase {
  Shape x;
  int fh, fw;
  ops::DwGeometry g;
};

const std::vector<DwCase>& dw_cases() {
  static const std::vector<DwCase> cases = {
      {{2, 9, 8, 3}, 7, 7, {1, 1, 3, 3, 3, 3}},      // ConvNeXt 7x7 'same'
      {{1, 13, 7, 2}, 51, 5, {1, 1, 25, 25, 2, 2}},  // SLaK 51x5 'same' (taller than the input)
      {{1, 7, 13, 2}, 5, 51, {1, 1, 2, 2, 25, 25}},  // 5x51
      {{2, 9, 10, 3}, 3, 3, {2, 2, 1, 1, 1, 1}},     // stride 2
      {{1, 6, 7, 4}, 4, 3, {1, 2, 1, 2, 0, 3}},      // asymmetric padding, even kernel, stride 1x2
  };
  return cases;
}

TEST(DepthwiseConv2d, F32BackendMatchesF64Reference) {
  for (const DwCase& dc : dw_cases()) {
    const int64_t c = dc.x[3];
    const Tensor x = rand(dc.x, 1, DType::f64, false), w = rand({dc.fh, dc.fw, c}, 2, DType::f64, false),
                 b = rand({c}, 3, DType::f64, false);
    const Tensor want = ops::depthwise_conv2d(nullptr, x, w, b, dc.g);
    const Tensor got = ops::depthwise_conv2d(nullptr, x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), dc.g);
    // FP32 sums of <= 255 products |x w| <= 1: error below 255 * 2^-24 * 255 ~ 4e-3 worst case, ~1e-5 typical.
    EXPECT_TRUE(test::all_close(want, got, 1e-4, 1e-4, "dwconv f32 forward " + x.str()));
    // Backward through the tape: the f32 backward kernels against the f64 reference, L = sum(y^2).
    {
      Tensor xt = x.to(DType::f32), wt = w.to(DType::f32), bt = b.to(DType::f32);
      xt.set_requires_grad(true), wt.set_requires_grad(true), bt.set_requires_grad(true);
      Tape tape;
      const Tensor y = ops::depthwise_conv2d(&tape, xt, wt, bt, dc.g);
      tape.backward(ops::sum(&tape, ops::mul(&tape, y, y)));
      Tensor x64 = x.clone(), w64 = w.clone(), b64 = b.clone();
      x64.set_requires_grad(true), w64.set_requires_grad(true), b64.set_requires_grad(true);
      Tape t64;
      const Tensor y64 = ops::depthwise_conv2d(&t64, x64, w64, b64, dc.g);
      t64.backward(ops::sum(&t64, ops::mul(&t64, y64, y64)));
      // dW sums N*OH*OW products of magnitude <= ~2 * 255: relative FP32 rounding ~1e-5.
      EXPECT_TRUE(test::all_close(x64.grad(), xt.grad(), 1e-3, 1e-4, "dwconv f32 dx " + x.str()));
      EXPECT_TRUE(test::all_close(w64.grad(), wt.grad(), 1e-3, 1e-4, "dwconv f32 dw " + x.str()));
      EXPECT_TRUE(test::all_close(b64.grad(), bt.grad(), 1e-3, 1e-4, "dwconv f32 db " + x.str()));
    }
  }
}

TEST(DepthwiseConv2dGrad, AllCases) {
  for (const DwCase& dc : dw_cases()) {
    const ops::DwGeometry g = dc.g;
    const int64_t c = dc.x[3];
    EXPECT_TRUE(
        test::gradcheck([g](Tape* t, const V& in) { return ops::depthwise_conv2d(t, in[0], in[1], in[2], g); },
                        {rand(dc.x, 1), rand({dc.fh, dc.fw, c}, 2), rand({c}, 3)}))
        << "x " << shape_str(dc.x) << " filter " << dc.fh << "x" << dc.fw;
  }
}

TEST(LinearNd, FlattensLeadingAxes) {
  const Tensor x = rand({2, 3, 4, 5}, 1, DType::f64, false), w = rand({6, 5}, 2, DType::f64, false),
               b = rand({6}, 3, DType::f64, false);
  const Tensor y = ops::linear_nd(nullptr, x, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4, 6}));
  EXPECT_TRUE(test::bitwise_equal(y, ops::linear(nullptr, x, w, b), "ops::linear on (N, H, W, C)"));
  // A 1x1 convolution with weight (6, 1, 1, 5) is the same map.
  EXPECT_TRUE(test::all_close(ops::conv2d(nullptr, x, w.reshape({6, 1, 1, 5}), b, {}), y, 1e-12, 1e-12, "1x1"));
  EXPECT_TRUE(test::gradcheck([](Tape* t, const V& in) { return ops::linear_nd(t, in[0], in[1], in[2]); },
                              {rand({2, 3, 2, 5}, 4), rand({4, 5}, 5), rand({4}, 6)}));
}

TEST(ConvOps, ErrorPaths) {
  const Tensor x = Tensor::zeros({1, 5, 5, 3}, DType::f32);
  EXPECT_NE(error_of([&] { ops::conv2d(nullptr, x, Tensor::zeros({4, 3, 3, 2}, DType::f32), Tensor(), {}); })
                .find("conv2d: expected weight (K, R, S, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::conv2d(nullptr, x, Tensor::zeros({4, 3, 3, 3}, DType::f64), Tensor(), {}); })
                .find("must have x's dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ops::conv2d(nullptr, x, Tensor::zeros({4, 3, 3, 3}, DType::f32), Tensor::zeros({3}, DType::f32), {});
            }).find("expected bias (4)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::conv2d(nullptr, x, Tensor::zeros({4, 7, 7, 3}, DType::f32), Tensor(), {}); })
                .find("filter larger than the padded input"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::conv2d(nullptr, Tensor::zeros({5, 5, 3}, DType::f32), x, Tensor(), {}); })
                .find("expected x with 4 axes"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::depthwise_conv2d(nullptr, x, Tensor::zeros({3, 3, 4}, DType::f32), Tensor(), {}); })
                .find("depthwise_conv2d: expected weight (FH, FW, 3)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ops::depthwise_conv2d(nullptr, x, Tensor::zeros({3, 3, 3}, DType::f32), Tensor(), {0, 1, 1, 1, 1, 1});
            }).find("strides >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ops::depthwise_conv2d(nullptr, x.to(DType::f16), Tensor::zeros({3, 3, 3}, DType::f16), Tensor(), {});
            }).find("not supported on cpu"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::linear_nd(nullptr, x, Tensor::zeros({2, 4}, DType::f32), Tensor()); })
                .find("linear: expected weight (N, 3)"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn
