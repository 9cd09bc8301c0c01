// cuDNN depthwise baseline: descriptors (NHWC, group count C, FP32, FMA math), algorithm enumeration with workspace
// queries, and timing of every usable algorithm. See cudnn_baseline.h.
#include "apps/dwconv-bench/cudnn_baseline.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "apps/dwconv-bench/device_buffer.h"
#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

using dwconv::DwconvOp;

constexpr size_t kWorkspaceCap = size_t(8) << 30;      // algorithms needing more are skipped, as in the protocol
constexpr size_t kWorkspaceReserve = size_t(1) << 30;  // left free for cuDNN's own allocations
// A candidate whose probe run (taken twice, so one-time loading costs cannot cause it) exceeds this multiple of the
// best median so far cannot be the fastest; timing it in full would only burn device time.
constexpr double kPruneFactor = 3.0;
// cuDNN's FP32 depthwise algorithms take 0.2-25 s per call at the sweep's large filters (FMA math, 1 GiB maps); a
// full 20-run median of those would not fit the sweep's time budget on the GPU machine. An algorithm whose first
// run exceeds this is reported from that single run (marked "x1" in the log): at these durations the one-time costs
// a warm-up would hide (module load, ~ms) are under 5% of the time, so the baseline is, if anything, slightly
// flattered.
constexpr double kSingleRunMs = 200.0;

constexpr const char* kFwdNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                     "WINOGRAD",      "WINOGRAD_NONFUSED"};
constexpr const char* kBwdDataNames[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr const char* kBwdFilterNames[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                           "FFT_TILING"};
static_assert(std::size(kFwdNames) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
static_assert(std::size(kBwdDataNames) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
static_assert(std::size(kBwdFilterNames) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);

int algo_count(DwconvOp op) {
  switch (op) {
    case DwconvOp::forward:
      return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case DwconvOp::backward_data:
      return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case DwconvOp::backward_filter:
      return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

std::string gib(size_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << double(bytes) / double(size_t(1) << 30) << " GiB";
  return os.str();
}

std::string ms_str(double ms) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << ms << "ms";
  return os.str();
}

}  // namespace

const char* cudnn_algo_name(DwconvOp op, int algo) {
  if (algo < 0 || algo >= algo_count(op)) return "UNKNOWN";
  switch (op) {
    case DwconvOp::forward:
      return kFwdNames[algo];
    case DwconvOp::backward_data:
      return kBwdDataNames[algo];
    case DwconvOp::backward_filter:
      return kBwdFilterNames[algo];
  }
  return "UNKNOWN";
}

CudnnHandle::CudnnHandle(cudaStream_t stream) {
  CNN_CUDNN_CHECK(cudnnCreate(&handle_));
  const cudnnStatus_t st = cudnnSetStream(handle_, stream);
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(handle_);
    CNN_CUDNN_CHECK(st);
  }
}

CudnnHandle::~CudnnHandle() { cudnnDestroy(handle_); }

struct CudnnDepthwise::Descriptors {
  cudnnTensorDescriptor_t x = nullptr;  // also dx
  cudnnTensorDescriptor_t y = nullptr;  // also dy
  cudnnFilterDescriptor_t w = nullptr;  // also dw
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~Descriptors() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

CudnnDepthwise::CudnnDepthwise(const CudnnHandle& handle, const dwconv::DwconvParams& p, cudnnDataType_t data,
                               cudnnDataType_t compute)
    : handle_(handle.get()), desc_(std::make_unique<Descriptors>()) {
  // cuDNN's legacy descriptor has one padding per axis, applied on both sides.
  CNN_CHECK(p.pad_top == p.pad_bottom && p.pad_left == p.pad_right, "cuDNN baseline: expected symmetric padding, got ",
            p.str());
  Descriptors& d = *desc_;
  CNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.x));
  CNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.y));
  CNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d.w));
  CNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d.conv));
  CNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, data, p.n, p.c, p.ih, p.iw));
  CNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NHWC, data, p.n, p.c, p.oh(), p.ow()));
  // K = C output channels, C / groups = 1 input channel each; NHWC filter memory order is (K, FH, FW, 1).
  CNN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, data, CUDNN_TENSOR_NHWC, p.c, 1, p.fh, p.fw));
  CNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, p.pad_top, p.pad_left, p.stride_h, p.stride_w, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, compute));
  CNN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, p.c));
  // FMA math: FP32 arithmetic only. CUDNN_DEFAULT_MATH would let cuDNN pick TF32 tensor-core kernels on sm_80+,
  // which round inputs to 10 mantissa bits and would not be an FP32 baseline.
  // FP16 data: cuDNN's default math (tensor-core kernels allowed), as the protocol's FP16 baseline.
  CNN_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, data == CUDNN_DATA_HALF ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int n = 0, c = 0, h = 0, w = 0;
  CNN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w));
  CNN_CHECK(n == p.n && c == p.c && h == p.oh() && w == p.ow(), "cuDNN baseline: cuDNN computes output ", n, "x", h,
            "x", w, "x", c, ", expected ", p.n, "x", p.oh(), "x", p.ow(), "x", p.c, " for ", p.str());
}

