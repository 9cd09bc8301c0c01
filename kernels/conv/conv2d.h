// Dense 2-D convolution, groups = 1, NHWC (cross-correlation as PyTorch):
//   x (N, IH, IW, C), w (K, R, S, C), y (N, OH, OW, K); OH = (IH + 2 pad_h - R) / stride_h + 1, likewise OW.
// CPU (this header): im2col + OpenBLAS GEMM, f32 / f64, chunked over samples so the column buffer stays bounded.
// CUDA (conv2d_cuda.h): cuDNN with NHWC descriptors. Every entry point overwrites its output.
#pragma once

#include <cstdint>
#include <string>

namespace cnn::kernels {

struct Conv2dParams {
  int64_t n = 1, ih = 1, iw = 1, c = 1;  // input (NHWC)
  int64_t k = 1, r = 1, s = 1;           // output channels, filter height / width
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // symmetric

  int64_t oh() const { return (ih + 2 * pad_h - r) / stride_h + 1; }
  int64_t ow() const { return (iw + 2 * pad_w - s) / stride_w + 1; }
  int64_t x_elems() const { return n * ih * iw * c; }
  int64_t y_elems() const { return n * oh() * ow() * k; }
  int64_t w_elems() const { return k * r * s * c; }
  // Throws naming `op` unless extents >= 1, strides >= 1, paddings >= 0, output >= 1 and sizes fit int32 (cuDNN).
  void validate(const char* op) const;
  std::string str() const;
};

// Elements of the CPU column buffer (same for all three ops).
int64_t conv2d_cpu_workspace_elems(const Conv2dParams& p);

void conv2d_forward_cpu(const float* x, const float* w, float* y, const Conv2dParams& p, float* ws);
void conv2d_forward_cpu(const double* x, const double* w, double* y, const Conv2dParams& p, double* ws);
void conv2d_backward_data_cpu(const float* dy, const float* w, float* dx, const Conv2dParams& p, float* ws);
void conv2d_backward_data_cpu(const double* dy, const double* w, double* dx, const Conv2dParams& p, double* ws);
void conv2d_backward_filter_cpu(const float* x, const float* dy, float* dw, const Conv2dParams& p, float* ws);
void conv2d_backward_filter_cpu(const double* x, const double* dy, double* dw, const Conv2dParams& p, double* ws);

}  // namespace cnn::kernels
