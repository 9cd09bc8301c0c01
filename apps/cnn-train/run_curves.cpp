// Metrics curves of cnn-train runs and their gnuplot drawing (data inlined as gnuplot data blocks).
#include "apps/cnn-train/run_curves.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cnn-train/run_files.h"
#include "core/error.h"
#include "core/file_io.h"

namespace cnn::train {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double number_or_nan(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : kNaN; }

// A gnuplot single-quoted string ('' is a quote inside it).
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A data block of (x, y...) rows; rows whose first y is NaN (or not positive, for log-scale panels) are left out, so
// no curve breaks at a gap. Adds the block to `blocks` and returns whether it has a row.
bool data_block(std::string& blocks, const std::string& name, const std::vector<int64_t>& x,
                const std::vector<const std::vector<double>*>& ys, bool positive_only = false) {
  std::ostringstream o;
  o.precision(9);
  o << "$" << name << " << EOD\n";
  bool rows = false;
  for (size_t i = 0; i < x.size() && i < ys[0]->size(); ++i) {
    const double y0 = (*ys[0])[i];
    if (std::isnan(y0) || (positive_only && !(y0 > 0))) continue;
    rows = true;
    o << x[i];
    for (const auto* y : ys) o << ' ' << (std::isnan((*y)[i]) ? std::string("NaN") : std::to_string((*y)[i]));
    o << '\n';
  }
  o << "EOD\n";
  blocks += o.str();
  return rows;
}

bool any_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isnan(x)) return true;
  return false;
}

struct Plots {
  std::string blocks;
  std::vector<std::string> loss, acc, lr, scale, probe;  // plot clauses per panel
  bool probed = false;                                    // some run has gradient-probe records
};

std::string join_plot(const std::vector<std::string>& clauses) {
  std::string s = "plot ";
  for (size_t i = 0; i < clauses.size(); ++i) s += (i ? ", \\\n     " : "") + clauses[i];
  return s + "\n";
}

void add_run(Plots& p, const RunCurves& r, size_t index) {
  const std::string id = "r" + std::to_string(index), lc = " lc " + std::to_string(index + 1);
  const std::string label = gp_quote(r.label);
  const int64_t window = smoothing_window(r.steps.size());
  const std::vector<double> loss_avg = moving_average(r.field("loss"), window);
  if (data_block(p.blocks, id + "_loss", r.steps, {&r.field("loss"), &loss_avg})) {
    p.loss.push_back("$" + id + "_loss using 1:2 with lines lw 0.5" + lc + " dt 3 notitle");
    p.loss.push_back("$" + id + "_loss using 1:3 with lines lw 2" + lc + " title " + label);
  }
  std::vector<double> eval_top1_pct;
  for (double v : r.eval_top1) eval_top1_pct.push_back(100 * v);
  if (data_block(p.blocks, id + "_eval", r.eval_steps, {&r.eval_loss, &eval_top1_pct})) {
    p.loss.push_back("$" + id + "_eval using 1:2 with linespoints pt 7 ps 0.8" + lc + " title " +
                     gp_quote(r.label + " (eval)"));
    p.acc.push_back("$" + id + "_eval using 1:3 with linespoints pt 7 ps 0.8 lw 2" + lc + " title " +
                    gp_quote(r.label + " (eval)"));
  }
  std::vector<double> train_pct = moving_average(r.field("top1"), window);
  for (double& v : train_pct) v *= 100;
  if (data_block(p.blocks, id + "_top1", r.steps, {&train_pct}))
    p.acc.push_back("$" + id + "_top1 using 1:2 with lines lw 1" + lc + " dt 2 title " +
                    gp_quote(r.label + " (train, avg)"));
  if (data_block(p.blocks, id + "_lr", r.steps, {&r.field("lr")}))
    p.lr.push_back("$" + id + "_lr using 1:2 with lines lw 2" + lc + " title " + label);
  if (data_block(p.blocks, id + "_scale", r.steps, {&r.field("loss_scale")}, true))
    p.scale.push_back("$" + id + "_scale using 1:2 axes x1y2 with steps lw 1" + lc + " dt 4 title " +
                      gp_quote(r.label + " loss scale"));
  static const char* kProbe[] = {"grad_diff_first", "grad_diff_mid", "grad_diff_last"};
  static const char* kProbeName[] = {"first", "mid", "last"};
  for (int k = 0; k < 3; ++k) {
    if (!r.has(kProbe[k])) continue;
    p.probed = true;
    // Zero differences (FP32 accumulation) have no place on the log scale: they are left out of the panel.
    if (data_block(p.blocks, id + "_" + kProbeName[k], r.steps, {&r.field(kProbe[k])}, true))
      p.probe.push_back("$" + id + "_" + kProbeName[k] + " using 1:2 with lines lw 1" + lc + " dt " +
                        std::to_string(k + 1) + " title " + gp_quote(r.label + " " + kProbeName[k] + " DW"));
  }
}

