// The outputs of a comparison folder, made from the arms' metrics.jsonl files alone (so --plot-only can redo them):
// combined.csv (one row per step, every arm's columns), curves.png (run_curves.h) and report.md (final and best
// metrics, the largest loss gap, time per step, gradient differences and a verdict per arm with its rule).
#pragma once

#include <string>
#include <vector>

#include "apps/cnn-compare/comparison.h"
#include "apps/cnn-train/run_curves.h"

namespace cnn::compare {

// Summary numbers of one arm (NaN where the run has none yet).
struct ArmSummary {
  int64_t steps = 0;            // optimizer steps recorded
  bool finished = false;
  double final_loss = 0;        // mean training loss over the last 10% of the recorded steps
  double final_top1 = 0;        // last evaluation's top-1, in [0, 1]
  double final_eval_loss = 0;
  double best_top1 = 0;
  int64_t best_step = -1;
  double ms_per_step = 0;       // median over the recorded steps (probed steps left out when others exist)
  int64_t skipped_steps = 0;    // loss-scale overflows
  bool all_finite = true;       // every recorded training loss finite
  std::vector<double> probe_median, probe_max;  // per kProbeKeys entry
};

ArmSummary summarize(const train::RunCurves& run, int64_t images_per_step);

// The verdict of `arm` against `ref` and the rule it applied: "PASS ...", "FAIL ..." or "INCOMPLETE ...".
std::string verdict(const std::string& arm, const ArmSummary& a, const std::string& ref, const ArmSummary& r,
                    double max_top1_drop_points);

// Writes combined.csv and report.md into `dir` and, when draw is true, curves.png. Returns the verdict lines.
std::vector<std::string> write_outputs(const std::string& dir, const ComparisonSpec& spec, bool draw,
                                       double max_top1_drop_points);

}  // namespace cnn::compare
