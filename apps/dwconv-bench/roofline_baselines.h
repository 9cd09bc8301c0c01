// The two ceilings every Flash-DWC point is compared against, measured in the same run: cuBLAS SGEMM (FP32, no
// TF32) with m = n = k sized to the op's FLOPs, and a device-to-device copy moving the op's bytes. Results are
// cached per size, since the three ops of one (map, filter) share them.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <map>

#include "apps/dwconv-bench/timing.h"

namespace cnn::bench {

struct GemmPoint {
  int m = 0;
  Timing timing;
  double tflops = 0;  // 2 m^3 / median time
};

struct CopyPoint {
  size_t moved_bytes = 0;  // read + written: twice the copied size
  Timing timing;
  double gbps = 0;  // moved bytes / median time, in GB/s (1e9)
};

class RooflineBaselines {
 public:
  RooflineBaselines(cudaStream_t stream, int warmup, int reps);
  ~RooflineBaselines();
  RooflineBaselines(const RooflineBaselines&) = delete;
  RooflineBaselines& operator=(const RooflineBaselines&) = delete;

  // m = cbrt(flops / 2) rounded to a multiple of 128 (at least 128).
  static int gemm_size_for(double flops);
  const GemmPoint& sgemm(double flops);
  // Copies moved_bytes / 2 bytes (rounded up to 256), sources rotated past 2x L2 like the ops' inputs.
  const CopyPoint& copy(size_t moved_bytes);

 private:
  GemmPoint measure_sgemm(int m);
  CopyPoint measure_copy(size_t moved_bytes);

  cudaStream_t stream_;
  int warmup_, reps_;
  cublasHandle_t cublas_ = nullptr;
  std::map<int, GemmPoint> gemm_cache_;
  std::map<size_t, CopyPoint> copy_cache_;
};

}  // namespace cnn::bench
