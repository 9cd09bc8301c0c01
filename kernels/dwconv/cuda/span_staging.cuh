// Span staging: a block's window of an NHWC tensor, a channel slice of every pixel, copied into shared memory in
// aligned 16-byte cp.async copies at any channel count (odd C included), for the CUDA-core kernels that take one
// channel per lane (direct_tile.cu, bfc_span.cu).
//
// A pixel's slice of B channels from c0 is one contiguous span of the tensor. Its 16-byte aligned cover (the span
// starts `shift` elements into its first chunk) is copied whole into the pixel's slot of B + kE elements (kE per
// chunk), so every copy is aligned and nothing passes through registers. Where a map row is whole chunks
// (W * C % kE == 0, the tensor 16-byte aligned, c0 a multiple of kE), a pixel's shift depends on its column alone:
// (iw * C) mod kE. Slots outside the map, and chunks past the tensor's end, are zeros.
#pragma once

#include <cstdint>

#include "kernels/common/cp_async.cuh"

namespace cnn::dwconv::span {

template <class T>
inline constexpr int kChunkElems = 16 / int(sizeof(T));

// Elements per staged pixel of a B-channel slice.
template <class T, int kB>
inline constexpr int kPitch = kB + kChunkElems<T>;

// The span's first element within its first chunk at input column iw (any iw: outside the map the slot is zeros,
// and the shift keeps the reads inside it).
template <class T>
__host__ __device__ __forceinline__ int shift(int iw, int c) {
  return (iw * c) & (kChunkElems<T> - 1);
}

// Whether a tensor with rows of w pixels of c channels, aligned to `align` bytes (alignment_of), can be span-staged
// (the precondition above).
inline bool supports(int align, int w, int c, int elem_bytes) {
  return align % 16 == 0 && int64_t(w) * c % (16 / elem_bytes) == 0;
}

// Where chunk k of the slot of pixel (ih, iw) of image n comes from: the tensor offset of its first element, or -1
// for zeros (outside the map, or past the tensor's `elems` elements).
template <class T>
__host__ __device__ __forceinline__ int64_t chunk_source(int64_t elems, int n, int h, int w, int c, int ih, int iw,
                                                         int c0, int k) {
  constexpr int kE = kChunkElems<T>;
  const int64_t chunk = ((int64_t(n) * h + ih) * w + iw) * c + c0 - shift<T>(iw, c) + k * kE;
  return unsigned(ih) < unsigned(h) && unsigned(iw) < unsigned(w) && chunk + kE <= elems ? chunk : -1;
}

// Copies the rows x kCols pixel window at (row0, col0) of image n (h x w x c maps; rows or columns outside are
// zeros) into dst[slot][kPitch<T, kB>], slot = row * kCols + column, the channels c0 .. c0 + kB - 1 of each at its
// shift. Thread `tid` of `threads` issues every threads-th chunk (consecutive threads on consecutive chunks); the
// caller commits and waits.
template <class T, int kB, int kCols>
__device__ __forceinline__ void stage(T* dst, const T* src, int64_t elems, int n, int h, int w, int c, int row0,
                                     int col0, int rows, int c0, int tid, int threads) {
  constexpr int kE = kChunkElems<T>, kChunks = kPitch<T, kB> / kE;
  for (int e = tid; e < rows * kCols * kChunks; e += threads) {
    const int slot = e / kChunks, k = e - slot * kChunks;
    const int r = slot / kCols, col = slot - r * kCols;
    const int64_t chunk = chunk_source<T>(elems, n, h, w, c, row0 + r, col0 + col, c0, k);
    cuda::cp_async_ca16(dst + slot * kPitch<T, kB> + k * kE, chunk >= 0 ? src + chunk : src, chunk >= 0);
  }
}

}  // namespace cnn::dwconv::span
