// Dense NHWC convolution on the CPU: im2col rows (one per output pixel, R*S*C long, the filter's memory order)
// times the (K, R*S*C) filter with OpenBLAS; backward-data scatters through a race-free col2im gather.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "kernels/conv/conv2d.h"
#include "kernels/matmul/gemm.h"

namespace cnn::kernels {

namespace {

constexpr int64_t kColsBudget = int64_t(1) << 23;  // column-buffer elements per chunk (32 MiB in f32)
constexpr int64_t kParallelMin = int64_t(1) << 18;  // below this many elements a parallel team costs more

int64_t pixels(const Conv2dParams& p) { return p.oh() * p.ow(); }
int64_t row_len(const Conv2dParams& p) { return p.r * p.s * p.c; }
int64_t chunk_samples(const Conv2dParams& p) {
  return std::clamp<int64_t>(kColsBudget / std::max<int64_t>(1, pixels(p) * row_len(p)), 1, p.n);
}

// cols[(n - n0) * OH*OW + oh*OW + ow][(i*S + j)*C + c] = x[n, oh*sh + i - ph, ow*sw + j - pw, c] (0 outside).
template <class T>
void im2col(const T* x, T* cols, const Conv2dParams& p, int64_t n0, int64_t nn) {
  const int64_t oh = p.oh(), ow = p.ow(), len = row_len(p), rows = nn * oh * ow;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = n0 + row / (oh * ow), y = row / ow % oh, xo = row % ow;
    T* dst = cols + row * len;
    for (int64_t i = 0; i < p.r; ++i) {
      const int64_t h = y * p.stride_h + i - p.pad_h;
      for (int64_t j = 0; j < p.s; ++j) {
        const int64_t w = xo * p.stride_w + j - p.pad_w;
        T* d = dst + (i * p.s + j) * p.c;
        if (h < 0 || h >= p.ih || w < 0 || w >= p.iw) {
          std::fill(d, d + p.c, T(0));
        } else {
          std::memcpy(d, x + ((n * p.ih + h) * p.iw + w) * p.c, size_t(p.c) * sizeof(T));
        }
      }
    }
  }
}

// dx[n, h, w, :] = sum of the column entries that read x[n, h, w, :]; each (n, h) row is written by one thread.
template <class T>
void col2im(const T* cols, T* dx, const Conv2dParams& p, int64_t n0, int64_t nn) {
  const int64_t oh = p.oh(), ow = p.ow(), len = row_len(p), in_rows = nn * p.ih;
#pragma omp parallel for schedule(static) if (in_rows * p.iw * p.c * p.r * p.s >= kParallelMin)
  for (int64_t ir = 0; ir < in_rows; ++ir) {
    const int64_t nl = ir / p.ih, h = ir % p.ih;
    T* out = dx + ((n0 + nl) * p.ih + h) * p.iw * p.c;
    std::fill(out, out + p.iw * p.c, T(0));
    for (int64_t i = 0; i < p.r; ++i) {
      const int64_t t = h + p.pad_h - i;
      if (t < 0 || t % p.stride_h != 0 || t / p.stride_h >= oh) continue;
      const int64_t y = t / p.stride_h;
      for (int64_t w = 0; w < p.iw; ++w) {
        T* o = out + w * p.c;
        for (int64_t j = 0; j < p.s; ++j) {
          const int64_t u = w + p.pad_w - j;
          if (u < 0 || u % p.stride_w != 0 || u / p.stride_w >= ow) continue;
          const T* src = cols + ((nl * oh + y) * ow + u / p.stride_w) * len + (i * p.s + j) * p.c;
          for (int64_t c = 0; c < p.c; ++c) o[c] += src[c];
        }
      }
    }
  }
}

bool is_pointwise(const Conv2dParams& p) {
  return p.r == 1 && p.s == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
}

template <class T>
void forward(const T* x, const T* w, T* y, const Conv2dParams& p, T* ws) {
  p.validate("conv2d_forward_cpu");
  const int64_t chunk = chunk_samples(p), len = row_len(p), px = pixels(p);
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nn = std::min(chunk, p.n - n0);
    const T* cols = x + n0 * p.ih * p.iw * p.c;  // a 1x1 stride-1 conv reads x itself
    if (!is_pointwise(p)) {
      im2col(x, ws, p, n0, nn);
      cols = ws;
    }
    GemmParams g;  // y (rows, K) = cols (rows, RSC) w^T
    g.trans_b = true;
    g.m = nn * px, g.n = p.k, g.k = len, g.lda = len, g.ldb = len, g.ldc = p.k;
    gemm_cpu(cols, w, y + n0 * px * p.k, g);
  }
}

