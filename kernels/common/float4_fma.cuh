// Four independent FP32 FMAs on float4 lanes: the inner step of the FP32 CUDA-core depthwise kernels, whose threads
// hold 4 channels (one 16-byte vector) per position.
#pragma once

#include <cuda_runtime.h>

namespace cnn::cuda {

// acc += x * w, lane by lane.
__device__ __forceinline__ void fma4(float4& acc, const float4 x, const float4 w) {
  acc.x = fmaf(x.x, w.x, acc.x);
  acc.y = fmaf(x.y, w.y, acc.y);
  acc.z = fmaf(x.z, w.z, acc.z);
  acc.w = fmaf(x.w, w.w, acc.w);
}

}  // namespace cnn::cuda
