// GPU optimizer kernels against the CPU reference: AdamW (bitwise: both run the same explicitly rounded float ops),
// gradient norm / clipping, unscale with inf/nan detection across launch batches, the loss scaler in lockstep,
// and a state round trip on the device. Sizes span several launch batches and awkward chunk remainders.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/loss_scaler.h"
#include "tests/optim/optim_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::optim {
namespace {

constexpr uint64_t kSeed = 4242;
// 130 tensors: more than two AdamW batches (56) and one gradient batch (120); sizes around the 16384 chunk.
constexpr int kTensors = 130;
constexpr int64_t kSizes[] = {1, 17, 72, 16383, 16385, 3 * 16384 + 5, 1000, 100003};

int64_t size_of(int i) { return kSizes[i % 8]; }

// Parameters (uniform in [-1, 1)) and gradients (uniform in [-g, g)) on the CPU, Philox stream per tensor.
std::vector<ParamRef> make_params(Device device) {
  std::vector<ParamRef> out;
  uint64_t offset = 0;
  for (int i = 0; i < kTensors; ++i) {
    const std::string name = str_cat("p", i);  // str_cat: GCC 12 warns falsely on "p" + std::to_string(i)
    Tensor p = Tensor::empty({size_of(i)}, DType::f32, Device::cpu(), name);
    p.uniform_(kSeed, offset, -1.0, 1.0);
    offset += uint64_t(size_of(i));
    p = p.to(device);
    p.set_requires_grad(true);
    out.push_back(ParamRef{name, p, i % 3 != 0});
  }
  return out;
}

void set_grads(const std::vector<ParamRef>& params, int step, double range) {
  uint64_t offset = 0;
  for (const ParamRef& r : params) {
    Tensor g = Tensor::empty(r.param.shape(), DType::f32, Device::cpu());
    g.uniform_(kSeed + 1 + uint64_t(step), offset, -range, range);
    offset += uint64_t(r.param.numel());
    r.param.autograd_meta()->grad = g.to(r.param.device());
  }
}

void expect_params_bitwise(const std::vector<ParamRef>& cpu, const std::vector<ParamRef>& gpu, const char* what) {
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_TRUE(test::bitwise_equal(cpu[i].param, gpu[i].param, std::string(what) + " " + cpu[i].name))
        << "seed " << kSeed;
  }
}

TEST(OptimGpu, AdamWMatchesCpuBitwise) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  std::vector<ParamRef> pc = make_params(Device::cpu()), pg = make_params(gpu);
  const AdamWOptions o{0.9, 0.999, 1e-8, 0.05};
  AdamW oc(pc, o), og(pg, o);
  std::vector<std::pair<Tensor, Tensor>> hc, hg;
  for (int i = 0; i < kTensors; i += 2) {
    hc.push_back({pc[size_t(i)].param, Tensor::zeros(pc[size_t(i)].param.shape(), DType::f16)});
    hg.push_back({pg[size_t(i)].param, Tensor::zeros(pg[size_t(i)].param.shape(), DType::f16, gpu)});
  }
  oc.set_half_copies(hc);
  og.set_half_copies(hg);
  const StepControl cc{Tensor(), scalar_tensor(0.75f, Device::cpu(), "coef")};
  const StepControl cg{Tensor(), scalar_tensor(0.75f, gpu, "coef")};
  for (int t = 0; t < 3; ++t) {
    set_grads(pc, t, 0.1);
    set_grads(pg, t, 0.1);
    oc.step(1e-3 * (t + 1), cc);
    og.step(1e-3 * (t + 1), cg);
  }
  EXPECT_EQ(og.step_count(), 3);
  expect_params_bitwise(pc, pg, "param");
  const auto sc = oc.state_dict(), sg = og.state_dict();
  for (const auto& [key, t] : sc) EXPECT_TRUE(test::bitwise_equal(t, sg.at(key), key)) << "seed " << kSeed;
  for (size_t i = 0; i < hc.size(); ++i) {
    EXPECT_TRUE(test::bitwise_equal(hc[i].second, hg[i].second, "f16 copy " + std::to_string(i)));
  }
}

TEST(OptimGpu, GradNormAndClipMatchCpu) {
  CNN_REQUIRE_GPU();
  std::vector<ParamRef> pc = make_params(Device::cpu()), pg = make_params(Device::cuda(0));
  set_grads(pc, 0, 1.0);
  set_grads(pg, 0, 1.0);
  const GradNorm nc = grad_norm(pc, 1.0), ng = grad_norm(pg, 1.0);
  // GPU: float sums of 64 squares per thread, then a float block tree, then double; CPU: double throughout.
  // Relative error of a float sum of 64 positive terms is below 64 * 6e-8 ~ 4e-6.
  EXPECT_TRUE(test::all_close(nc.norm, ng.norm, 0.0, 1e-5, "norm")) << "seed " << kSeed;
  EXPECT_TRUE(test::all_close(nc.coef, ng.coef, 0.0, 1e-5, "coef")) << "seed " << kSeed;
  clip_grad_norm_(pc, 1.0);
  clip_grad_norm_(pg, 1.0);
  for (size_t i = 0; i < pc.size(); ++i) {
    // Each side multiplies by its own coefficient, which differ by at most the 1e-5 above.
    ASSERT_TRUE(test::all_close(pc[i].param.grad(), pg[i].param.grad(), 1e-12, 1e-5, "clipped " + pc[i].name));
  }
  EXPECT_LT(grad_norm(pg, 1.0).norm.item(), 1.0 + 1e-5);  // clipped to max_norm (1e-5: the norm's float error)
}

