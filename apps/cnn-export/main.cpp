// cnn-export: rewrites a checkpoint as a clean reference-named F32 state dict (names mapped, buffers complete), or
// with --reparam the deploy form of RepLKNet / SLaK: every large-kernel block's branches (K x K or K x s + s x K
// strips, the small kernel) and their BatchNorms folded into one K x K depthwise kernel with bias
// ("...large_kernel.lkb_reparam"), which cnn-eval and cnn-predict load as they load the training form.
// Errors: one line on stderr, exit status 2 for command-line syntax, 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "apps/cli_main.h"
#include "core/error.h"
#include "models/checkpoint.h"
#include "models/pretrained.h"

namespace {

using cnn::str_cat;

struct Options {
  std::string model, checkpoint, out;
  bool reparam = false;
};

std::shared_ptr<cnn::Model> deploy_form(const cnn::Model& model) {
  if (const auto* r = dynamic_cast<const cnn::RepLKNet*>(&model)) {
    if (r->config().small_kernel_merged) throw cnn::Error("--reparam: the checkpoint is already in deploy form");
    return cnn::reparameterize(*r);
  }
  if (const auto* s = dynamic_cast<const cnn::SLaK*>(&model)) {
    if (s->config().small_kernel_merged) throw cnn::Error("--reparam: the checkpoint is already in deploy form");
    return cnn::reparameterize(*s);
  }
  throw cnn::Error(str_cat("--reparam: ", model.common().family, " '", model.common().name,
                           "' has no parallel kernel branches to merge (RepLKNet and SLaK have)"));
}

int run(const Options& o) {
  if (o.out == o.checkpoint) throw cnn::Error("--out: must differ from --checkpoint");
  std::shared_ptr<cnn::Model> model = cnn::load_model_checkpoint(o.model, o.checkpoint);
  std::shared_ptr<cnn::Model> result = o.reparam ? deploy_form(*model) : model;
  const cnn::ModelCommon& m = result->common();
  cnn::save_checkpoint(o.out, *result,
                       {{"model", m.name}, {"source", o.checkpoint}, {"form", o.reparam ? "deploy" : "train"}});
  std::printf("cnn-export: %s '%s' (%lld parameters%s) -> %s\n", m.family.c_str(), m.name.c_str(),
              (long long)result->parameter_count(), o.reparam ? ", re-parameterised" : "", o.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Export a checkpoint (reference names, F32), optionally re-parameterised; see docs/models.md"};
  Options o;
  cnn::apps::add_model_flags(app, o.model, o.checkpoint);
  app.add_option("--out", o.out, "output safetensors file")->required()->type_name("FILE");
  app.add_flag("--reparam", o.reparam, "RepLKNet / SLaK: merge each block's kernels and BNs into one (deploy form)");
  return cnn::apps::run_cli(app, argc, argv, "cnn-export", [&] { return run(o); });
}
