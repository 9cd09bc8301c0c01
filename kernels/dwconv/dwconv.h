// Depthwise 2-D convolution (channel multiplier 1), channels last: the Flash-DWC kernels and their references.
//   X (N, IH, IW, C), W (FH, FW, C), bias (C) or null, Y (N, OH, OW, C); cross-correlation as in PyTorch:
//   Y[n,oh,ow,c] = bias[c] + sum_{i<FH, j<FW} X[n, oh*sH + i - pT, ow*sW + j - pL, c] * W[i,j,c]
//   OH = floor((IH + pT + pB - FH) / sH) + 1, OW = floor((IW + pL + pR - FW) / sW) + 1; X is zero outside its extent.
// Backward-data (BDC) writes dX (N, IH, IW, C) from dY; backward-filter (BFC) writes dW (FH, FW, C) from X and dY.
// Every entry point overwrites its output. FP32 entry points accumulate in FP32 (CPU backend and CUDA) or in FP64
// (the *_reference functions, the oracle for every test).
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace cnn::dwconv {

struct DwconvParams {
  int n = 1, ih = 1, iw = 1, c = 1;  // input extents (NHWC)
  int fh = 1, fw = 1;                // filter extents
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  // 0 for a stride below 1 (validate() names that error), so that no caller divides by zero first.
  int oh() const { return stride_h >= 1 ? (ih + pad_top + pad_bottom - fh) / stride_h + 1 : 0; }
  int ow() const { return stride_w >= 1 ? (iw + pad_left + pad_right - fw) / stride_w + 1 : 0; }
  int64_t x_elems() const { return int64_t(n) * ih * iw * c; }
  int64_t y_elems() const { return int64_t(n) * oh() * ow() * c; }
  int64_t w_elems() const { return int64_t(fh) * fw * c; }
  // 2 * N*OH*OW*C*FH*FW: the FLOP count every benchmark reports against.
  double flops() const { return 2.0 * double(y_elems()) * fh * fw; }
  // Throws cnn::Error naming `op` unless every extent is >= 1, strides >= 1, paddings >= 0 and OH, OW >= 1.
  void validate(const char* op) const;
  std::string str() const;  // "N=.. IH=.. IW=.. C=.. F=FHxFW s=.. p=(t,b,l,r)" for logs and errors
};

// Throws cnn::Error naming `op` and which of the two inputs and the output is null (every backend's entry points).
void check_pointers(const char* op, const void* a, const char* a_name, const void* b, const char* b_name,
                    const void* out, const char* out_name);

// Accumulation precision of the FP16 backward-filter kernels (issue "Flash-DWC-T"); FP32 BFC ignores it.
//   fp32: every FP16 product is accumulated in FP32.
//   ha (hybrid): runs of at most kBfcHaRun consecutive dY columns of one dY row (columns [32k, 32k+32) of the row)
//        are accumulated in FP16 with fused multiply-adds (one FP16 rounding per step, ascending column order),
//        and each run's FP16 partial is then added into FP32.
enum class BfcAccum { fp32, ha };
inline constexpr int kBfcHaRun = 32;
const char* bfc_accum_name(BfcAccum a);  // "fp32", "ha"

// ---- FP64 reference (oracle) -------------------------------------------------------------------------------
void dwconv_forward_reference(const double* x, const double* w, const double* bias, double* y, const DwconvParams& p);
void dwconv_backward_data_reference(const double* dy, const double* w, double* dx, const DwconvParams& p);
void dwconv_backward_filter_reference(const double* x, const double* dy, double* dw, const DwconvParams& p);

// Emulation of the FP16 backward-filter kernels on the host (x, dy hold FP16 values; dw is FP32): `fp32` sums the
// exact products in FP32 (float FMA), `ha` follows the kernels' FP16 runs (each step rounded to FP16, then every
// run's partial added into FP32). Per (tap, channel) the order is dY row by row, columns ascending, as in the kernels
// (only the order of the FP32 merges across the kernels' accumulation chunks differs).
void dwconv_backward_filter_reference_f16(const Half* x, const Half* dy, float* dw, const DwconvParams& p,
                                          BfcAccum accum);

// ---- FP32 CPU backend (OpenMP, vectorized over channels) ---------------------------------------------------
void dwconv_forward_cpu(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p);
void dwconv_backward_data_cpu(const float* dy, const float* w, float* dx, const DwconvParams& p);
void dwconv_backward_filter_cpu(const float* x, const float* dy, float* dw, const DwconvParams& p);

}  // namespace cnn::dwconv
