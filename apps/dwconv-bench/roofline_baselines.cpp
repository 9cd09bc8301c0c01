// cuBLAS SGEMM and device-copy ceilings for dwconv-bench (see roofline_baselines.h).
#include "apps/dwconv-bench/roofline_baselines.h"

#include <algorithm>
#include <cmath>

#include "apps/dwconv-bench/device_buffer.h"
#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

constexpr int kGemmQuantum = 128;
constexpr uint64_t kGemmSeed = 0x5EED0001ull;
constexpr uint64_t kCopySeed = 0x5EED0002ull;

}  // namespace

RooflineBaselines::RooflineBaselines(cudaStream_t stream, int warmup, int reps)
    : stream_(stream), warmup_(warmup), reps_(reps) {
  CNN_CUBLAS_CHECK(cublasCreate(&cublas_));
  try {
    CNN_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Default math keeps SGEMM in FP32 (TF32 needs CUBLAS_TF32_TENSOR_OP_MATH); stated explicitly so a changed
    // library default cannot turn the ceiling into a TF32 number.
    CNN_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    cublasDestroy(cublas_);
    throw;
  }
}

RooflineBaselines::~RooflineBaselines() { cublasDestroy(cublas_); }

int RooflineBaselines::gemm_size_for(double flops) {
  const double m = std::cbrt(std::max(flops, 0.0) / 2.0);
  const int rounded = int(std::lround(m / kGemmQuantum)) * kGemmQuantum;
  return std::max(kGemmQuantum, rounded);
}

const GemmPoint& RooflineBaselines::sgemm(double flops) {
  const int m = gemm_size_for(flops);
  auto it = gemm_cache_.find(m);
  if (it == gemm_cache_.end()) it = gemm_cache_.emplace(m, measure_sgemm(m)).first;
  return it->second;
}

const CopyPoint& RooflineBaselines::copy(size_t moved_bytes) {
  auto it = copy_cache_.find(moved_bytes);
  if (it == copy_cache_.end()) it = copy_cache_.emplace(moved_bytes, measure_copy(moved_bytes)).first;
  return it->second;
}

GemmPoint RooflineBaselines::measure_sgemm(int m) {
  const int64_t elems = int64_t(m) * m;
  DeviceBuffer a = device_uniform(elems, kGemmSeed);
  DeviceBuffer b = device_uniform(elems, kGemmSeed + 1);
  DeviceBuffer c(size_t(elems) * sizeof(float));
  const float alpha = 1.0f, beta = 0.0f;
  const RunFn run = [&](int) {
    CNN_CUBLAS_CHECK(
        cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a.f32(), m, b.f32(), m, &beta, c.f32(), m));
  };
  GemmPoint g;
  g.m = m;
  g.timing = time_runs(run, warmup_, reps_, stream_);
  g.tflops = 2.0 * double(m) * m * m / (g.timing.median_ms * 1e-3) / 1e12;
  return g;
}

CopyPoint RooflineBaselines::measure_copy(size_t moved_bytes) {
  constexpr size_t kAlign = 256;
  const size_t bytes = std::max(kAlign, (moved_bytes / 2 + kAlign - 1) / kAlign * kAlign);
  const int64_t floats = int64_t(bytes / sizeof(float));
  RotatedTensor src = make_rotated(floats, rotation_count(bytes), kCopySeed);
  DeviceBuffer dst(bytes);
  const RunFn run = [&](int i) {
    CNN_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.slice(i), bytes, cudaMemcpyDeviceToDevice, stream_));
  };
  CopyPoint cp;
  cp.moved_bytes = 2 * bytes;
  cp.timing = time_runs(run, warmup_, reps_, stream_);
  cp.gbps = double(cp.moved_bytes) / (cp.timing.median_ms * 1e-3) / 1e9;
  return cp;
}

}  // namespace cnn::bench
