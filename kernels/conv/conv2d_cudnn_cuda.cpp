// cuDNN backend of the dense NHWC convolution: descriptors and heuristic algorithm ranking cached per
// (op, shape, dtype, device); a ranked algorithm that turns out unsupported at run time hands over to the next.
#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/conv/conv2d_cuda.h"

namespace cnn::kernels {

namespace {

constexpr size_t kWorkspaceCap = size_t(256) << 20;  // algorithms needing more are skipped

struct Candidate {
  int algo;
  size_t workspace;
};

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<Candidate> candidates;  // heuristic order, workspace within the cap
  std::atomic<size_t> chosen{0};      // index of the first candidate that has not failed
  ~Plan() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

const char* op_name(ConvOp op) {
  switch (op) {
    case ConvOp::forward: return "conv2d_forward_cuda";
    case ConvOp::backward_data: return "conv2d_backward_data_cuda";
    case ConvOp::backward_filter: return "conv2d_backward_filter_cuda";
  }
  return "conv2d";
}

void make_descriptors(Plan& plan, const Conv2dParams& p, DType dtype) {
  const cudnnDataType_t t = dtype == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  CNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan.x));
  CNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan.y));
  CNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan.w));
  CNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan.conv));
  CNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan.x, CUDNN_TENSOR_NHWC, t, int(p.n), int(p.c), int(p.ih), int(p.iw)));
  CNN_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(plan.y, CUDNN_TENSOR_NHWC, t, int(p.n), int(p.k), int(p.oh()), int(p.ow())));
  // NHWC filter format: dims (K, C, R, S), memory order (K, R, S, C).
  CNN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan.w, t, CUDNN_TENSOR_NHWC, int(p.k), int(p.c), int(p.r), int(p.s)));
  // FP32 compute type for both dtypes: f16 data accumulates in FP32.
  CNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan.conv, int(p.pad_h), int(p.pad_w), int(p.stride_h),
                                                  int(p.stride_w), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // f32: FMA math only (DEFAULT would allow TF32 on sm_80+, 10-bit mantissas). f16: tensor cores.
  CNN_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, dtype == DType::f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  int n = 0, k = 0, h = 0, w = 0;
  CNN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(plan.conv, plan.x, plan.w, &n, &k, &h, &w));
  CNN_CHECK(n == p.n && k == p.k && h == p.oh() && w == p.ow(), "conv2d cuda: cuDNN computes output (", n, ", ", h,
            ", ", w, ", ", k, "), expected (", p.n, ", ", p.oh(), ", ", p.ow(), ", ", p.k, ") for ", p.str());
}

template <class Perf>
void keep_ranked(Plan& plan, const std::vector<Perf>& perf, int returned) {
  for (int i = 0; i < returned; ++i) {
    const Perf& r = perf[size_t(i)];
    if (r.status == CUDNN_STATUS_SUCCESS && r.memory <= kWorkspaceCap)
      plan.candidates.push_back({int(r.algo), r.memory});
  }
}

void rank_algorithms(Plan& plan, ConvOp op, cudnnHandle_t h) {
  int max_count = 0, returned = 0;
  if (op == ConvOp::forward) {
    CNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, plan.x, plan.w, plan.conv, plan.y, int(perf.size()),
                                                           &returned, perf.data()));
    keep_ranked(plan, perf, returned);
  } else if (op == ConvOp::backward_data) {
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan.w, plan.y, plan.conv, plan.x,
                                                                int(perf.size()), &returned, perf.data()));
    keep_ranked(plan, perf, returned);
  } else {
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, plan.x, plan.y, plan.conv, plan.w,
                                                                  int(perf.size()), &returned, perf.data()));
    keep_ranked(plan, perf, returned);
  }
}

std::string plan_key(ConvOp op, const Conv2dParams& p, DType dtype, int device) {
  return str_cat(int(op), " ", p.str(), " ", dtype_name(dtype), " dev", device);
}

Plan& get_plan(ConvOp op, const Conv2dParams& p, DType dtype, cudnnHandle_t h) {
  static std::mutex mu;
  // Never destroyed, like the contexts: no descriptor teardown after the CUDA runtime has shut down.
  static auto* cache = new std::map<std::string, std::unique_ptr<Plan>>();
  int device = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  const std::string key = plan_key(op, p, dtype, device);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it != cache->end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  make_descriptors(*plan, p, dtype);
  rank_algorithms(*plan, op, h);
  CNN_CHECK(!plan->candidates.empty(), op_name(op), ": cuDNN offers no algorithm within ", kWorkspaceCap >> 20,
            " MiB of workspace for ", p.str(), " ", dtype_name(dtype));
  return *cache->emplace(key, std::move(plan)).first->second;
}

