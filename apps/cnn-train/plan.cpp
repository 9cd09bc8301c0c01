// Run planning: device, model overrides, data sets, loader settings and every cross-field check of the recipe.
#include "apps/cnn-train/plan.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/device_memory.h"
#include "core/error.h"
#include "data/fashion_mnist.h"
#include "data/sampler.h"
#include "models/resource_estimate.h"

namespace cnn::train {

namespace fs = std::filesystem;

namespace {

std::shared_ptr<const data::Dataset> limit(std::shared_ptr<const data::Dataset> ds, int64_t n, const char* flag) {
  if (n == 0) return ds;
  if (n > ds->size())
    throw Error(str_cat(flag, ": expected at most the ", ds->size(), " samples the split has, got ", n));
  return std::make_shared<data::SubsetDataset>(std::move(ds), n);
}

Device resolve_device(const std::string& text) {
  if (text == "auto") return cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu();
  Device d;
  try {
    d = Device::parse(text);
  } catch (const Error& e) {
    throw Error(str_cat("--device: expected cpu, cuda, cuda:N or auto, got '", text, "'"));
  }
  require_device(d, "--device");
  return d;
}

void load_datasets(Plan& p, int channels) {
  const TrainConfig& c = p.config;
  if (c.dataset == "synthetic") {
    const int classes = int(c.num_classes), size = int(c.image_size);
    const int64_t val_size = std::max<int64_t>(c.synthetic_size / 4, 1);
    p.train_set = std::make_shared<data::SyntheticDataset>(c.synthetic_size, classes, size, size, channels, c.seed);
    // Unsigned: --seed may be INT64_MAX, and the validation seed wraps instead of overflowing.
    p.val_set = std::make_shared<data::SyntheticDataset>(val_size, classes, size, size, channels, uint64_t(c.seed) + 1);
    return;
  }
  const std::string dir =
      c.dataset == "fashion-mnist" && c.data_dir.empty() ? std::string(data::kFashionMnistDir) : c.data_dir;
  if (dir.empty()) throw Error(str_cat("--data-dir: required for --dataset ", c.dataset));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(str_cat("--data-dir: '", dir, "' is not a folder"));
  if (c.dataset == "fashion-mnist") {
    p.train_set = std::make_shared<data::FashionMnistDataset>(dir, "train");
    p.val_set = std::make_shared<data::FashionMnistDataset>(dir, "test");
  } else {
    p.train_set = std::make_shared<data::ImageFolderDataset>(dir, "train");
    p.val_set = std::make_shared<data::ImageFolderDataset>(dir, "val");
  }
}

void check_data(const Plan& p, int channels) {
  const TrainConfig& c = p.config;
  if (p.train_set->channels() != channels)
    throw Error(str_cat("--model: ", p.model_name, " takes ", channels, "-channel images, --dataset ", c.dataset,
                        " has ", p.train_set->channels()));
  if (p.train_set->num_classes() > c.num_classes)
    throw Error(str_cat("--num-classes: the model has ", c.num_classes, " outputs, --dataset ", c.dataset, " has ",
                        p.train_set->num_classes(), " classes"));
  if (c.batch_size > p.train_set->size())
    throw Error(str_cat("--batch-size: ", c.batch_size, " exceeds the ", p.train_set->size(),
                        " training samples (the last short batch is dropped, so no step would run)"));
}

data::LoaderConfig loader_config(const TrainConfig& c, const Device& device, bool train, int channels) {
  data::LoaderConfig l;
  l.batch_size = c.batch_size;
  l.workers = int(c.workers);
  l.seed = uint64_t(c.seed);
  l.shuffle = train;
  l.drop_last = train;
  l.transform.image_size = int(c.image_size);
  l.transform.channels = channels;
  l.transform.augment =
      train ? data::parse_augment(c.augment) : (c.dataset == "imagenet" ? data::Augment::eval : data::Augment::none);
  l.dtype = c.amp ? DType::f16 : DType::f32;
  l.device = device;
  return l;
}

// The model against the pipeline and the device: channels the decoder produces, an input the model's downsampling
// leaves at least one pixel of, and the estimated memory of weights, optimizer state and one micro-batch.
void check_model(const Plan& p) {
  const TrainConfig& c = p.config;
  const ModelCommon& m = model_common(p.model_config);
  const std::string file = resolve_model_config(c.model);
  if (m.in_channels != 1 && m.in_channels != 3)
    throw Error(str_cat(file, ": in_channels: expected 1 or 3 (images decode to gray or RGB), got ", m.in_channels));
  const ResourceEstimate e = estimate_resources(p.model_config, c.image_size);
  const std::string size_key = c.given.count("image_size") ? "--image-size" : file + ": input_size";
  if (c.image_size < e.downsampling)
    throw Error(str_cat(size_key, ": expected >= ", e.downsampling, " (", m.name, " downsamples its input ",
                        e.downsampling, "x), got ", c.image_size));
  const double need = training_bytes(e, c.batch_size, c.amp), weights = training_bytes(e, 0, c.amp);
  const uint64_t have = device_memory_bytes(p.device);
  if (have > 0 && need > double(have)) {
    char params[32];
    std::snprintf(params, sizeof params, "%.3g", e.parameters);
    throw Error(str_cat(file, ": ", e.largest_key, ": the model needs an estimated ", format_bytes(need), " (", params,
                        " parameters with optimizer state: ", format_bytes(weights), "; activations at --batch-size ",
                        c.batch_size, " and --image-size ", c.image_size, ": ", format_bytes(need - weights),
                        "), more than the ", format_bytes(double(have)), " of ", p.device.str()));
  }
}

void check_combinations(const TrainConfig& c, const Device& device) {
  if (c.amp && device.is_cpu())
    throw Error("--amp: mixed precision needs a CUDA device (FP16 kernels); --device resolved to cpu");
  if (c.bfc_accum == "ha" && !c.amp)
    throw Error("--bfc-accum: 'ha' selects the FP16 backward-filter accumulation and needs --amp");
  if (c.min_lr > c.lr) throw Error(str_cat("--min-lr: expected <= --lr (", c.lr, "), got ", c.min_lr));
  if (c.warmup_lr_init > c.lr)
    throw Error(str_cat("--warmup-lr-init: expected <= --lr (", c.lr, "), got ", c.warmup_lr_init));
  if (c.given.count("steps") && !c.synthetic) throw Error("--steps: only with --synthetic (benchmark mode)");
  if (c.given.count("bench_warmup") && !c.synthetic) throw Error("--bench-warmup: only with --synthetic");
  if (c.given.count("profile") && !c.synthetic) throw Error("--profile: only with --synthetic (benchmark mode)");
  if (c.given.count("trace_dir") && !c.synthetic) throw Error("--trace-dir: only with --synthetic (benchmark mode)");
  if (c.profile > 0 && c.given.count("steps"))
    throw Error("--steps: not with --profile (the profile runs --profile N steps)");
  if (c.profile > 0 && !c.trace_dir.empty()) throw Error("--trace-dir: not with --profile (one measurement at a time)");
  if (!c.trace_dir.empty() && c.bench_warmup > 0)
    throw Error(str_cat("--trace-dir: needs --bench-warmup 0 (the traced steps start from the initial weights), got ",
                        c.bench_warmup));
  if (c.synthetic && c.stop_after > 0) throw Error("--stop-after: not with --synthetic (benchmark mode saves nothing)");
  if (c.bench_data && c.synthetic) throw Error("--bench-data: not with --synthetic (one benchmark at a time)");
  if (c.given.count("bench_seconds") && !c.bench_data) throw Error("--bench-seconds: only with --bench-data");
}

void plan_schedule(Plan& p) {
  const TrainConfig& c = p.config;
  p.batches_per_epoch = data::batch_count(p.train_set->size(), c.batch_size, true);
  p.steps_per_epoch = (p.batches_per_epoch + c.accum_steps - 1) / c.accum_steps;
  p.total_steps = p.steps_per_epoch * c.epochs;
  if (c.warmup_epochs >= double(c.epochs))
    throw Error(str_cat("--warmup-epochs: expected fewer than --epochs (", c.epochs, "), got ", c.warmup_epochs));
  p.warmup_steps = int64_t(std::llround(c.warmup_epochs * double(p.steps_per_epoch)));
  if (p.warmup_steps >= p.total_steps && c.warmup_epochs > 0)
    throw Error(str_cat("--warmup-epochs: expected fewer warmup steps than the run's ", p.total_steps, " steps, got ",
                        c.warmup_epochs, " epochs = ", p.warmup_steps, " steps"));
}

}  // namespace

ModelConfig resolve_model(TrainConfig& c) {
  if (c.model.empty())
    throw Error("--model: no model given (a name in configs/models, a YAML path, or a --config recipe)");
  ModelConfig mc = load_model_config(resolve_model_config(c.model), "--model");
  ModelCommon& common = model_common(mc);
  if (c.num_classes == 0) c.num_classes = common.num_classes;
  common.num_classes = int(c.num_classes);
  if (c.image_size == 0) c.image_size = common.input_size;
  if (c.drop_path_set()) {
    if (common.family == "convmixer" && c.drop_path > 0)
      throw Error(
          str_cat("--drop-path: ", common.name, " is a ConvMixer, which has no stochastic depth; got ", c.drop_path));
    common.drop_path_rate = c.drop_path;
  } else {
    c.drop_path = common.drop_path_rate;
  }
  if (c.augment == "auto") c.augment = c.dataset == "imagenet" ? "train" : "none";
  return mc;
}

Plan make_plan(const TrainConfig& config) {
  Plan p;
  p.config = config;
  TrainConfig& c = p.config;
  if (c.synthetic) c.dataset = "synthetic";
  p.device = resolve_device(c.device);
  check_combinations(c, p.device);
  p.model_config = resolve_model(c);
  p.model_name = model_common(p.model_config).name;
  // Stochastic depth drops random samples' residual branches from our own random stream, which a replay cannot draw
  // alike: with it the traced losses belong to a different function than the replay's (RepLKNet-31B, rate 0.3, moves
  // the first loss by ~0.5%; LayerScale models hide it while their branches are still ~1e-6 of the stream).
  if (!c.trace_dir.empty() && c.drop_path > 0)
    throw Error(str_cat("--trace-dir: needs --drop-path 0 (a replay cannot draw stochastic depth's random masks), got ",
                        c.drop_path, c.drop_path_set() ? "" : str_cat(", the rate of ", p.model_name)));
  p.build_options.bfc_accum = c.bfc_accum == "ha" ? dwconv::BfcAccum::ha : dwconv::BfcAccum::fp32;
  if (c.synthetic) {
    const int64_t timed = c.profile > 0 ? c.profile : c.steps;
    c.synthetic_size = std::max<int64_t>(4, (timed + c.bench_warmup) * c.batch_size * c.accum_steps);
  }
  const int channels = model_common(p.model_config).in_channels;
  check_model(p);
  load_datasets(p, channels);
  p.train_set = limit(p.train_set, c.train_samples, "--train-samples");
  p.val_set = limit(p.val_set, c.val_samples, "--val-samples");
  check_data(p, channels);
  p.train_loader = loader_config(c, p.device, true, channels);
  p.val_loader = loader_config(c, p.device, false, channels);
  plan_schedule(p);
  return p;
}

}  // namespace cnn::train
