// GPU tensor behaviour (runs on the GPU machine): device round trips, strided copies and conversion on device,
// and Philox init bit-identical to the CPU for every floating dtype.
#include <gtest/gtest.h>

#include "core/context.h"
#include "core/tensor.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

TEST(TensorGpu, DeviceRoundTripAllDtypes) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8}) {
    Tensor x = Tensor::empty({3, 17, 5}, DType::f32);
    x.uniform_(11, 0, 0, 200);
    x = x.to(t);
    Tensor d = x.to(gpu);
    EXPECT_TRUE(d.device().is_cuda());
    EXPECT_TRUE(test::bitwise_equal(x, d.to(Device::cpu()), dtype_name(t)));
  }
}

TEST(TensorGpu, ViewsCopiesAndConversionOnDevice) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Tensor x = Tensor::empty({4, 6, 5}, DType::f32);
  x.normal_(3, 0, 0, 1);
  Tensor d = x.to(gpu);
  // permute + contiguous, slice, strided fill and cross-dtype copy must match the CPU results exactly.
  EXPECT_TRUE(test::bitwise_equal(x.permute({2, 0, 1}).contiguous(), d.permute({2, 0, 1}).contiguous(), "permute"));
  EXPECT_TRUE(test::bitwise_equal(x.slice(1, 2, 5).contiguous(), d.slice(1, 2, 5).contiguous(), "slice"));
  for (DType t : {DType::f16, DType::bf16, DType::f64, DType::i32, DType::u8}) {
    EXPECT_TRUE(test::bitwise_equal(x.to(t), d.to(t), std::string("convert to ") + dtype_name(t)));
    EXPECT_TRUE(test::bitwise_equal(x.to(t).to(DType::f32), d.to(t).to(DType::f32), "convert back"));
  }
  Tensor xc = x.clone(), dc = d.clone();
  xc.permute({1, 0, 2}).slice(0, 1, 2).fill_(-3);
  dc.permute({1, 0, 2}).slice(0, 1, 2).fill_(-3);
  EXPECT_TRUE(test::bitwise_equal(xc, dc, "strided fill"));
  Tensor dst = Tensor::zeros({5, 4, 6}, DType::f16, gpu);
  dst.copy_(x.permute({2, 0, 1}));  // host f32 strided -> device f16
  EXPECT_TRUE(test::bitwise_equal(x.permute({2, 0, 1}).contiguous().to(DType::f16), dst, "copy_ across devices"));
  Tensor acc = Tensor::full({7}, 1, DType::f32, gpu);
  acc.add_(Tensor::full({7}, 2, DType::f16, gpu), 0.5);
  EXPECT_EQ(acc.to(Device::cpu()).to_vector<float>(), std::vector<float>(7, 2.f));
}

TEST(TensorGpu, AddIntoFp32MatchesCpuBitwise) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  // y += alpha x: same types (f32, f16, bf16, f64) and f16 / bf16 widened into f32 as loaded, over sizes with and
  // without a tail after the 16-byte packs, on aligned tensors and on views one element in (no packs). Both sides
  // widen exactly and alpha = -0.5 makes alpha x exact, so y + alpha x rounds once on both (the GPU's fused
  // multiply-add included) and the results match bit for bit.
  const std::pair<DType, DType> kinds[] = {{DType::f32, DType::f32},   {DType::f16, DType::f16},
                                           {DType::bf16, DType::bf16}, {DType::f64, DType::f64},
                                           {DType::f16, DType::f32},   {DType::bf16, DType::f32}};
  for (const auto& [tx, ty] : kinds) {
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(4099), int64_t(100003)}) {
      for (int64_t offset : {int64_t(0), int64_t(1)}) {
        Tensor x = Tensor::empty({n + offset}, DType::f32), y = Tensor::empty({n + offset}, DType::f32);
        x.uniform_(11, 0, -2.0, 2.0);
        y.uniform_(12, 0, -2.0, 2.0);
        Tensor xc = x.to(tx).slice(0, offset, n + offset), yc = y.to(ty).slice(0, offset, n + offset).contiguous();
        Tensor xg = x.to(tx).to(gpu).slice(0, offset, n + offset);
        Tensor yg_full = y.to(ty).to(gpu);
        Tensor yg = yg_full.slice(0, offset, n + offset);
        yc.add_(xc, -0.5);
        yg.add_(xg, -0.5);
        EXPECT_TRUE(test::bitwise_equal(
            yc, yg.contiguous(), str_cat(dtype_name(tx), " into ", dtype_name(ty), " n=", n, " offset=", offset)));
      }
    }
  }
}

TEST(TensorGpu, PhiloxInitBitIdenticalToCpu) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  const uint64_t seed = 0x1234abcd5678ull, offset = (uint64_t(1) << 33) + 7;  // offset past 2^32: high counter word
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    Tensor c = Tensor::empty({1000, 37}, t), g = Tensor::empty({1000, 37}, t, gpu);
    c.uniform_(seed, offset, -0.5, 2.0);
    g.uniform_(seed, offset, -0.5, 2.0);
    EXPECT_TRUE(test::bitwise_equal(c, g, std::string("uniform ") + dtype_name(t)));
    c.normal_(seed, offset, 0.1, 0.02);
    g.normal_(seed, offset, 0.1, 0.02);
    EXPECT_TRUE(test::bitwise_equal(c, g, std::string("normal ") + dtype_name(t)));
    c.trunc_normal_(seed, offset, 0.0, 1.0, -0.5, 0.5);
    g.trunc_normal_(seed, offset, 0.0, 1.0, -0.5, 0.5);
    EXPECT_TRUE(test::bitwise_equal(c, g, std::string("trunc_normal ") + dtype_name(t)));
  }
}

TEST(TensorGpu, ZeroSizedTensors) {
  CNN_REQUIRE_GPU();
  Tensor z = Tensor::zeros({0, 3}, DType::f32, Device::cuda(0));
  EXPECT_EQ(z.to(Device::cpu()).numel(), 0);
  EXPECT_EQ(z.to(DType::f16).numel(), 0);
}

}  // namespace
}  // namespace cnn
