// combined.csv, report.md and curves.png of a comparison folder.
#include "apps/cnn-compare/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "apps/cnn-compare/grad_probe.h"
#include "apps/cnn-train/run_files.h"
#include "core/error.h"

namespace cnn::compare {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kFinalFraction = 0.1;  // "final" training loss: mean of the last 10% of the steps
constexpr double kMaxLossRise = 0.1;    // divergence: final training loss more than 10% above the reference's

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string num(double v, const char* fmt = "%.4f") {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string pct(double v) { return std::isnan(v) ? "-" : num(100 * v, "%.2f%%"); }

train::RunCurves read_arm(const std::string& dir, const Arm& arm) {
  const std::string metrics = (fs::path(arm_dir(dir, arm)) / "metrics.jsonl").string();
  if (!fs::exists(metrics)) {
    train::RunCurves empty;
    empty.label = arm.name;
    return empty;
  }
  return train::read_run_curves(metrics, arm.name);
}

// Largest |smoothed loss difference| of a vs b over the steps both recorded: (gap, step).
std::pair<double, int64_t> largest_loss_gap(const train::RunCurves& a, const train::RunCurves& b) {
  const int64_t window = train::smoothing_window(std::min(a.steps.size(), b.steps.size()));
  const std::vector<double> la = train::moving_average(a.field("loss"), window);
  const std::vector<double> lb = train::moving_average(b.field("loss"), window);
  std::map<int64_t, double> by_step;
  for (size_t i = 0; i < b.steps.size(); ++i) by_step[b.steps[i]] = lb[i];
  double gap = 0;
  int64_t at = -1;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    auto it = by_step.find(a.steps[i]);
    if (it == by_step.end() || !std::isfinite(la[i]) || !std::isfinite(it->second)) continue;
    if (std::fabs(la[i] - it->second) > gap || at < 0) {
      gap = std::fabs(la[i] - it->second);
      at = a.steps[i];
    }
  }
  return {at < 0 ? kNaN : gap, at};
}

std::string combined_csv(const std::vector<Arm>& arms, const std::vector<train::RunCurves>& runs) {
  std::vector<std::string> fields = {"loss", "top1", "lr", "loss_scale"};
  for (const char* k : kProbeKeys) fields.push_back(k);
  std::set<int64_t> steps;
  std::vector<std::map<int64_t, size_t>> train_row(runs.size()), eval_row(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    for (size_t i = 0; i < runs[r].steps.size(); ++i) steps.insert(runs[r].steps[i]), train_row[r][runs[r].steps[i]] = i;
    for (size_t i = 0; i < runs[r].eval_steps.size(); ++i)
      steps.insert(runs[r].eval_steps[i]), eval_row[r][runs[r].eval_steps[i]] = i;
  }
  std::ostringstream o;
  o.precision(9);
  o << "step";
  for (const Arm& a : arms) {
    for (const std::string& f : fields) o << ',' << a.name << '.' << f;
    o << ',' << a.name << ".eval_loss," << a.name << ".eval_top1";
  }
  o << '\n';
  auto cell = [&](double v) {
    if (std::isfinite(v)) o << v;
  };
  for (int64_t s : steps) {
    o << s;
    for (size_t r = 0; r < runs.size(); ++r) {
      auto t = train_row[r].find(s);
      for (const std::string& f : fields) {
        o << ',';
        if (t != train_row[r].end() && runs[r].train.count(f)) cell(runs[r].field(f)[t->second]);
      }
      auto e = eval_row[r].find(s);
      o << ',';
      if (e != eval_row[r].end()) cell(runs[r].eval_loss[e->second]);
      o << ',';
      if (e != eval_row[r].end()) cell(runs[r].eval_top1[e->second]);
    }
    o << '\n';
  }
  return o.str();
}

std::string recipe_line(const train::TrainConfig& c) {
  return str_cat("model `", c.model, "`, dataset ", c.dataset, c.train_samples ? str_cat(" (first ", c.train_samples,
                 " training images)") : std::string(), ", ", c.image_size, "x", c.image_size, " images, batch ",
                 c.batch_size, c.accum_steps > 1 ? str_cat(" x ", c.accum_steps) : std::string(), ", ", c.epochs,
                 " epoch(s), lr ", c.lr, " (", c.sched, "), seed ", c.seed, ", device ", c.device);
}

}  // namespace

