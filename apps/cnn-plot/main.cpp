// cnn-plot: draws the loss, accuracy and learning-rate curves of one or more cnn-train runs (their metrics.jsonl)
// into one PNG with gnuplot, with the code cnn-compare draws its curves with (apps/cnn-train/run_curves.h).
// Exit status: 2 for command-line syntax, 1 for every other error (one line on stderr).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/cnn-train/app_main.h"
#include "apps/cnn-train/run_curves.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using cnn::str_cat;

// A run folder's metrics file (or a metrics file given directly) and its legend label.
std::pair<std::string, std::string> metrics_of(const std::string& arg) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) return {arg, fs::path(arg).parent_path().filename().string()};
  if (!fs::is_directory(arg, ec)) throw cnn::Error(str_cat("RUN_DIR: '", arg, "' is neither a run folder nor a file"));
  const fs::path metrics = fs::path(arg) / "metrics.jsonl";
  if (!fs::is_regular_file(metrics, ec))
    throw cnn::Error(str_cat("RUN_DIR: '", arg, "' has no metrics.jsonl (not a cnn-train run folder)"));
  fs::path name = fs::path(arg).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  return {metrics.string(), name.filename().string()};
}

// Draws the curves of `runs` into `out` (default: curves.png in the first run folder).
int draw(const std::vector<std::string>& runs, std::string out, const std::string& title) {
  std::vector<cnn::train::RunCurves> curves;
  std::string names;
  for (const std::string& r : runs) {
    const auto [metrics, label] = metrics_of(r);
    curves.push_back(cnn::train::read_run_curves(metrics, label));
    if (curves.back().steps.empty() && curves.back().eval_steps.empty())
      throw cnn::Error(str_cat(metrics, ": no train or eval records to draw"));
    names += (names.empty() ? "" : ", ") + label;
  }
  if (out.empty()) out = (fs::path(metrics_of(runs.front()).first).parent_path() / "curves.png").string();
  if (fs::path(out).extension() != ".png") throw cnn::Error(str_cat("--out: expected a .png file, got '", out, "'"));
  cnn::train::draw_curves(curves, out, title.empty() ? names : title);
  std::printf("cnn-plot: %s\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Draw the curves of cnn-train runs (loss, accuracy, learning rate) into one PNG with gnuplot"};
  app.option_defaults()->always_capture_default(false);
  std::vector<std::string> runs;
  std::string out, title;
  app.add_option("RUN_DIR", runs, "cnn-train run folders (or metrics.jsonl files)")->required()->type_name("DIR");
  app.add_option("-o,--out", out, "PNG to write [curves.png in the first run folder]")->type_name("FILE");
  app.add_option("--title", title, "plot title [the runs' names]")->type_name("TEXT");
  return cnn::train::run_app(app, argc, argv, "cnn-plot", [&] { return draw(runs, out, title); });
}
