// Tape: reverse replay, accumulation, retain / free, NoGradGuard and the error paths.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/error.h"
#include "layers/functional.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

Tensor vec(std::vector<float> v, bool grad) {
  Tensor t = Tensor::from_vector(v, {int64_t(v.size())});
  if (grad) t.set_requires_grad(true);
  return t;
}

using test::error_of;

TEST(Autograd, ChainRuleThroughSharedInput) {
  Tensor x = vec({1, 2, 3}, true);
  Tape tape;
  // L = sum(x * x + 3x) -> dL/dx = 2x + 3; x is used three times.
  Tensor y = ops::add(&tape, ops::mul(&tape, x, x), ops::scale(&tape, x, 3.0));
  Tensor loss = ops::sum(&tape, y);
  EXPECT_EQ(tape.size(), 4u);
  tape.backward(loss);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  EXPECT_EQ(tape.size(), 0u);  // freed
}

TEST(Autograd, GradientsAccumulateAcrossBackwards) {
  Tensor w = vec({1, 1}, true);
  for (int step = 0; step < 3; ++step) {
    Tape tape;
    tape.backward(ops::sum(&tape, ops::scale(&tape, w, 2.0)));
  }
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{6, 6}));
  w.zero_grad();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(Autograd, RetainGraphAllowsASecondReplay) {
  Tensor w = vec({1, 2}, true);
  Tape tape;
  Tensor loss = ops::sum(&tape, ops::mul(&tape, w, w));
  tape.backward(loss, /*retain_graph=*/true);
  tape.backward(loss);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{4, 8}));
}

TEST(Autograd, SecondBackwardOverFreedTapeIsAnError) {
  Tensor w = vec({1, 2}, true);
  Tape tape;
  Tensor loss = ops::sum(&tape, w);
  tape.backward(loss);
  EXPECT_NE(error_of([&] { tape.backward(loss); }).find("already replayed"), std::string::npos);
}

TEST(Autograd, BackwardWithoutRequiresGradIsAnError) {
  Tensor x = vec({1, 2}, false);
  Tape tape;
  Tensor loss = ops::sum(&tape, x);
  EXPECT_EQ(tape.size(), 0u);
  EXPECT_NE(error_of([&] { tape.backward(loss); }).find("does not require grad"), std::string::npos);
}

TEST(Autograd, NullTapeAndNoGradGuardRecordNothing) {
  Tensor w = vec({1, 2}, true);
  Tensor a = ops::sum(nullptr, w);
  EXPECT_FALSE(a.requires_grad());
  Tape tape;
  {
    NoGradGuard guard;
    Tensor b = ops::sum(&tape, w);
    EXPECT_FALSE(b.requires_grad());
  }
  EXPECT_EQ(tape.size(), 0u);
  EXPECT_TRUE(grad_enabled());
}

TEST(Autograd, NonScalarNeedsExplicitSeed) {
  Tensor w = vec({1, 2, 3}, true);
  Tape tape;
  Tensor y = ops::scale(&tape, w, 2.0);
  EXPECT_NE(error_of([&] { tape.backward(y, true); }).find("must be a scalar"), std::string::npos);
  tape.backward(y, Tensor::from_vector<float>({1, 10, 100}, {3}));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2, 20, 200}));
  Tape other;
  Tensor z = ops::scale(&other, w, 2.0);
  EXPECT_NE(error_of([&] { other.backward(z, Tensor::zeros({2}, DType::f32)); }).find("does not match"),
            std::string::npos);
}

TEST(Autograd, LossFromAnotherTapeIsAnError) {
  Tensor w = vec({1}, true);
  Tape a, b;
  Tensor loss = ops::sum(&a, w);
  EXPECT_NE(error_of([&] { b.backward(loss); }).find("not produced by an op recorded on this tape"),
            std::string::npos);
}

TEST(Autograd, OnlyInputsRequiringGradReceiveGradients) {
  Tensor w = vec({2, 3}, true);
  Tensor c = vec({5, 7}, false);
  Tape tape;
  tape.backward(ops::sum(&tape, ops::mul(&tape, w, c)));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{5, 7}));
  EXPECT_FALSE(c.grad().defined());
}

