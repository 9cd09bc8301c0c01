// cuDNN baseline: the depthwise convolution through cuDNN's legacy API (group count = C, NHWC tensors and filter,
// cross-correlation; FP32 data and compute with CUDNN_FMA_MATH so no TF32, or FP16 data with FP16 or FP32 compute
// and CUDNN_DEFAULT_MATH), every algorithm cuDNN has for the op timed with the benchmark protocol, the fastest
// reported. cuDNN's filter layout is (C, FH, FW): see to_cudnn_filter.
#pragma once

#include <cudnn.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/dwconv-bench/timing.h"
#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::bench {

class CudnnHandle {
 public:
  explicit CudnnHandle(cudaStream_t stream);
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

// Device pointers of one cuDNN call. fwd: a = x, b = w, out = y; bdc: a = dy, b = w, out = dx;
// bfc: a = x, b = dy, out = dw. Filters (w, dw) are in cuDNN's (C, FH, FW) layout.
struct CudnnOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};
using OperandsFn = std::function<CudnnOperands(int run_index)>;

struct CudnnAlgo {
  int id = 0;
  std::string name;
  size_t workspace = 0;
  std::string skip_reason;  // empty: usable
};

// One way cuDNN can run the op: a legacy-API algorithm or a backend-API engine (cudnn_engines.h). run() returns
// cuDNN's status instead of throwing; `workspace` holds at least `workspace` bytes.
struct CudnnCandidate {
  std::string name;
  size_t workspace = 0;
  std::string skip_reason;  // empty: usable
  std::function<cudnnStatus_t(const CudnnOperands&, void* workspace)> run;
};

// The FP64 check of one candidate's output (it has just run on operands(0)).
struct CandidateCheck {
  bool passed = false;
  double max_rel = 0, mare = 0;
};
using CheckFn = std::function<CandidateCheck(const std::string& name)>;

// A candidate that ran and was timed; `checked` when its output went through the check (every candidate that was
// the fastest accurate one so far, or faster than it, is checked).
struct TimedCandidate {
  std::string name;
  Timing timing;
  bool checked = false;
  CandidateCheck check;
};

struct CudnnResult {
  std::vector<TimedCandidate> timed;  // every timed candidate, in the order they ran
  std::vector<std::string> skipped;   // "NAME (reason)"
};

// The report's line for a timed candidate: "NAME 1.234ms", + " (x1)" when timed once, + " (failed the check)".
std::string timed_text(const TimedCandidate& c);

// Workspace a candidate may use: 8 GiB at most, and 1 GiB of the free device memory left for cuDNN itself.
size_t cudnn_workspace_cap();

class CudnnDepthwise {
 public:
  // data: CUDNN_DATA_FLOAT or CUDNN_DATA_HALF; compute: the convolution's accumulation type.
  CudnnDepthwise(const CudnnHandle& handle, const dwconv::DwconvParams& p, cudnnDataType_t data = CUDNN_DATA_FLOAT,
                 cudnnDataType_t compute = CUDNN_DATA_FLOAT);
  ~CudnnDepthwise();
  CudnnDepthwise(const CudnnDepthwise&) = delete;
  CudnnDepthwise& operator=(const CudnnDepthwise&) = delete;

  // Every algorithm of `op`, in cuDNN's heuristic order first, then the rest of the enum; each with its workspace
  // size or the reason it cannot run (query failed, or it needs more than `workspace_cap` bytes).
  std::vector<CudnnAlgo> algorithms(dwconv::DwconvOp op, size_t workspace_cap) const;

  // One call with beta = 0 (output overwritten); returns cuDNN's status instead of throwing.
  cudnnStatus_t run(dwconv::DwconvOp op, int algo, const CudnnOperands& o, void* workspace,
                    size_t workspace_bytes) const;

 private:
  struct Descriptors;
  cudnnHandle_t handle_;
  std::unique_ptr<Descriptors> desc_;
};

const char* cudnn_algo_name(dwconv::DwconvOp op, int algo);

// Every legacy algorithm of `op` as a candidate (CudnnDepthwise::algorithms order). `conv` must outlive them.
std::vector<CudnnCandidate> legacy_candidates(const CudnnDepthwise& conv, dwconv::DwconvOp op, size_t workspace_cap);

// Times every usable candidate (pruning those whose probe run is far slower than the best so far, or than
// `best_known_ms` when > 0: a time already measured for this point) and returns them all. `warmup`/`reps` follow
// the benchmark protocol. `probe_budget_ms` > 0: once the probe runs add up to it, the remaining candidates are
// skipped (an engine list can hold dozens of multi-second candidates at large filters). With `check`, each
// candidate faster than the best accurate one so far has its output checked right after timing, and only
// candidates that pass become the best and the pruning reference: a fast but inaccurate winner (FP16 accumulation
// over long reductions) does not hide the accurate candidates behind it.
CudnnResult bench_candidates(const std::vector<CudnnCandidate>& candidates, const OperandsFn& operands, int warmup,
                             int reps, cudaStream_t stream, double best_known_ms = 0, double probe_budget_ms = 0,
                             const CheckFn& check = nullptr);

// Reorders a filter from the project's (FH, FW, C) layout to cuDNN's NHWC-filter layout (C, FH, FW, 1).
std::vector<float> to_cudnn_filter(const std::vector<float>& w, const dwconv::DwconvParams& p);
// Inverse for dW results: (C, FH, FW) -> (FH, FW, C).
std::vector<float> from_cudnn_filter(const std::vector<float>& w, const dwconv::DwconvParams& p);

}  // namespace cnn::bench
