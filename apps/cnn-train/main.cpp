// cnn-train: trains a model of configs/models on ImageNet, Fashion-MNIST or synthetic data (CPU or CUDA), or
// benchmarks its training step (--synthetic --steps N). Every error, from the command line to the last step, is
// one line on stderr and a non-zero exit status: 2 for command-line syntax, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <set>
#include <string>

#include "apps/cnn-train/app_main.h"
#include "apps/cnn-train/plan.h"
#include "apps/cnn-train/resume_check.h"
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

// Defaults < the resumed run's config.yaml < --config < flags. `explicit_keys`: keys --config or a flag set.
TrainConfig assemble(const Cli& cli, TrainConfig* saved, std::string* run_dir, std::string* checkpoint,
                     std::set<std::string>* explicit_keys) {
  TrainConfig c;
  if (!cli.resume.empty()) {
    *checkpoint = cnn::train::resolve_resume(cli.resume, *run_dir);
    cnn::train::load_train_config(*run_dir + "/config.yaml", c, "--resume");
    *saved = c;
  }
  const std::set<std::string> from_run = c.given;
  c.given.clear();
  if (!cli.config_file.empty()) cnn::train::load_train_config(cli.config_file, c);
  cnn::train::apply_train_flags(cli.flags, c);
  *explicit_keys = c.given;
  c.given.insert(from_run.begin(), from_run.end());
  return c;
}

// A resumed run continues the checkpoint's trajectory: the rule table of resume_check.h decides per key.
void check_resume(const TrainConfig& saved, const TrainConfig& config, const std::set<std::string>& explicit_keys,
                  const std::string& run_dir, const std::string& checkpoint) {
  cnn::train::verify_resume_flags(explicit_keys);
  const TrainConfig stored = cnn::train::stored_config(checkpoint + "/state.safetensors");
  TrainConfig requested = config;
  cnn::train::resolve_model(requested);
  cnn::train::verify_resume_config(stored, saved, requested, explicit_keys, {checkpoint, run_dir + "/config.yaml"});
}

int run(const Cli& cli) {
  TrainConfig saved;
  std::string run_dir, checkpoint;
  std::set<std::string> explicit_keys;
  const TrainConfig config = assemble(cli, &saved, &run_dir, &checkpoint, &explicit_keys);
  if (!cli.resume.empty()) check_resume(saved, config, explicit_keys, run_dir, checkpoint);
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
  return cnn::train::run_app(app, argc, argv, "cnn-train", [&] { return run(cli); });
}
