// The cuDNN side of the FP16 depthwise tests (CUDA builds only): cuDNN's FP16 depthwise conv on the test inputs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>

#include "tests/kernels/dwconv_fp16_test_util.h"

namespace cnn::dwconv::f16test {
namespace {

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
