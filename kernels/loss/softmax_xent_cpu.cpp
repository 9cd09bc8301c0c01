// CPU softmax cross-entropy (OpenMP over rows), FP32 math for f32 logits and FP64 for f64.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/loss/softmax_xent.h"

namespace cnn::kernels {

void XentParams::validate(const char* op) const {
  CNN_CHECK(batch >= 1 && classes >= 1, op, ": expected B >= 1 and K >= 1, got B=", batch, " K=", classes);
  CNN_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0, op, ": label smoothing must be in [0, 1), got ",
            label_smoothing);
}

namespace {

void check_labels(const int64_t* labels, const XentParams& p, const char* op) {
  for (int64_t b = 0; b < p.batch; ++b) {
    CNN_CHECK(labels[b] >= 0 && labels[b] < p.classes, op, ": label ", labels[b], " at batch index ", b,
              " outside [0, ", p.classes, ")");
  }
}

template <class T>
void forward_impl(const T* z, const int64_t* labels, T* lse, T* loss, const XentParams& p) {
  p.validate("softmax_xent_forward_cpu");
  check_labels(labels, p, "softmax_xent_forward_cpu");
  const int64_t B = p.batch, K = p.classes;
  const T eps = T(p.label_smoothing), on = T(1) - eps, off = eps / T(K);
  std::vector<T> row_loss(static_cast<size_t>(B));  // summed in order below: deterministic for any thread count
#pragma omp parallel for schedule(static) if (B * K > 16384)
  for (int64_t b = 0; b < B; ++b) {
    const T* zr = z + b * K;
    T mx = zr[0];
    for (int64_t k = 1; k < K; ++k) mx = zr[k] > mx ? zr[k] : mx;
    T se = 0, sz = 0;
    for (int64_t k = 0; k < K; ++k) {
      se += std::exp(zr[k] - mx);
      sz += zr[k];
    }
    const T l = mx + std::log(se);
    lse[b] = l;
    row_loss[b] = l - on * zr[labels[b]] - off * sz;
  }
  T total = 0;
  for (T v : row_loss) total += v;
  loss[0] = total / T(B);
}

template <class T>
void backward_impl(const T* z, const int64_t* labels, const T* lse, const T* dloss, T* dz, const XentParams& p) {
  p.validate("softmax_xent_backward_cpu");
  check_labels(labels, p, "softmax_xent_backward_cpu");
  const int64_t B = p.batch, K = p.classes;
  const T eps = T(p.label_smoothing), on = T(1) - eps, off = eps / T(K);
  const T g = dloss[0] / T(B);
#pragma omp parallel for schedule(static) if (B * K > 16384)
  for (int64_t b = 0; b < B; ++b) {
    const T* zr = z + b * K;
    T* dr = dz + b * K;
    for (int64_t k = 0; k < K; ++k) {
      const T q = off + (k == labels[b] ? on : T(0));
      dr[k] = g * (std::exp(zr[k] - lse[b]) - q);
    }
  }
}

}  // namespace

void softmax_xent_forward_cpu(const float* logits, const int64_t* labels, float* lse, float* loss,
                              const XentParams& p) {
  forward_impl(logits, labels, lse, loss, p);
}
void softmax_xent_forward_cpu(const double* logits, const int64_t* labels, double* lse, double* loss,
                              const XentParams& p) {
  forward_impl(logits, labels, lse, loss, p);
}
void softmax_xent_backward_cpu(const float* logits, const int64_t* labels, const float* lse, const float* dloss,
                               float* dlogits, const XentParams& p) {
  backward_impl(logits, labels, lse, dloss, dlogits, p);
}
void softmax_xent_backward_cpu(const double* logits, const int64_t* labels, const double* lse, const double* dloss,
                               double* dlogits, const XentParams& p) {
  backward_impl(logits, labels, lse, dloss, dlogits, p);
}

}  // namespace cnn::kernels
