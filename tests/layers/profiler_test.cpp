// StepProfiler on the CPU (host clock): the segments tile the step, so every table sums to the step time; every op
// kind a small model records appears, each layer is named by its module path, and misuse is a clear error.
#include "layers/profiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "layers/functional.h"
#include "layers/layers.h"
#include "tests/support/gpu_compare.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

// x + ReLU(BatchNorm(dwconv(x))) -> LayerNorm -> Linear -> GELU -> DropPath.
class Block : public Module {
 public:
  explicit Block(int64_t c) : Module("Block") {
    dw = register_module("dw", std::make_shared<DepthwiseConv2d>(c, 3));
    bn = register_module("bn", std::make_shared<BatchNorm2d>(c));
    act = register_module("act", std::make_shared<ReLU>());
    norm = register_module("norm", std::make_shared<LayerNorm>(c));
    pw = register_module("pw", std::make_shared<Linear>(c, c));
    gelu = register_module("gelu", std::make_shared<GELU>());
    drop = register_module("drop", std::make_shared<DropPath>(0.5, 3));
  }
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override {
    const Tensor h = ops::add(ctx.tape, x, act->call(ctx, bn->call(ctx, dw->call(ctx, x))));
    return drop->call(ctx, gelu->call(ctx, pw->call(ctx, norm->call(ctx, h))));
  }
  std::shared_ptr<DepthwiseConv2d> dw;
  std::shared_ptr<BatchNorm2d> bn;
  std::shared_ptr<ReLU> act;
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Linear> pw;
  std::shared_ptr<GELU> gelu;
  std::shared_ptr<DropPath> drop;
};

std::shared_ptr<Sequential> small_net() {
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Conv2d>(3, 8, 2, 2));
  net->add(std::make_shared<Block>(8));
  net->add(std::make_shared<GlobalAvgPool>());
  net->add(std::make_shared<Linear>(8, 5));
  net->init(InitScheme::trunc_normal_002, 3);
  return net;
}

// One training step under the profiler (the caller's optimizer stands for two marks).
void profiled_step(Module& net, StepProfiler& prof, uint64_t step) {
  const Tensor x = test::random_input({4, 10, 10, 3}, 10 + step, false);
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 4}, {4});
  prof.begin_step();
  prof.mark("data");
  Tape tape;
  tape.set_observer(&prof);
  const Tensor loss = ops::softmax_cross_entropy(&tape, net.call(ForwardContext{&tape, true, 7, step}, x), labels);
  tape.backward(loss);
  prof.mark("optimizer");
  net.zero_grad();
  prof.end_step();
}

double sum_totals(const std::vector<ProfileRow>& rows) {
  double s = 0;
  for (const ProfileRow& r : rows) s += r.total_ms();
  return s;
}

const ProfileRow* find(const std::vector<ProfileRow>& rows, const std::string& name) {
  for (const ProfileRow& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

TEST(StepProfiler, TablesSumToTheStepAndNameEveryOpKindAndLayer) {
  auto net = small_net();
  StepProfiler prof(*net, Device::cpu());
  for (uint64_t s = 0; s < 3; ++s) profiled_step(*net, prof, s);
  const StepProfile p = prof.summary();
  ASSERT_EQ(p.steps, 3);
  ASSERT_GT(p.step_ms, 0.0);
  // Consecutive host-clock gaps telescope to the step: equal up to double rounding.
  const double tol = 1e-9 * p.step_ms;
  EXPECT_NEAR(p.forward_ms + p.backward_ms + p.other_ms, p.step_ms, tol);
  EXPECT_NEAR(sum_totals(p.ops), p.step_ms, tol);
  EXPECT_NEAR(sum_totals(p.layers), p.step_ms, tol);
  EXPECT_NEAR(sum_totals(p.types), p.step_ms, tol);
  const ProfileRow* bn_type = find(p.types, "BatchNorm2d");
  ASSERT_NE(bn_type, nullptr);
  EXPECT_DOUBLE_EQ(bn_type->calls, 1.0);  // the one BatchNorm2d layer

  std::set<std::string> ops;
  for (const ProfileRow& r : p.ops) ops.insert(r.name);
  for (const char* op : {"conv2d", "depthwise_conv2d", "batch_norm", "relu", "add", "layer_norm", "reshape", "linear",
                         "gelu", "sample_scale", "global_avg_pool", "softmax_cross_entropy", StepProfiler::kAccumulate,
                         "data", "optimizer", "step end"})
    EXPECT_TRUE(ops.count(op)) << "op kind '" << op << "' missing from the profile";

  // Each forward op once per step; its backward on the same row.
  const ProfileRow* dw = find(p.ops, "depthwise_conv2d");
  ASSERT_NE(dw, nullptr);
  EXPECT_DOUBLE_EQ(dw->calls, 2.0);  // one forward segment + one backward node per step
  EXPECT_GT(dw->forward_ms, 0.0);
  EXPECT_GT(dw->backward_ms, 0.0);

  const ProfileRow* bn = find(p.layers, "1.bn");
  ASSERT_NE(bn, nullptr) << "layers are named by module path";
  EXPECT_EQ(bn->type, "BatchNorm2d");
  EXPECT_DOUBLE_EQ(bn->calls, 1.0);
  const ProfileRow* block = find(p.layers, "1");  // the residual add runs in the block's own scope
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->type, "Block");
  EXPECT_NE(find(p.layers, StepProfiler::kNoModule), nullptr);  // the loss, outside every module
  EXPECT_NE(find(p.layers, StepProfiler::kOutside), nullptr);

  const std::string table = format_profile(p, 5);
  EXPECT_NE(table.find("depthwise_conv2d"), std::string::npos) << table;
  EXPECT_NE(table.find("more layers"), std::string::npos) << table;
}

TEST(StepProfiler, WorkOutsideAStepAndUnknownModulesAreErrors) {
  auto net = small_net();
  StepProfiler prof(*net, Device::cpu());
  EXPECT_NE(test::error_of([&] { prof.mark("x"); }).find("outside begin_step"), std::string::npos);
  prof.begin_step();
  EXPECT_NE(test::error_of([&] { prof.begin_step(); }).find("not ended"), std::string::npos);
  Tape tape;
  tape.set_observer(&prof);
  ReLU stranger;
  Tensor x = test::random_input({2, 3}, 1, true);
  EXPECT_NE(test::error_of([&] {
              stranger.call(ForwardContext{&tape, true, 0, 0}, x);
            }).find("outside the profiled"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn
