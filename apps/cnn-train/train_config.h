// Training recipe: one struct bound strictly from configs/train/*.yaml (models/yaml_struct.h) and from the
// command line (each YAML key `batch_size` is also the flag `--batch-size`), with one field table shared by both,
// so the two can never drift. Precedence: defaults < resumed run's config.yaml < --config file < flags.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace cnn::train {

struct TrainConfig {
  // What to train on.
  std::string model;                      // name in configs/models or a path to a model YAML
  std::string dataset = "fashion-mnist";  // imagenet | fashion-mnist | synthetic
  std::string data_dir;                   // empty: the Fashion-MNIST default folder (required for imagenet)
  int64_t train_samples = 0;              // first N training samples (0: all)
  int64_t val_samples = 0;                // first N validation samples (0: all)
  int64_t synthetic_size = 1024;          // dataset synthetic: training samples (validation: a quarter)
  std::string augment = "auto";           // auto | train | none (auto: train for imagenet, else none)
  int64_t image_size = 0;                 // 0: the model config's input_size
  int64_t num_classes = 0;                // 0: the model config's num_classes
  double drop_path = 0.0;                 // stochastic depth rate (meaningful when set; see drop_path_set())
  std::string bfc_accum = "fp32";         // fp32 | ha: FP16 backward-filter accumulation of the DWC layers
  // Optimisation.
  int64_t epochs = 10;
  int64_t batch_size = 128;  // images per micro-batch
  int64_t accum_steps = 1;   // micro-batches per optimizer step
  std::string opt = "adamw";
  double lr = 1e-3;
  double min_lr = 0.0;
  double weight_decay = 0.05;
  double beta1 = 0.9, beta2 = 0.999, opt_eps = 1e-8;
  std::string sched = "cosine";  // cosine | constant
  double warmup_epochs = 0.0;
  double warmup_lr_init = 0.0;
  double label_smoothing = 0.0;
  double clip_grad = 0.0;  // max global gradient norm (0: off)
  bool amp = false;        // FP16 compute, FP32 master weights, dynamic loss scaling (cuda)
  int64_t seed = 0;
  // Run control.
  std::string device = "auto";      // cpu | cuda | cuda:N | auto
  int64_t workers = 2;              // data loader threads
  int64_t log_interval = 50;        // optimizer steps between log lines / metrics records
  int64_t eval_interval = 0;        // optimizer steps between evaluations (0: every epoch)
  int64_t checkpoint_interval = 0;  // optimizer steps between periodic checkpoints (0: every epoch)
  int64_t keep = 3;                 // periodic checkpoints kept (last and best are always kept)
  std::string output = "runs";      // parent folder of the timestamped run folders
  // Not persisted: they control this invocation only.
  int64_t stop_after = 0;    // stop (with a resumable checkpoint) after this global step (0: off)
  int64_t max_nonfinite_steps = 5;  // FP32: stop after this many consecutive steps with a non-finite loss/grad norm
  std::string initial_checkpoint;  // start a new run from these weights (docs/train.md, fine-tuning)
  bool synthetic = false;    // benchmark mode: synthetic data, --steps timed steps, no files
  int64_t steps = 20;        // benchmark: timed steps
  int64_t bench_warmup = 3;  // benchmark: untimed steps first
  int64_t profile = 0;       // benchmark: profile this many steps (by op kind and layer) instead of timing
  std::string trace_dir;     // benchmark: folder for the initial weights, the steps' batches and losses
  bool bench_data = false;     // data-pipeline benchmark: the training loader alone, images/s, no files
  double bench_seconds = 10;   // data-pipeline benchmark: measured seconds

  std::set<std::string> given;  // keys set explicitly by a file or a flag

  bool drop_path_set() const { return given.count("drop_path") != 0; }
};

// Reads a recipe file strictly over `config` (only the keys present change); records them in `given`.
// Errors: `file:line:col: key: expected ..., got ...`, unknown and duplicate keys.
// `what` prefixes the errors of opening the file (only a regular file is read).
void load_train_config(const std::string& path, TrainConfig& config, const std::string& what = "--config");
// The same from YAML text; `name` stands for the file in messages.
void parse_train_config(const std::string& yaml_text, const std::string& name, TrainConfig& config);

// The persisted keys as YAML (round-trips through parse_train_config exactly; doubles in shortest form).
std::string train_config_yaml(const TrainConfig& config);

// Command-line flag of a key: "batch_size" -> "--batch-size".
std::string flag_name(const std::string& key);

// One settable field, for the CLI binding: its key, help text and whether it is a boolean switch.
struct FieldInfo {
  std::string key;
  std::string help;
  bool is_bool = false;
  bool persisted = true;
  std::string type_name;      // INT, NUM, TEXT or BOOL (for --help)
  std::string default_value;  // as in the YAML file
};
const std::vector<FieldInfo>& train_fields();

// Sets `key` from a command-line value (same rules as the YAML key); errors name the flag:
// `--batch-size: expected an integer >= 1, got 'x'`.
void set_from_flag(TrainConfig& config, const std::string& key, const std::string& value);

// The value of a key as text (for messages and comparisons).
std::string field_text(const TrainConfig& config, const std::string& key);

}  // namespace cnn::train
