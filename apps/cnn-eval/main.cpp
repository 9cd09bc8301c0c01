// cnn-eval: evaluates a checkpoint (cnn, timm or the reference repositories' names; training or deploy form) on
// ImageNet's validation split with timm's evaluation transform, on Fashion-MNIST's test split, or on a tensor file;
// top-1 / top-5 / loss as one JSON line on stdout, a progress bar on stderr. FP32 or --amp, CPU or CUDA.
// Errors: one line on stderr, exit status 2 for command-line syntax, 1 for everything else.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "apps/cli_main.h"
#include "apps/cnn-eval/eval_data.h"
#include "core/autograd.h"
#include "core/device.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/inference.h"
#include "models/pretrained.h"

namespace {

using cnn::str_cat;

struct Options {
  std::string model, checkpoint, device = "auto", save_logits;
  cnn::eval::DataOptions data;
  bool amp = false;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "[=====>    ] 12/50 batches, 640 img/s" redrawn on a terminal; every tenth of the batches otherwise.
void show_progress(int64_t done, int64_t total, int64_t images, double seconds, bool tty) {
  const double rate = seconds > 0 ? double(images) / seconds : 0.0;
  if (tty) {
    constexpr int kWidth = 30;
    const int filled = total ? int(kWidth * done / total) : kWidth;
    std::fprintf(stderr, "\r[%s%s] %lld/%lld batches, %.0f img/s", std::string(size_t(filled), '=').c_str(),
                 std::string(size_t(kWidth - filled), ' ').c_str(), (long long)done, (long long)total, rate);
    if (done == total) std::fputc('\n', stderr);
  } else if (done == total || (total >= 10 && done % (total / 10) == 0)) {
    std::fprintf(stderr, "eval: %lld/%lld batches, %.0f img/s\n", (long long)done, (long long)total, rate);
  }
  std::fflush(stderr);
}

cnn::Device resolve_device(const std::string& text) {
  if (text == "auto") return cnn::cuda_device_count() > 0 ? cnn::Device::cuda(0) : cnn::Device::cpu();
  cnn::Device d;
  try {
    d = cnn::Device::parse(text);
  } catch (const cnn::Error&) {
    throw cnn::Error(str_cat("--device: expected cpu, cuda, cuda:N or auto, got '", text, "'"));
  }
  cnn::require_device(d, "--device");
  return d;
}

int run(const Options& o) {
  const cnn::Device device = resolve_device(o.device);
  if (o.amp && device.is_cpu()) throw cnn::Error("--amp: FP16 compute needs a CUDA device; --device resolved to cpu");
  std::shared_ptr<cnn::Model> model = cnn::load_model_checkpoint(o.model, o.checkpoint);
  const cnn::ModelCommon& common = model->common();
  cnn::eval::DataOptions data = o.data;
  if (data.image_size == 0) data.image_size = common.input_size;
  cnn::eval::EvalData source(data, common, device, o.amp ? cnn::DType::f16 : cnn::DType::f32);
  cnn::prepare_for_inference(*model, device, o.amp);

  cnn::NoGradGuard no_grad;
  const cnn::ForwardContext ctx{nullptr, false, 0, 0};
  cnn::Accuracy acc;
  std::vector<cnn::Tensor> all_logits;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const double t0 = now_s();
  int64_t done = 0;
  while (std::optional<cnn::eval::EvalBatch> b = source.next()) {
    const cnn::Tensor logits = model->forward(ctx, b->images).to(cnn::Device::cpu()).to(cnn::DType::f32);
    if (b->labels.defined()) acc.add(logits, b->labels);
    if (!o.save_logits.empty()) all_logits.push_back(logits);
    show_progress(++done, source.batches(), source.images_seen(), now_s() - t0, tty);
  }
  const double seconds = now_s() - t0;
  if (!o.save_logits.empty())
    cnn::save_safetensors(o.save_logits, {{"logits", cnn::eval::concat_rows(all_logits)}},
                          {{"model", common.name}, {"checkpoint", o.checkpoint}, {"amp", o.amp ? "true" : "false"}});
  nlohmann::json summary{{"model", common.name},
                         {"checkpoint", o.checkpoint},
                         {"dataset", data.dataset},
                         {"images", source.images_seen()},
                         {"device", device.str()},
                         {"amp", o.amp},
                         {"image_size", data.image_size},
                         {"seconds", seconds},
                         {"images_per_s", seconds > 0 ? double(source.images_seen()) / seconds : 0.0}};
  if (data.dataset == "imagenet") summary["crop_pct"] = data.crop_pct;
  if (acc.images > 0) {
    summary["loss"] = acc.loss();
    summary["top1"] = acc.top1_rate();
    summary["top5"] = acc.top5_rate();
  }
  std::printf("%s\n", summary.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Evaluate a checkpoint (top-1, top-5, loss; JSON on stdout); see docs/models.md"};
  Options o;
  cnn::apps::add_model_flags(app, o.model, o.checkpoint);
  cnn::eval::add_data_flags(app, o.data);
  app.add_option("--device", o.device, "cpu | cuda | cuda:N | auto [auto]");
  app.add_flag("--amp", o.amp, "FP16 compute (CUDA)");
  app.add_option("--save-logits", o.save_logits, "write every image's logits as tensor 'logits' (N, classes)")
      ->type_name("FILE");
  return cnn::apps::run_cli(app, argc, argv, "cnn-eval", [&] { return run(o); });
}
