// 8 FP16 values in one 16-byte vector <-> 8 floats: the load/store step of the FP16 CUDA-core kernels, whose
// threads hold 8 channels (one uint4) per position and accumulate in FP32.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace cnn::cuda {

__device__ __forceinline__ void widen8(const uint4 v, float (&f)[8]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&words[k]));
    f[2 * k] = p.x;
    f[2 * k + 1] = p.y;
  }
}

// Round to nearest even, once per value.
__device__ __forceinline__ uint4 narrow8(const float (&f)[8]) {
  unsigned words[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
    words[k] = *reinterpret_cast<const unsigned*>(&h);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

}  // namespace cnn::cuda
