// One benchmark point (op, map, filter): Flash-DWC timed and checked, cuDNN's fastest algorithm timed and checked,
// SGEMM and copy ceilings looked up; fills one report Row. Tensors of one map are allocated once by MapTensors.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <optional>

#include "apps/dwconv-bench/bench_options.h"
#include "apps/dwconv-bench/cudnn_baseline.h"
#include "apps/dwconv-bench/device_buffer.h"
#include "apps/dwconv-bench/report.h"
#include "apps/dwconv-bench/roofline_baselines.h"
#include "kernels/dwconv/cuda/scratch_buffer.h"

namespace cnn::bench {

// Fixed seeds of every random tensor, printed in the run header.
inline constexpr uint64_t kXSeed = uint64_t(1) << 32;
inline constexpr uint64_t kDySeed = uint64_t(2) << 32;
inline constexpr uint64_t kWSeed = uint64_t(3) << 32;  // + filter size
inline constexpr uint64_t kSampleSeed = 20261129;      // + filter size

// Everything the points of one run share.
struct BenchContext {
  const BenchOptions& opts;
  cudaStream_t stream;
  RooflineBaselines& roofline;
  const CudnnHandle* cudnn;  // null with --no-cudnn
  dwconv::ScratchBuffer* scratch;  // the padded plans' scratch (kernels/dwconv/cuda/scratch_buffer.h)
};

// Inputs (rotated past 2x L2) and outputs of one feature map; only the tensors the requested ops need.
struct MapTensors {
  MapTensors(const MapShape& map, const BenchOptions& opts);
  int rotations = 1;
  std::optional<RotatedTensor> x;   // (N, H, W, C): fwd, bfc
  std::optional<RotatedTensor> dy;  // (N, OH, OW, C): bdc, bfc; OH = ceil(H / stride) ('same' padding)
  DeviceBuffer y;                   // fwd output (run dtype)
  DeviceBuffer dx;                  // bdc output (run dtype)
};

// The filter-dependent tensors of one (map, filter).
struct FilterTensors {
  FilterTensors(const dwconv::DwconvParams& p, const BenchContext& ctx);
  std::vector<float> w_host;  // (FH, FW, C), FP16-rounded values for --dtype f16
  DeviceBuffer w;             // (FH, FW, C) in the run's dtype
  DeviceBuffer w_cudnn;       // (C, FH, FW), only with cuDNN
  DeviceBuffer dw;            // FP32 (FH, FW, C); for f32 also (C, FH, FW) after a cuDNN run
  DeviceBuffer dw_cudnn;      // f16 only: cuDNN's FP16 (C, FH, FW) result
  std::unique_ptr<CudnnDepthwise> conv;         // f32: FP32 compute; f16: FP16 compute
  std::unique_ptr<CudnnDepthwise> conv_f32acc;  // f16 only: FP16 data, FP32 compute
};

// Measures one point; throws cnn::Error when anything fails (the caller records it in the row).
void measure_point(dwconv::DwconvOp op, const dwconv::DwconvParams& p, MapTensors& maps, FilterTensors& filt,
                   const BenchContext& ctx, Row& row);

}  // namespace cnn::bench
