// Inference helpers: model placement, top-k, softmax, accuracy in double precision on the host.
#include "models/inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace cnn {

void prepare_for_inference(Model& model, const Device& device, bool amp) {
  model.eval();
  model.to(device);
  if (amp) model.to(DType::f16);
}

std::vector<int64_t> top_k(const float* row, int64_t classes, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(classes));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, classes);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [row](int64_t a, int64_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  idx.resize(size_t(k));
  return idx;
}

std::vector<double> softmax(const float* row, int64_t classes) {
  const double m = *std::max_element(row, row + classes);
  std::vector<double> p(static_cast<size_t>(classes));
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += p[size_t(c)] = std::exp(double(row[c]) - m);
  for (double& v : p) v /= sum;
  return p;
}

void Accuracy::add(const Tensor& logits, const Tensor& labels) {
  const Tensor host = logits.to(Device::cpu()).to(DType::f32).contiguous();
  const std::vector<int64_t> y = labels.to(Device::cpu()).to_vector<int64_t>();
  CNN_CHECK(host.dim() == 2 && host.size(0) == int64_t(y.size()), "Accuracy: expected logits (", y.size(),
            ", classes), got ", host.str());
  const int64_t classes = host.size(1);
  for (size_t r = 0; r < y.size(); ++r) {
    const float* row = host.data<float>() + int64_t(r) * classes;
    CNN_CHECK(y[r] >= 0 && y[r] < classes, "Accuracy: label ", y[r], " outside the model's ", classes, " classes");
    // A NaN compares false against everything, so a non-finite row would rank its label first: refused instead.
    for (int64_t k = 0; k < classes; ++k)
      if (!std::isfinite(row[k]))
        throw Error(str_cat("the model's logits are not finite (", row[k], " for image ", images + int64_t(r),
                            "); a diverged model or an FP16 overflow is not scored"));
    // The label's rank is the number of logits strictly above it.
    int64_t above = 0;
    for (int64_t k = 0; k < classes; ++k) above += row[k] > row[y[r]] ? 1 : 0;
    top1 += above == 0 ? 1 : 0;
    top5 += above < 5 ? 1 : 0;
    const double m = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(double(row[k]) - m);
    loss_sum += std::log(sum) + m - double(row[y[r]]);
  }
  images += int64_t(y.size());
}

}  // namespace cnn
