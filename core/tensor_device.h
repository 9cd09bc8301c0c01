// Device hooks behind Tensor's copies, conversion, fills and random init. CUDA builds implement them in
// core/tensor_cuda.cu (work ordered on the device's compute stream); CPU-only builds in tensor_nocuda.cpp (errors).
#pragma once

#include <cstdint>

#include "core/device.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace cnn::detail {

// Copies numel elements of elem_size bytes: element with multi-index i goes from src[sum i*src_stride] to
// dst[sum i*dst_stride] (strides in elements).
struct StridedCopy {
  int ndim = 0;
  int64_t numel = 0;
  int elem_size = 4;
  int64_t shape[kMaxDims] = {};
  int64_t src_stride[kMaxDims] = {};
  int64_t dst_stride[kMaxDims] = {};
};

enum class RandomKind : int { uniform = 0, normal = 1, trunc_normal = 2 };
// uniform: a = lo, b = hi. normal: a = mean, b = stddev. trunc_normal: a = mean, b = stddev, c = lo, d = hi.
struct RandomParams {
  RandomKind kind = RandomKind::uniform;
  uint64_t seed = 0;
  uint64_t offset = 0;
  float a = 0, b = 0, c = 0, d = 0;
};

void cuda_strided_copy(int device, const void* src, void* dst, const StridedCopy& p);
// Contiguous n elements, src_t -> dst_t (half types through float, as cast_value on the host).
void cuda_convert(int device, const void* src, DType src_t, void* dst, DType dst_t, int64_t n);
// Sets n elements of elem_size bytes to the bit pattern `value`.
void cuda_fill(int device, void* dst, uint64_t value, int elem_size, int64_t n);
void cuda_random(int device, void* dst, DType t, int64_t n, const RandomParams& p);
// y += alpha * x over n contiguous elements: x of floating dtype tx, y of t; tx == t, or f16 / bf16 into f32.
void cuda_axpy(int device, const void* x, DType tx, void* y, DType t, int64_t n, double alpha);
// Contiguous bytes between any two devices (at least one cuda); returns when the data is usable by the host
// (device->host) or ordered on the destination's compute stream (host->device, device->device).
void cuda_memcpy(const void* src, Device src_dev, void* dst, Device dst_dev, int64_t bytes);

}  // namespace cnn::detail
