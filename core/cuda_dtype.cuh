// Device-side element types of each DType (__half, __nv_bfloat16, ...), conversions matching cast_value on the
// host (half types through float, round-to-nearest-even) and a run-time dtype switch for launchers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/dispatch.h"
#include "core/dtype.h"
#include "core/error.h"

namespace cnn {

template <class T>
__host__ __device__ __forceinline__ auto widen(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

template <class To, class From>
__host__ __device__ __forceinline__ To device_cast(From v) {
  const auto w = widen(v);
  if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(w));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(w));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<decltype(w)>) {
    return saturating_int_cast<To>(static_cast<double>(w));
  } else {
    return static_cast<To>(w);
  }
}

// Device types for every DType.
template <class F>
decltype(auto) dispatch_dtype_cuda(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f16: return f(TypeTag<__half>{});
    case DType::bf16: return f(TypeTag<__nv_bfloat16>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::u8: return f(TypeTag<uint8_t>{});
  }
  throw Error(str_cat("dispatch_dtype_cuda: invalid DType value ", int(t)));
}

// Floating device types of the compute kernels: f32 and f16 (FP32 accumulation); `op` names the caller.
template <class F>
decltype(auto) dispatch_cuda_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f16: return f(TypeTag<__half>{});
    default: break;
  }
  throw Error(str_cat(op, ": dtype ", dtype_name(t), " is not supported on cuda (expected f32 or f16)"));
}

// Grid for grid-stride loops over n elements: one thread per element up to max_blocks blocks.
inline unsigned grid_for(int64_t n, int block, int64_t max_blocks = 8192) {
  int64_t blocks = (n + block - 1) / block;
  if (blocks < 1) blocks = 1;
  return unsigned(blocks < max_blocks ? blocks : max_blocks);
}

}  // namespace cnn
