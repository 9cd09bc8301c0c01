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
// (the precondition above). The callers also keep an image under 2^31 elements, so offsets within one are 32-bit.
inline bool supports(int align, int w, int c, int elem_bytes) {
  return align % 16 == 0 && int64_t(w) * c % (16 / elem_bytes) == 0;
}

// Whether chunk k of the slot of pixel (ih, iw) of image n is read from the tensor (false: zeros, outside the map or
// past the tensor's `elems` elements), and from which offset. The offset within the image is 32-bit arithmetic
// (unsigned, so a pixel outside wraps instead of overflowing; its value is not used), the image's base 64-bit: a
// caller's loop hoists the base and pays two 32-bit multiplies per chunk.
template <class T>
__host__ __device__ __forceinline__ bool chunk_offset(int64_t elems, int n, int h, int w, int c, int ih, int iw,
                                                      int c0, int k, int64_t& offset) {
  constexpr int kE = kChunkElems<T>;
  const unsigned in_image = (unsigned(ih) * unsigned(w) + unsigned(iw)) * unsigned(c) + unsigned(c0) -
                            unsigned(shift<T>(iw, c)) + unsigned(k * kE);
  const int64_t base = int64_t(n) * h * w * c;
  offset = base + in_image;
  return unsigned(ih) < unsigned(h) && unsigned(iw) < unsigned(w) && int64_t(in_image) + kE <= elems - base;
}

// chunk_offset's answer as one number: the offset, or -1 for zeros.
template <class T>
__host__ __device__ __forceinline__ int64_t chunk_source(int64_t elems, int n, int h, int w, int c, int ih, int iw,
                                                         int c0, int k) {
  int64_t offset = 0;
  return chunk_offset<T>(elems, n, h, w, c, ih, iw, c0, k, offset) ? offset : -1;
}

// Which chunks of a window thread `tid` of `threads` copies: each step of a group of kGroup threads (a warp, or two
// for slots of more than 16 chunks) takes kPix = kGroup / kChunks whole pixel slots, thread g of the group chunk
// g % kChunks of slot g / kChunks (the threads past kPix * kChunks idle), so a slot's row, column and source are worked
// out once per thread per step rather than once per chunk. The thread's slots are first, first + step, ... below the
// window's slot count, each at chunk k. `threads` is a multiple of kGroup.
template <class T, int kB>
struct ChunkWalk {
  static constexpr int kChunks = kPitch<T, kB> / kChunkElems<T>;
  static constexpr int kGroup = kChunks > 16 ? 64 : 32, kPix = kGroup / kChunks;
  static_assert(kChunks <= 32, "a pixel slot of at most 32 chunks");
  int first, step, k;
  bool active;
  __host__ __device__ ChunkWalk(int tid, int threads)
      : first(tid / kGroup * kPix + tid % kGroup / kChunks),
        step(threads / kGroup * kPix),
        k(tid % kGroup % kChunks),
        active(tid % kGroup < kPix * kChunks) {}
};

// Copies the rows x kCols pixel window at (row0, col0) of image n (h x w x c maps; rows or columns outside are
// zeros) into dst[slot][kPitch<T, kB>], slot = row * kCols + column, the channels c0 .. c0 + kB - 1 of each at its
// shift, the chunks split among the threads as ChunkWalk says; the caller commits and waits.
template <class T, int kB, int kCols>
__device__ __forceinline__ void stage(T* dst, const T* src, int64_t elems, int n, int h, int w, int c, int row0,
                                     int col0, int rows, int c0, int tid, int threads) {
  constexpr int kE = kChunkElems<T>;
  const ChunkWalk<T, kB> walk(tid, threads);
  if (!walk.active) return;
  for (int slot = walk.first; slot < rows * kCols; slot += walk.step) {
    const int r = slot / kCols, col = slot - r * kCols;
    int64_t offset;
    const bool read = chunk_offset<T>(elems, n, h, w, c, row0 + r, col0 + col, c0, walk.k, offset);
    cuda::cp_async_ca16(dst + slot * kPitch<T, kB> + walk.k * kE, src + (read ? offset : 0), read);
  }
}

}  // namespace cnn::dwconv::span