TEST(OptimGpu, UnscaleDetectsInfAndNanInAnyBatch) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  std::vector<ParamRef> pc = make_params(Device::cpu()), pg = make_params(gpu);
  DynamicLossScaler sc(Device::cpu()), sg(gpu);
  set_grads(pc, 1, 1000.0);
  set_grads(pg, 1, 1000.0);
  sc.unscale_and_check(pc);
  sg.unscale_and_check(pg);
  EXPECT_EQ(sg.found_inf().item(), 0.0);
  for (size_t i = 0; i < pc.size(); ++i) {
    // 1 / 65536 is a power of two: the unscale is exact on both sides.
    ASSERT_TRUE(test::bitwise_equal(pc[i].param.grad(), pg[i].param.grad(), "unscaled " + pc[i].name));
  }
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    for (int where : {0, 125}) {  // first launch batch (1 element), second batch (3 * 16384 + 5 elements)
      set_grads(pg, 2, 1.0);
      Tensor g = pg[size_t(where)].param.grad();
      g.slice(0, g.numel() - 1, g.numel()).fill_(double(bad));
      sg.unscale_and_check(pg);
      EXPECT_EQ(sg.found_inf().item(), 1.0) << "bad value " << bad << " in tensor " << where;
    }
  }
}

TEST(OptimGpu, ZeroGradClearsEveryBatchAndNonFiniteValues) {
  CNN_REQUIRE_GPU();
  std::vector<ParamRef> pg = make_params(Device::cuda(0));
  set_grads(pg, 3, 1.0);
  // The multi-tensor zero stores zeros (a product with 0 would keep a NaN): a NaN and an inf in both batches.
  pg[0].param.grad().fill_(std::nan(""));
  Tensor last = pg[125].param.grad();
  last.slice(0, last.numel() - 1, last.numel()).fill_(std::numeric_limits<double>::infinity());
  Tensor no_grad = pg[7].param;  // a parameter without a gradient keeps none
  no_grad.reset_grad();
  zero_grad(pg);
  EXPECT_FALSE(pg[7].param.grad().defined());
  for (size_t i = 0; i < pg.size(); ++i) {
    if (i == 7) continue;
    const Tensor g = pg[i].param.grad();
    ASSERT_TRUE(test::bitwise_equal(g, Tensor::zeros(g.shape(), DType::f32, g.device()), "zeroed " + pg[i].name));
  }
}

TEST(OptimGpu, LossScalerAndSkippedStepsInLockstepWithCpu) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  LossScalerOptions so;
  so.init_scale = 1024;
  so.growth_interval = 2;
  so.min_scale = 256;
  std::vector<ParamRef> pc = make_params(Device::cpu()), pg = make_params(gpu);
  AdamW oc(pc), og(pg);
  DynamicLossScaler sc(Device::cpu(), so), sg(gpu, so);
  const bool overflow[] = {false, false, false, true, true, true, false, false, true, false};
  for (int t = 0; t < 10; ++t) {
    set_grads(pc, t, 100.0);
    set_grads(pg, t, 100.0);
    if (overflow[t]) {
      pc[7].param.grad().fill_(std::numeric_limits<double>::infinity());
      pg[7].param.grad().fill_(std::numeric_limits<double>::infinity());
    }
    sc.unscale_and_check(pc);
    sg.unscale_and_check(pg);
    const GradNorm nc = grad_norm(pc, 1.0);
    // The step uses the CPU clip coefficient on both sides so that the weights stay bitwise comparable.
    oc.step(1e-3, StepControl{sc.found_inf(), nc.coef});
    og.step(1e-3, StepControl{sg.found_inf(), nc.coef.to(gpu)});
    sc.update();
    sg.update();
    const LossScalerState a = sc.read_state(), b = sg.read_state();
    EXPECT_EQ(b.scale, a.scale) << "step " << t;
    EXPECT_EQ(b.growth_tracker, a.growth_tracker) << "step " << t;
    EXPECT_EQ(b.skipped_steps, a.skipped_steps) << "step " << t;
    EXPECT_EQ(b.found_inf, overflow[t]) << "step " << t;
  }
  EXPECT_EQ(og.step_count(), 6);
  EXPECT_EQ(sg.read_state().scale, 256.0);  // 1024, 2048, 2048, 1024, 512, 256, 256, 512, 256, 256 (floor 256)
  expect_params_bitwise(pc, pg, "after scaled steps");
}

TEST(OptimGpu, StateRoundTripOnDevice) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  std::vector<ParamRef> a = make_params(gpu);
  AdamW oa(a);
  for (int t = 0; t < 2; ++t) {
    set_grads(a, t, 0.1);
    oa.step(1e-3);
  }
  std::vector<ParamRef> b = make_params(gpu);
  for (size_t i = 0; i < a.size(); ++i) b[i].param.copy_(a[i].param);
  AdamW ob(b);
  std::map<std::string, Tensor> host;
  for (const auto& [key, t] : oa.state_dict()) host[key] = t.to(Device::cpu());  // as read from a checkpoint
  ob.load_state_dict(host);
  set_grads(a, 2, 0.1);
  set_grads(b, 2, 0.1);
  oa.step(1e-3);
  ob.step(1e-3);
  expect_params_bitwise(a, b, "resumed");
  EXPECT_EQ(ob.step_count(), 3);
}

}  // namespace
}  // namespace cnn::optim
