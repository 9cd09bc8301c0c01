// Comparison folder state and the arm runs, each a cnn-train Trainer with the GradProbe hooks.
#include "apps/cnn-compare/comparison.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cnn-compare/grad_probe.h"
#include "apps/cnn-train/plan.h"
#include "apps/cnn-train/resume_check.h"
#include "apps/cnn-train/run_curves.h"
#include "apps/cnn-train/run_files.h"
#include "apps/cnn-train/trainer.h"
#include "core/error.h"
#include "core/file_io.h"

namespace cnn::compare {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSpecFormat = "cnn-compare-1";
constexpr const char* kSpecFile = "compare.json";
constexpr uint64_t kMaxSpecBytes = 4u << 20;  // the spec holds one recipe (itself a YAML of at most 4 MiB)

bool arm_finished(const std::string& dir) {
  const std::string metrics = (fs::path(dir) / "metrics.jsonl").string();
  return fs::exists(metrics) && train::read_run_curves(metrics, "").finished;
}

}  // namespace

std::string arm_dir(const std::string& dir, const Arm& arm) { return (fs::path(dir) / arm.name).string(); }

ComparisonSpec make_spec(const train::TrainConfig& recipe, const std::vector<Arm>& arms, int64_t probe_interval) {
  if (probe_interval < 0) throw Error(str_cat("--probe-interval: expected an integer >= 0, got ", probe_interval));
  ComparisonSpec s;
  s.recipe = recipe;
  s.arms = arms;
  s.probe_interval = probe_interval;
  // The device decides the arms' form: real AMP on a GPU, the emulated FP16 backward-filter pass on the CPU.
  const train::Plan fp32_plan = train::make_plan(arm_config(recipe, Arm{"fp32", "fp32"}, true));
  s.emulated = fp32_plan.device.is_cpu();
  s.recipe = fp32_plan.config;  // auto values (image size, classes, drop path, augmentation) resolved
  s.recipe.amp = recipe.amp;
  s.recipe.bfc_accum = recipe.bfc_accum;
  s.recipe.device = fp32_plan.device.str();
  for (const Arm& a : arms) (void)train::make_plan(arm_config(s.recipe, a, s.emulated));
  return s;
}

void save_spec(const std::string& dir, const ComparisonSpec& s) {
  const nlohmann::json j = {{"format", kSpecFormat},
                            {"arms", arms_text(s.arms)},
                            {"emulated", s.emulated},
                            {"probe_interval", s.probe_interval},
                            {"recipe", train::train_config_yaml(s.recipe)}};
  train::write_file_atomic((fs::path(dir) / kSpecFile).string(), j.dump(2) + "\n");
}

ComparisonSpec load_spec(const std::string& dir) {
  const std::string path = (fs::path(dir) / kSpecFile).string();
  if (file_kind(path) == "missing") throw Error(str_cat(path, ": cannot open (not a cnn-compare folder?)"));
  const nlohmann::json j =
      nlohmann::json::parse(read_regular_text(path, "comparison spec", kMaxSpecBytes), nullptr, false);
  auto bad = [&](const char* what) { return Error(str_cat(path, ": ", what)); };
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  if (j.value("format", "") != kSpecFormat) throw bad("expected format 'cnn-compare-1'");
  for (const char* key : {"arms", "recipe"})
    if (!j.contains(key) || !j[key].is_string()) throw Error(str_cat(path, ": '", key, "' missing or not a string"));
  if (!j.contains("emulated") || !j["emulated"].is_boolean()) throw bad("'emulated' missing or not a boolean");
  if (!j.contains("probe_interval") || !j["probe_interval"].is_number_integer())
    throw bad("'probe_interval' missing or not an integer");
  ComparisonSpec s;
  s.arms = parse_arms(j["arms"].get<std::string>());
  s.emulated = j["emulated"].get<bool>();
  s.probe_interval = j["probe_interval"].get<int64_t>();
  train::parse_train_config(j["recipe"].get<std::string>(), path + " (recipe)", s.recipe);
  return s;
}

void run_arms(const std::string& dir, const ComparisonSpec& spec, int64_t stop_after) {
  for (const Arm& arm : spec.arms) {
    const std::string run_dir = arm_dir(dir, arm);
    if (arm_finished(run_dir)) {
      std::printf("cnn-compare: arm %s already finished (%s)\n", arm.name.c_str(), run_dir.c_str());
      continue;
    }
    std::string checkpoint, resolved_dir;
    if (fs::exists(fs::path(run_dir) / "checkpoints" / "last" / "state.safetensors")) {
      checkpoint = train::resolve_resume(run_dir, resolved_dir);
    } else {
      fs::remove_all(run_dir);  // started but no checkpoint yet: nothing to continue from
      fs::create_directories(run_dir);
    }
    train::TrainConfig c = arm_config(spec.recipe, arm, spec.emulated);
    c.stop_after = stop_after;
    const bool emulate = spec.emulated && arm.amp;
    std::printf("cnn-compare: arm %s (%s%s)\n", arm.name.c_str(),
                arm.amp ? (std::string("AMP, ") + dwconv::bfc_accum_name(arm.accum) + " accumulation").c_str()
                        : "FP32",
                emulate ? ", FP16 backward-filter emulated on the CPU with loss scaling" : "");
    std::fflush(stdout);
    train::Plan plan = train::make_plan(c);
    // The arm continues the checkpoint's trajectory: its resolved config must be the one the checkpoint holds (the
    // rule table of resume_check.h; nothing is changeable here, as --resume takes no recipe flags).
    if (!checkpoint.empty())
      train::verify_resume_config(train::stored_config(checkpoint + "/state.safetensors"), plan.config, plan.config,
                                  {}, {checkpoint, (fs::path(dir) / kSpecFile).string(), false});
    GradProbe probe(arm, emulate, spec.probe_interval);
    train::Trainer trainer(std::move(plan), train::TrainerOptions{&probe, emulate});
    trainer.train(run_dir, checkpoint);
  }
}

}  // namespace cnn::compare
