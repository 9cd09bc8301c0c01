// Channel padding on the GPU (channel_pad.cu): rows of C values <-> rows of CP values (CP >= C, a multiple of 16
// bytes of elements, zeros after the C values), the padded side 16-byte aligned, the other side anywhere a T may be.
// Used where a kernel needs 16-byte rows: the depthwise padded plans, FP16 GEMMs on unaligned rows. T: float or __half.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

namespace cnn::kernels {

// One tensor to pad: `rows` rows of C elements at src into rows of CP at dst.
template <class T>
struct PadRows {
  const T* src;
  T* dst;
  int64_t rows;
  int c, cp;
};

constexpr int kMaxPadTensors = 3;  // a padded depthwise plan's input, filter and bias

// Pads up to kMaxPadTensors tensors in one launch (a launch per tiny filter or bias costs more than its copy). The
// kernel that reads the copies may be launched early behind it (cuda::launch_kernel in grid_dependency.cuh).
template <class T>
void launch_pad_channels(std::initializer_list<PadRows<T>> tensors, cudaStream_t stream);

template <class T>
void launch_pad_channels(const T* src, T* dst, int64_t rows, int c, int cp, cudaStream_t stream);
template <class T>
void launch_crop_channels(const T* src, T* dst, int64_t rows, int cp, int c, cudaStream_t stream);

}  // namespace cnn::kernels
