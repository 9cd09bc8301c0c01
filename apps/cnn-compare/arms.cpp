// Arm names, their recipes and the reference each verdict compares against.
#include "apps/cnn-compare/arms.h"

#include <map>
#include <sstream>

#include "core/error.h"

namespace cnn::compare {

std::vector<Arm> parse_arms(const std::string& text) {
  std::vector<Arm> arms;
  std::map<std::string, int> seen;
  std::stringstream in(text);
  std::string mode;
  while (std::getline(in, mode, ',')) {
    Arm a{mode, mode, false, dwconv::BfcAccum::fp32};
    if (mode == "amp-fp32") {
      a.amp = true;
    } else if (mode == "amp-ha") {
      a.amp = true;
      a.accum = dwconv::BfcAccum::ha;
    } else if (mode != "fp32") {
      throw Error(str_cat("--arms: expected a comma-separated list of fp32, amp-fp32, amp-ha, got '", mode, "' in '",
                          text, "'"));
    }
    const int n = ++seen[mode];
    if (n > 1) a.name = str_cat(mode, "-", n);
    arms.push_back(a);
  }
  if (arms.size() < 2) throw Error(str_cat("--arms: expected at least two arms to compare, got '", text, "'"));
  return arms;
}

std::string arms_text(const std::vector<Arm>& arms) {
  std::string s;
  for (const Arm& a : arms) s += (s.empty() ? "" : ",") + a.mode;
  return s;
}

train::TrainConfig arm_config(const train::TrainConfig& base, const Arm& arm, bool emulated) {
  train::TrainConfig c = base;
  c.amp = arm.amp && !emulated;
  c.bfc_accum = c.amp ? dwconv::bfc_accum_name(arm.accum) : "fp32";
  return c;
}

int reference_arm(size_t index, const std::vector<Arm>& arms) {
  auto first = [&](const std::string& mode) {
    for (size_t i = 0; i < index; ++i)
      if (arms[i].mode == mode) return int(i);
    for (size_t i = index + 1; i < arms.size(); ++i)
      if (arms[i].mode == mode) return int(i);
    return -1;
  };
  const std::string& mode = arms[index].mode;
  for (size_t i = 0; i < index; ++i)
    if (arms[i].mode == mode) return int(i);
  if (mode == "amp-ha") return first("amp-fp32") >= 0 ? first("amp-fp32") : first("fp32");
  if (mode == "amp-fp32") return first("fp32");
  return -1;
}

}  // namespace cnn::compare
