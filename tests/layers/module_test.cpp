// Module system: dotted naming, parameter counting and decay flags, buffers, dtype moves, train/eval, init schemes
// (PyTorch kaiming-uniform bounds, timm truncated normal), Sequential, and registration errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "core/error.h"
#include "layers/init.h"
#include "layers/functional.h"
#include "layers/layers.h"
#include "optim/sgd.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

using test::error_of;

// A ConvNeXt-like block: x + DropPath(LayerScale(pwconv2(GELU(pwconv1(LayerNorm(dwconv(x))))))).
class Block : public Module {
 public:
  Block(int64_t c, uint32_t id) : Module("Block") {
    dwconv = register_module("dwconv", std::make_shared<DepthwiseConv2d>(c, 7));
    norm = register_module("norm", std::make_shared<LayerNorm>(c));
    pwconv1 = register_module("pwconv1", std::make_shared<Linear>(c, 4 * c));
    act = register_module("act", std::make_shared<GELU>());
    pwconv2 = register_module("pwconv2", std::make_shared<Linear>(4 * c, c));
    ls = register_module("ls", std::make_shared<LayerScale>(c, 1e-6));
    drop = register_module("drop_path", std::make_shared<DropPath>(0.1, id));
  }
  Tensor forward(const ForwardContext& ctx, const Tensor& x) override {
    Tensor h = norm->forward(ctx, dwconv->forward(ctx, x));
    h = pwconv2->forward(ctx, act->forward(ctx, pwconv1->forward(ctx, h)));
    return ops::add(ctx.tape, x, drop->forward(ctx, ls->forward(ctx, h)));
  }
  std::shared_ptr<DepthwiseConv2d> dwconv;
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Linear> pwconv1, pwconv2;
  std::shared_ptr<GELU> act;
  std::shared_ptr<LayerScale> ls;
  std::shared_ptr<DropPath> drop;
};

// stem conv -> BatchNorm -> 2 blocks -> global average pool -> head.
std::shared_ptr<Sequential> small_net() {
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Conv2d>(3, 8, 4, 4));
  net->add(std::make_shared<BatchNorm2d>(8));
  auto stage = net->add(std::make_shared<Sequential>());
  stage->add(std::make_shared<Block>(8, 0));
  stage->add(std::make_shared<Block>(8, 1));
  net->add(std::make_shared<GlobalAvgPool>());
  net->add(std::make_shared<Linear>(8, 5));
  return net;
}

std::shared_ptr<BatchNorm2d> stem_bn(const std::shared_ptr<Sequential>& net) {
  return std::dynamic_pointer_cast<BatchNorm2d>(net->named_children()[1].second);
}

TEST(Module, DottedNamesCountsAndDecayFlags) {
  auto net = small_net();
  const auto params = net->named_parameters();
  ASSERT_EQ(params.front().name, "0.weight");
  EXPECT_EQ(params.front().tensor.shape(), (Shape{8, 4, 4, 3}));
  std::map<std::string, NamedParameter> by_name;
  for (const auto& p : params) by_name[p.name] = p;
  ASSERT_TRUE(by_name.count("2.1.dwconv.weight"));
  EXPECT_EQ(by_name["2.1.dwconv.weight"].tensor.shape(), (Shape{7, 7, 8}));
  EXPECT_TRUE(by_name["2.1.dwconv.weight"].decay);
  EXPECT_FALSE(by_name["2.1.dwconv.bias"].decay);
  EXPECT_FALSE(by_name["2.0.norm.weight"].decay);
  EXPECT_FALSE(by_name["2.0.ls.gamma"].decay);
  EXPECT_FALSE(by_name["1.weight"].decay);
  EXPECT_TRUE(by_name["2.0.pwconv1.weight"].decay);
  EXPECT_TRUE(by_name["4.weight"].decay);
  for (const auto& p : params) EXPECT_TRUE(p.tensor.requires_grad()) << p.name;
  // stem 8*4*4*3 + 8, BN 16; per block: dw 7*7*8 + 8, LN 16, pw1 8*32 + 32, pw2 32*8 + 8, LS 8; head 8*5 + 5.
  const int64_t block = 7 * 7 * 8 + 8 + 16 + 8 * 32 + 32 + 32 * 8 + 8 + 8;
  EXPECT_EQ(net->parameter_count(), 8 * 4 * 4 * 3 + 8 + 16 + 2 * block + 8 * 5 + 5);
  EXPECT_EQ(net->parameters().size(), params.size());

  const auto buffers = net->named_buffers();
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_EQ(buffers[0].first, "1.running_mean");
  EXPECT_EQ(buffers[2].first, "1.num_batches_tracked");
  EXPECT_EQ(buffers[2].second.dtype(), DType::i64);
}