CudnnDepthwise::~CudnnDepthwise() = default;

std::vector<CudnnAlgo> CudnnDepthwise::algorithms(DwconvOp op, size_t workspace_cap) const {
  const Descriptors& d = *desc_;
  const int count = algo_count(op);
  // cuDNN's heuristic ranking first: the likely winner is timed early, so slow candidates get pruned.
  std::vector<int> order;
  int max_count = 0, returned = 0;
  if (op == DwconvOp::forward) {
    CNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(
        cudnnGetConvolutionForwardAlgorithm_v7(handle_, d.x, d.w, d.conv, d.y, max_count, &returned, perf.data()));
    for (int i = 0; i < returned; ++i)
      if (perf[size_t(i)].status == CUDNN_STATUS_SUCCESS) order.push_back(int(perf[size_t(i)].algo));
  } else if (op == DwconvOp::backward_data) {
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &max_count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, d.w, d.y, d.conv, d.x, max_count, &returned, perf.data()));
    for (int i = 0; i < returned; ++i)
      if (perf[size_t(i)].status == CUDNN_STATUS_SUCCESS) order.push_back(int(perf[size_t(i)].algo));
  } else {
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle_, &max_count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    CNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, d.x, d.y, d.conv, d.w, max_count, &returned,
                                                                  perf.data()));
    for (int i = 0; i < returned; ++i)
      if (perf[size_t(i)].status == CUDNN_STATUS_SUCCESS) order.push_back(int(perf[size_t(i)].algo));
  }
  for (int id = 0; id < count; ++id) order.push_back(id);  // every enum value, whatever the heuristic says

  std::vector<CudnnAlgo> algos;
  std::vector<bool> seen(size_t(count), false);
  for (int id : order) {
    if (id < 0 || id >= count || seen[size_t(id)]) continue;
    seen[size_t(id)] = true;
    CudnnAlgo a;
    a.id = id;
    a.name = cudnn_algo_name(op, id);
    cudnnStatus_t st;
    if (op == DwconvOp::forward) {
      st = cudnnGetConvolutionForwardWorkspaceSize(handle_, d.x, d.w, d.conv, d.y, cudnnConvolutionFwdAlgo_t(id),
                                                   &a.workspace);
    } else if (op == DwconvOp::backward_data) {
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, d.w, d.y, d.conv, d.x,
                                                        cudnnConvolutionBwdDataAlgo_t(id), &a.workspace);
    } else {
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, d.x, d.y, d.conv, d.w,
                                                          cudnnConvolutionBwdFilterAlgo_t(id), &a.workspace);
    }
    if (st != CUDNN_STATUS_SUCCESS) {
      a.skip_reason = str_cat("workspace query: ", cudnnGetErrorString(st));
    } else if (a.workspace > workspace_cap) {
      a.skip_reason = str_cat("needs ", gib(a.workspace), " workspace, cap ", gib(workspace_cap));
    }
    algos.push_back(std::move(a));
  }
  return algos;
}