ArmSummary summarize(const train::RunCurves& run, int64_t images_per_step) {
  ArmSummary s;
  s.steps = run.steps.empty() ? 0 : run.steps.back();
  s.finished = run.finished;
  const std::vector<double>& loss = run.field("loss");
  for (double v : loss) s.all_finite = s.all_finite && std::isfinite(v);
  const size_t tail = std::max<size_t>(1, size_t(double(loss.size()) * kFinalFraction));
  double sum = 0;
  size_t n = 0;
  for (size_t i = loss.size() > tail ? loss.size() - tail : 0; i < loss.size(); ++i) sum += loss[i], ++n;
  s.final_loss = n ? sum / double(n) : kNaN;
  s.final_top1 = run.eval_top1.empty() ? kNaN : run.eval_top1.back();
  s.final_eval_loss = run.eval_loss.empty() ? kNaN : run.eval_loss.back();
  s.best_top1 = kNaN;
  for (size_t i = 0; i < run.eval_top1.size(); ++i)
    if (std::isnan(s.best_top1) || run.eval_top1[i] > s.best_top1) s.best_top1 = run.eval_top1[i], s.best_step = run.eval_steps[i];
  // Step time from each record's images/s; probed steps do extra work, so they are left out when others exist.
  const std::vector<double>& ips = run.field("img_per_s");
  std::vector<double> all, unprobed;
  for (size_t i = 0; i < ips.size(); ++i) {
    if (!(ips[i] > 0)) continue;
    const double ms = 1e3 * double(images_per_step) / ips[i];
    all.push_back(ms);
    bool probed = false;
    for (const char* k : kProbeKeys) probed = probed || (run.has(k) && std::isfinite(run.field(k)[i]));
    if (!probed) unprobed.push_back(ms);
  }
  s.ms_per_step = median(unprobed.empty() ? all : unprobed);
  const std::vector<double>& skipped = run.field("skipped_steps");
  s.skipped_steps = skipped.empty() || std::isnan(skipped.back()) ? 0 : int64_t(skipped.back());
  for (const char* k : kProbeKeys) {
    const std::vector<double>& v = run.field(k);
    double mx = kNaN;
    for (double x : v)
      if (std::isfinite(x) && (std::isnan(mx) || x > mx)) mx = x;
    s.probe_median.push_back(median(v));
    s.probe_max.push_back(mx);
  }
  return s;
}

std::string verdict(const std::string& arm, const ArmSummary& a, const std::string& ref, const ArmSummary& r,
                    double max_drop) {
  const std::string rule = str_cat("rule: PASS when both runs finished the same steps, every training loss of ", arm,
                                   " is finite, its final eval top-1 is at most ", num(max_drop, "%.2f"),
                                   " points below ", ref, "'s and its final training loss (mean of the last 10% of "
                                   "steps) at most 10% above ", ref, "'s");
  if (!a.finished || !r.finished || a.steps != r.steps)
    return str_cat("INCOMPLETE ", arm, " vs ", ref, ": ", arm, " at step ", a.steps, a.finished ? " (finished)" : "",
                   ", ", ref, " at step ", r.steps, r.finished ? " (finished)" : "", " (", rule, ")");
  const double drop = 100 * (r.final_top1 - a.final_top1);
  const double rise = r.final_loss > 0 ? a.final_loss / r.final_loss - 1 : 0;
  std::string why;
  if (!a.all_finite) why = "a training loss is not finite";
  else if (std::isnan(a.final_top1) || std::isnan(r.final_top1)) why = "no evaluation recorded";
  else if (drop > max_drop) why = str_cat("final top-1 ", num(drop, "%.2f"), " points below");
  else if (rise > kMaxLossRise) why = str_cat("final training loss ", num(100 * rise, "%.1f"), "% above");
  const std::string facts = str_cat("top-1 ", pct(a.final_top1), " vs ", pct(r.final_top1), " (", num(-drop, "%+.2f"),
                                    " points), final training loss ", num(a.final_loss), " vs ", num(r.final_loss));
  return str_cat(why.empty() ? "PASS " : "FAIL ", arm, " vs ", ref, ": ", facts, why.empty() ? "" : "; " + why, " (",
                 rule, ")");
}