TEST(Module, ForwardTrainEvalAndDtypeMoves) {
  auto net = small_net();
  net->init(InitScheme::trunc_normal_002, 7);
  Tensor x = Tensor::empty({2, 8, 8, 3}, DType::f32);
  x.uniform_(1, 0, -1, 1);
  Tape tape;
  ForwardContext ctx{&tape, true, 11, 0};
  const Tensor y = net->forward(ctx, x);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  tape.backward(ops::sum(&tape, y));
  for (const auto& p : net->named_parameters()) EXPECT_TRUE(p.tensor.grad().defined()) << p.name;
  auto bn = stem_bn(net);
  ASSERT_TRUE(bn);
  EXPECT_EQ(bn->num_batches_tracked.item(), 1.0);

  // eval() on the tree: BN stops counting; a sub-tree in eval freezes only that sub-tree.
  net->eval();
  EXPECT_FALSE(bn->is_training());
  net->forward(ForwardContext{nullptr, true, 11, 1}, x);
  EXPECT_EQ(bn->num_batches_tracked.item(), 1.0);
  net->train();
  bn->eval();
  net->forward(ForwardContext{nullptr, true, 11, 2}, x);
  EXPECT_EQ(bn->num_batches_tracked.item(), 1.0);
  EXPECT_TRUE(net->is_training());
  bn->train();
  net->forward(ForwardContext{nullptr, true, 11, 3}, x);
  EXPECT_EQ(bn->num_batches_tracked.item(), 2.0);

  net->zero_grad();
  EXPECT_FALSE(net->parameters()[0].grad().defined());

  net->to(DType::f64);
  for (const auto& p : net->named_parameters()) {
    EXPECT_EQ(p.tensor.dtype(), DType::f64) << p.name;
    EXPECT_TRUE(p.tensor.requires_grad() && p.tensor.is_leaf()) << p.name;
  }
  EXPECT_EQ(bn->running_var.dtype(), DType::f64);
  EXPECT_EQ(net->forward(ForwardContext{}, x.to(DType::f64)).dtype(), DType::f64);
  net->to(DType::f16);  // running statistics stay FP32 under half parameters
  EXPECT_EQ(bn->weight.dtype(), DType::f16);
  EXPECT_EQ(bn->running_mean.dtype(), DType::f32);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), DType::i64);
}

TEST(Module, TinyConvNetOverfitsEightImagesOnCpu) {
  // Every layer kind in one graph, trained end to end: the loss on 8 fixed images must fall well below chance.
  auto net = small_net();
  net->init(InitScheme::trunc_normal_002, 21);
  Tensor x = Tensor::empty({8, 8, 8, 3}, DType::f32);
  x.uniform_(22, 0, -1, 1);
  const Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 0, 1, 2}, {8});
  optim::SgdMomentum opt(net->parameters(), 0.1, 0.9);
  double first = 0, last = 0;
  for (uint64_t step = 0; step < 60; ++step) {
    Tape tape;
    const Tensor loss = ops::softmax_cross_entropy(&tape, net->forward(ForwardContext{&tape, true, 5, step}, x),
                                                   labels);
    opt.zero_grad();
    tape.backward(loss);
    opt.step();
    (step == 0 ? first : last) = loss.item();
  }
  // Chance level is ln 5 = 1.61; 60 full-batch steps memorise 8 samples (seeded and deterministic).
  EXPECT_NEAR(first, std::log(5.0), 0.2);
  EXPECT_LT(last, 0.01) << "first loss " << first;  // reaches ~2e-5
}

