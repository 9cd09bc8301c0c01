// cnn-predict: runs a checkpoint on image files (JPEG / PNG) with timm's evaluation transform and prints each
// image's top-k classes with softmax probabilities: ImageNet names for 1000-class models, Fashion-MNIST names for
// 1-channel 10-class models, a --class-names file, or class indices. Errors: one line on stderr, exit status 2 for
// command-line syntax, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_main.h"
#include "core/autograd.h"
#include "core/device.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/finite_check.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "data/imagenet_classes.h"
#include "data/transforms.h"
#include "models/inference.h"
#include "models/pretrained.h"

namespace {

using cnn::str_cat;

constexpr uint64_t kMaxNamesBytes = 16u << 20;  // a --class-names file: one name per line

struct Options {
  std::string model, checkpoint, device = "cpu", class_names;
  std::vector<std::string> images;
  int top = 5, image_size = 0;
  double crop_pct = 0.875;
  bool amp = false;
};

std::vector<std::string> read_names(const std::string& path, int classes) {
  std::istringstream in(cnn::read_regular_text(path, "--class-names", kMaxNamesBytes));
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) names.push_back(line);
  if (int(names.size()) != classes)
    throw cnn::Error(str_cat("--class-names: '", path, "' has ", names.size(), " lines, the model has ", classes,
                             " classes"));
  return names;
}

// Display names of the model's classes.
std::vector<std::string> class_names(const Options& o, const cnn::ModelCommon& m) {
  if (!o.class_names.empty()) return read_names(o.class_names, m.num_classes);
  std::vector<std::string> names;
  if (m.num_classes == 1000 && m.in_channels == 3) {
    for (const auto& c : cnn::data::imagenet_classes()) names.push_back(c.name + " (" + c.wnid + ")");
  } else if (m.num_classes == 10 && m.in_channels == 1) {
    for (const char* n : cnn::data::kFashionMnistClasses) names.push_back(n);
  } else {
    for (int k = 0; k < m.num_classes; ++k) names.push_back(str_cat("class ", k));
  }
  return names;
}

// One image through the evaluation transform: (1, S, S, C) f32.
cnn::Tensor load_image(const std::string& path, const cnn::data::TransformConfig& t) {
  const std::vector<uint8_t> bytes = cnn::read_regular_file(path, "image", cnn::data::kMaxImageFileBytes);
  cnn::Tensor x = cnn::Tensor::empty({1, t.image_size, t.image_size, t.channels}, cnn::DType::f32);
  cnn::data::transform_encoded(bytes, path, t, cnn::data::SampleRng(0, 0, 0), cnn::DType::f32, x.data_ptr());
  return x;
}

int run(const Options& o) {
  if (o.top < 1) throw cnn::Error(str_cat("--top: expected an integer >= 1, got ", o.top));
  if (!(o.crop_pct > 0 && o.crop_pct <= 1)) throw cnn::Error(str_cat("--crop-pct: expected a number in (0, 1], got ", o.crop_pct));
  if (o.image_size < 0) throw cnn::Error(str_cat("--image-size: expected an integer >= 1, got ", o.image_size));
  const cnn::Device device = cnn::Device::parse(o.device);
  cnn::require_device(device, "--device");
  if (o.amp && device.is_cpu()) throw cnn::Error("--amp: FP16 compute needs a CUDA device; --device is cpu");
  std::shared_ptr<cnn::Model> model = cnn::load_model_checkpoint(o.model, o.checkpoint);
  const cnn::ModelCommon& m = model->common();
  const std::vector<std::string> names = class_names(o, m);
  cnn::data::TransformConfig t;
  t.augment = cnn::data::Augment::eval;
  t.image_size = o.image_size ? o.image_size : m.input_size;
  t.channels = m.in_channels;
  t.eval_crop_ratio = o.crop_pct;
  t.mean = m.in_channels == 3 ? cnn::data::kImageNetMean : std::vector<float>{cnn::data::kFashionMnistMean};
  t.std = m.in_channels == 3 ? cnn::data::kImageNetStd : std::vector<float>{cnn::data::kFashionMnistStd};
  if (m.in_channels != 1 && m.in_channels != 3)
    throw cnn::Error(str_cat("--model: ", m.name, " takes ", m.in_channels, "-channel images; images are RGB or gray"));
  cnn::data::validate(t);
  cnn::prepare_for_inference(*model, device, o.amp);
  cnn::NoGradGuard no_grad;
  const cnn::ForwardContext ctx{nullptr, false, 0, 0};
  for (const std::string& path : o.images) {
    const cnn::Tensor x = load_image(path, t).to(o.amp ? cnn::DType::f16 : cnn::DType::f32).to(device);
    const cnn::Tensor logits = model->forward(ctx, x).to(cnn::Device::cpu()).to(cnn::DType::f32).contiguous();
    cnn::require_finite(logits, str_cat(path, ": the model's logits"));  // a NaN would rank first
    const float* row = logits.data<float>();
    const std::vector<double> p = cnn::softmax(row, m.num_classes);
    std::printf("%s\n", path.c_str());
    for (int64_t k : cnn::top_k(row, m.num_classes, o.top))
      std::printf("  %6.2f%%  %3lld  %s\n", 100.0 * p[size_t(k)], (long long)k, names[size_t(k)].c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Top-k classes of images under a checkpoint; see docs/models.md"};
  Options o;
  cnn::apps::add_model_flags(app, o.model, o.checkpoint);
  app.add_option("images", o.images, "image files (JPEG, PNG)")->required();
  app.add_option("--top", o.top, "classes shown per image [5]");
  app.add_option("--crop-pct", o.crop_pct, "resize the short side to floor(size / crop_pct), then crop [0.875]");
  app.add_option("--image-size", o.image_size, "square input size [the model's input_size]");
  app.add_option("--class-names", o.class_names, "one class name per line, in class order")->type_name("FILE");
  app.add_option("--device", o.device, "cpu | cuda | cuda:N [cpu]");
  app.add_flag("--amp", o.amp, "FP16 compute (CUDA)");
  return cnn::apps::run_cli(app, argc, argv, "cnn-predict", [&] { return run(o); });
}
