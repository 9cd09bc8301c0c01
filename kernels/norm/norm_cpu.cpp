// LayerNorm and BatchNorm on the CPU (OpenMP over rows / row blocks), FP64 accumulation. Per-channel sums add
// fixed 256-row block partials in block order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/norm/norm.h"

namespace cnn::kernels {

namespace {

// The per-element passes are double arithmetic on float data; AVX-512 / AVX2 clones (chosen when the library
// loads, OpenMP bodies included) process 8 / 4 doubles per instruction instead of baseline SSE2's 2.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CNN_NORM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CNN_NORM_CLONES
#endif

constexpr int64_t kRowBlock = 256;
constexpr int64_t kParallelMin = int64_t(1) << 18;  // elements; smaller work runs on one thread

void check(const char* op, const NormParams& p) {
  CNN_CHECK(p.rows >= 1 && p.c >= 1, op, ": expected rows, C >= 1, got rows=", p.rows, " C=", p.c);
  CNN_CHECK(p.eps > 0.0, op, ": expected eps > 0, got ", p.eps);
}

// s0[c] = sum_r a(r, c), s1[c] = sum_r b(r, c) where f(r, c, s0, s1) adds the row's terms.
template <class F>
CNN_NORM_CLONES void column_sums2(const NormParams& p, F&& f, std::vector<double>& s0, std::vector<double>& s1) {
  const int64_t blocks = (p.rows + kRowBlock - 1) / kRowBlock, c = p.c;
  std::vector<double> part(size_t(blocks * 2 * c), 0.0);
#pragma omp parallel for schedule(static) if (p.rows * c >= kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) {
    double* p0 = part.data() + b * 2 * c;
    double* p1 = p0 + c;
    const int64_t end = std::min(p.rows, (b + 1) * kRowBlock);
    for (int64_t r = b * kRowBlock; r < end; ++r)
      for (int64_t ch = 0; ch < c; ++ch) f(r, ch, p0[ch], p1[ch]);
  }
  s0.assign(size_t(c), 0.0);
  s1.assign(size_t(c), 0.0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      s0[size_t(ch)] += part[size_t(b * 2 * c + ch)];
      s1[size_t(ch)] += part[size_t(b * 2 * c + c + ch)];
    }
}

template <class T>
void ln_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, const NormParams& p) {
  check("layernorm_forward_cpu", p);
  const int64_t c = p.c;
#pragma omp parallel for schedule(static) if (p.rows * c >= kParallelMin)
  for (int64_t r = 0; r < p.rows; ++r) {
    const T* xr = x + r * c;
    double s = 0;
    for (int64_t i = 0; i < c; ++i) s += double(xr[i]);
    const double mu = s / double(c);
    double v = 0;
    for (int64_t i = 0; i < c; ++i) v += (double(xr[i]) - mu) * (double(xr[i]) - mu);
    const double rs = 1.0 / std::sqrt(v / double(c) + p.eps);
    mean[r] = T(mu);
    rstd[r] = T(rs);
    T* yr = y + r * c;
    for (int64_t i = 0; i < c; ++i) yr[i] = T((double(xr[i]) - mu) * rs * double(gamma[i]) + double(beta[i]));
  }
}

template <class T>
void ln_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx, T* dgamma, T* dbeta,
                 const NormParams& p) {
  check("layernorm_backward_cpu", p);
  const int64_t c = p.c;
  if (dx != nullptr) {
#pragma omp parallel for schedule(static) if (p.rows * c >= kParallelMin)
    for (int64_t r = 0; r < p.rows; ++r) {
      const T *xr = x + r * c, *dyr = dy + r * c;
      const double mu = double(mean[r]), rs = double(rstd[r]);
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < c; ++i) {
        const double g = double(dyr[i]) * double(gamma[i]);
        sg += g;
        sgx += g * (double(xr[i]) - mu) * rs;
      }
      sg /= double(c);
      sgx /= double(c);
      for (int64_t i = 0; i < c; ++i) {
        const double g = double(dyr[i]) * double(gamma[i]);
        dx[r * c + i] = T(rs * (g - sg - (double(xr[i]) - mu) * rs * sgx));
      }
    }
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
  std::vector<double> sg, sb;
  column_sums2(
      p,
      [&](int64_t r, int64_t ch, double& a, double& b) {
        const double d = double(dy[r * c + ch]);
        a += d * (double(x[r * c + ch]) - double(mean[r])) * double(rstd[r]);
        b += d;
      },
      sg, sb);
  for (int64_t ch = 0; ch < c; ++ch) {
    if (dgamma) dgamma[ch] = T(sg[size_t(ch)]);
    if (dbeta) dbeta[ch] = T(sb[size_t(ch)]);
  }
}

