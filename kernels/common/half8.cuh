// FP16 values packed two per 32-bit word <-> floats: the load/store step of the FP16 CUDA-core kernels, whose
// threads hold 8 (one uint4) or 4 (one uint2) channels per position and accumulate in FP32.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace cnn::cuda {

// The 2 * kWords halves of w, in order, as floats.
template <int kWords>
__device__ __forceinline__ void widen_halves(const unsigned (&w)[kWords], float (&f)[2 * kWords]) {
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
    f[2 * k] = p.x;
    f[2 * k + 1] = p.y;
  }
}

// Round to nearest even, once per value.
template <int kWords>
__device__ __forceinline__ void narrow_halves(const float (&f)[2 * kWords], unsigned (&w)[kWords]) {
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
    w[k] = *reinterpret_cast<const unsigned*>(&h);
  }
}

__device__ __forceinline__ void widen8(const uint4 v, float (&f)[8]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
  widen_halves(words, f);
}

__device__ __forceinline__ uint4 narrow8(const float (&f)[8]) {
  unsigned words[4];
  narrow_halves(f, words);
  return make_uint4(words[0], words[1], words[2], words[3]);
}

}  // namespace cnn::cuda
