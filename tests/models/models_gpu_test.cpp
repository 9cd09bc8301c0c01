// CPU vs GPU agreement of each family (small variants, FP32): training-mode forward (batch-statistics BN, the same
// DropPath masks on both devices) and the gradient of every parameter for L = sum(logits * R).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "layers/functional.h"
#include "models/registry.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

struct DeviceRun {
  Tensor logits;
  std::vector<NamedParameter> params;
};

DeviceRun run_on(const std::string& name, Device device, uint64_t seed) {
  auto model = build_model(resolve_model_config(name, test::models_dir()), seed);
  model->to(device);
  const ModelCommon& c = model->common();
  const Tensor x = test::random_images(2, c.input_size, c.in_channels, seed + 1).to(device);
  Tensor r = Tensor::empty({2, c.num_classes}, DType::f32);
  r.uniform_(seed + 2, 0, -1.0, 1.0);
  Tape tape;
  const Tensor logits = model->forward(ForwardContext{&tape, true, seed, 3}, x);
  tape.backward(ops::sum(&tape, ops::mul(&tape, logits, r.to(device))));
  return {logits.to(Device::cpu()), model->named_parameters()};
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to(DType::f64).to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

class ModelsGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelsGpu, ForwardBackwardMatchesCpu) {
  CNN_REQUIRE_GPU();
  constexpr uint64_t kSeed = 4242;
  SCOPED_TRACE(::testing::Message() << GetParam() << " seed " << kSeed);
  const DeviceRun cpu = run_on(GetParam(), Device::cpu(), kSeed);
  const DeviceRun gpu = run_on(GetParam(), Device::cuda(0), kSeed);
  // Both sides are FP32 without TF32; they differ only in summation order (blocked GEMMs, cuDNN / Flash-DWC
  // reductions, BN batch statistics), ~1e-6 relative per layer, grown by ~10-30 layers and by BatchNorm's
  // 1 / sigma of a 2-image batch: 1e-3 of the tensor's largest magnitude bounds that with margin while a wrong
  // kernel (errors of order the values themselves) still fails.
  constexpr double kRel = 1e-3;
  EXPECT_TRUE(test::all_close(cpu.logits, gpu.logits, kRel * max_abs(cpu.logits), kRel, "logits"));
  ASSERT_EQ(cpu.params.size(), gpu.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    const Tensor expected = cpu.params[i].tensor.grad();
    const Tensor got = gpu.params[i].tensor.grad();
    ASSERT_TRUE(expected.defined() && got.defined()) << cpu.params[i].name;
    EXPECT_TRUE(test::all_close(expected, got.to(Device::cpu()), kRel * max_abs(expected) + 1e-7, kRel,
                                "grad " + cpu.params[i].name));
  }
}

// The harness itself on the CPU (runs without a GPU): two CPU runs agree bitwise, so any GPU difference above
// comes from the device.
TEST(ModelsDeviceHarness, CpuRunsAreReproducible) {
  const DeviceRun a = run_on("slak_tiny_test", Device::cpu(), 17);
  const DeviceRun b = run_on("slak_tiny_test", Device::cpu(), 17);
  EXPECT_TRUE(test::bitwise_equal(a.logits, b.logits, "logits"));
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i)
    EXPECT_TRUE(test::bitwise_equal(a.params[i].tensor.grad(), b.params[i].tensor.grad(), a.params[i].name));
}

INSTANTIATE_TEST_SUITE_P(Families, ModelsGpu,
                         ::testing::Values("convmixer_128_6_k7_p2", "convnext_nano_fmnist", "replknet_tiny_test",
                                           "slak_tiny_test"));

}  // namespace
}  // namespace cnn
