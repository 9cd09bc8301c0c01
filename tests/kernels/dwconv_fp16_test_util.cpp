// Helpers of the FP16 depthwise tests (see dwconv_fp16_test_util.h).
#include "tests/kernels/dwconv_fp16_test_util.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace cnn::dwconv::f16test {

DwconvParams Case::params() const {
  DwconvParams p;
  p.n = n, p.ih = h, p.iw = w, p.c = c, p.fh = fh, p.fw = fw;
  p.stride_h = sh, p.stride_w = sw;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  return p;
}

namespace {

std::vector<Half> uniform_half(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Half> v(static_cast<size_t>(n));
  for (Half& e : v) e = Half(dist(rng));
  return v;
}

std::vector<double> to_double(const std::vector<Half>& v, bool absolute) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = absolute ? std::fabs(float(v[i])) : float(v[i]);
  return out;
}

// Device memory freed on scope exit.
struct DeviceMem {
  void* ptr = nullptr;
  explicit DeviceMem(size_t bytes) {
    if (cudaMalloc(&ptr, std::max<size_t>(bytes, 1)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceMem() { cudaFree(ptr); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

struct CudnnDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool ok = false;
  CudnnDescs(const DwconvParams& p, cudnnDataType_t compute) {
    ok = cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS &&
         cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS &&
         cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS &&
         cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS &&
         cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, p.n, p.c, p.ih, p.iw) ==
             CUDNN_STATUS_SUCCESS &&
         cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, p.n, p.c, p.oh(), p.ow()) ==
             CUDNN_STATUS_SUCCESS &&
         cudnnSetFilter4dDescriptor(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, p.c, 1, p.fh, p.fw) ==
             CUDNN_STATUS_SUCCESS &&
         cudnnSetConvolution2dDescriptor(conv, p.pad_top, p.pad_left, p.stride_h, p.stride_w, 1, 1,
                                         CUDNN_CROSS_CORRELATION, compute) == CUDNN_STATUS_SUCCESS &&
         cudnnSetConvolutionGroupCount(conv, p.c) == CUDNN_STATUS_SUCCESS &&
         cudnnSetConvolutionMathType(conv, CUDNN_DEFAULT_MATH) == CUDNN_STATUS_SUCCESS;
  }
  ~CudnnDescs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

constexpr size_t kMaxWorkspace = size_t(1) << 30;

// Runs op (0 fwd, 1 bdc, 2 bfc) with every algorithm cuDNN lists until one succeeds; returns its output as
// doubles in the project's layouts, or an empty vector.
std::vector<double> cudnn_output(cudnnHandle_t h, int op, const DwconvParams& p, cudnnDataType_t compute,
                                 const HalfData& d) {
  CudnnDescs ds(p, compute);
  if (!ds.ok) return {};
  const int64_t taps = int64_t(p.fh) * p.fw;
  std::vector<Half> w_c(d.w.size());  // (C, FH, FW)
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t c = 0; c < p.c; ++c) w_c[size_t(c * taps + t)] = d.w[size_t(t * p.c + c)];
  DeviceMem x(p.x_elems() * 2), y(p.y_elems() * 2), w(p.w_elems() * 2);
  if (!x.ptr || !y.ptr || !w.ptr) return {};
  if (cudaMemcpy(x.ptr, d.x.data(), p.x_elems() * 2, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(y.ptr, d.dy.data(), p.y_elems() * 2, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(w.ptr, w_c.data(), p.w_elems() * 2, cudaMemcpyHostToDevice) != cudaSuccess)
    return {};
  DeviceMem out(std::max(p.x_elems(), std::max(p.y_elems(), p.w_elems())) * 2);
  std::vector<int> algos;
  int returned = 0;
  if (op == 0) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    if (cudnnGetConvolutionForwardAlgorithm_v7(h, ds.x, ds.w, ds.conv, ds.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                               &returned, perf) == CUDNN_STATUS_SUCCESS)
      for (int i = 0; i < returned; ++i) algos.push_back(int(perf[i].algo));
  } else if (op == 1) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    if (cudnnGetConvolutionBackwardDataAlgorithm_v7(h, ds.w, ds.y, ds.conv, ds.x,
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned,
                                                    perf) == CUDNN_STATUS_SUCCESS)
      for (int i = 0; i < returned; ++i) algos.push_back(int(perf[i].algo));
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, ds.x, ds.y, ds.conv, ds.w,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                      perf) == CUDNN_STATUS_SUCCESS)
      for (int i = 0; i < returned; ++i) algos.push_back(int(perf[i].algo));
  }
  const float alpha = 1.f, beta = 0.f;
  const int64_t n_out = op == 0 ? p.y_elems() : (op == 1 ? p.x_elems() : p.w_elems());
  for (int algo : algos) {
    size_t ws = 0;
    cudnnStatus_t st;
    if (op == 0)
      st = cudnnGetConvolutionForwardWorkspaceSize(h, ds.x, ds.w, ds.conv, ds.y, cudnnConvolutionFwdAlgo_t(algo), &ws);
    else if (op == 1)
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, ds.w, ds.y, ds.conv, ds.x,
                                                        cudnnConvolutionBwdDataAlgo_t(algo), &ws);
    else
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, ds.x, ds.y, ds.conv, ds.w,
                                                          cudnnConvolutionBwdFilterAlgo_t(algo), &ws);
    if (st != CUDNN_STATUS_SUCCESS || ws > kMaxWorkspace) continue;
    DeviceMem work(ws);
    if (op == 0)
      st = cudnnConvolutionForward(h, &alpha, ds.x, x.ptr, ds.w, w.ptr, ds.conv, cudnnConvolutionFwdAlgo_t(algo),
                                   work.ptr, ws, &beta, ds.y, out.ptr);
    else if (op == 1)
      st = cudnnConvolutionBackwardData(h, &alpha, ds.w, w.ptr, ds.y, y.ptr, ds.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo), work.ptr, ws, &beta, ds.x, out.ptr);
    else
      st = cudnnConvolutionBackwardFilter(h, &alpha, ds.x, x.ptr, ds.y, y.ptr, ds.conv,
                                          cudnnConvolutionBwdFilterAlgo_t(algo), work.ptr, ws, &beta, ds.w, out.ptr);
    if (st != CUDNN_STATUS_SUCCESS || cudaDeviceSynchronize() != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    std::vector<Half> got(static_cast<size_t>(n_out));
    if (cudaMemcpy(got.data(), out.ptr, size_t(n_out) * 2, cudaMemcpyDeviceToHost) != cudaSuccess) return {};
    std::vector<double> result(got.size());
    if (op == 2) {  // (C, FH, FW) -> (FH, FW, C)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c = 0; c < p.c; ++c) result[size_t(t * p.c + c)] = float(got[size_t(c * taps + t)]);
    } else {
      for (size_t i = 0; i < got.size(); ++i) result[i] = float(got[i]);
    }
    return result;
  }
  return {};
}

}  // namespace

