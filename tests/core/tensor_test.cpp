// Tensor creation, views without copies, contiguous / clone / conversion / copy_, fills, errors.
#include <gtest/gtest.h>

#include <numeric>

#include "core/allocator.h"
#include "core/error.h"
#include "core/tensor.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return Tensor::from_vector(v, shape);
}

using test::error_of;

TEST(Tensor, CreationAndMetadata) {
  Tensor t = Tensor::zeros({2, 3, 4}, DType::f32, Device::cpu(), "x");
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.label(), "x");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % kHostAlignment, 0u);
  for (float v : t.to_vector<float>()) EXPECT_EQ(v, 0.f);
  Tensor s = Tensor::full({}, 2.5, DType::f64);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(Tensor::empty({0, 5}, DType::f32).numel(), 0);
  EXPECT_NE(error_of([] { Tensor::empty({2, -1}, DType::f32); }).find("negative extent"), std::string::npos);
  EXPECT_NE(error_of([&] { t.data<double>(); }).find("requested f64"), std::string::npos);
  EXPECT_NE(error_of([&] { t.size(3); }).find("out of range"), std::string::npos);
}

TEST(Tensor, ElementCountsAreInt64) {
  EXPECT_EQ(shape_numel({1 << 20, 1 << 20, 4}), int64_t(1) << 42);
  EXPECT_THROW(shape_numel({int64_t(1) << 40, int64_t(1) << 40}), Error);
}

TEST(Tensor, SliceIsAViewSharingStorage) {
  Tensor x = iota({4, 3});
  Tensor s = x.slice(0, 1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.storage(), x.storage());
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3, 4, 5, 6, 7, 8}));
  Tensor c = x.slice(1, 1, 2);  // a column: not contiguous
  EXPECT_FALSE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 4, 7, 10}));
  s.fill_(-1);  // writes through to x
  EXPECT_EQ(x.to_vector<float>()[3], -1.f);
  EXPECT_NE(error_of([&] { x.slice(0, 2, 5); }).find("out of bounds"), std::string::npos);
}

TEST(Tensor, PermuteAndContiguous) {
  Tensor x = iota({2, 3, 4});  // NHWC-like
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.storage(), x.storage());
  EXPECT_FALSE(p.is_contiguous());
  const std::vector<float> v = p.contiguous().to_vector<float>();
  // p[c, n, h] = x[n, h, c] = n*12 + h*4 + c
  for (int c = 0; c < 4; ++c)
    for (int n = 0; n < 2; ++n)
      for (int h = 0; h < 3; ++h) EXPECT_EQ(v[size_t(c * 6 + n * 3 + h)], float(n * 12 + h * 4 + c));
  EXPECT_THROW(x.permute({0, 0, 1}), Error);
  EXPECT_THROW(x.permute({0, 1}), Error);
}

TEST(Tensor, ReshapeOfContiguousOnly) {
  Tensor x = iota({2, 6});
  Tensor r = x.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_NE(error_of([&] { x.reshape({5, 2}); }).find("has 10 elements"), std::string::npos);
  EXPECT_NE(error_of([&] { x.permute({1, 0}).reshape({12}); }).find("contiguous"), std::string::npos);
  EXPECT_THROW(x.reshape({-1, -1}), Error);
}

TEST(Tensor, DtypeConversionRoundTrips) {
  Tensor x = Tensor::from_vector<float>({-2.5f, 0.f, 1.f, 3.75f, 100.f}, {5});
  EXPECT_EQ(x.to(DType::f64).to(DType::f32).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(x.to(DType::f16).to(DType::f32).to_vector<float>(), x.to_vector<float>());  // all exact in f16
  EXPECT_EQ(x.to(DType::bf16).to(DType::f32).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(x.to(DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{-2, 0, 1, 3, 100}));
  EXPECT_EQ(x.to(DType::i64).to(DType::u8).to_vector<uint8_t>()[4], 100);
  Tensor h = Tensor::from_vector<float>({1.0f + 1.0f / 4096}, {1}).to(DType::f16);  // rounds to 1
  EXPECT_EQ(h.to(DType::f32).item(), 1.0);
}

TEST(Tensor, CopyIntoStridedDestinationConverts) {
  Tensor dst = Tensor::zeros({3, 4}, DType::f64);
  Tensor col = dst.slice(1, 2, 3);  // (3, 1) column view
  col.copy_(Tensor::from_vector<float>({1, 2, 3}, {3, 1}));
  const std::vector<double> v = dst.to_vector<double>();
  EXPECT_EQ(v[2], 1.0);
  EXPECT_EQ(v[6], 2.0);
  EXPECT_EQ(v[10], 3.0);
  EXPECT_EQ(v[0] + v[1] + v[3], 0.0);
  EXPECT_NE(error_of([&] { dst.copy_(iota({4, 3})); }).find("shape mismatch"), std::string::npos);
}

TEST(Tensor, FillAllDtypesAndClone) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8}) {
    Tensor x = Tensor::full({3, 5}, 7, t);
    Tensor c = x.clone();
    EXPECT_NE(c.storage(), x.storage());
    EXPECT_EQ(c.to(DType::f64).to_vector<double>(), std::vector<double>(15, 7.0)) << dtype_name(t);
  }
  Tensor x = iota({4, 4});
  x.permute({1, 0}).slice(0, 0, 1).fill_(9);  // first column of x through a transposed view
  const std::vector<float> v = x.to_vector<float>();
  EXPECT_EQ(v[0], 9.f);
  EXPECT_EQ(v[4], 9.f);
  EXPECT_EQ(v[1], 1.f);
}

TEST(Tensor, AddInPlaceConvertsSource) {
  Tensor y = Tensor::full({4}, 1, DType::f32);
  y.add_(Tensor::full({4}, 2, DType::f16), 0.5);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4, 2.f));
  y.add_(y, -0.5);  // y *= 0.5, aliasing allowed
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4, 1.f));
  EXPECT_THROW(y.add_(Tensor::full({3}, 1, DType::f32)), Error);
  Tensor i = Tensor::zeros({4}, DType::i32);
  EXPECT_THROW(i.add_(y), Error);
}

TEST(Tensor, CpuOutOfMemoryNamesTheTensor) {
  const std::string msg =
      error_of([] { Tensor::empty({int64_t(1) << 40, int64_t(1) << 20}, DType::f32, Device::cpu(), "huge_activation"); });
  EXPECT_NE(msg.find("out of memory on cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("huge_activation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4.00 EiB"), std::string::npos) << msg;  // 2^62 bytes asked
  EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
}

TEST(Tensor, RequiresGradOnlyOnFloatingLeaves) {
  Tensor w = Tensor::zeros({2}, DType::f32);
  EXPECT_FALSE(w.requires_grad());
  w.set_requires_grad(true);
  EXPECT_TRUE(w.requires_grad());
  Tensor alias = w;  // copies of a handle share the parameter identity
  EXPECT_EQ(alias.autograd_meta(), w.autograd_meta());
  EXPECT_FALSE(w.grad().defined());
  Tensor i = Tensor::zeros({2}, DType::i64);
  EXPECT_NE(error_of([&] { i.set_requires_grad(true); }).find("only floating"), std::string::npos);
}

TEST(Tensor, PinnedHostTensor) {
  Tensor p = Tensor::empty_pinned({16}, DType::f32, "staging");
  p.fill_(3);
  EXPECT_EQ(p.to_vector<float>(), std::vector<float>(16, 3.f));
  EXPECT_TRUE(p.device().is_cpu());
}

}  // namespace
}  // namespace cnn
