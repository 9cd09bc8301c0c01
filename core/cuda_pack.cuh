// 16-byte packs for memory-bound elementwise kernels: 8 halves or 4 floats move in one 128-bit load or store and
// are computed on as floats (FP32 math, one rounding per stored value). A kernel takes the pack path when every
// pointer it touches is 16-byte aligned (packs_ok) and finishes the n % kPack tail element by element.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_dtype.cuh"

namespace cnn::cuda {

template <class T>
struct Pack {
  static constexpr int kN = 16 / int(sizeof(T));
};

template <class T>
__device__ __forceinline__ void load_pack(const T* p, float (&f)[Pack<T>::kN]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);  // plain load: outputs may alias inputs
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int k = 0; k < Pack<T>::kN; ++k) f[k] = widen(e[k]);
}

template <class T>
__device__ __forceinline__ void store_pack(T* p, const float (&f)[Pack<T>::kN]) {
  uint4 v;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int k = 0; k < Pack<T>::kN; ++k) e[k] = device_cast<T>(f[k]);
  *reinterpret_cast<uint4*>(p) = v;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// True when every non-null pointer is 16-byte aligned.
template <class... P>
bool packs_ok(const P*... ptrs) {
  return ((ptrs == nullptr || aligned16(ptrs)) && ...);
}

}  // namespace cnn::cuda
