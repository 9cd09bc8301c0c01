// The resume rule table and the top-k count, as functions: every recipe key has exactly one resume rule (persisted
// keys a comparison rule, flag-only keys an invocation or refused rule), refused flags name themselves, and a
// non-finite row of logits is never a top-k hit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "apps/cnn-train/resume_check.h"
#include "apps/cnn-train/train_config.h"
#include "apps/cnn-train/trainer.h"
#include "tests/support/numeric.h"

namespace cnn::test {
namespace {

using train::ResumeRule;

TEST(ResumeRules, OneRulePerRecipeKeyInOrder) {
  const auto& fields = train::train_fields();
  const auto& rules = train::resume_rules();
  ASSERT_EQ(rules.size(), fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(fields[i].key, rules[i].key) << i;
    const bool compared = rules[i].rule == ResumeRule::locked || rules[i].rule == ResumeRule::changeable ||
                          rules[i].rule == ResumeRule::free;
    EXPECT_EQ(compared, fields[i].persisted) << fields[i].key;
    EXPECT_EQ(rules[i].rule == ResumeRule::refused, rules[i].why != nullptr) << fields[i].key;
  }
}

TEST(ResumeRules, RefusedFlagsNameThemselves) {
  EXPECT_NO_THROW(train::verify_resume_flags({"lr", "stop_after", "max_nonfinite_steps", "device"}));
  EXPECT_EQ(error_of([] { train::verify_resume_flags({"lr", "initial_checkpoint"}); }),
            "--initial-checkpoint: not with --resume (the run's checkpoint holds its weights)");
  EXPECT_EQ(error_of([] { train::verify_resume_flags({"profile"}); }), "--profile: not with --resume (benchmark mode)");
}

TEST(CountTopk, NonFiniteRowsAreNeverHits) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Row 0: label 0 is the largest (a hit); row 1: NaN (compares false, would look like top-1); row 2: +inf.
  const Tensor logits = Tensor::from_vector<float>({2, 1, 0, nan, 1, 0, 0, inf, 0}, {3, 3});
  const Tensor labels = Tensor::from_vector<int64_t>({0, 1, 0}, {3});
  int64_t top1 = 0, top5 = 0;
  EXPECT_EQ(train::count_topk(logits, labels, top1, top5), 2);
  EXPECT_EQ(top1, 1);
  EXPECT_EQ(top5, 1);
}

}  // namespace
}  // namespace cnn::test