void check_args(ConvOp op, const void* a, const void* b, const void* out, const Conv2dParams& p, DType dtype) {
  p.validate(op_name(op));
  CNN_CHECK(dtype == DType::f32 || dtype == DType::f16, op_name(op), ": expected f32 or f16, got ",
            dtype_name(dtype));
  CNN_CHECK(a != nullptr && b != nullptr && out != nullptr, op_name(op), ": null device pointer");
}

// Runs `call(algo, workspace, bytes)` with the plan's current candidate; NOT_SUPPORTED moves to the next one.
template <class Call>
void run(ConvOp op, const Conv2dParams& p, DType dtype, cudnnHandle_t h, const WorkspaceFn& workspace, Call call) {
  Plan& plan = get_plan(op, p, dtype, h);
  for (;;) {
    size_t i = plan.chosen.load();
    CNN_CHECK(i < plan.candidates.size(), op_name(op), ": every cuDNN algorithm ranked for ", p.str(), " ",
              dtype_name(dtype), " is unsupported");
    const Candidate c = plan.candidates[i];
    void* ws = c.workspace > 0 ? workspace(c.workspace) : nullptr;
    const cudnnStatus_t st = call(plan, c.algo, ws, c.workspace);
    if (st == CUDNN_STATUS_SUCCESS) return;
    if (st != CUDNN_STATUS_NOT_SUPPORTED)
      throw Error(str_cat(op_name(op), ": cuDNN algorithm ", c.algo, " failed: ", cudnnGetErrorString(st), " for ",
                          p.str(), " ", dtype_name(dtype)));
    plan.chosen.compare_exchange_strong(i, i + 1);
  }
}

}  // namespace

void conv2d_forward_cuda(const void* x, const void* w, void* y, const Conv2dParams& p, DType dtype,
                         cudnnHandle_t handle, const WorkspaceFn& workspace) {
  check_args(ConvOp::forward, x, w, y, p, dtype);
  const float alpha = 1.0f, beta = 0.0f;  // FP32 scaling factors for FP32 compute type
  run(ConvOp::forward, p, dtype, handle, workspace, [&](const Plan& pl, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionForward(handle, &alpha, pl.x, x, pl.w, w, pl.conv, cudnnConvolutionFwdAlgo_t(algo), ws,
                                   bytes, &beta, pl.y, y);
  });
}

void conv2d_backward_data_cuda(const void* dy, const void* w, void* dx, const Conv2dParams& p, DType dtype,
                               cudnnHandle_t handle, const WorkspaceFn& workspace) {
  check_args(ConvOp::backward_data, dy, w, dx, p, dtype);
  const float alpha = 1.0f, beta = 0.0f;
  run(ConvOp::backward_data, p, dtype, handle, workspace, [&](const Plan& pl, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionBackwardData(handle, &alpha, pl.w, w, pl.y, dy, pl.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo), ws, bytes, &beta, pl.x, dx);
  });
}

void conv2d_backward_filter_cuda(const void* x, const void* dy, void* dw, const Conv2dParams& p, DType dtype,
                                 cudnnHandle_t handle, const WorkspaceFn& workspace) {
  check_args(ConvOp::backward_filter, x, dy, dw, p, dtype);
  const float alpha = 1.0f, beta = 0.0f;
  run(ConvOp::backward_filter, p, dtype, handle, workspace, [&](const Plan& pl, int algo, void* ws, size_t bytes) {
    return cudnnConvolutionBackwardFilter(handle, &alpha, pl.x, x, pl.y, dy, pl.conv,
                                          cudnnConvolutionBwdFilterAlgo_t(algo), ws, bytes, &beta, pl.w, dw);
  });
}

std::string conv2d_algo_name_cuda(ConvOp op, const Conv2dParams& p, DType dtype, cudnnHandle_t handle) {
  Plan& plan = get_plan(op, p, dtype, handle);
  const size_t i = plan.chosen.load();
  if (i >= plan.candidates.size()) return str_cat(op_name(op), " no working algorithm");
  return str_cat(op_name(op), " algo=", plan.candidates[i].algo, " ws=", plan.candidates[i].workspace, " B");
}

}  // namespace cnn::kernels