std::vector<std::string> write_outputs(const std::string& dir, const ComparisonSpec& spec, bool draw,
                                       double max_drop) {
  std::vector<train::RunCurves> runs;
  for (const Arm& a : spec.arms) runs.push_back(read_arm(dir, a));
  train::write_file_atomic((fs::path(dir) / "combined.csv").string(), combined_csv(spec.arms, runs));
  const int64_t images_per_step = spec.recipe.batch_size * spec.recipe.accum_steps;
  std::vector<ArmSummary> sums;
  for (const auto& r : runs) sums.push_back(summarize(r, images_per_step));

  std::ostringstream md;
  md << "# cnn-compare: " << arms_text(spec.arms) << " on " << spec.recipe.model << "\n\n";
  md << "Recipe: " << recipe_line(spec.recipe) << "; gradient probes every " << spec.probe_interval
     << " step(s). Arms run one after the other from the same seed (same initial weights, data order and "
        "augmentation).\n\n";
  if (spec.emulated)
    md << "On the CPU: the AMP arms are FP32 runs with dynamic loss scaling in which every depthwise layer's "
          "backward-filter pass takes FP16-rounded x and dY, accumulates as the FP16 kernels do (FP32, or hybrid "
          "as `dwconv_backward_filter_reference_f16` defines it) and rounds dW to FP16; all other ops stay FP32.\n\n";
  md << "| arm | steps | final train loss | final eval top-1 | final eval loss | best eval top-1 (step) | ms/step | "
        "skipped steps | dW rel. diff first / mid / last (median; max) |\n|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const ArmSummary& s = sums[i];
    std::string probes;
    for (size_t k = 0; k < kProbeKeys.size(); ++k)
      probes += (k ? " / " : "") + num(s.probe_median[k], "%.2e") + "; " + num(s.probe_max[k], "%.2e");
    md << "| " << spec.arms[i].name << " | " << s.steps << (s.finished ? "" : " (running)") << " | "
       << num(s.final_loss, "%.6f") << " | " << pct(s.final_top1) << " | " << num(s.final_eval_loss, "%.6f") << " | "
       << pct(s.best_top1) << " (" << s.best_step << ") | " << num(s.ms_per_step, "%.1f") << " | " << s.skipped_steps
       << " | " << probes << " |\n";
  }
  md << "\nThe gradient difference is ||dW - dW_fp32acc|| / ||dW_fp32acc|| of the first, middle and last depthwise "
        "layer, both computed from the same step's x and dY; it is zero by construction for arms that accumulate in "
        "FP32.\n\n## Largest loss gap\n\n";
  std::vector<std::string> verdicts;
  for (size_t i = 0; i < runs.size(); ++i) {
    const int ref = reference_arm(i, spec.arms);
    if (ref < 0) continue;
    const auto [gap, at] = largest_loss_gap(runs[i], runs[size_t(ref)]);
    md << "- " << spec.arms[i].name << " vs " << spec.arms[size_t(ref)].name << ": " << num(gap, "%.3g") << " at step " << at
       << " (training loss, moving average over " << train::smoothing_window(runs[i].steps.size()) << " steps)\n";
    verdicts.push_back(verdict(spec.arms[i].name, sums[i], spec.arms[size_t(ref)].name, sums[size_t(ref)], max_drop));
  }
  md << "\n## Verdict\n\n";
  for (const std::string& v : verdicts) md << "- " << v << "\n";
  md << "\n![curves](curves.png)\n\nFiles: `combined.csv` (one row per step), `<arm>/metrics.jsonl`, "
        "`<arm>/config.yaml`, `compare.json`.\n";
  train::write_file_atomic((fs::path(dir) / "report.md").string(), md.str());
  if (draw) train::draw_curves(runs, (fs::path(dir) / "curves.png").string(),
                        str_cat("cnn-compare ", arms_text(spec.arms), ": ", spec.recipe.model, " (", spec.recipe.dataset,
                                ", ", spec.recipe.device, ")"));
  return verdicts;
}

}  // namespace cnn::compare
