// Backward-filter as a split reduction with FP32, FP16 or hybrid accumulation (see ladder.h). FP16 steps are
// emulated on the host: the exact product plus the running FP16 sum, rounded once to FP16 (an FP16 FMA). Reference:
// dwconv_backward_filter_reference (FP64) and dwconv_backward_filter_reference_f16 (the GPU kernels' emulation).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "teach/dwconv/ladder.h"

namespace cnn::teach {
namespace {

// v rounded once to FP16 (nearest, ties to even). v = x*y + s of FP16 values is exact in double here. Going through
// float would round twice; rounding to float "to odd" first (truncate, then set the last bit when inexact) keeps
// the second rounding correct, since float carries 13 more bits than FP16.
float round_f16(double v) {
  float f = float(v);
  if (double(f) != v) {
    if (std::abs(double(f)) > std::abs(v)) f = std::nextafter(f, 0.f);  // truncate toward zero
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1u;  // inexact: odd
    std::memcpy(&f, &bits, sizeof bits);
  }
  return half_bits_to_float(float_to_half_bits(f));
}

// One chunk's sum for tap (i, j), channel c over output rows [row_begin, row_end) of the N*OH axis.
float chunk_sum(const float* x, const float* dy, const DwconvParams& p, int i, int j, int c, int64_t row_begin,
                int64_t row_end, Accumulation acc) {
  const int out_h = p.oh(), out_w = p.ow();
  float sum = 0.f;  // FP32 sum (fp32, hybrid) or the FP16 sum itself (fp16)
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int n = int(row / out_h), oh = int(row % out_h), ih = oh * p.stride_h + i - p.pad_top;
    if (ih < 0 || ih >= p.ih) continue;
    const float* x_row = x + (int64_t(n) * p.ih + ih) * p.iw * p.c + c;
    const float* dy_row = dy + row * out_w * p.c + c;
    for (int run = 0; run < out_w; run += dwconv::kBfcHaRun) {
      float part = 0.f;  // hybrid: the FP16 partial of this run of columns
      for (int ow = run; ow < std::min(out_w, run + dwconv::kBfcHaRun); ++ow) {
        const int iw = ow * p.stride_w + j - p.pad_left;
        if (iw < 0 || iw >= p.iw) continue;
        const double prod = double(x_row[int64_t(iw) * p.c]) * double(dy_row[int64_t(ow) * p.c]);
        if (acc == Accumulation::fp32) sum = std::fma(x_row[int64_t(iw) * p.c], dy_row[int64_t(ow) * p.c], sum);
        if (acc == Accumulation::fp16) sum = round_f16(prod + sum);
        if (acc == Accumulation::hybrid) part = round_f16(prod + part);
      }
      if (acc == Accumulation::hybrid) sum += part;
    }
  }
  return sum;
}

}  // namespace

const char* accumulation_name(Accumulation a) {
  switch (a) {
    case Accumulation::fp32:
      return "fp32";
    case Accumulation::fp16:
      return "fp16";
    case Accumulation::hybrid:
      return "hybrid";
  }
  return "?";
}

void backward_filter_split(const float* x, const float* dy, float* dw, const DwconvParams& p, int chunks,
                           Accumulation acc) {
  const char* op = "teach backward_filter_split";
  p.validate(op);
  dwconv::check_pointers(op, x, "x", dy, "dy", dw, "dw");
  const int64_t rows = int64_t(p.n) * p.oh();  // the accumulation axis, in output rows of N*OH
  CNN_CHECK(chunks >= 1, op, ": expected chunks >= 1, got ", chunks);
  chunks = int(std::min<int64_t>(chunks, rows));
#pragma omp parallel for collapse(2) schedule(static)
  for (int t = 0; t < p.fh * p.fw; ++t)
    for (int c = 0; c < p.c; ++c) {
      float total = 0.f;  // chunk partials merged in FP32, as the GPU's atomics do
      for (int k = 0; k < chunks; ++k)
        total += chunk_sum(x, dy, p, t / p.fw, t % p.fw, c, rows * k / chunks, rows * (k + 1) / chunks, acc);
      dw[int64_t(t) * p.c + c] = total;
    }
}

}  // namespace cnn::teach