// Each node's saved tensors are released as soon as its closure has run: by the time the first node of a chain runs,
// the tensors saved by the later nodes are gone (the step's memory peak does not carry them through the backward).
// With retain_graph they stay for the second replay.
TEST(Autograd, SavedTensorsAreReleasedAsTheReplayPassesTheirNode) {
  for (bool retain : {false, true}) {
    Tensor x = vec({1, 2}, true);
    Tape tape;
    Tensor saved = Tensor::full({2}, 5.0, DType::f32);  // held by the second node's closure and by this test
    Tensor h = x.clone(), y = x.clone();
    tape.record("first", {&x}, {&h}, [&](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      EXPECT_EQ(saved.storage().use_count(), retain ? 2 : 1) << "retain " << retain;
      return {g[0].clone()};
    });
    tape.record("second", {&h}, {&y}, [saved](const std::vector<Tensor>&) -> std::vector<Tensor> {
      return {saved.clone()};  // a gradient that reads the saved tensor
    });
    EXPECT_EQ(saved.storage().use_count(), 2);
    tape.backward(y, Tensor::full({2}, 1.0, DType::f32), retain);
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 5}));
    EXPECT_EQ(saved.storage().use_count(), retain ? 2 : 1);
  }
}

TEST(Autograd, CustomNodeRecordsLikeLayersWill) {
  // A layer defined outside layers/functional records the same way: inputs, outputs, closure.
  Tensor x = vec({1, 2}, true);
  Tape tape;
  Tensor y = x.clone();
  ASSERT_TRUE(Tape::should_record(&tape, {&x}));
  tape.record("identity_times_4", {&x}, {&y}, [](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor d = g[0].clone();
    d.add_(g[0], 3.0);
    return {d};
  });
  EXPECT_FALSE(y.is_leaf());
  EXPECT_THROW(y.set_requires_grad(false), Error);
  tape.backward(y, Tensor::full({2}, 1.0, DType::f32));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{4, 4}));
}

TEST(Autograd, WrongGradientShapeFromANodeIsAnError) {
  Tensor x = vec({1, 2}, true);
  Tape tape;
  Tensor y = x.clone();
  tape.record("bad", {&x}, {&y}, [](const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {Tensor::zeros({3}, DType::f32)};
  });
  EXPECT_NE(error_of([&] { tape.backward(y, Tensor::full({2}, 1.0, DType::f32)); }).find("gradient of input 0"),
            std::string::npos);
}

// Gradients summed in place (one pass) must never write into a gradient another slot still holds: add's backward
// hands the same tensor to both inputs. x feeds h and k; h also feeds mul(h, c). dL/dx = (c + 1) + 1 whichever
// contribution reaches h first; writing h's sum into the shared tensor would give k c + 1 and dL/dx = 2c + 2.
TEST(Autograd, InPlaceGradientSumsLeaveSharedGradientsAlone) {
  for (bool mul_first : {false, true}) {
    Tensor x = vec({1, 2, 3}, true);
    const Tensor c = vec({10, 20, 30}, false);
    Tape tape;
    Tensor h = ops::scale(&tape, x, 1.0), k = ops::scale(&tape, x, 1.0);
    Tensor m, s;
    if (mul_first) m = ops::mul(&tape, h, c);
    s = ops::add(&tape, h, k);
    if (!mul_first) m = ops::mul(&tape, h, c);
    tape.backward(ops::sum(&tape, ops::add(&tape, s, m)));
    EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{12, 22, 32})) << "mul first: " << mul_first;
  }
}

// A tape's observer sees every recorded op (its tag comes back with the node) and every node replayed, in reverse.
TEST(Autograd, ObserverSeesRecordsAndNodesWithTheirTags) {
  struct Log : TapeObserver {
    std::vector<std::string> events;
    int next = 100;
    void on_scope_begin(const void*) override { events.push_back("scope+"); }
    void on_scope_end(const void*) override { events.push_back("scope-"); }
    int on_record(const char* op) override {
      events.push_back(str_cat("record ", op, " ", next));
      return next++;
    }
    void on_backward_begin() override { events.push_back("backward"); }
    void on_node_begin(const std::string& op, int tag) override { events.push_back(str_cat("begin ", op, " ", tag)); }
    void on_node_end(const std::string& op, int tag) override { events.push_back(str_cat("end ", op, " ", tag)); }
    void on_backward_end() override { events.push_back("done"); }
  } log;
  Tensor x = vec({1, 2}, true);
  Tape tape;
  tape.set_observer(&log);
  tape.backward(ops::sum(&tape, ops::scale(&tape, x, 2.0)));
  EXPECT_EQ(log.events, (std::vector<std::string>{"record scale 100", "record sum 101", "backward", "begin sum 101",
                                                  "end sum 101", "begin scale 100", "end scale 100", "done"}));
}

}  // namespace
}  // namespace cnn
