// The per-arm measurements cnn-compare adds to cnn-train's loop (a train::TrainHooks): the training top-1 of each
// step and, every probe_interval steps, the relative L2 difference of the depthwise weight gradients of the first,
// middle and last DW layer against FP32 accumulation on the same step's x and dY. On the CPU it also emulates the
// AMP arms' FP16 backward-filter pass in every DW layer (bfc_emulation.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/cnn-compare/arms.h"
#include "apps/cnn-train/trainer.h"

namespace cnn::compare {

// Metrics keys of the probed layers, in this order.
inline constexpr std::array<const char*, 3> kProbeKeys = {"grad_diff_first", "grad_diff_mid", "grad_diff_last"};

class GradProbe : public train::TrainHooks {
 public:
  // emulated: an AMP arm on the CPU (FP32 run, FP16 backward-filter emulated, loss scaling on).
  GradProbe(Arm arm, bool emulated, int64_t probe_interval);

  void on_model(Model& compute) override;
  void before_step(int64_t step) override;
  void on_batch(const Tensor& logits, const Tensor& labels) override;
  void add_train_fields(nlohmann::json& record) override;

  // Module paths of the probed layers (first, middle, last DW layer), after on_model.
  const std::array<std::string, 3>& probed_layers() const { return layer_names_; }

 private:
  // The layer's weight gradient in the arm's precision; measures it against FP32 accumulation when probing.
  Tensor filter_grad(int slot, const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p);

  Arm arm_;
  bool emulated_;
  int64_t probe_interval_;
  bool probing_ = false;
  std::array<std::string, 3> layer_names_;
  std::array<double, 3> diff_sq_{}, ref_sq_{};  // sums over the step's micro-batches
  std::array<bool, 3> seen_{};
  int64_t top1_ = 0, top5_ = 0, images_ = 0;
};

// ||a - b|| and ||b|| (L2, in double) of two tensors of one shape, read on the host.
std::pair<double, double> diff_and_norm(const Tensor& a, const Tensor& b);

}  // namespace cnn::compare
