// Channel padding for the padded plans (select.h, Plan::padded_c): rows of C values copied into rows of CP >= C
// values with zeros after them, and back. One thread per 16 bytes of the padded side, whose rows start 16-byte
// aligned (CP is a multiple of the vector width); the unpadded side is read or written one element at a time.
#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {

namespace {

constexpr int kThreads = 256;

template <class T>
constexpr int kVec = 16 / int(sizeof(T));

template <class T>
struct alignas(16) Vec {
  T v[kVec<T>];
};

template <class T>
__global__ void pad_channels_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t vectors, int c, int cp) {
  const int per_row = cp / kVec<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < vectors; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row;
    const int c0 = int(i - row * per_row) * kVec<T>;
    const T* s = src + row * c;
    Vec<T> out;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) out.v[k] = c0 + k < c ? s[c0 + k] : T(0.0f);
    reinterpret_cast<Vec<T>*>(dst + row * cp)[c0 / kVec<T>] = out;
  }
}

template <class T>
__global__ void crop_channels_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t vectors, int cp, int c) {
  const int per_row = cp / kVec<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < vectors; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row;
    const int c0 = int(i - row * per_row) * kVec<T>;
    const Vec<T> in = reinterpret_cast<const Vec<T>*>(src + row * cp)[c0 / kVec<T>];
    T* d = dst + row * c;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k)
      if (c0 + k < c) d[c0 + k] = in.v[k];
  }
}

int grid_for(int64_t vectors) {
  const int64_t blocks = (vectors + kThreads - 1) / kThreads;
  return int(blocks < 65536 ? blocks : 65536);  // grid-stride beyond that
}

template <class T>
void check_padding(const char* op, const void* padded, int64_t rows, int c, int cp) {
  CNN_CHECK(rows >= 0 && c >= 1 && cp >= c && cp % kVec<T> == 0 && aligned16(padded), op,
            ": expected rows >= 0, 1 <= C <= CP, CP a multiple of ", kVec<T>, " and a 16-byte aligned padded side, got rows=",
            rows, " C=", c, " CP=", cp);
}

}  // namespace

template <class T>
void launch_pad_channels(const T* src, T* dst, int64_t rows, int c, int cp, cudaStream_t stream) {
  check_padding<T>("pad_channels", dst, rows, c, cp);
  const int64_t vectors = rows * (cp / kVec<T>);
  if (vectors == 0) return;
  pad_channels_kernel<T><<<grid_for(vectors), kThreads, 0, stream>>>(src, dst, vectors, c, cp);
  CNN_CHECK_LAUNCH("pad_channels");
}

template <class T>
void launch_crop_channels(const T* src, T* dst, int64_t rows, int cp, int c, cudaStream_t stream) {
  check_padding<T>("crop_channels", src, rows, c, cp);
  const int64_t vectors = rows * (cp / kVec<T>);
  if (vectors == 0) return;
  crop_channels_kernel<T><<<grid_for(vectors), kThreads, 0, stream>>>(src, dst, vectors, cp, c);
  CNN_CHECK_LAUNCH("crop_channels");
}

template void launch_pad_channels<float>(const float*, float*, int64_t, int, int, cudaStream_t);
template void launch_pad_channels<__half>(const __half*, __half*, int64_t, int, int, cudaStream_t);
template void launch_crop_channels<float>(const float*, float*, int64_t, int, int, cudaStream_t);
template void launch_crop_channels<__half>(const __half*, __half*, int64_t, int, int, cudaStream_t);

}  // namespace cnn::dwconv
