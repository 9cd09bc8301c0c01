// Training recipe binding: one table of fields drives the YAML reader, the flags, the YAML writer and the resume
// comparison.
#include "apps/cnn-train/train_config.h"

#include <charconv>
#include <functional>
#include <variant>

#include "core/error.h"
#include "core/error_text.h"
#include "models/yaml_struct.h"

namespace cnn::train {

namespace ys = yaml_struct;

namespace {

using Member =
    std::variant<int64_t TrainConfig::*, double TrainConfig::*, bool TrainConfig::*, std::string TrainConfig::*>;
using AnyRule = std::variant<ys::Rule<int64_t>, ys::Rule<double>, ys::Rule<bool>, ys::Rule<std::string>>;

struct Field {
  FieldInfo info;
  Member member;
  AnyRule rule;
};

ys::Rule<double> at_least_zero() {
  return {"a number >= 0", [](const double& v) { return v >= 0; }};
}

Field field(const char* key, const char* help, Member m, AnyRule r, bool persisted = true) {
  const bool is_bool = std::holds_alternative<bool TrainConfig::*>(m);
  return Field{FieldInfo{key, help, is_bool, persisted, "", ""}, m, std::move(r)};
}

const std::vector<Field>& fields() {
  using C = TrainConfig;
  static const std::vector<Field> table = {
      field("model", "model config name (configs/models) or path to a model YAML", &C::model, ys::any_string()),
      field("dataset", "imagenet | fashion-mnist | synthetic", &C::dataset,
            ys::one_of({"imagenet", "fashion-mnist", "synthetic"})),
      field("data_dir", "data folder (ImageNet tree or Fashion-MNIST IDX files)", &C::data_dir, ys::any_string()),
      field("train_samples", "use the first N training samples (0: all)", &C::train_samples, ys::int_at_least(0)),
      field("val_samples", "use the first N validation samples (0: all)", &C::val_samples, ys::int_at_least(0)),
      field("synthetic_size", "training samples of --dataset synthetic", &C::synthetic_size, ys::int_at_least(4)),
      field("augment", "train augmentation: auto | train | none", &C::augment, ys::one_of({"auto", "train", "none"})),
      field("image_size", "input resolution (0: the model's input_size)", &C::image_size, ys::int_in(0, 4096)),
      field("num_classes", "classifier outputs (0: the model's num_classes)", &C::num_classes, ys::int_in(0, 1 << 20)),
      field("drop_path", "stochastic depth rate (default: the model's)", &C::drop_path, ys::number_in(0, 1, true)),
      field("bfc_accum", "depthwise FP16 backward-filter accumulation: fp32 | ha", &C::bfc_accum,
            ys::one_of({"fp32", "ha"})),
      field("epochs", "passes over the training set", &C::epochs, ys::int_in(1, 100000)),
      field("batch_size", "images per micro-batch", &C::batch_size, ys::int_in(1, 1 << 20)),
      field("accum_steps", "micro-batches per optimizer step", &C::accum_steps, ys::int_in(1, 4096)),
      field("opt", "optimizer: adamw", &C::opt, ys::one_of({"adamw"})),
      field("lr", "peak learning rate", &C::lr, ys::positive_number()),
      field("min_lr", "cosine floor", &C::min_lr, at_least_zero()),
      field("weight_decay", "AdamW decoupled weight decay (not on norms, biases, LayerScale)", &C::weight_decay,
            at_least_zero()),
      field("beta1", "AdamW beta1", &C::beta1, ys::number_in(0, 1, true)),
      field("beta2", "AdamW beta2", &C::beta2, ys::number_in(0, 1, true)),
      field("opt_eps", "AdamW epsilon", &C::opt_eps, ys::positive_number()),
      field("sched", "learning-rate schedule: cosine | constant", &C::sched, ys::one_of({"cosine", "constant"})),
      field("warmup_epochs", "linear warmup length in epochs (may be fractional)", &C::warmup_epochs, at_least_zero()),
      field("warmup_lr_init", "learning rate at the start of the warmup", &C::warmup_lr_init, at_least_zero()),
      field("label_smoothing", "label smoothing of the training loss", &C::label_smoothing, ys::number_in(0, 1, true)),
      field("clip_grad", "max global gradient L2 norm (0: off)", &C::clip_grad, at_least_zero()),
      field("amp", "FP16 compute with FP32 master weights and dynamic loss scaling (cuda)", &C::amp, ys::any_bool()),
      field("seed", "seed of initialisation, data order, augmentation and stochastic depth", &C::seed,
            ys::int_at_least(0)),
      field("device", "cpu | cuda | cuda:N | auto", &C::device, ys::any_string()),
      field("workers", "data loader threads", &C::workers, ys::int_in(1, 1024)),
      field("log_interval", "optimizer steps between log lines and metrics records", &C::log_interval,
            ys::int_at_least(1)),
      field("eval_interval", "optimizer steps between evaluations (0: every epoch)", &C::eval_interval,
            ys::int_at_least(0)),
      field("checkpoint_interval", "optimizer steps between periodic checkpoints (0: every epoch)",
            &C::checkpoint_interval, ys::int_at_least(0)),
      field("keep", "periodic checkpoints kept besides last and best", &C::keep, ys::int_in(0, 1000000)),
      field("output", "parent folder of the timestamped run folders", &C::output, ys::any_string()),
      field("stop_after", "stop after this many optimizer steps, leaving a resumable checkpoint (0: off)",
            &C::stop_after, ys::int_at_least(0), false),
      field("max_nonfinite_steps",
            "FP32: stop with an error after this many consecutive steps skipped for a non-finite loss or gradient norm",
            &C::max_nonfinite_steps, ys::int_in(1, 1000000), false),
      field("initial_checkpoint", "start a new run from a safetensors state dict (timm / reference names); "
            "a classifier of another class count is re-initialised", &C::initial_checkpoint, ys::any_string(), false),
      field("synthetic", "benchmark mode: synthetic data, time --steps training steps, write nothing", &C::synthetic,
            ys::any_bool(), false),
      field("steps", "benchmark mode: timed steps", &C::steps, ys::int_in(1, 1000000), false),
      field("bench_warmup", "benchmark mode: untimed steps first", &C::bench_warmup, ys::int_in(0, 1000000), false),
      field("profile", "benchmark mode: profile N steps by op kind and layer instead of timing --steps (0: off)",
            &C::profile, ys::int_in(0, 1000000), false),
      field("trace_dir", "benchmark mode: write the initial weights, each step's batch and loss to this folder",
            &C::trace_dir, ys::any_string(), false),
      field("bench_data", "data-pipeline benchmark: run the training loader alone and print images/s", &C::bench_data,
            ys::any_bool(), false),
      field("bench_seconds", "data-pipeline benchmark: measured seconds", &C::bench_seconds,
            ys::number_in(0.5, 3600), false),
  };
  return table;
}

const Field& field_named(const std::string& key) {
  for (const Field& f : fields())
    if (f.info.key == key) return f;
  throw Error(str_cat("train config: no key '", key, "'"));
}

// Shortest decimal text that reads back as the same double.
std::string number_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

namespace {

void bind_root(const YAML::Node& root, const std::string& name, TrainConfig& config) {
  ys::MapReader r(root, name, "");
  for (const Field& f : fields()) {
    if (!f.info.persisted || !r.has(f.info.key)) continue;  // run controls are flags only
    std::visit(
        [&](auto member) {
          using T = std::remove_cvref_t<decltype(config.*member)>;
          r.required(f.info.key, config.*member, std::get<ys::Rule<T>>(f.rule));
        },
        f.member);
    config.given.insert(f.info.key);
  }
  r.finish();
}

}  // namespace

void parse_train_config(const std::string& yaml_text, const std::string& name, TrainConfig& config) {
  bind_root(ys::load_string(yaml_text, name), name, config);
}

void load_train_config(const std::string& path, TrainConfig& config, const std::string& what) {
  bind_root(ys::load_file(path, what), path, config);
}

std::string field_text(const TrainConfig& config, const std::string& key) {
  const Field& f = field_named(key);
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_cvref_t<decltype(config.*member)>;
        const T& v = config.*member;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return number_text(v);
        } else {
          return quoted(v);
        }
      },
      f.member);
}