// A panel's plot command, or an empty panel saying why when it has no curve.
std::string panel(const std::vector<std::string>& clauses, const std::string& empty_note) {
  if (clauses.empty())
    return "set label 1 " + gp_quote(empty_note) +
           " at graph 0.5, 0.5 center\nplot 0 with lines lc rgb 'white' notitle\nunset label 1\n";
  return join_plot(clauses);
}


std::string gnuplot_script(const std::vector<RunCurves>& runs, const std::string& out, const std::string& title) {
  Plots p;
  for (size_t i = 0; i < runs.size(); ++i) add_run(p, runs[i], i);
  const bool probes = p.probed;
  std::ostringstream s;
  s << p.blocks;
  s << "set terminal pngcairo size 1600," << (probes ? 1100 : 560) << " font ',10' noenhanced\n";
  s << "set output " << gp_quote(out) << "\n";
  s << "set grid\nset key top right font ',9'\nset xlabel 'optimizer step'\n";
  s << "set multiplot layout " << (probes ? "2,2" : "1,3") << " title " << gp_quote(title) << "\n";
  s << "set title 'loss (per step: dotted; moving average: solid; eval: points)'\nset ylabel 'loss'\n";
  s << panel(p.loss, "no loss recorded");
  s << "set title 'top-1 accuracy'\nset ylabel '%'\n" << panel(p.acc, "no accuracy recorded");
  s << "set title 'learning rate" << (p.scale.empty() ? "" : " and loss scale") << "'\nset ylabel 'lr'\n";
  if (!p.scale.empty()) s << "set y2tics\nset logscale y2 2\nset y2label 'loss scale'\n";
  std::vector<std::string> lr = p.lr;
  lr.insert(lr.end(), p.scale.begin(), p.scale.end());
  s << panel(lr, "no learning rate recorded");
  if (probes) {
    s << "unset y2tics\nunset y2label\nunset logscale y2\n";
    s << "set title 'depthwise dW: relative L2 difference to FP32 accumulation'\nset ylabel 'relative difference'\n";
    if (!p.probe.empty()) s << "set logscale y\nset format y '%.0e'\n";
    s << panel(p.probe, "every recorded difference is 0 (FP32 accumulation)");
  }
  s << "unset multiplot\n";
  return s.str();
}

}  // namespace

const std::vector<double>& RunCurves::field(const std::string& key) const {
  static const std::vector<double> kEmpty;
  auto it = train.find(key);
  return it == train.end() ? kEmpty : it->second;
}

bool RunCurves::has(const std::string& key) const { return any_finite(field(key)); }