template <class T>
void backward_data(const T* dy, const T* w, T* dx, const Conv2dParams& p, T* ws) {
  p.validate("conv2d_backward_data_cpu");
  const int64_t chunk = chunk_samples(p), len = row_len(p), px = pixels(p);
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nn = std::min(chunk, p.n - n0);
    const bool direct = is_pointwise(p);
    GemmParams g;  // dcols (rows, RSC) = dy (rows, K) w (K, RSC)
    g.m = nn * px, g.n = len, g.k = p.k, g.lda = p.k, g.ldb = len, g.ldc = len;
    T* dcols = direct ? dx + n0 * p.ih * p.iw * p.c : ws;
    gemm_cpu(dy + n0 * px * p.k, w, dcols, g);
    if (!direct) col2im(ws, dx, p, n0, nn);
  }
}

template <class T>
void backward_filter(const T* x, const T* dy, T* dw, const Conv2dParams& p, T* ws) {
  p.validate("conv2d_backward_filter_cpu");
  const int64_t chunk = chunk_samples(p), len = row_len(p), px = pixels(p);
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t nn = std::min(chunk, p.n - n0);
    const T* cols = x + n0 * p.ih * p.iw * p.c;
    if (!is_pointwise(p)) {
      im2col(x, ws, p, n0, nn);
      cols = ws;
    }
    GemmParams g;  // dw (K, RSC) (+)= dy^T (K, rows) cols (rows, RSC); the first chunk overwrites
    g.trans_a = true;
    g.m = p.k, g.n = len, g.k = nn * px, g.lda = p.k, g.ldb = len, g.ldc = len;
    g.beta = n0 == 0 ? 0.0 : 1.0;
    gemm_cpu(dy + n0 * px * p.k, cols, dw, g);
  }
}

}  // namespace

void Conv2dParams::validate(const char* op) const {
  CNN_CHECK(n >= 1 && ih >= 1 && iw >= 1 && c >= 1 && k >= 1, op, ": expected N, IH, IW, C, K >= 1, got ", str());
  CNN_CHECK(r >= 1 && s >= 1 && stride_h >= 1 && stride_w >= 1 && pad_h >= 0 && pad_w >= 0, op,
            ": expected filter extents and strides >= 1 and paddings >= 0, got ", str());
  CNN_CHECK(ih + 2 * pad_h >= r && iw + 2 * pad_w >= s, op, ": filter larger than the padded input, got ", str());
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  CNN_CHECK(x_elems() <= kMax && y_elems() <= kMax && w_elems() <= kMax, op,
            ": tensors over 2^31 elements are not supported, got ", str());
}

std::string Conv2dParams::str() const {
  return str_cat("N=", n, " IH=", ih, " IW=", iw, " C=", c, " K=", k, " F=", r, "x", s, " s=", stride_h, "x",
                 stride_w, " p=", pad_h, "x", pad_w);
}

int64_t conv2d_cpu_workspace_elems(const Conv2dParams& p) {
  if (is_pointwise(p)) return 0;
  return chunk_samples(p) * pixels(p) * row_len(p);
}

void conv2d_forward_cpu(const float* x, const float* w, float* y, const Conv2dParams& p, float* ws) {
  forward(x, w, y, p, ws);
}
void conv2d_forward_cpu(const double* x, const double* w, double* y, const Conv2dParams& p, double* ws) {
  forward(x, w, y, p, ws);
}
void conv2d_backward_data_cpu(const float* dy, const float* w, float* dx, const Conv2dParams& p, float* ws) {
  backward_data(dy, w, dx, p, ws);
}
void conv2d_backward_data_cpu(const double* dy, const double* w, double* dx, const Conv2dParams& p, double* ws) {
  backward_data(dy, w, dx, p, ws);
}
void conv2d_backward_filter_cpu(const float* x, const float* dy, float* dw, const Conv2dParams& p, float* ws) {
  backward_filter(x, dy, dw, p, ws);
}
void conv2d_backward_filter_cpu(const double* x, const double* dy, double* dw, const Conv2dParams& p, double* ws) {
  backward_filter(x, dy, dw, p, ws);
}

}  // namespace cnn::kernels
