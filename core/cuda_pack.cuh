// Packs for memory-bound elementwise kernels: kN elements move in one load or store (load_n / store_n; Pack<T>::kN,
// 8 halves or 4 floats, in 16 bytes) and are computed on as floats (FP32 math, one rounding per stored value). A
// kernel takes the 16-byte path when every pointer it touches is 16-byte aligned (packs_ok) and finishes the n % kN
// tail element by element. Where a row length (a channel count, a broadcast operand) is not a multiple of 16 bytes,
// with_pack picks 8- or 4-byte packs.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_dtype.cuh"

namespace cnn::cuda {

template <class T>
struct Pack {
  static constexpr int kN = 16 / int(sizeof(T));
};

// The word that moves kBytes at once.
template <int kBytes>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint64_t;
};
template <>
struct Word<16> {
  using type = uint4;
};

// Loads / stores kN consecutive elements as floats in one access of kN elements (16, 8, 4 or 2 bytes; the pointer
// aligned to it). Plain accesses: outputs may alias inputs.
template <int kN, class T>
__device__ __forceinline__ void load_n(const T* p, float (&v)[kN]) {
  using W = typename Word<kN * int(sizeof(T))>::type;
  const W w = *reinterpret_cast<const W*>(p);
  const T* e = reinterpret_cast<const T*>(&w);
#pragma unroll
  for (int k = 0; k < kN; ++k) v[k] = widen(e[k]);
}
template <int kN, class T>
__device__ __forceinline__ void store_n(T* p, const float (&v)[kN]) {
  using W = typename Word<kN * int(sizeof(T))>::type;
  W w;
  T* e = reinterpret_cast<T*>(&w);
#pragma unroll
  for (int k = 0; k < kN; ++k) e[k] = device_cast<T>(v[k]);
  *reinterpret_cast<W*>(p) = w;
}

// The lowest power of two (at most 16) dividing every non-null pointer's address.
template <class... P>
int common_alignment(const P*... ptrs) {
  uintptr_t bits = 16;
  ((bits |= ptrs ? reinterpret_cast<uintptr_t>(ptrs) : 0), ...);
  return int(bits & (~bits + 1));
}

// f(kN) with the widest pack, in elements, that one access moves: 16, 8 or 4 bytes where `len` (a row length the
// packs must tile) and the pointers' alignment allow, else one element. SLaK's channel counts get 8-byte packs at 124
// and 4-byte ones at 998 (FP16) instead of one element per access.
template <class T, class F>
void with_pack(int64_t len, int align, F&& f) {
  constexpr int e = int(sizeof(T));
  if (len % (16 / e) == 0 && align >= 16) return f(std::integral_constant<int, 16 / e>{});
  if (len % (8 / e) == 0 && align >= 8) return f(std::integral_constant<int, 8 / e>{});
  if constexpr (e < 4) {
    if (len % (4 / e) == 0 && align >= 4) return f(std::integral_constant<int, 4 / e>{});
  }
  f(std::integral_constant<int, 1>{});
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// True when every non-null pointer is 16-byte aligned.
template <class... P>
bool packs_ok(const P*... ptrs) {
  return ((ptrs == nullptr || aligned16(ptrs)) && ...);
}

}  // namespace cnn::cuda
