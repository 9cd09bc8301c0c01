// The curves of a cnn-train run read back from its metrics.jsonl (training loss, learning rate, loss scale,
// training top-1 and gradient probes per "train" record; loss and top-1 per "eval" record), and one PNG of several
// runs' curves drawn by gnuplot. Shared by cnn-plot (any runs) and cnn-compare (the arms of a comparison).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cnn::train {

struct RunCurves {
  std::string label;  // legend text
  std::vector<int64_t> steps;  // of the "train" records
  // Per "train" record, NaN where the record has no such field: "loss", "lr", "loss_scale", "top1",
  // "img_per_s" and any other numeric field (e.g. cnn-compare's gradient probes).
  std::map<std::string, std::vector<double>> train;
  std::vector<int64_t> eval_steps;
  std::vector<double> eval_loss, eval_top1;
  int64_t total_steps = 0;      // from the last "start" record (0: none)
  bool finished = false;        // an "end" record follows the last start
  std::string model, device;    // from the "start" record

  // The values of a train field ({} when no record has it).
  const std::vector<double>& field(const std::string& key) const;
  bool has(const std::string& key) const;
};

// Reads `metrics_path`; a missing file, a line that is not a JSON object or a record without a numeric "step" is a
// one-line error naming the file and line. A last line cut short by a crash ends the file.
RunCurves read_run_curves(const std::string& metrics_path, const std::string& label);

// Centered moving average over `window` points (NaN points skipped; NaN where a window has none).
std::vector<double> moving_average(const std::vector<double>& v, int64_t window);
// The smoothing window the plots and reports use for n per-step points: about 2% of the run, at least 1.
int64_t smoothing_window(size_t n);

// Draws loss, accuracy, learning rate (with the loss scale when recorded) and, when any run has them, the
// gradient-probe curves of `runs` into one PNG with gnuplot (written under a temporary name, then renamed).
// Errors: no gnuplot on PATH, gnuplot failing (its first stderr line).
void draw_curves(const std::vector<RunCurves>& runs, const std::string& png_path, const std::string& title);

// Whether a gnuplot executable is on PATH.
bool gnuplot_available();

}  // namespace cnn::train
