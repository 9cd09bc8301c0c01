// The runs a comparison lines up ("arms"): fp32 (no AMP), amp-fp32 (AMP, FP32 accumulation in the depthwise
// backward-filter pass) and amp-ha (AMP, hybrid accumulation), and how each becomes a cnn-train recipe.
#pragma once

#include <string>
#include <vector>

#include "apps/cnn-train/train_config.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::compare {

struct Arm {
  std::string mode;  // fp32 | amp-fp32 | amp-ha
  std::string name;  // the mode, with a -N suffix for its N-th repeat (fp32,fp32 -> fp32, fp32-2)
  bool amp = false;
  dwconv::BfcAccum accum = dwconv::BfcAccum::fp32;
};

// "amp-fp32,amp-ha" -> arms in the given order; unknown modes and fewer than two arms are errors naming --arms.
// A repeated mode is a control run (fp32,fp32 must give identical curves).
std::vector<Arm> parse_arms(const std::string& text);
std::string arms_text(const std::vector<Arm>& arms);  // the modes, comma-separated: parse_arms' input

// The arm's recipe from the shared one. On a GPU it sets amp / bfc_accum; on the CPU (emulated = true) AMP arms
// stay FP32 runs and the FP16 backward-filter pass is emulated by the probe (grad_probe.h).
train::TrainConfig arm_config(const train::TrainConfig& base, const Arm& arm, bool emulated);

// The arm a verdict compares arm `index` with: an earlier arm of the same mode, else amp-ha -> amp-fp32 (else
// fp32), amp-fp32 -> fp32; -1 when there is none (the first fp32 arm is the reference of everything).
int reference_arm(size_t index, const std::vector<Arm>& arms);

}  // namespace cnn::compare
