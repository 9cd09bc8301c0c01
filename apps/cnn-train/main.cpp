// cnn-train: trains a model of configs/models on ImageNet, Fashion-MNIST or synthetic data (CPU or CUDA), or
// benchmarks its training step (--synthetic --steps N). Every error, from the command line to the last step, is
// one line on stderr and a non-zero exit status: 2 for command-line syntax, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "apps/cnn-train/plan.h"
#include "apps/cnn-train/run_files.h"
#include "apps/cnn-train/train_config.h"
#include "apps/cnn-train/train_flags.h"
#include "apps/cnn-train/trainer.h"
#include "core/error.h"
#include "data/data_bench.h"

namespace {

using cnn::train::TrainConfig;

struct Cli {
  std::string config_file, resume;
  cnn::train::TrainFlags flags;
};

void add_flags(CLI::App& app, Cli& cli) {
  app.add_option("--config", cli.config_file, "training recipe YAML (configs/train/*.yaml); flags override it")
      ->type_name("FILE");
  app.add_option("--resume", cli.resume, "continue a run: its folder (runs/...) or one of its checkpoint folders")
      ->type_name("DIR");
  cnn::train::add_train_flags(app, cli.flags);
}

// Defaults < the resumed run's config.yaml < --config < flags.
TrainConfig assemble(const Cli& cli, TrainConfig* saved, std::string* run_dir, std::string* checkpoint) {
  TrainConfig c;
  if (!cli.resume.empty()) {
    *checkpoint = cnn::train::resolve_resume(cli.resume, *run_dir);
    cnn::train::load_train_config(*run_dir + "/config.yaml", c);
    *saved = c;
  }
  if (!cli.config_file.empty()) cnn::train::load_train_config(cli.config_file, c);
  cnn::train::apply_train_flags(cli.flags, c);
  return c;
}

// A resumed run keeps the model, the data and the batch geometry of the run it continues.
void check_resume(const TrainConfig& saved, const TrainConfig& config, const std::string& run_dir) {
  if (config.synthetic) throw cnn::Error("--resume: not with --synthetic (benchmark mode)");
  if (config.bench_data) throw cnn::Error("--resume: not with --bench-data (benchmark mode)");
  TrainConfig a = saved, b = config;
  const std::string name_a = cnn::model_common(cnn::train::resolve_model(a)).name;
  const std::string name_b = cnn::model_common(cnn::train::resolve_model(b)).name;
  if (name_a != name_b)
    throw cnn::Error(
        cnn::str_cat("--resume: the run in ", run_dir, " trains model '", name_a, "', got --model '", name_b, "'"));
  for (const std::string& key : cnn::train::resume_locked_keys()) {
    if (key == "model") continue;
    const std::string va = cnn::train::field_text(a, key), vb = cnn::train::field_text(b, key);
    if (va != vb)
      throw cnn::Error(cnn::str_cat("--resume: ", cnn::train::flag_name(key), " is ", va, " in the run in ", run_dir,
                                    ", got ", vb, " (a resumed run keeps its model, data, batch geometry and seed)"));
  }
}

int run(const Cli& cli) {
  TrainConfig saved;
  std::string run_dir, checkpoint;
  const TrainConfig config = assemble(cli, &saved, &run_dir, &checkpoint);
  if (!cli.resume.empty()) check_resume(saved, config, run_dir);
  cnn::train::Plan plan = cnn::train::make_plan(config);
  if (plan.config.bench_data) {
    // The loader exactly as training would configure it (workers, augmentation, device batches), nothing else.
    const cnn::data::DataBenchResult r =
        cnn::data::run_data_bench(plan.train_set, plan.train_loader, plan.config.bench_seconds);
    std::printf(
        "bench-data: %lld images in %.2f s: %.1f images/s (%.3f ms CPU per image, first batch after %.2f s, "
        "%lld bad samples)\n",
        static_cast<long long>(r.images), r.seconds, r.images_per_second,
        r.images > 0 ? 1e3 * r.cpu_seconds / double(r.images) : 0.0, r.first_batch_seconds,
        static_cast<long long>(r.bad_samples));
    return 0;
  }
  cnn::train::Trainer trainer(plan);
  if (plan.config.synthetic) {
    if (plan.config.profile > 0)
      trainer.profile();
    else
      trainer.benchmark();
    return 0;
  }
  if (run_dir.empty()) run_dir = cnn::train::make_run_dir(plan.config.output, plan.model_name);
  trainer.train(run_dir, checkpoint);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a large-kernel CNN (configs/models) on ImageNet, Fashion-MNIST or synthetic data; "
      "see docs/train.md"};
  app.option_defaults()->always_capture_default(false);
  Cli cli;
  add_flags(app, cli);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "cnn-train: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    return run(cli);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "cnn-train: error: %s\n", e.what());
    return 1;
  }
}