TEST(Module, InitSchemes) {
  // PyTorch default: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias; fan_in = C * R * S.
  Conv2d conv(16, 32, 3);
  conv.init(InitScheme::pytorch_default, 3);
  const double b = 1.0 / std::sqrt(16.0 * 9.0);
  auto w = conv.weight.to_vector<float>();
  double max_abs = 0, sum_sq = 0;
  for (float v : w) {
    max_abs = std::max(max_abs, double(std::fabs(v)));
    sum_sq += double(v) * v;
  }
  EXPECT_LE(max_abs, b);
  EXPECT_GT(max_abs, 0.95 * b);  // 4608 draws reach the bound's last 5% with probability 1 - 0.95^4608
  // uniform(-b, b) has variance b^2 / 3; 4608 samples: relative std of the estimate ~ 3%, 15% is 5 sigma.
  EXPECT_NEAR(sum_sq / double(w.size()), b * b / 3, 0.15 * b * b / 3);
  for (float v : conv.bias.to_vector<float>()) EXPECT_LE(std::fabs(v), b);

  DepthwiseConv2d dw(8, 7);
  dw.init(InitScheme::pytorch_default, 3);
  for (float v : dw.weight.to_vector<float>()) EXPECT_LE(std::fabs(v), 1.0 / 7.0);  // fan_in = 1 * 7 * 7

  // timm: trunc_normal(std 0.02) in [-2, 2], zero bias.
  Linear lin(64, 96);
  lin.init(InitScheme::trunc_normal_002, 5);
  sum_sq = 0;
  for (float v : lin.weight.to_vector<float>()) sum_sq += double(v) * v;
  // 6144 draws of N(0, 0.02^2) (the [-2, 2] cut is 100 sigma): sample std within 5% of 0.02 (~3 sigma).
  EXPECT_NEAR(std::sqrt(sum_sq / (64 * 96)), 0.02, 0.001);
  for (float v : lin.bias.to_vector<float>()) EXPECT_EQ(v, 0.f);

  // Same seed, same values; parameters draw disjoint streams.
  Linear again(64, 96);
  again.init(InitScheme::trunc_normal_002, 5);
  EXPECT_EQ(again.weight.to_vector<float>(), lin.weight.to_vector<float>());
  Sequential two;
  auto l1 = two.add(std::make_shared<Linear>(4, 4, false));
  auto l2 = two.add(std::make_shared<Linear>(4, 4, false));
  two.init(InitScheme::pytorch_default, 9);
  EXPECT_NE(l1->weight.to_vector<float>(), l2->weight.to_vector<float>());

  LayerNorm ln(6);
  EXPECT_EQ(ln.weight.to_vector<float>(), std::vector<float>(6, 1.f));
  LayerScale ls(3, 1e-6);
  EXPECT_EQ(ls.gamma.to_vector<float>(), std::vector<float>(3, 1e-6f));
}

TEST(Module, LayerOptionsAndErrors) {
  DepthwiseConv2dOptions o;
  o.channels = 4, o.kernel_h = 51, o.kernel_w = 5, o.stride_h = 2, o.stride_w = 2;
  DepthwiseConv2d dw(o);
  EXPECT_EQ(dw.options().pad_top, 25);
  EXPECT_EQ(dw.options().pad_bottom, 25);
  EXPECT_EQ(dw.options().pad_left, 2);
  DepthwiseConv2dOptions even;
  even.channels = 2, even.kernel_h = even.kernel_w = 4;
  DepthwiseConv2d dw_even(even);
  EXPECT_EQ(dw_even.options().pad_top, 1);  // 'same' for even kernels: 1 before, 2 after
  EXPECT_EQ(dw_even.options().pad_bottom, 2);

  EXPECT_NE(error_of([] { Conv2d(0, 4, 3); }).find("Conv2d: expected in_channels >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_of([] { DropPath(1.0, 0); }).find("drop probability in [0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { LayerNorm(4, 0.0); }).find("eps > 0"), std::string::npos);

  struct Dup : Module {
    Tensor a = Tensor::zeros({2}, DType::f32), b = Tensor::zeros({2}, DType::f32);
    Dup() : Module("Dup") {
      register_parameter("w", &a);
      register_parameter("w", &b);
    }
    Tensor forward(const ForwardContext&, const Tensor& x) override { return x; }
  };
  EXPECT_NE(error_of([] { Dup d; }).find("Dup: name 'w' is already a parameter"), std::string::npos);
  struct Dotted : Module {
    Tensor a = Tensor::zeros({2}, DType::f32);
    Dotted() : Module("Dotted") { register_parameter("a.b", &a); }
    Tensor forward(const ForwardContext&, const Tensor& x) override { return x; }
  };
  EXPECT_NE(error_of([] { Dotted d; }).find("dot-free"), std::string::npos);

  auto net = small_net();
  EXPECT_NE(error_of([&] { net->to(DType::i32); }).find("expected a floating dtype"), std::string::npos);
  // A wrong input channel count names the op and both shapes.
  const std::string e = error_of([&] { net->forward(ForwardContext{}, Tensor::zeros({1, 8, 8, 4}, DType::f32)); });
  EXPECT_NE(e.find("conv2d: expected weight (K, R, S, 4)"), std::string::npos) << e;
}

}  // namespace
}  // namespace cnn