template <class T>
void bn_stats(const T* x, T* mean, T* rstd, T* running_mean, T* running_var, const NormParams& p,
              const BatchNormUpdate& u) {
  check("batchnorm_stats_cpu", p);
  const int64_t c = p.c;
  std::vector<double> s, unused;
  column_sums2(p, [&](int64_t r, int64_t ch, double& a, double&) { a += double(x[r * c + ch]); }, s, unused);
  for (auto& v : s) v /= double(p.rows);
  std::vector<double> sq;
  column_sums2(
      p,
      [&](int64_t r, int64_t ch, double& a, double&) {
        const double d = double(x[r * c + ch]) - s[size_t(ch)];
        a += d * d;
      },
      sq, unused);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double var = sq[size_t(ch)] / double(p.rows);
    mean[ch] = T(s[size_t(ch)]);
    rstd[ch] = T(1.0 / std::sqrt(var + p.eps));
    if (u.update_running) {
      const double unbiased = p.rows > 1 ? var * double(p.rows) / double(p.rows - 1) : var;
      running_mean[ch] = T((1.0 - u.momentum) * double(running_mean[ch]) + u.momentum * s[size_t(ch)]);
      running_var[ch] = T((1.0 - u.momentum) * double(running_var[ch]) + u.momentum * unbiased);
    }
  }
}

template <class T>
void bn_eval_stats(const T* running_mean, const T* running_var, T* mean, T* rstd, const NormParams& p) {
  check("batchnorm_eval_stats_cpu", p);
  for (int64_t ch = 0; ch < p.c; ++ch) {
    mean[ch] = running_mean[ch];
    rstd[ch] = T(1.0 / std::sqrt(double(running_var[ch]) + p.eps));
  }
}

template <class T>
CNN_NORM_CLONES void bn_forward(const T* x, const T* gamma, const T* beta, const T* mean, const T* rstd, T* y,
                                const NormParams& p) {
  check("batchnorm_forward_cpu", p);
  const int64_t c = p.c;
#pragma omp parallel for schedule(static) if (p.rows * c >= kParallelMin)
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch)
      y[r * c + ch] = T((double(x[r * c + ch]) - double(mean[ch])) * double(rstd[ch]) * double(gamma[ch]) +
                        double(beta[ch]));
}

template <class T>
CNN_NORM_CLONES void bn_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx,
                                 T* dgamma, T* dbeta, const NormParams& p, bool training) {
  check("batchnorm_backward_cpu", p);
  const int64_t c = p.c;
  std::vector<double> sg, sb;
  column_sums2(
      p,
      [&](int64_t r, int64_t ch, double& a, double& b) {
        const double d = double(dy[r * c + ch]);
        a += d * (double(x[r * c + ch]) - double(mean[ch])) * double(rstd[ch]);
        b += d;
      },
      sg, sb);
  for (int64_t ch = 0; ch < c; ++ch) {
    dgamma[ch] = T(sg[size_t(ch)]);
    dbeta[ch] = T(sb[size_t(ch)]);
  }
  if (dx == nullptr) return;
  const double inv_rows = 1.0 / double(p.rows);
#pragma omp parallel for schedule(static) if (p.rows * c >= kParallelMin)
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double k = double(gamma[ch]) * double(rstd[ch]), d = double(dy[r * c + ch]);
      if (!training) {
        dx[r * c + ch] = T(k * d);
        continue;
      }
      const double xhat = (double(x[r * c + ch]) - double(mean[ch])) * double(rstd[ch]);
      dx[r * c + ch] = T(k * (d - sb[size_t(ch)] * inv_rows - xhat * sg[size_t(ch)] * inv_rows));
    }
}

}  // namespace

#define CNN_NORM_CPU(T)                                                                                             \
  void layernorm_forward_cpu(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,                    \
                             const NormParams& p) {                                                                 \
    ln_forward(x, gamma, beta, y, mean, rstd, p);                                                                   \
  }                                                                                                                 \
  void layernorm_backward_cpu(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx,        \
                              T* dgamma, T* dbeta, const NormParams& p) {                                           \
    ln_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, p);                                                    \
  }                                                                                                                 \
  void batchnorm_stats_cpu(const T* x, T* mean, T* rstd, T* running_mean, T* running_var, const NormParams& p,     \
                           const BatchNormUpdate& u) {                                                              \
    bn_stats(x, mean, rstd, running_mean, running_var, p, u);                                                       \
  }                                                                                                                 \
  void batchnorm_eval_stats_cpu(const T* running_mean, const T* running_var, T* mean, T* rstd,                     \
                                const NormParams& p) {                                                              \
    bn_eval_stats(running_mean, running_var, mean, rstd, p);                                                        \
  }                                                                                                                 \
  void batchnorm_forward_cpu(const T* x, const T* gamma, const T* beta, const T* mean, const T* rstd, T* y,        \
                             const NormParams& p) {                                                                 \
    bn_forward(x, gamma, beta, mean, rstd, y, p);                                                                   \
  }                                                                                                                 \
  void batchnorm_backward_cpu(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd, T* dx,        \
                              T* dgamma, T* dbeta, const NormParams& p, bool training) {                            \
    bn_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, p, training);                                          \
  }

CNN_NORM_CPU(float)
CNN_NORM_CPU(double)
#undef CNN_NORM_CPU

}  // namespace cnn::kernels
