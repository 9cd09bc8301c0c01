// ConvMixerBlock runs act -> BatchNorm [-> + x] as one op (layers/batch_norm_act.h); its children's own forwards
// (Residual(dwconv, act, BN), 1x1 conv, act, BN) compute the same block op by op. On the CPU the op is those same
// kernels in that order, so a model run block by block through its children must match the model's forward
// bitwise: logits, every parameter gradient, the running statistics and the batch counts, relu and gelu.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "layers/functional.h"
#include "models/convmixer.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

ConvMixerConfig tiny(const std::string& activation) {
  ConvMixerConfig c;
  c.common = ModelCommon{"tiny", "convmixer", 3, 5, 12, 0.0};
  c.dim = 8;
  c.depth = 2;
  c.kernel_size = 3;
  c.patch_size = 2;
  c.activation = activation;
  return c;
}

// The model's children run in order, each block through its own children (no fused op).
Tensor forward_child_by_child(Module& model, const ForwardContext& ctx, const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, child] : model.named_children()) {
    if (name != "blocks") {
      h = child->call(ctx, h);
      continue;
    }
    for (const auto& [index, block] : child->named_children())
      for (const auto& [part, module] : block->named_children()) h = module->call(ctx, h);
  }
  return h;
}

TEST(ConvMixerBlock, FusedForwardEqualsTheChildrenOpByOp) {
  for (const char* activation : {"relu", "gelu"}) {
    SCOPED_TRACE(activation);
    ConvMixer fused(tiny(activation), BuildOptions{}), reference(tiny(activation), BuildOptions{});
    fused.init_weights(11);
    reference.init_weights(11);
    const Tensor x = test::random_images(3, 12, 3, 12);
    const Tensor labels = Tensor::from_vector<int64_t>({0, 4, 2}, {3});
    std::vector<Tensor> logits;
    for (Model* m : {static_cast<Model*>(&fused), static_cast<Model*>(&reference)}) {
      Tape tape;
      const ForwardContext ctx{&tape, true, 1, 0};
      const Tensor y = m == &fused ? m->call(ctx, x) : forward_child_by_child(*m, ctx, x);
      tape.backward(ops::softmax_cross_entropy(&tape, y, labels));
      logits.push_back(y);
    }
    EXPECT_TRUE(test::bitwise_equal(logits[1], logits[0], "logits"));
    const auto pf = fused.named_parameters(), pr = reference.named_parameters();
    ASSERT_EQ(pf.size(), pr.size());
    for (size_t i = 0; i < pf.size(); ++i) {
      ASSERT_EQ(pf[i].name, pr[i].name);
      EXPECT_TRUE(test::bitwise_equal(pr[i].tensor.grad(), pf[i].tensor.grad(), pf[i].name + ".grad"));
    }
    const auto bf = fused.named_buffers(), br = reference.named_buffers();
    for (size_t i = 0; i < bf.size(); ++i)
      EXPECT_TRUE(test::bitwise_equal(br[i].second, bf[i].second, bf[i].first));
  }
}

}  // namespace
}  // namespace cnn