double mare_of(const std::vector<double>& got, const std::vector<double>& ref) {
  double mean_abs = 0;
  for (double r : ref) mean_abs += std::fabs(r);
  const double eps = 1e-3 * mean_abs / double(std::max<size_t>(ref.size(), 1)) + 1e-30;
  double sum = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::isfinite(got[i]) ? std::fabs(got[i] - ref[i]) : INFINITY;
    sum += err / std::max(std::fabs(ref[i]), eps);
  }
  return sum / double(std::max<size_t>(ref.size(), 1));
}

HalfData make_data(const DwconvParams& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HalfData d;
  d.x = uniform_half(p.x_elems(), rng);
  d.w = uniform_half(p.w_elems(), rng);
  d.bias = uniform_half(p.c, rng);
  d.dy = uniform_half(p.y_elems(), rng);
  return d;
}

References references(const DwconvParams& p, const HalfData& d) {
  References r;
  r.y.resize(p.y_elems()), r.y_mag.resize(p.y_elems());
  r.dx.resize(p.x_elems()), r.dx_mag.resize(p.x_elems());
  r.dw.resize(p.w_elems()), r.dw_mag.resize(p.w_elems());
  const auto x = to_double(d.x, false), w = to_double(d.w, false), b = to_double(d.bias, false);
  const auto dy = to_double(d.dy, false);
  const auto xa = to_double(d.x, true), wa = to_double(d.w, true), ba = to_double(d.bias, true);
  const auto dya = to_double(d.dy, true);
  dwconv_forward_reference(x.data(), w.data(), b.data(), r.y.data(), p);
  dwconv_forward_reference(xa.data(), wa.data(), ba.data(), r.y_mag.data(), p);
  r.y_no_bias.resize(p.y_elems());
  dwconv_forward_reference(x.data(), w.data(), nullptr, r.y_no_bias.data(), p);
  dwconv_backward_data_reference(dy.data(), w.data(), r.dx.data(), p);
  dwconv_backward_data_reference(dya.data(), wa.data(), r.dx_mag.data(), p);
  dwconv_backward_filter_reference(x.data(), dy.data(), r.dw.data(), p);
  dwconv_backward_filter_reference(xa.data(), dya.data(), r.dw_mag.data(), p);
  std::vector<float> ha(size_t(p.w_elems()));
  dwconv_backward_filter_reference_f16(d.x.data(), d.dy.data(), ha.data(), p, BfcAccum::ha);
  r.dw_ha_emulated.assign(ha.begin(), ha.end());
  return r;
}

