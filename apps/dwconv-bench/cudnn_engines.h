// cuDNN baseline through its backend (graph) API: the depthwise convolution as a one-node operation graph (NHWC
// tensors, filter (C, 1, FH, FW) in cuDNN's (C, FH, FW) memory order, so groups = C), and every engine cuDNN reports
// for that graph as a candidate, each with its default knobs. This reaches engines the legacy algorithm enum does
// not name (runtime-compiled and newer kernels, what PyTorch's cudnn.benchmark can pick). FP32 data: engines whose
// numerical notes say tensor cores or down-converted inputs (TF32) are skipped, as CUDNN_FMA_MATH does for the legacy
// API; FP16 data: every engine.
#pragma once

#include <cudnn.h>

#include <memory>
#include <vector>

#include "apps/dwconv-bench/cudnn_baseline.h"

namespace cnn::bench {

class CudnnEngines {
 public:
  // data: CUDNN_DATA_FLOAT or CUDNN_DATA_HALF; compute: the convolution's accumulation type. Builds the graph for
  // `op`; throws a one-line cnn::Error naming the failing cuDNN call when cuDNN refuses the graph itself.
  CudnnEngines(const CudnnHandle& handle, const dwconv::DwconvParams& p, dwconv::DwconvOp op, cudnnDataType_t data,
               cudnnDataType_t compute);
  ~CudnnEngines();
  CudnnEngines(const CudnnEngines&) = delete;
  CudnnEngines& operator=(const CudnnEngines&) = delete;

  // One candidate per engine index cuDNN reports for the graph ("engN", with "+rtc" when the engine compiles its
  // kernel at plan time); engines that cannot finalize a plan, need more than `workspace_cap` bytes or (FP32)
  // use TF32 are skipped with the reason. Plans live as long as this object.
  std::vector<CudnnCandidate> candidates(size_t workspace_cap);

 private:
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

}  // namespace cnn::bench
