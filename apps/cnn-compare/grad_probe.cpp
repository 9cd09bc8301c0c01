// Gradient probes and training accuracy of one comparison arm; CPU emulation of the FP16 backward-filter pass.
#include "apps/cnn-compare/grad_probe.h"

#include <cmath>

#include "apps/cnn-compare/bfc_emulation.h"
#include "core/error.h"
#include "layers/layers.h"
#include "layers/backend/backend.h"

namespace cnn::compare {

namespace {

// Every DepthwiseConv2d of the tree with its dotted path, in forward-registration order.
void collect_depthwise(Module& m, const std::string& path, std::vector<std::pair<std::string, DepthwiseConv2d*>>& out) {
  if (auto* dw = dynamic_cast<DepthwiseConv2d*>(&m)) out.emplace_back(path, dw);
  for (const auto& [name, child] : m.named_children())
    collect_depthwise(*child, path.empty() ? name : path + "." + name, out);
}

// The backend's weight gradient with an FP32 result (the FP16 kernels write FP32 before the f16 gradient tensor
// rounds it).
Tensor filter_grad_f32(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum accum) {
  return backend::dwconv_backward_filter_f32(x, dy, p, accum);
}

}  // namespace

std::pair<double, double> diff_and_norm(const Tensor& a, const Tensor& b) {
  CNN_CHECK(a.shape() == b.shape(), "diff_and_norm: shapes differ: ", a.str(), " vs ", b.str());
  const std::vector<float> va = a.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
  const std::vector<float> vb = b.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
  double d = 0, n = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const double e = double(va[i]) - double(vb[i]);
    d += e * e;
    n += double(vb[i]) * double(vb[i]);
  }
  return {std::sqrt(d), std::sqrt(n)};
}

GradProbe::GradProbe(Arm arm, bool emulated, int64_t probe_interval)
    : arm_(std::move(arm)), emulated_(emulated), probe_interval_(probe_interval) {
  CNN_CHECK(probe_interval_ >= 0, "--probe-interval: expected >= 0, got ", probe_interval_);
}

void GradProbe::on_model(Model& compute) {
  std::vector<std::pair<std::string, DepthwiseConv2d*>> layers;
  collect_depthwise(compute, "", layers);
  if (layers.empty()) throw Error(str_cat("cnn-compare: model '", compute.common().name, "' has no depthwise layer"));
  const std::array<size_t, 3> picks = {0, layers.size() / 2, layers.size() - 1};
  for (size_t i = 0; i < layers.size(); ++i) {
    int slot = -1;
    for (int s = 2; s >= 0; --s)
      if (picks[size_t(s)] == i) slot = s;  // a layer picked twice (fewer than 3 layers) reports in its first slot
    for (int s = 0; s < 3; ++s)
      if (picks[size_t(s)] == i) layer_names_[size_t(s)] = layers[i].first;
    if (slot < 0 && !emulated_) continue;  // the backend's own gradient, untouched
    layers[i].second->set_filter_grad(
        [this, slot](const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum) {
          return filter_grad(slot, x, dy, p);
        });
  }
}

void GradProbe::before_step(int64_t step) {
  probing_ = probe_interval_ > 0 && step % probe_interval_ == 0;
  diff_sq_.fill(0);
  ref_sq_.fill(0);
  seen_.fill(false);
}

Tensor GradProbe::filter_grad(int slot, const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p) {
  const bool measure = probing_ && slot >= 0;
  Tensor dw, ref;
  if (emulated_) {
    dw = bfc_f16_emulated(x, dy, p, arm_.accum);
    if (measure) ref = arm_.accum == dwconv::BfcAccum::fp32 ? dw : bfc_f16_emulated(x, dy, p, dwconv::BfcAccum::fp32);
  } else {
    dw = filter_grad_f32(x, dy, p, arm_.accum);
    if (measure)
      ref = arm_.accum == dwconv::BfcAccum::fp32 || x.dtype() != DType::f16
                ? dw
                : filter_grad_f32(x, dy, p, dwconv::BfcAccum::fp32);
  }
  if (measure) {
    const auto [d, n] = diff_and_norm(dw, ref);
    diff_sq_[size_t(slot)] += d * d;
    ref_sq_[size_t(slot)] += n * n;
    seen_[size_t(slot)] = true;
  }
  // The AMP gradient tensor is FP16: the FP32 result is rounded once, on the GPU by the f16 tensor, here likewise.
  if (emulated_) return round_to_f16(dw);
  return dw.dtype() == x.dtype() ? dw : dw.to(x.dtype());
}

void GradProbe::on_batch(const Tensor& logits, const Tensor& labels) {
  train::count_topk(logits, labels, top1_, top5_);
  images_ += labels.numel();
}

void GradProbe::add_train_fields(nlohmann::json& record) {
  if (images_ > 0) record["top1"] = double(top1_) / double(images_);
  top1_ = top5_ = images_ = 0;
  for (size_t s = 0; s < kProbeKeys.size(); ++s) {
    if (!seen_[s]) continue;
    const double n = std::sqrt(ref_sq_[s]), d = std::sqrt(diff_sq_[s]);
    record[kProbeKeys[s]] = n > 0 ? d / n : (d > 0 ? INFINITY : 0.0);
  }
  seen_.fill(false);
}

}  // namespace cnn::compare
