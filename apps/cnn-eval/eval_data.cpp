// Evaluation data: data sets through the loader (no shuffling, no dropped batch) or a tensor file sliced in batches.
#include "apps/cnn-eval/eval_data.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/safetensors.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"

namespace cnn::eval {

namespace fs = std::filesystem;

void add_data_flags(CLI::App& app, DataOptions& o) {
  app.add_option("--dataset", o.dataset, "imagenet | fashion-mnist [imagenet]");
  app.add_option("--data-dir", o.data_dir, "data set root (imagenet: holds val/; fashion-mnist: IDX files)")
      ->type_name("DIR");
  app.add_option("--split", o.split, "split folder / name [val for imagenet, test for fashion-mnist]");
  app.add_option("--inputs", o.inputs, "instead of a data set: safetensors with 'images' (N,H,W,C) F32 (normalised) "
                                       "and optional 'labels' (N) I64")
      ->type_name("FILE");
  app.add_option("--crop-pct", o.crop_pct, "imagenet: resize the short side to floor(size / crop_pct), then crop [0.875]");
  app.add_option("--image-size", o.image_size, "square input size [the model's input_size]");
  app.add_option("--batch-size", o.batch_size, "images per batch [64]");
  app.add_option("--workers", o.workers, "loader threads [2]");
  app.add_option("--samples", o.samples, "evaluate the first N samples only [all]");
}

namespace {

// Every check of the options before anything is read.
void validate(const DataOptions& o) {
  if (o.batch_size < 1) throw Error(str_cat("--batch-size: expected an integer >= 1, got ", o.batch_size));
  if (o.workers < 1) throw Error(str_cat("--workers: expected an integer >= 1, got ", o.workers));
  if (o.samples < 0) throw Error(str_cat("--samples: expected an integer >= 0, got ", o.samples));
  if (o.image_size < 1) throw Error(str_cat("--image-size: expected an integer >= 1, got ", o.image_size));
  if (!(o.crop_pct > 0 && o.crop_pct <= 1)) throw Error(str_cat("--crop-pct: expected a number in (0, 1], got ", o.crop_pct));
  if (o.dataset != "imagenet" && o.dataset != "fashion-mnist" && o.dataset != "tensors")
    throw Error(str_cat("--dataset: expected imagenet or fashion-mnist, got '", o.dataset, "'"));
}

std::shared_ptr<const data::Dataset> open_dataset(DataOptions& o) {
  if (o.dataset == "fashion-mnist") {
    const std::string dir = o.data_dir.empty() ? std::string(data::kFashionMnistDir) : o.data_dir;
    if (o.split.empty()) o.split = "test";
    if (o.split != "test" && o.split != "train")
      throw Error(str_cat("--split: expected test or train for fashion-mnist, got '", o.split, "'"));
    return std::make_shared<data::FashionMnistDataset>(dir, o.split);
  }
  if (o.data_dir.empty()) throw Error("--data-dir: required for --dataset imagenet");
  std::error_code ec;
  if (!fs::is_directory(o.data_dir, ec)) throw Error(str_cat("--data-dir: '", o.data_dir, "' is not a folder"));
  if (o.split.empty()) o.split = "val";
  return std::make_shared<data::ImageFolderDataset>(o.data_dir, o.split);
}

}  // namespace

EvalData::EvalData(DataOptions& options, const ModelCommon& model, const Device& device, DType dtype)
    : device_(device), dtype_(dtype) {
  DataOptions& o = options;
  if (!o.inputs.empty()) o.dataset = "tensors";
  validate(o);
  if (o.dataset == "tensors") {
    SafetensorsData file = load_safetensors(o.inputs);
    auto img = file.tensors.find("images");
    if (img == file.tensors.end()) throw Error(str_cat("--inputs: '", o.inputs, "' has no tensor 'images'"));
    images_ = img->second;
    if (images_.dim() != 4 || images_.dtype() != DType::f32 || images_.size(3) != model.in_channels)
      throw Error(str_cat("--inputs: '", o.inputs, "': expected 'images' F32 (N, H, W, ", model.in_channels,
                          "), got ", images_.str()));
    if (auto lab = file.tensors.find("labels"); lab != file.tensors.end()) {
      labels_ = lab->second;
      if (labels_.dim() != 1 || labels_.dtype() != DType::i64 || labels_.size(0) != images_.size(0))
        throw Error(str_cat("--inputs: '", o.inputs, "': expected 'labels' I64 (", images_.size(0), "), got ",
                            labels_.str()));
    }
    size_ = images_.size(0);
    if (o.samples > 0) size_ = std::min(size_, o.samples);
    o.image_size = int(images_.size(1));
    options_ = o;
    return;
  }
  std::shared_ptr<const data::Dataset> ds = open_dataset(o);
  if (ds->channels() != model.in_channels)
    throw Error(str_cat("--model: ", model.name, " takes ", model.in_channels, "-channel images, --dataset ",
                        o.dataset, " has ", ds->channels()));
  if (ds->num_classes() > model.num_classes)
    throw Error(str_cat("--dataset: ", o.dataset, " has ", ds->num_classes(), " classes, the checkpoint's model ",
                        model.name, " has ", model.num_classes, " outputs"));
  if (o.samples > ds->size())
    throw Error(str_cat("--samples: expected at most the ", ds->size(), " samples of the split, got ", o.samples));
  if (o.samples > 0) ds = std::make_shared<data::SubsetDataset>(ds, o.samples);
  size_ = ds->size();
  data::LoaderConfig l;
  l.batch_size = o.batch_size;
  l.workers = o.workers;
  l.shuffle = false;
  l.drop_last = false;
  l.transform.image_size = o.image_size;
  l.transform.channels = model.in_channels;
  l.transform.augment = o.dataset == "imagenet" ? data::Augment::eval : data::Augment::none;
  l.transform.eval_crop_ratio = o.crop_pct;
  l.dtype = dtype;
  l.device = device;
  loader_ = std::make_unique<data::DataLoader>(ds, l);
  loader_->start_epoch(0);
  options_ = o;
}

int64_t EvalData::batches() const { return (size_ + options_.batch_size - 1) / options_.batch_size; }

std::optional<EvalBatch> EvalData::next() {
  if (loader_) {
    std::optional<data::Batch> b = loader_->next();
    if (!b) return std::nullopt;
    seen_ += b->labels.numel();
    return EvalBatch{b->images, b->labels.to(Device::cpu())};
  }
  if (seen_ >= size_) return std::nullopt;
  const int64_t end = std::min(size_, seen_ + options_.batch_size);
  EvalBatch b{images_.slice(0, seen_, end).contiguous().to(dtype_).to(device_),
              labels_.defined() ? labels_.slice(0, seen_, end).contiguous() : Tensor()};
  seen_ = end;
  return b;
}

Tensor concat_rows(const std::vector<Tensor>& parts) {
  CNN_CHECK(!parts.empty(), "concat_rows: nothing to concatenate");
  const int64_t cols = parts[0].size(1);
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.size(0);
  Tensor out = Tensor::empty({rows, cols}, DType::f32);
  int64_t at = 0;
  for (const Tensor& p : parts) {
    const Tensor h = p.to(Device::cpu()).to(DType::f32).contiguous();
    std::memcpy(out.data<float>() + at * cols, h.data<float>(), size_t(h.nbytes()));
    at += h.size(0);
  }
  return out;
}

}  // namespace cnn::eval
