// cnn-compare: trains the same recipe once per arm (fp32, amp-fp32, amp-ha) from the same seed, on a GPU or on the
// CPU (FP16 backward-filter pass emulated), and lines the runs up: per-step metrics, gradient differences against
// FP32 accumulation, combined.csv, curves.png, report.md with a verdict. See docs/compare.md.
// Exit status: 2 for command-line syntax, 1 for every other error (one line on stderr).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "apps/cnn-train/app_main.h"
#include "apps/cnn-compare/comparison.h"
#include "apps/cnn-compare/report.h"
#include "apps/cnn-train/plan.h"
#include "apps/cnn-train/run_curves.h"
#include "apps/cnn-train/run_files.h"
#include "apps/cnn-train/train_flags.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
namespace compare = cnn::compare;
namespace train = cnn::train;
using cnn::str_cat;

struct Cli {
  std::string config_file, arms = "amp-fp32,amp-ha", out, resume, plot_only;
  int64_t probe_interval = 1;
  double max_drop = 0.3;
  train::TrainFlags flags;
  CLI::Option *arms_opt = nullptr, *out_opt = nullptr, *probe_opt = nullptr, *drop_opt = nullptr;
};

// Recipe keys the comparison sets itself, or that make no sense in it.
void check_flags(const Cli& cli) {
  for (const char* key : {"amp", "bfc_accum"})
    if (cli.flags.options.at(key)->count())
      throw cnn::Error(str_cat(train::flag_name(key), ": set by each arm; choose the arms with --arms"));
  if (cli.flags.options.at("log_interval")->count())
    throw cnn::Error("--log-interval: cnn-compare records every step");
  for (const char* key : {"synthetic", "bench_data"})
    if (cli.flags.options.at(key)->count())
      throw cnn::Error(str_cat(train::flag_name(key), ": a benchmark mode; cnn-compare trains on real data"));
}

std::string begin_new(const Cli& cli, compare::ComparisonSpec& spec) {
  train::TrainConfig recipe;
  if (!cli.config_file.empty()) train::load_train_config(cli.config_file, recipe);
  train::apply_train_flags(cli.flags, recipe);
  recipe.log_interval = 1;
  if (recipe.given.count("amp") || recipe.given.count("bfc_accum"))
    throw cnn::Error(str_cat(cli.config_file, ": amp / bfc_accum are set by each arm; remove them or use --arms"));
  spec = compare::make_spec(recipe, compare::parse_arms(cli.arms), cli.probe_interval);
  std::string dir = cli.out;
  if (dir.empty()) {
    dir = train::make_run_dir(recipe.output, "compare-" + fs::path(recipe.model).stem().string());
  } else {
    std::error_code ec;
    if (fs::exists(dir) && !fs::is_empty(dir, ec))
      throw cnn::Error(str_cat("--out: '", dir, "' exists and is not empty (continue a comparison with --resume)"));
    fs::create_directories(dir, ec);
    if (ec) throw cnn::Error(str_cat("--out: cannot create '", dir, "': ", ec.message()));
  }
  compare::save_spec(dir, spec);
  return dir;
}

int outputs(const std::string& dir, const compare::ComparisonSpec& spec, double max_drop, bool need_plot) {
  const bool draw = train::gnuplot_available();
  if (!draw && need_plot) throw cnn::Error("--plot-only: gnuplot is not on PATH (Debian package gnuplot-nox)");
  for (const std::string& v : compare::write_outputs(dir, spec, draw, max_drop)) std::printf("verdict: %s\n", v.c_str());
  if (!draw)
    std::fprintf(stderr, "cnn-compare: warning: gnuplot is not on PATH, so no curves.png (draw it later with "
                         "cnn-compare --plot-only %s)\n", dir.c_str());
  std::printf("report: %s/report.md\n", dir.c_str());
  return 0;
}

int run(const Cli& cli) {
  if (!cli.plot_only.empty()) {
    if (!cli.resume.empty() || !cli.config_file.empty() || train::any_train_flag(cli.flags) || cli.arms_opt->count() ||
        cli.out_opt->count() || cli.probe_opt->count())
      throw cnn::Error("--plot-only: takes only the comparison folder (and --max-top1-drop)");
    return outputs(cli.plot_only, compare::load_spec(cli.plot_only), cli.max_drop, true);
  }
  check_flags(cli);
  compare::ComparisonSpec spec;
  std::string dir;
  if (!cli.resume.empty()) {
    for (const auto& [key, option] : cli.flags.options)
      if (option->count() && key != "stop_after")
        throw cnn::Error(str_cat("--resume: continues the comparison as recorded; ", train::flag_name(key),
                                 " cannot change it (only --stop-after)"));
    if (!cli.config_file.empty() || cli.arms_opt->count() || cli.out_opt->count() || cli.probe_opt->count())
      throw cnn::Error("--resume: continues the comparison as recorded; --config, --arms, --out and "
                       "--probe-interval cannot change it");
    dir = cli.resume;
    spec = compare::load_spec(dir);
  } else {
    if (cli.config_file.empty() && !cli.flags.options.at("model")->count())
      throw cnn::Error("--config: no recipe given (a --config file or at least --model)");
    dir = begin_new(cli, spec);
  }
  std::printf("cnn-compare: %s in %s\n", compare::arms_text(spec.arms).c_str(), dir.c_str());
  std::fflush(stdout);
  train::TrainConfig run_flags;
  train::apply_train_flags(cli.flags, run_flags);
  compare::run_arms(dir, spec, run_flags.stop_after);
  return outputs(dir, spec, cli.max_drop, false);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compare HA and FP32 accumulation (and FP32 training) on one recipe: same seed, data order and "
               "initial weights per arm; metrics, curves and a report. See docs/compare.md"};
  app.option_defaults()->always_capture_default(false);
  Cli cli;
  app.add_option("--config", cli.config_file, "training recipe YAML (configs/train/*.yaml); flags override it")
      ->type_name("FILE");
  cli.arms_opt = app.add_option("--arms", cli.arms, "runs compared, in order: fp32, amp-fp32, amp-ha [amp-fp32,amp-ha]")
                     ->type_name("LIST");
  cli.out_opt = app.add_option("--out", cli.out, "comparison folder (default: <output>/<time>-compare-<model>)")
                    ->type_name("DIR");
  cli.probe_opt = app.add_option("--probe-interval", cli.probe_interval,
                                 "optimizer steps between depthwise-gradient probes, 0: none [1]")
                      ->type_name("INT");
  cli.drop_opt = app.add_option("--max-top1-drop", cli.max_drop,
                                "verdict: largest final top-1 drop against the reference arm, in points [0.3]")
                     ->type_name("NUM")
                     ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", cli.resume, "continue a killed comparison in its folder")->type_name("DIR");
  app.add_option("--plot-only", cli.plot_only, "redraw combined.csv, curves.png and report.md of a folder")
      ->type_name("DIR");
  train::add_train_flags(app, cli.flags);
  return cnn::train::run_app(app, argc, argv, "cnn-compare", [&] { return run(cli); });
}