std::string train_config_yaml(const TrainConfig& config) {
  std::string out = "# Resolved cnn-train configuration (reload with --config, or continue with --resume).\n";
  for (const Field& f : fields())
    if (f.info.persisted) out += f.info.key + ": " + field_text(config, f.info.key) + "\n";
  return out;
}

std::string flag_name(const std::string& key) {
  std::string s = "--" + key;
  for (char& c : s)
    if (c == '_') c = '-';
  return s;
}

const std::vector<FieldInfo>& train_fields() {
  static const std::vector<FieldInfo> infos = [] {
    std::vector<FieldInfo> v;
    const TrainConfig defaults;
    for (const Field& f : fields()) {
      FieldInfo info = f.info;
      static const char* kTypeNames[] = {"INT", "NUM", "BOOL", "TEXT"};
      info.type_name = kTypeNames[f.member.index()];
      info.default_value = field_text(defaults, f.info.key);
      v.push_back(std::move(info));
    }
    return v;
  }();
  return infos;
}

void set_from_flag(TrainConfig& config, const std::string& key, const std::string& value) {
  const Field& f = field_named(key);
  // The value is checked as a plain YAML scalar, so flags and files accept exactly the same spellings.
  const YAML::Node node(value);
  std::visit(
      [&](auto member) {
        using T = std::remove_cvref_t<decltype(config.*member)>;
        const auto& rule = std::get<ys::Rule<T>>(f.rule);
        std::optional<T> v;
        if constexpr (std::is_same_v<T, int64_t>) v = ys::as_int(node);
        if constexpr (std::is_same_v<T, double>) v = ys::as_number(node);
        if constexpr (std::is_same_v<T, bool>) v = ys::as_bool(node);
        if constexpr (std::is_same_v<T, std::string>) v = value;
        if (!v || (rule.ok && !rule.ok(*v)))
          throw Error(str_cat(flag_name(key), ": expected ", rule.expected, ", got '", printable(value), "'"));
        config.*member = *v;
      },
      f.member);
  config.given.insert(key);
}

}  // namespace cnn::train