cudnnStatus_t CudnnDepthwise::run(DwconvOp op, int algo, const CudnnOperands& o, void* workspace,
                                  size_t workspace_bytes) const {
  const Descriptors& d = *desc_;
  const float alpha = 1.0f, beta = 0.0f;  // beta = 0: the output is overwritten, as by the Flash-DWC entry points
  switch (op) {
    case DwconvOp::forward:
      return cudnnConvolutionForward(handle_, &alpha, d.x, o.a, d.w, o.b, d.conv, cudnnConvolutionFwdAlgo_t(algo),
                                     workspace, workspace_bytes, &beta, d.y, o.out);
    case DwconvOp::backward_data:
      return cudnnConvolutionBackwardData(handle_, &alpha, d.w, o.b, d.y, o.a, d.conv,
                                          cudnnConvolutionBwdDataAlgo_t(algo), workspace, workspace_bytes, &beta, d.x,
                                          o.out);
    case DwconvOp::backward_filter:
      return cudnnConvolutionBackwardFilter(handle_, &alpha, d.x, o.a, d.y, o.b, d.conv,
                                            cudnnConvolutionBwdFilterAlgo_t(algo), workspace, workspace_bytes, &beta,
                                            d.w, o.out);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

size_t cudnn_workspace_cap() {
  size_t free_bytes = 0, total_bytes = 0;
  CNN_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min(kWorkspaceCap, free_bytes > kWorkspaceReserve ? free_bytes - kWorkspaceReserve : 0);
}

std::vector<CudnnCandidate> legacy_candidates(const CudnnDepthwise& conv, DwconvOp op, size_t workspace_cap) {
  std::vector<CudnnCandidate> out;
  for (const CudnnAlgo& a : conv.algorithms(op, workspace_cap)) {
    CudnnCandidate c;
    c.name = a.name;
    c.workspace = a.workspace;
    c.skip_reason = a.skip_reason;
    const CudnnDepthwise* cv = &conv;
    const int id = a.id;
    const size_t ws = a.workspace;
    c.run = [cv, op, id, ws](const CudnnOperands& o, void* workspace) { return cv->run(op, id, o, workspace, ws); };
    out.push_back(std::move(c));
  }
  return out;
}

std::string timed_text(const TimedCandidate& c) {
  return str_cat(c.name, " ", ms_str(c.timing.median_ms), c.timing.reps == 1 ? " (x1)" : "",
                 c.checked && !c.check.passed ? " (failed the check)" : "");
}

CudnnResult bench_candidates(const std::vector<CudnnCandidate>& candidates, const OperandsFn& operands, int warmup,
                             int reps, cudaStream_t stream, double best_known_ms, double probe_budget_ms,
                             const CheckFn& check) {
  size_t workspace_bytes = 0;
  for (const CudnnCandidate& a : candidates)
    if (a.skip_reason.empty()) workspace_bytes = std::max(workspace_bytes, a.workspace);
  DeviceBuffer workspace(workspace_bytes);

  CudnnResult result;
  double best_ms = 0;  // fastest accurate candidate so far (every timed one with the check off), 0 before any
  // The time a candidate must come near: the best so far, or the one measured elsewhere for this point.
  auto reference_ms = [&] {
    if (best_ms > 0) return best_known_ms > 0 ? std::min(best_known_ms, best_ms) : best_ms;
    return best_known_ms;
  };
  double probed_ms = 0;
  for (const CudnnCandidate& a : candidates) {
    if (!a.skip_reason.empty()) {
      result.skipped.push_back(str_cat(a.name, " (", a.skip_reason, ")"));
      continue;
    }
    if (probe_budget_ms > 0 && probed_ms >= probe_budget_ms) {
      result.skipped.push_back(str_cat(a.name, " (probe budget of ", ms_str(probe_budget_ms), " spent)"));
      continue;
    }
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    const RunFn probe = [&](int i) { status = a.run(operands(i), workspace.get()); };
    double probe_ms = time_once(probe, 0, stream);
    probed_ms += probe_ms;
    const double ref = reference_ms();
    if (status == CUDNN_STATUS_SUCCESS && ref > 0 && probe_ms > kPruneFactor * ref && probe_ms <= kSingleRunMs) {
      probe_ms = time_once(probe, 1, stream);
      probed_ms += probe_ms;
    }
    if (status != CUDNN_STATUS_SUCCESS) {
      // A refused call can leave a non-sticky launch error behind; clear it so the next launch check is not blamed.
      (void)cudaGetLastError();
      result.skipped.push_back(str_cat(a.name, " (run: ", cudnnGetErrorString(status), ")"));
      continue;
    }
    if (ref > 0 && probe_ms > kPruneFactor * ref) {
      result.skipped.push_back(
          str_cat(a.name, " (pruned: probe ", ms_str(probe_ms), " > ", kPruneFactor, "x best ", ms_str(ref), ")"));
      continue;
    }
    Timing t;
    if (probe_ms > kSingleRunMs) {
      t.median_ms = probe_ms;
      t.min_ms = t.max_ms = probe_ms;
      t.reps = 1;
    } else {
      const RunFn run = [&](int i) { CNN_CUDNN_CHECK(a.run(operands(i), workspace.get())); };
      t = time_runs(run, warmup, reps, stream);
    }
    TimedCandidate timed{a.name, t, false, {}};
    const double ref_now = reference_ms();
    if (check && (ref_now <= 0 || t.median_ms < ref_now)) {
      CNN_CUDNN_CHECK(a.run(operands(0), workspace.get()));
      CNN_CUDA_CHECK(cudaStreamSynchronize(stream));
      timed.checked = true;
      timed.check = check(a.name);
    }
    result.timed.push_back(timed);
    if (timed.checked && !timed.check.passed) continue;
    if (best_ms <= 0 || t.median_ms < best_ms) best_ms = t.median_ms;
  }
  return result;
}

std::vector<float> to_cudnn_filter(const std::vector<float>& w, const dwconv::DwconvParams& p) {
  CNN_CHECK(int64_t(w.size()) == p.w_elems(), "to_cudnn_filter: expected ", p.w_elems(), " weights, got ", w.size());
  std::vector<float> out(w.size());
  const int64_t taps = int64_t(p.fh) * p.fw;
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t c = 0; c < p.c; ++c) out[size_t(c * taps + t)] = w[size_t(t * p.c + c)];
  return out;
}

std::vector<float> from_cudnn_filter(const std::vector<float>& w, const dwconv::DwconvParams& p) {
  CNN_CHECK(int64_t(w.size()) == p.w_elems(), "from_cudnn_filter: expected ", p.w_elems(), " weights, got ", w.size());
  std::vector<float> out(w.size());
  const int64_t taps = int64_t(p.fh) * p.fw;
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t c = 0; c < p.c; ++c) out[size_t(t * p.c + c)] = w[size_t(c * taps + t)];
  return out;
}

}  // namespace cnn::bench