RunCurves read_run_curves(const std::string& metrics_path, const std::string& label) {
  if (file_kind(metrics_path) == "missing")
    throw Error(str_cat(metrics_path, ": cannot open (no metrics file: is this a cnn-train run folder?)"));
  require_regular_file(metrics_path, "metrics");  // a FIFO would block the read
  std::ifstream in(metrics_path);
  if (!in) throw Error(str_cat(metrics_path, ": cannot open for reading"));
  RunCurves r;
  r.label = label;
  std::vector<nlohmann::json> lines;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
    if (rec.is_discarded() && in.peek() == std::char_traits<char>::eof()) break;  // a last line cut by a crash
    if (rec.is_discarded() || !rec.is_object())
      throw Error(str_cat(metrics_path, ":", number, ": not a JSON object"));
    if (!rec.contains("step") || !rec["step"].is_number_integer())
      throw Error(str_cat(metrics_path, ":", number, ": record without an integer \"step\""));
    const std::string type = rec.value("type", "");
    const int64_t step = rec["step"].get<int64_t>();
    if (type == "start") {
      r.total_steps = rec.value("total_steps", int64_t(0));
      r.model = rec.value("model", "");
      r.device = rec.value("device", "");
      r.finished = false;
    } else if (type == "end") {
      r.finished = true;
    } else if (type == "eval") {
      r.eval_steps.push_back(step);
      r.eval_loss.push_back(number_or_nan(rec["loss"]));
      r.eval_top1.push_back(number_or_nan(rec["top1"]));
    } else if (type == "train") {
      const size_t row = r.steps.size();
      r.steps.push_back(step);
      for (auto it = rec.begin(); it != rec.end(); ++it) {
        if (it.key() == "step" || it.key() == "epoch" || !(it->is_number() || it->is_null())) continue;
        std::vector<double>& col = r.train[it.key()];
        col.resize(row, kNaN);
        col.push_back(number_or_nan(*it));
      }
      for (auto& [key, col] : r.train) col.resize(row + 1, kNaN);
    }
  }
  return r;
}

std::vector<double> moving_average(const std::vector<double>& v, int64_t window) {
  const int64_t n = int64_t(v.size()), half = std::max<int64_t>(window, 1) / 2;
  std::vector<double> out(v.size(), kNaN);
  // Prefix sums over the finite points and their counts.
  std::vector<double> sum(v.size() + 1, 0.0);
  std::vector<int64_t> count(v.size() + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const bool ok = std::isfinite(v[size_t(i)]);
    sum[size_t(i + 1)] = sum[size_t(i)] + (ok ? v[size_t(i)] : 0.0);
    count[size_t(i + 1)] = count[size_t(i)] + (ok ? 1 : 0);
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = std::max<int64_t>(0, i - half), hi = std::min<int64_t>(n, i + half + 1);
    const int64_t c = count[size_t(hi)] - count[size_t(lo)];
    if (c > 0) out[size_t(i)] = (sum[size_t(hi)] - sum[size_t(lo)]) / double(c);
  }
  return out;
}

int64_t smoothing_window(size_t n) { return std::max<int64_t>(1, int64_t(n) / 50); }

bool gnuplot_available() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

void draw_curves(const std::vector<RunCurves>& runs, const std::string& png_path, const std::string& title) {
  if (runs.empty()) throw Error("plot: no runs to draw");
  if (!gnuplot_available())
    throw Error(str_cat("plot: gnuplot is not on PATH (Debian package gnuplot-nox); cannot draw ", png_path));
  const std::string tmp_png = str_cat(png_path, ".tmp.", ::getpid(), ".png");
  const std::string script = str_cat(png_path, ".tmp.", ::getpid(), ".gp"), errors = script + ".err";
  write_file_atomic(script, gnuplot_script(runs, tmp_png, title));
  const std::string cmd = str_cat("gnuplot '", script, "' 2> '", errors, "'");
  const int status = std::system(cmd.c_str());
  std::string last_error;  // gnuplot ends with the line that stopped it (warnings come before)
  {
    std::ifstream err(errors);
    std::string l;
    while (std::getline(err, l))
      if (l.find_first_not_of(" \t^") != std::string::npos) last_error = l;
  }
  std::error_code ec;
  fs::remove(script, ec);
  fs::remove(errors, ec);
  if (status != 0 || !fs::exists(tmp_png)) {
    fs::remove(tmp_png, ec);
    throw Error(str_cat("plot: gnuplot failed drawing ", png_path, ": ", last_error.empty() ? "no message" : last_error));
  }
  fs::rename(tmp_png, png_path, ec);
  if (ec) throw Error(str_cat("plot: cannot rename ", tmp_png, " to ", png_path, ": ", ec.message()));
}

}  // namespace cnn::train