Bound fp16_output_bound(double k_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{1.0 / 2048, 4 * k_terms * u * (1 + 1.0 / 2048), 1.0 / (1 << 25)};
}

Bound fp32_output_bound(double k_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{0, 2 * k_terms * u, 1e-30};
}

Bound ha_bound(double l_terms) {
  constexpr double u = 1.0 / (1 << 24);
  return Bound{0, 1.1 * kBfcHaRun / 2048.0 + 2 * l_terms * u, l_terms / (1 << 25)};
}

ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                   const Bound& b) {
  ErrorStats s;
  s.count = ref.size();
  EXPECT_EQ(got.size(), ref.size());
  if (got.size() != ref.size()) return s;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    const bool ok = std::isfinite(got[i]) && err <= b.rel * std::fabs(ref[i]) + b.mag_factor * mag[i] + b.abs;
    if (!ok && s.bad++ == 0) {
      s.first_bad = i;
      s.expected = ref[i];
      s.got = got[i];
    }
    s.max_abs = std::max(s.max_abs, std::isfinite(err) ? err : INFINITY);
    if (mag[i] > 0) s.max_rel = std::max(s.max_rel, err / mag[i]);
  }
  s.mare = mare_of(got, ref);
  return s;
}

void expect_ok(const ErrorStats& s, const std::string& what) {
  EXPECT_EQ(s.bad, 0u) << what << ": " << s.bad << " of " << s.count << " elements out of bound; first at index "
                       << s.first_bad << " expected " << s.expected << " got " << s.got << " (max abs err "
                       << s.max_abs << ", max err/magnitude " << s.max_rel << ", MARE " << s.mare << ")";
}

CudnnMare cudnn_mare(const DwconvParams& p, const HalfData& d, const References& ref) {
  CudnnMare m;
  if (p.pad_top != p.pad_bottom || p.pad_left != p.pad_right) return m;
  cudnnHandle_t h = nullptr;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) return m;
  double* slots[3] = {&m.fwd, &m.bdc, &m.bfc};
  const std::vector<double>* refs[3] = {&ref.y, &ref.dx, &ref.dw};
  refs[0] = &ref.y_no_bias;  // cuDNN's convolution call has no bias
  for (int op = 0; op < 3; ++op)
    for (cudnnDataType_t compute : {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF}) {
      const std::vector<double> got = cudnn_output(h, op, p, compute, d);
      if (got.empty()) continue;
      const double mare = mare_of(got, *refs[op]);
      if (*slots[op] < 0 || mare < *slots[op]) *slots[op] = mare;
    }
  cudnnDestroy(h);
  return m;
}

}  // namespace cnn::dwconv::f16test
