// Softmax cross-entropy with label smoothing over logits z (B, K) and int64 labels y (B), FP32 math for any
// logits dtype. Target q = (1 - eps) onehot(y) + eps / K; with lse_b = log sum_k exp z[b,k]:
//   loss = 1/B sum_b [lse_b - (1 - eps) z[b, y_b] - eps/K sum_k z[b,k]]
//   dz[b,k] = dloss / B * (exp(z[b,k] - lse_b) - q[b,k])
// The forward saves lse (B) for the backward. CPU: f32 / f64 logits (FP64 math for f64); CUDA: softmax_xent_cuda.h.
#pragma once

#include <cstdint>

namespace cnn::kernels {

struct XentParams {
  int64_t batch = 0, classes = 0;
  double label_smoothing = 0.0;  // eps in [0, 1)
  void validate(const char* op) const;
};

// Throws if a label is outside [0, K).
void softmax_xent_forward_cpu(const float* logits, const int64_t* labels, float* lse, float* loss,
                              const XentParams& p);
void softmax_xent_forward_cpu(const double* logits, const int64_t* labels, double* lse, double* loss,
                              const XentParams& p);
void softmax_xent_backward_cpu(const float* logits, const int64_t* labels, const float* lse, const float* dloss,
                               float* dlogits, const XentParams& p);
void softmax_xent_backward_cpu(const double* logits, const int64_t* labels, const double* lse, const double* dloss,
                               double* dlogits, const XentParams& p);

}  // namespace cnn::kernels
