// Optimizer state through a safetensors checkpoint: a resumed run continues bit for bit; malformed state errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/safetensors.h"
#include "optim/adamw.h"
#include "tests/optim/optim_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::optim {
namespace {

using test::make_param;
using test::set_grad;

std::vector<ParamRef> fresh_params() {
  return {make_param("stem.weight", {0.3f, -0.7f, 1.1f, 0.05f}, true), make_param("stem.bias", {0.01f, -0.02f}, false)};
}

// Deterministic gradients of step t (no RNG needed: the values only have to differ between steps).
void set_step_grads(const std::vector<ParamRef>& p, int t) {
  const float s = float(t + 1);
  set_grad(p[0], {0.1f * s, -0.2f / s, 0.3f, -0.05f * s * s});
  set_grad(p[1], {0.01f * s, 0.5f / s});
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()) + ".safetensors")).string();
}

TEST(OptimState, SafetensorsResumeContinuesBitExactly) {
  const AdamWOptions o{0.9, 0.95, 1e-6, 0.05};
  std::vector<ParamRef> a = fresh_params();
  AdamW opt_a(a, o);
  for (int t = 0; t < 3; ++t) {
    set_step_grads(a, t);
    opt_a.step(1e-2 * (t + 1));
  }
  std::map<std::string, Tensor> ckpt = opt_a.state_dict();
  for (const ParamRef& r : a) ckpt["model." + r.name] = r.param;
  const std::string path = temp_path("optim_state_test");
  save_safetensors(path, ckpt);
  for (int t = 3; t < 5; ++t) {
    set_step_grads(a, t);
    opt_a.step(1e-2 * (t + 1));
  }

  const SafetensorsData loaded = load_safetensors(path);
  std::filesystem::remove(path);
  std::vector<ParamRef> b = fresh_params();
  for (ParamRef& r : b) r.param.copy_(loaded.tensors.at("model." + r.name));
  AdamW opt_b(b, o);
  opt_b.load_state_dict(loaded.tensors);  // "model.*" keys are not the optimizer's and are ignored
  EXPECT_EQ(opt_b.step_count(), 3);
  for (int t = 3; t < 5; ++t) {
    set_step_grads(b, t);
    opt_b.step(1e-2 * (t + 1));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(test::bitwise_equal(a[i].param, b[i].param, a[i].name));
  }
  const auto sa = opt_a.state_dict(), sb = opt_b.state_dict();
  for (const auto& [key, t] : sa) EXPECT_TRUE(test::bitwise_equal(t, sb.at(key), key));
}

TEST(OptimState, LoadRejectsMissingWrongAndUnexpectedKeys) {
  std::vector<ParamRef> p = fresh_params();
  AdamW opt(p);
  const std::map<std::string, Tensor> good = opt.state_dict();
  auto expect_error = [&](std::map<std::string, Tensor> s, const std::string& needle) {
    try {
      opt.load_state_dict(s);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto s = good;
  s.erase("optim.stem.bias.exp_avg_sq");
  expect_error(s, "missing key 'optim.stem.bias.exp_avg_sq'");
  s = good;
  s["optim.stem.weight.exp_avg"] = Tensor::zeros({3}, DType::f32);
  expect_error(s, "optim.stem.weight.exp_avg");
  s = good;
  s["optim.head.weight.exp_avg"] = Tensor::zeros({3}, DType::f32);
  expect_error(s, "unexpected key 'optim.head.weight.exp_avg'");
  s = good;
  s["optim.step"] = Tensor::from_vector(std::vector<int64_t>{-4}, {1});
  expect_error(s, "optim.step");
  s = good;
  s["optim.step"] = Tensor::zeros({1}, DType::f32);
  expect_error(s, "'optim.step' expected i64 (1)");
}

}  // namespace
}  // namespace cnn::optim
